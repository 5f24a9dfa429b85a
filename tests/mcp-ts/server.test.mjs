// End to end: the official TypeScript MCP SDK drives examples/mcp_server over stdio.
//
// Run by .ci/run (`npm ci && npm test` here) after the example is built; the server binary
// is taken from $CAIRNLOOP_MCP_SERVER (default: target/debug/examples/mcp_server).
// The SDK checks every result against the tool's outputSchema, so a result our schema
// does not describe fails these tests.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SERVER = process.env.CAIRNLOOP_MCP_SERVER ?? join(ROOT, "target/debug/examples/mcp_server");

const AGENT = ["--actor", "agent-7", "--account", "acme", "--scopes", "orders:read,tickets:write"];
const ADMIN = ["--actor", "admin-1", "--account", "acme",
  "--scopes", "orders:read,tickets:write,refunds:write,customers:delete"];
const TRUSTING = [...AGENT, "--client-approver", "user:alice", "--client-approves", "low_write"];
const NOTE = { name: "internal_note", arguments: { ticket: 42, body: "Called twice." } };

const freshStore = () => join(mkdtempSync(join(tmpdir(), "cairnloop-ts-")), "approvals.db");

/** Connects a client to a server started with `args`; `answer` handles approval prompts. */
async function connect(args, store, answer) {
  const capabilities = answer ? { elicitation: {} } : {};
  const client = new Client({ name: "cairnloop-ts-e2e", version: "1.0.0" }, { capabilities });
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => answer(request.params));
  }
  const transport = new StdioClientTransport({
    command: SERVER,
    args: [...args, "--store", store ?? freshStore()],
    stderr: "ignore",
  });
  await client.connect(transport);
  return client;
}

async function withClient(args, steps, { store, answer } = {}) {
  const client = await connect(args, store, answer);
  try {
    return await steps(client);
  } finally {
    await client.close();
  }
}

/** The example's operator command on `store`; its standard output. */
const operator = (store, ...words) =>
  execFileSync(SERVER, ["operator", "--store", store, ...words], { encoding: "utf8" });

