// End to end: the official TypeScript MCP SDK's Streamable HTTP client drives
// `cairnloop-gateway serve --http` in front of the official filesystem MCP server, each
// request with a bearer token (an EdDSA JWT signed here, its public key in the file the
// gateway's configuration names). The caller is the token's subject, through its client.
//
// Run by .ci/run with $CAIRNLOOP_GATEWAY pointing at the built binary.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, execFileSync } from "node:child_process";
import { generateKeyPairSync, sign } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

import { resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

import { filesystemUpstream, shareWithHello } from "./filesystem-gateway.mjs";
import { httpTaskSession } from "./tasks-requester.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
const GATEWAY = process.env.CAIRNLOOP_GATEWAY ?? join(ROOT, "target/debug/cairnloop-gateway");
// An upstream of our own that renames its tool when a file appears (and says so).
const CHANGING = join(ROOT, "gateway/tests/hostile/upstream.py");
const ISSUER = "https://auth.example.test";

const { dir, share } = shareWithHello("cairnloop-gateway-http-");
const store = join(dir, "lanes.db");

const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const jwks = join(dir, "jwks.json");
writeFileSync(jwks, JSON.stringify({ keys: [{ ...publicKey.export({ format: "jwk" }), kid: "test-1", alg: "EdDSA" }] }));

const port = await new Promise((done) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address();
    probe.close(() => done(port));
  });
});
const url = new URL(`http://127.0.0.1:${port}/mcp`);

const config = join(dir, "gateway.toml");
writeFileSync(config, `
[gateway]
hold_secs = 0

[gateway.http]
address = "127.0.0.1:${port}"
issuer = "${ISSUER}"
jwks_file = ${JSON.stringify(jwks)}
account_claim = "org"

${filesystemUpstream(share)}

[tools.fs.list_directory]   # acme's only
tier = "read_only"
scopes = ["fs:read"]
accounts = ["acme"]

[upstreams.bad]
command = "python3"
args = [${JSON.stringify(CHANGING)}, "renames", ${JSON.stringify(join(dir, "changing.log"))}]

[tools.bad.write]
tier = "read_only"
scopes = ["changing:read"]
`);

const gateway = spawn(GATEWAY, ["serve", config, "--store", store, "--http"], { stdio: ["ignore", "ignore", "pipe"] });
await new Promise((ready, failed) => {
  let said = "";
  gateway.stderr.on("data", (chunk) => {
    said += chunk;
    if (said.includes("serving")) ready();
  });
  gateway.on("exit", (code) => failed(new Error(`the gateway exited ${code}: ${said}`)));
});
after(() => gateway.kill());

const base64url = (value) => Buffer.from(value).toString("base64url");
function token(claims) {
  const now = Math.floor(Date.now() / 1000);
  const header = base64url(JSON.stringify({ alg: "EdDSA", typ: "JWT", kid: "test-1" }));
  const body = base64url(JSON.stringify({ iss: ISSUER, aud: url.href, iat: now, exp: now + 300, ...claims }));
  const signature = sign(null, Buffer.from(`${header}.${body}`), privateKey).toString("base64url");
  return `${header}.${body}.${signature}`;
}

async function withClient(bearer, steps) {
  const client = new Client({ name: "cairnloop-gateway-http", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  }));
  try {
    return await steps(client);
  } finally {
    await client.close();
  }
}

const operator = (...words) =>
  spawnSync(GATEWAY, ["operator", "--store", store, ...words], { encoding: "utf8" });

