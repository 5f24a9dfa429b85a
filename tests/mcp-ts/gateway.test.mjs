// End to end: the official TypeScript MCP SDK drives cairnloop-gateway over stdio, in
// front of the official filesystem MCP server (both from npm, neither written here).
//
// Run by .ci/run (`npm ci && npm test` here) after the gateway is built; the binary is
// taken from $CAIRNLOOP_GATEWAY (default: target/debug/cairnloop-gateway).

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

import { GATEWAY, localSetup } from "./filesystem-gateway.mjs";

const setup = (extra = "") => localSetup("cairnloop-gateway-ts-", extra);

async function connect({ config, store }, answer) {
  const capabilities = answer ? { elicitation: {} } : {};
  const client = new Client({ name: "cairnloop-gateway-ts-e2e", version: "1.0.0" }, { capabilities });
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => answer(request.params));
  }
  await client.connect(new StdioClientTransport({
    command: GATEWAY,
    args: ["serve", config, "--store", store],
    stderr: "ignore",
  }));
  return client;
}

const operator = (store, ...words) =>
  execFileSync(GATEWAY, ["operator", "--store", store, ...words], { encoding: "utf8" });

test("through the gateway, a read runs, a write waits for the operator and writes once, a move never reaches the server", async () => {
  const paths = setup();
  const client = await connect(paths);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ["fs_read_text_file", "fs_write_file"]);

    const read = await client.callTool({ name: "fs_read_text_file", arguments: { path: join(paths.share, "hello.txt") } });
    assert.equal(read.isError, false);
    assert.equal(read.structuredContent.status, "executed");
    assert.match(JSON.stringify(read.structuredContent), /hello/);

    const target = join(paths.share, "written.txt");
    const write = { name: "fs_write_file", arguments: { path: target, content: "once" } };
    const waiting = await client.callTool(write);
    assert.equal(waiting.structuredContent.status, "awaiting_approval");
    assert.equal(waiting.structuredContent.preview, `Write ${JSON.stringify(target)}`);
    assert.equal(existsSync(target), false);

    const id = waiting.structuredContent.proposal_id;
    assert.match(operator(paths.store, "list"), new RegExp(id));
    const self = spawnSync(GATEWAY, ["operator", "--store", paths.store, "approve", id, "--as", "agent"]);
    assert.notEqual(self.status, 0, "the proposer cannot approve its own call");
    operator(paths.store, "approve", id, "--as", "operator");

    const ran = await client.callTool(write);
    assert.equal(ran.structuredContent.status, "executed");
    assert.equal(readFileSync(target, "utf8"), "once");
    writeFileSync(target, "sentinel");
    const again = await client.callTool(write);
    assert.equal(again.structuredContent.status, "executed");
    assert.equal(readFileSync(target, "utf8"), "sentinel", "the approved call ran once");

    const moved = join(paths.share, "moved.txt");
    const refused = await client.callTool({ name: "fs_move_file", arguments: { source: join(paths.share, "hello.txt"), destination: moved } });
    assert.equal(refused.isError, true);
    assert.equal(refused.structuredContent.status, "blocked");
    assert.equal(existsSync(moved), false);

    // The upstream's own schema is checked before anything is forwarded (it allows
    // other fields; it requires `path`).
    const invalid = await client.callTool({ name: "fs_read_text_file", arguments: { file: "x", tail: "ten" } });
    assert.equal(invalid.isError, true);
    assert.deepEqual(invalid.structuredContent.errors.map((e) => [e.path, e.code]).sort(),
      [["/path", "required"], ["/tail", "invalid_type"]]);
  } finally {
    await client.close();
  }
});

test("with a client approver, the person at the client approves in its prompt and the write runs once", async () => {
  const paths = setup('client_approver = "user:alice"\nclient_approves = ["low_write"]\n');
  const prompts = [];
  const client = await connect(paths, (params) => {
    prompts.push(params.message);
    return { action: "accept", content: { decision: "approve" } };
  });
  try {
    await client.listTools();
    const target = join(paths.share, "prompted.txt");
    const write = { name: "fs_write_file", arguments: { path: target, content: "asked once" } };
    const ran = await client.callTool(write);
    assert.equal(ran.structuredContent.status, "executed");
    assert.equal(readFileSync(target, "utf8"), "asked once");
    assert.equal(prompts.length, 1);
    assert.ok(prompts[0].includes(`Write ${JSON.stringify(target)}`), prompts[0]);
    const key = prompts[0].match(/Proposal: ([0-9a-f]{64})/)[1];
    const shown = JSON.parse(operator(paths.store, "show", key));
    assert.deepEqual([shown.state, shown.attempts, shown.decided_by, shown.actor],
      ["executed", 1, "user:alice", "agent"]);
  } finally {
    await client.close();
  }
});