/** Sends raw lines after an initialize handshake; one answer per line, matched by id. */
async function raw(args, lines, store = freshStore()) {
  const server = spawn(SERVER, [...args, "--store", store], { stdio: ["pipe", "pipe", "ignore"] });
  const answers = [];
  const reader = createInterface({ input: server.stdout });
  const all = new Promise((done) => {
    reader.on("line", (line) => {
      answers.push(JSON.parse(line));
      if (answers.length === lines.length + 1) done();
    });
  });
  const init = { jsonrpc: "2.0", id: 0, method: "initialize", params: {
    protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };
  server.stdin.write([JSON.stringify(init), ...lines].join("\n") + "\n");
  await all;
  server.stdin.end();
  await new Promise((done) => server.on("exit", done));
  return answers.slice(1);
}

test("each actor sees its tools, each with an outputSchema", async () => {
  const tools = await withClient(AGENT, async (client) => (await client.listTools()).tools);
  assert.deepEqual(tools.map((tool) => tool.name), ["lookup_order", "internal_note"]);
  for (const tool of tools) {
    assert.equal(tool.outputSchema.type, "object");
    assert.deepEqual(tool.outputSchema.required, ["status"]);
    assert.equal(tool._meta["io.cairnloop/risk_tier"] !== undefined, true);
  }
});

test("an auto tool runs and its result matches its outputSchema", async () => {
  const result = await withClient(AGENT, async (client) => {
    await client.listTools(); // the SDK validates results of listed tools
    return client.callTool({ name: "lookup_order", arguments: { order: 1001 } });
  });
  assert.equal(result.isError, false);
  assert.deepEqual(result.structuredContent, { status: "executed", output: "shipped" });
});

test("an accepted prompt approves as the client's person and the call runs once", async () => {
  const store = freshStore();
  const prompts = [];
  const result = await withClient(TRUSTING, async (client) => {
    await client.listTools();
    return client.callTool(NOTE);
  }, { store, answer: (params) => {
    prompts.push(params.message);
    return { action: "accept", content: { decision: "approve" } };
  } });
  assert.deepEqual(result.structuredContent, { status: "executed", output: null });
  for (const shown of ["Add internal note", "low_write", "tickets:write", "Approval open until"]) {
    assert.ok(prompts[0].includes(shown), shown);
  }
  const key = prompts[0].match(/Proposal: ([0-9a-f]{64})/)[1];
  const shown = JSON.parse(operator(store, "show", key));
  assert.deepEqual([shown.state, shown.attempts, shown.decided_by], ["executed", 1, "user:alice"]);
});

test("a declined prompt rejects the call", async () => {
  const result = await withClient(TRUSTING, (client) => client.callTool(NOTE),
    { answer: () => ({ action: "decline" }) });
  assert.equal(result.isError, true);
  assert.equal(result.structuredContent.status, "rejected");
  assert.equal(result.structuredContent.reason, "declined by user:alice in the MCP client");
});

test("without prompts: pending, approved out of band, re-issued, run once, then the recorded outcome", async () => {
  const store = freshStore();
  const first = await withClient(AGENT, async (client) => {
    await client.listTools();
    return client.callTool(NOTE);
  }, { store });
  assert.equal(first.isError, false);
  assert.equal(first.structuredContent.status, "awaiting_approval");
  const key = first.structuredContent.proposal_id;
  assert.ok(operator(store, "list").includes(key));
  assert.deepEqual(operator(store, "approve", key, "--as", "ops-lead").split(/\s+/).filter(Boolean),
    [key, "approved"]);
  // A new server process on the same store: the call runs once, then gives back its outcome.
  const [ran, again] = await withClient(AGENT, async (client) => {
    await client.listTools();
    return [await client.callTool(NOTE), await client.callTool(NOTE)];
  }, { store });
  assert.deepEqual(ran.structuredContent, { status: "executed", output: null });
  assert.deepEqual(again.structuredContent, { status: "executed", output: null });
  const shown = JSON.parse(operator(store, "show", key));
  assert.deepEqual([shown.state, shown.attempts, shown.decided_by], ["executed", 1, "ops-lead"]);
});

test("every outcome kind, after listTools, passes the SDK's output validation", async () => {
  // The SDK checks structuredContent against the listed tool's outputSchema, on error
  // results too: a result the schema does not describe makes callTool throw.
  const store = freshStore();
  const refund = { name: "refund_order", arguments: { order: 7, cents: 500, reason: "late" } };
  const note = { name: "internal_note", arguments: { ticket: 9, body: "Refund asked." } };
  const seen = await withClient(ADMIN, async (client) => {
    const listed = (await client.listTools()).tools.map((tool) => tool.name);
    assert.deepEqual(listed, ["lookup_order", "internal_note", "refund_order"]);
    const results = {
      executed: await client.callTool({ name: "lookup_order", arguments: { order: 1001 } }),
      failed: await client.callTool({ name: "lookup_order", arguments: { order: 404 } }),
      invalid: await client.callTool({ name: "refund_order", arguments: { cents: "seven", zzz: true } }),
      out_of_range: await client.callTool({ name: "lookup_order", arguments: { order: 0 } }),
      waiting: await client.callTool(refund),
      to_reject: await client.callTool(note),
    };
    operator(store, "reject", results.to_reject.structuredContent.proposal_id, "--as", "ops-lead",
      "--reason", "not needed");
    operator(store, "defer", results.waiting.structuredContent.proposal_id, "--as", "ops-lead",
      "--reason", "ask finance");
    results.rejected = await client.callTool(note);
    results.deferred = await client.callTool(refund);
    return results;
  }, { store });
  const statuses = Object.fromEntries(Object.entries(seen).map(([kind, result]) =>
    [kind, [result.isError, result.structuredContent.status, result.structuredContent.code ?? null]]));
  assert.deepEqual(statuses, {
    executed: [false, "executed", null],
    failed: [true, "failed", "run_failed"],
    invalid: [true, "blocked", "needs_input"],
    out_of_range: [true, "blocked", "needs_input"],
    waiting: [false, "awaiting_approval", null],
    to_reject: [false, "awaiting_approval", null],
    rejected: [true, "rejected", null],
    deferred: [false, "awaiting_approval", null],
  });
  // Every field error in one answer: the wrong type, both missing fields, the unknown one.
  assert.deepEqual(seen.invalid.structuredContent.errors.map((error) => [error.path, error.code]),
    [["/cents", "invalid_type"], ["/order", "required"], ["/reason", "required"], ["/zzz", "unknown_field"]]);
  assert.equal(seen.rejected.structuredContent.reason, "not needed");
  assert.equal(seen.deferred.structuredContent.state, "deferred");
  assert.equal("reason" in seen.waiting.structuredContent, false);
});

test("three bad fields give three errors", async () => {
  const result = await withClient(ADMIN, (client) =>
    client.callTool({ name: "refund_order", arguments: { order: "x", cents: -5, reason: "whenever" } }));
  assert.equal(result.isError, true);
  assert.deepEqual(result.structuredContent.errors.map((error) => error.path), ["/cents", "/order", "/reason"]);
});

test("tools/call without a string name is -32602 with the request's id", async () => {
  const answers = await raw(AGENT, [
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}',
    '{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":7,"arguments":{}}}',
  ]);
  assert.deepEqual(answers.map((answer) => [answer.id, answer.error?.code]), [[1, -32602], ["two", -32602]]);
});

