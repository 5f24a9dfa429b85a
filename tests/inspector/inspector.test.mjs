// End to end with the MCP Inspector's command line (2.12, installed from npm with the
// Node 22 it needs): a client written elsewhere, which checks every tool's schemas for
// portability (`--strict`) and every result against the tool's output schema (a result
// that does not match makes it throw, where we would see an error envelope, not a
// result). It drives the example MCP server (over stdio, and examples/remote_mcp over
// Streamable HTTP with a bearer token) and cairnloop-gateway in front of the official
// filesystem server (over stdio, and over Streamable HTTP with EdDSA tokens signed here).
//
// Run by .ci/run (`npm ci && npm test` here, under the Node 22 from `node_modules`);
// the binaries are taken from $CAIRNLOOP_MCP_SERVER, $CAIRNLOOP_REMOTE_MCP and
// $CAIRNLOOP_GATEWAY, the filesystem server and its setup from ../mcp-ts (whose own
// `npm ci` runs first).

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync, sign } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { FILESYSTEM, filesystemUpstream, localGatewayConfig, shareWithHello } from "../mcp-ts/filesystem-gateway.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
const SERVER = process.env.CAIRNLOOP_MCP_SERVER ?? join(ROOT, "target/debug/examples/mcp_server");
const REMOTE = process.env.CAIRNLOOP_REMOTE_MCP ?? join(ROOT, "target/debug/examples/remote_mcp");
const GATEWAY = process.env.CAIRNLOOP_GATEWAY ?? join(ROOT, "target/debug/cairnloop-gateway");
const INSPECTOR = join(HERE, "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");

// The Inspector's own exit codes: 0 a result, 5 a result with `isError: true`, 6 a tool
// schema with an error-severity portability problem (under --strict).
const OK = 0;
const AUTH_REQUIRED = 3;
const TOOL_ERROR = 5;

/** Runs the Inspector's CLI with `args`; its exit status, its output parsed, and its errors. */
function inspector(...args) {
  const run = spawnSync(process.execPath, [INSPECTOR, "--cli", ...args], {
    encoding: "utf8",
    timeout: 60_000,
  });
  let output = null;
  try {
    output = JSON.parse(run.stdout);
  } catch {
    // Left null: the assertions below show the text.
  }
  return { status: run.status, output, stdout: run.stdout, stderr: run.stderr };
}

/** A result, not an error the client raised: a `CallToolResult` with its structured content. */
function result(run, status) {
  assert.equal(run.status, status, `exit ${run.status}\n${run.stdout}\n${run.stderr}`);
  assert.ok(run.output && Array.isArray(run.output.content), run.stdout);
  assert.ok(run.output.structuredContent, run.stdout);
  return run.output.structuredContent;
}

const AGENT = ["--actor", "agent-7", "--account", "acme", "--scopes", "orders:read,tickets:write"];

function example() {
  const store = join(mkdtempSync(join(tmpdir(), "cairnloop-inspector-")), "approvals.db");
  const server = [SERVER, ...AGENT, "--store", store];
  const call = (tool, ...pairs) =>
    inspector(...server, "--method", "tools/call", "--tool-name", tool, "--tool-arg", ...pairs);
  const operator = (...words) =>
    execFileSync(SERVER, ["operator", "--store", store, ...words], { encoding: "utf8" });
  return { server, call, operator };
}

test("the example's tools pass the Inspector's portability check", () => {
  const { server } = example();
  const listed = inspector(...server, "--method", "tools/list", "--strict");
  assert.equal(listed.status, OK, `${listed.stdout}\n${listed.stderr}`);
  const names = listed.output.tools.map((tool) => tool.name).sort();
  assert.deepEqual(names, ["internal_note", "lookup_order"]);
  assert.match(listed.stderr, /0 errors/);
});

test("every kind of answer is a result the Inspector accepts against its output schema", () => {
  const { call } = example();
  assert.deepEqual(result(call("lookup_order", "order=1001"), OK), { status: "executed", output: "shipped" });
  const failed = result(call("lookup_order", "order=404"), TOOL_ERROR);
  assert.equal(failed.status, "failed");
  assert.equal(failed.code, "run_failed");
  const invalid = result(call("lookup_order", "order=0"), TOOL_ERROR);
  assert.equal(invalid.status, "blocked");
  assert.equal(invalid.code, "needs_input");
  assert.equal(invalid.errors[0].path, "/order");
});