test("without a valid token nothing is served: 401 with the resource metadata", async () => {
  const bare = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  assert.equal(bare.status, 401);
  assert.match(bare.headers.get("www-authenticate") ?? "", /resource_metadata=/);
  const forged = token({ sub: "alice", scope: "fs:read" }).slice(0, -4) + "AAAA";
  const refused = await fetch(url, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${forged}` }, body: "{}" });
  assert.equal(refused.status, 401);
});

test("the token's scopes decide what is listed; a read runs for its subject", async () => {
  await withClient(token({ sub: "alice", azp: "desktop", scope: "fs:read" }), async (client) => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name), ["fs_read_text_file"]);
    // A tool offered to one account only: refused to a token that names none.
    const refused = await client.callTool({ name: "fs_list_directory", arguments: { path: share } });
    assert.equal(refused.structuredContent.status, "blocked");
    assert.equal(refused.structuredContent.code, "policy_denied");
    const read = await client.callTool({ name: "fs_read_text_file", arguments: { path: join(share, "hello.txt") } });
    assert.equal(read.isError, false);
    assert.deepEqual(read.content, [{ type: "text", text: "hello" }]);
  });
});

test("a write over HTTP waits, is approved by another person, and writes once", async () => {
  const target = join(share, "over-http.txt");
  const write = { name: "fs_write_file", arguments: { path: target, content: "once" } };
  const alice = token({ sub: "alice", azp: "desktop", scope: "fs:read fs:write" });
  const id = await withClient(alice, async (client) => {
    const waiting = await client.callTool(write);
    assert.equal(waiting.structuredContent.status, "awaiting_approval");
    return waiting.structuredContent.proposal_id;
  });
  assert.equal(existsSync(target), false);
  const listed = operator("list");
  assert.match(listed.stdout, new RegExp(`${id} fs_write_file alice via desktop`));
  assert.notEqual(operator("approve", id, "--as", "alice via desktop").status, 0, "the proposer cannot approve");
  assert.equal(operator("approve", id, "--as", "ops-lead").status, 0);
  await withClient(alice, async (client) => {
    const ran = await client.callTool(write);
    assert.equal(ran.structuredContent.status, "executed");
    assert.equal(readFileSync(target, "utf8"), "once");
    writeFileSync(target, "sentinel");
    const again = await client.callTool(write);
    assert.equal(again.structuredContent.status, "executed");
    assert.equal(readFileSync(target, "utf8"), "sentinel", "the approved call ran once");
  });
});

test("a tool with an account rule is listed and runs only for tokens of that account", async () => {
  const listing = async (claims) => withClient(token({ sub: "bob", scope: "fs:read", ...claims }), async (client) => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name).sort();
    const listed = await client.callTool({ name: "fs_list_directory", arguments: { path: share } });
    return { names, status: listed.structuredContent.status, text: JSON.stringify(listed.content) };
  });
  const acme = await listing({ org: "acme" });
  assert.deepEqual(acme.names, ["fs_list_directory", "fs_read_text_file"]);
  assert.equal(acme.status, "executed");
  assert.match(acme.text, /hello\.txt/);
  const globex = await listing({ org: "globex" });
  assert.deepEqual(globex.names, ["fs_read_text_file"]);
  assert.equal(globex.status, "blocked");
});

test("a session is told when an upstream's new listing changes what is offered", async () => {
  await withClient(token({ sub: "alice", azp: "desktop", scope: "changing:read" }), async (client) => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name), ["bad_write"]);
    const told = new Promise((done) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => done(true)));
    writeFileSync(join(dir, "changing.log.rename"), "");
    const waited = await Promise.race([told, new Promise((done) => setTimeout(() => done(false), 10000))]);
    assert.equal(waited, true, "no notifications/tools/list_changed within 10 s");
    assert.deepEqual((await client.listTools()).tools, []);
  });
});

test("over HTTP on protocol 2026-07-28, a write answers with a task that the approval completes, written once", async () => {
  const requester = await httpTaskSession(url.href, token({ sub: "alice", azp: "desktop", scope: "fs:read fs:write" }));
  try {
    const target = join(share, "tasked-over-http.txt");
    const execution = await requester.session.callTool("fs_write_file", { path: target, content: "over http" });
    assert.equal(execution.kind, "task");
    let id;
    for (let tries = 0; tries < 100 && !id; tries++) {
      const listed = operator("list").stdout.split("\n").find((line) => line.includes("tasked-over-http.txt"));
      id = listed?.split(/\s+/)[0];
      if (!id) await new Promise((done) => setTimeout(done, 25));
    }
    assert.ok(id, "the call waits");
    assert.equal(operator("approve", id, "--as", "ops-lead").status, 0);
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, "completed");
    assert.equal(resultFromTaskOutcome(outcome).isError, false);
    assert.equal(readFileSync(target, "utf8"), "over http");
    assert.deepEqual(requester.invalid(), [], "every task object conforms to the extension's schemas");
  } finally {
    await requester.close();
  }
});