test("an unknown tool is the protocol error -32602", async () => {
  await withClient(AGENT, async (client) => {
    await assert.rejects(client.callTool({ name: "drop_tables", arguments: {} }),
      (error) => error instanceof McpError && error.code === -32602);
  });
});

test("raw frames: duplicate keys, non-object arguments, and the multi-round-trip form", async () => {
  const call = (id, args) =>
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"refund_order","arguments":${args}}}`;
  const stateless = (id, extra) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: {
    ...NOTE, ...extra, _meta: {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
      "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } } } } });
  const store = freshStore();
  const args = TRUSTING.map((word) => word === "orders:read,tickets:write"
    ? "orders:read,tickets:write,refunds:write" : word);
  const answers = await raw(args, [
    call(1, '{"order": 1, "cents": 1, "cents": 5000, "reason": "late"}'),
    call(2, '"{}"'),
    stateless(3, {}),
  ], store);
  const byId = Object.fromEntries(answers.map((answer) => [answer.id, answer]));
  assert.equal(byId[1].result.structuredContent.errors[0].code, "duplicate_key");
  assert.equal(byId[2].error.code, -32602);
  const asked = byId[3].result;
  assert.equal(asked.resultType, "input_required");
  assert.equal(asked.inputRequests.approval.method, "elicitation/create");
  const retry = (id) => stateless(id, {
    requestState: asked.requestState,
    inputResponses: { approval: { action: "accept", content: { decision: "approve" } } },
  });
  // On another store the handle names no proposal: refused, nothing decided.
  const [elsewhere] = await raw(args, [retry(4)]);
  assert.equal(elsewhere.error.code, -32602);
  // The retry with the answer and the echoed handle, on the store of the first round
  // (a new server process): the call runs, once.
  const [done] = await raw(args, [retry(5)], store);
  assert.deepEqual(done.result.structuredContent, { status: "executed", output: null });
  const shown = JSON.parse(operator(store, "show", asked.requestState));
  assert.deepEqual([shown.state, shown.attempts, shown.decided_by], ["executed", 1, "user:alice"]);
});