test("a write waits, is approved by the operator, and runs once however often it is re-issued", () => {
  const { call, operator } = example();
  const note = ["ticket=42", "body=Called twice."];
  const waiting = result(call("internal_note", ...note), OK);
  assert.equal(waiting.status, "awaiting_approval");
  assert.match(operator("approve", waiting.proposal_id, "--as", "ops-lead"), /approved/);
  const first = result(call("internal_note", ...note), OK);
  const again = result(call("internal_note", ...note), OK);
  assert.equal(first.status, "executed");
  assert.deepEqual(again, first);
  const lane = JSON.parse(operator("show", waiting.proposal_id));
  assert.equal(lane.state, "executed");
  assert.equal(lane.attempts, 1);
});

function gateway() {
  const { dir, share } = shareWithHello("cairnloop-inspector-gateway-");
  const config = join(dir, "gateway.toml");
  writeFileSync(config, localGatewayConfig(share, { node: process.execPath }));
  const store = join(dir, "lanes.db");
  const served = [GATEWAY, "serve", config, "--store", store];
  const call = (tool, ...pairs) =>
    inspector(...served, "--method", "tools/call", "--tool-name", tool, "--tool-arg", ...pairs);
  const operator = (...words) =>
    execFileSync(GATEWAY, ["operator", "--store", store, ...words], { encoding: "utf8" });
  return { dir, share, served, call, operator };
}

test("the gateway lists only what its configuration allows, and the listing is portable", () => {
  assert.ok(existsSync(FILESYSTEM), "run `npm ci` in tests/mcp-ts first");
  const { served } = gateway();
  const listed = inspector(...served, "--method", "tools/list", "--strict");
  assert.equal(listed.status, OK, `${listed.stdout}\n${listed.stderr}`);
  const names = listed.output.tools.map((tool) => tool.name).sort();
  assert.deepEqual(names, ["fs_read_text_file", "fs_write_file"]);
  // A forwarded tool's output is the upstream's `CallToolResult`, and its schema says so.
  const read = listed.output.tools.find((tool) => tool.name === "fs_read_text_file");
  assert.equal(read.outputSchema.properties.output.type, "object");
});

test("through the gateway a read runs at once, and a write runs once after its approval", () => {
  const { share, call, operator } = gateway();
  const read = result(call("fs_read_text_file", `path=${join(share, "hello.txt")}`), OK);
  assert.equal(read.status, "executed");
  assert.equal(read.output.content[0].text, "hello");

  const target = join(share, "new.txt");
  const write = ["fs_write_file", `path=${target}`, "content=written once"];
  const waiting = result(call(...write), OK);
  assert.equal(waiting.status, "awaiting_approval");
  assert.equal(existsSync(target), false, "nothing is written before the approval");
  assert.match(operator("approve", waiting.proposal_id, "--as", "ops-lead"), /approved/);
  assert.equal(result(call(...write), OK).status, "executed");
  assert.equal(readFileSync(target, "utf8"), "written once");
  // Re-issued after it ran: the recorded result, and the upstream is not called again.
  writeFileSync(target, "changed since");
  assert.equal(result(call(...write), OK).status, "executed");
  assert.equal(readFileSync(target, "utf8"), "changed since");
  const lane = JSON.parse(operator("show", waiting.proposal_id));
  assert.equal(lane.attempts, 1);
  assert.equal(lane.decided_by, "ops-lead");
});

/** A free loopback port. */
const freePort = () =>
  new Promise((done) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => done(port));
    });
  });

/** Resolves once `child` says it is serving (and kills it when the tests end). */
function serving(child, what) {
  after(() => child.kill());
  return new Promise((ready, failed) => {
    let said = "";
    child.stderr.on("data", (chunk) => {
      said += chunk;
      if (said.includes("serving")) ready();
    });
    child.on("exit", (code) => failed(new Error(`${what} exited ${code}: ${said}`)));
  });
}

