// End to end: the official TypeScript MCP SDK's Streamable HTTP client drives
// examples/remote_mcp, with a bearer token the example mints from a key made for the test.
//
// Run by .ci/run with $CAIRNLOOP_REMOTE_MCP and $CAIRNLOOP_MCP_SERVER (for the operator
// command on the same store) pointing at the built examples.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const REMOTE = process.env.CAIRNLOOP_REMOTE_MCP ?? join(ROOT, "target/debug/examples/remote_mcp");
const SERVER = process.env.CAIRNLOOP_MCP_SERVER ?? join(ROOT, "target/debug/examples/mcp_server");

const dir = mkdtempSync(join(tmpdir(), "cairnloop-remote-"));
const store = join(dir, "approvals.db");
const keys = join(dir, "keys");

const port = await new Promise((done) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address();
    probe.close(() => done(port));
  });
});
const address = `127.0.0.1:${port}`;
const url = new URL(`http://${address}/mcp`);

const server = spawn(
  REMOTE,
  ["serve", "--address", address, "--keys", keys, "--store", store, "--client-approves", "low_write"],
  { stdio: ["ignore", "ignore", "pipe"] },
);
await new Promise((ready, failed) => {
  let said = "";
  server.stderr.on("data", (chunk) => {
    said += chunk;
    if (said.includes("serving")) ready();
  });
  server.on("exit", (code) => failed(new Error(`remote_mcp exited ${code}: ${said}`)));
});
after(() => server.kill());

const mint = (...words) =>
  execFileSync(REMOTE, ["mint", "--keys", keys, "--address", address, ...words], { encoding: "utf8" }).trim();

async function withClient(token, steps, answer) {
  const capabilities = answer ? { elicitation: {} } : {};
  const client = new Client({ name: "cairnloop-ts-remote", version: "1.0.0" }, { capabilities });
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => answer(request.params));
  }
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  try {
    return await steps(client);
  } finally {
    await client.close();
  }
}

test("a bearer token lists the subject's tools and calls one", async () => {
  const token = mint("--sub", "alice", "--scope", "orders:read tickets:write", "--account", "acme");
  await withClient(token, async (client) => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ["internal_note", "lookup_order"]);
    const result = await client.callTool({ name: "lookup_order", arguments: { order: 1001 } });
    assert.equal(result.isError, false);
    assert.deepEqual(result.structuredContent, { status: "executed", output: "shipped" });
  });
});

test("no token, no session: 401 with the metadata's address", async () => {
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  assert.equal(answer.status, 401);
  assert.match(answer.headers.get("www-authenticate"), /resource_metadata="http:\/\/[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/);
});

test("a low-write call approved in the client's prompt runs once", async () => {
  const token = mint("--sub", "alice", "--scope", "tickets:write", "--account", "acme");
  const prompts = [];
  const note = { name: "internal_note", arguments: { ticket: 7, body: "Over HTTP." } };
  const [first, again] = await withClient(
    token,
    async (client) => [await client.callTool(note), await client.callTool(note)],
    (params) => {
      prompts.push(params);
      return { action: "accept", content: { decision: "approve" } };
    },
  );
  assert.equal(prompts.length, 1, "one prompt: the second call finds the recorded outcome");
  assert.match(prompts[0].message, /Add internal note/);
  assert.equal(first.isError, false);
  assert.equal(first.structuredContent.status, "executed");
  assert.equal(again.structuredContent.status, "executed");
  // Nothing waits in the store: the approval was applied and the call ran.
  assert.equal(execFileSync(SERVER, ["operator", "--store", store, "list"], { encoding: "utf8" }).trim(), "");
});

test("the example's arguments: --help after a command, and a key set never overwritten", async () => {
  const { spawnSync } = await import("node:child_process");
  const { writeFileSync, readFileSync } = await import("node:fs");
  const help = spawnSync(REMOTE, ["serve", "--help"], { encoding: "utf8" });
  assert.equal(help.status, 0, help.stderr);
  assert.ok(help.stdout.startsWith("usage: remote_mcp"), help.stdout);
  const bad = spawnSync(REMOTE, ["serve", "--address"], { encoding: "utf8" });
  assert.equal(bad.status, 2);
  const foreign = join(mkdtempSync(join(tmpdir(), "cairnloop-keys-")), "keys");
  execFileSync(REMOTE, ["mint", "--keys", foreign, "--sub", "alice"]);
  const theirs = '{"keys":[]}';
  writeFileSync(join(foreign, "jwks.json"), theirs);
  const refused = spawnSync(REMOTE, ["mint", "--keys", foreign, "--sub", "alice"], { encoding: "utf8" });
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /nothing was overwritten/);
  assert.equal(readFileSync(join(foreign, "jwks.json"), "utf8"), theirs);
});