/** examples/remote_mcp on a free loopback port, and a way to mint its tokens. */
async function remote() {
  const dir = mkdtempSync(join(tmpdir(), "cairnloop-inspector-remote-"));
  const keys = join(dir, "keys");
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const server = spawn(
    REMOTE,
    ["serve", "--address", address, "--keys", keys, "--store", join(dir, "approvals.db")],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  await serving(server, "remote_mcp");
  const mint = (...words) =>
    execFileSync(REMOTE, ["mint", "--keys", keys, "--address", address, ...words], { encoding: "utf8" }).trim();
  return { url: `http://${address}/mcp`, mint };
}

test("over Streamable HTTP a bearer token lists and calls; without one the Inspector is told to sign in", async () => {
  const { url, mint } = await remote();
  const token = mint("--sub", "alice", "--scope", "orders:read tickets:write", "--account", "acme");
  const http = ["--server-url", url, "--header", `Authorization: Bearer ${token}`];
  const listed = inspector(...http, "--method", "tools/list", "--strict");
  assert.equal(listed.status, OK, `${listed.stdout}\n${listed.stderr}`);
  assert.deepEqual(listed.output.tools.map((tool) => tool.name).sort(), ["internal_note", "lookup_order"]);
  const call = inspector(...http, "--method", "tools/call", "--tool-name", "lookup_order", "--tool-arg", "order=1001");
  assert.deepEqual(result(call, OK), { status: "executed", output: "shipped" });

  // No token: the 401 and its metadata make the Inspector want an OAuth sign-in, which a
  // run without a terminal cannot do. It never lists a tool.
  const refused = inspector("--server-url", url, "--method", "tools/list");
  assert.equal(refused.status, AUTH_REQUIRED, `${refused.stdout}\n${refused.stderr}`);
  assert.equal(refused.output?.tools, undefined);
});

test("the gateway over Streamable HTTP: a token's scopes decide what the Inspector lists and calls", async () => {
  const { dir, share } = gateway();
  const issuer = "https://auth.example.test";
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwks = join(dir, "jwks.json");
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...publicKey.export({ format: "jwk" }), kid: "k1", alg: "EdDSA" }] }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const config = join(dir, "gateway-http.toml");
  writeFileSync(config, `
[gateway]
hold_secs = 0

[gateway.http]
address = "127.0.0.1:${port}"
issuer = "${issuer}"
jwks_file = ${JSON.stringify(jwks)}

${filesystemUpstream(share, process.execPath)}`);
  const served = spawn(GATEWAY, ["serve", config, "--store", join(dir, "http.db"), "--http"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  await serving(served, "the gateway");
  const token = (scope) => {
    const now = Math.floor(Date.now() / 1000);
    const part = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const signed = `${part({ alg: "EdDSA", typ: "JWT", kid: "k1" })}.${part({ iss: issuer, aud: url, sub: "alice", scope, iat: now, exp: now + 300 })}`;
    return `${signed}.${sign(null, Buffer.from(signed), privateKey).toString("base64url")}`;
  };
  const as = (scope) => ["--server-url", url, "--header", `Authorization: Bearer ${token(scope)}`];

  const reader = inspector(...as("fs:read"), "--method", "tools/list", "--strict");
  assert.equal(reader.status, OK, `${reader.stdout}\n${reader.stderr}`);
  assert.deepEqual(reader.output.tools.map((tool) => tool.name), ["fs_read_text_file"]);
  const read = inspector(...as("fs:read"), "--method", "tools/call", "--tool-name", "fs_read_text_file",
    "--tool-arg", `path=${join(share, "hello.txt")}`);
  assert.equal(result(read, OK).output.content[0].text, "hello");
  const writer = inspector(...as("fs:read fs:write"), "--method", "tools/list");
  assert.deepEqual(writer.output.tools.map((tool) => tool.name).sort(), ["fs_read_text_file", "fs_write_file"]);

  // A token signed by another key is refused; the Inspector never lists a tool.
  const { privateKey: other } = generateKeyPairSync("ed25519");
  const signed = token("fs:read").split(".").slice(0, 2).join(".");
  const forged = `${signed}.${sign(null, Buffer.from(signed), other).toString("base64url")}`;
  const refused = inspector("--server-url", url, "--header", `Authorization: Bearer ${forged}`, "--method", "tools/list");
  assert.notEqual(refused.status, OK, refused.stdout);
  assert.equal(refused.output?.tools, undefined);
});
