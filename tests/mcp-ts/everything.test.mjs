// End to end: the official TypeScript MCP SDK drives cairnloop-gateway over stdio, in
// front of the official "everything" MCP server (a test server with many kinds of tool,
// from npm, not written here).
//
// Run by .ci/run (`npm ci && npm test` here) after the gateway is built; the binary is
// taken from $CAIRNLOOP_GATEWAY (default: target/debug/cairnloop-gateway).

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
const GATEWAY = process.env.CAIRNLOOP_GATEWAY ?? join(ROOT, "target/debug/cairnloop-gateway");
const EVERYTHING = join(HERE, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

// Four of its tools named; everything else it lists (reading the environment, asking the
// client to sample or elicit, ...) stays hidden because no default tier is set.
const CONFIG = `
[gateway]
local_actor = "agent"
local_scopes = ["demo:read"]
hold_secs = 0

[upstreams.ev]
command = "node"
args = [${JSON.stringify(EVERYTHING)}, "stdio"]

[tools.ev.echo]
tier = "read_only"
scopes = ["demo:read"]

[tools.ev.get-sum]
tier = "read_only"

[tools.ev.get-tiny-image]
tier = "read_only"

[tools.ev.get-structured-content]
tier = "high_write"
preview = "Weather for {location}"
`;

async function connect(config = CONFIG, env = process.env) {
  const dir = mkdtempSync(join(tmpdir(), "cairnloop-gateway-everything-"));
  const path = join(dir, "gateway.toml");
  writeFileSync(path, config);
  const client = new Client({ name: "cairnloop-gateway-everything", version: "1.0.0" });
  await client.connect(new StdioClientTransport({
    command: GATEWAY,
    args: ["serve", path, "--store", join(dir, "lanes.db")],
    env,
    stderr: "ignore",
  }));
  return client;
}

/** The same server over Streamable HTTP on a free port, until the tests end. */
async function everythingOverHttp() {
  const port = await new Promise((done) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => done(port));
    });
  });
  const server = spawn("node", [EVERYTHING, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  after(() => server.kill());
  await new Promise((ready, failed) => {
    let said = "";
    server.stderr.on("data", (chunk) => {
      said += chunk;
      if (said.includes("listening")) ready();
    });
    server.on("exit", (code) => failed(new Error(`the everything server exited ${code}: ${said}`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

/** A relay in front of `target` that notes each request's Authorization header. */
async function relay(target, seen) {
  const upstream = new URL(target);
  const server = createHttpServer((req, res) => {
    seen.push(req.headers.authorization ?? null);
    const forwarded = httpRequest({
      host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers,
    }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    req.pipe(forwarded);
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  after(() => server.close());
  return `http://127.0.0.1:${server.address().port}/mcp`;
}

test("only the configured tools are offered, under names mapped to the crate's rule", async () => {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    // `-` is the escape of the mapping, so a `-` in a listed name is written `-2d`.
    assert.deepEqual(tools.map((tool) => tool.name).sort(),
      ["ev_echo", "ev_get-2dstructured-2dcontent", "ev_get-2dsum", "ev_get-2dtiny-2dimage"]);
    // A tool it lists but the configuration does not name is hidden and refused.
    await assert.rejects(client.callTool({ name: "ev_get-2denv", arguments: {} }),
      (error) => error.code === -32602);
  } finally {
    await client.close();
  }
});

test("reads run and come back as the server wrote them: text, and an image as an image", async () => {
  const client = await connect();
  try {
    await client.listTools(); // so the SDK validates every result against the listing
    const echoed = await client.callTool({ name: "ev_echo", arguments: { message: "hi" } });
    assert.equal(echoed.isError, false);
    assert.equal(echoed.structuredContent.status, "executed");
    assert.deepEqual(echoed.content, [{ type: "text", text: "Echo: hi" }]);

    const sum = await client.callTool({ name: "ev_get-2dsum", arguments: { a: 2, b: 3 } });
    assert.deepEqual(sum.content, [{ type: "text", text: "The sum of 2 and 3 is 5." }]);

    const image = await client.callTool({ name: "ev_get-2dtiny-2dimage", arguments: {} });
    assert.equal(image.isError, false);
    const kinds = image.content.map((block) => block.type);
    assert.ok(kinds.includes("image"), `content kinds: ${kinds}`);
    const png = image.content.find((block) => block.type === "image");
    assert.equal(png.mimeType, "image/png");
    assert.ok(Buffer.from(png.data, "base64").subarray(1, 4).toString() === "PNG");
  } finally {
    await client.close();
  }
});

test("the server's own schema is checked before anything is forwarded, every field error at once", async () => {
  const client = await connect();
  try {
    await client.listTools();
    const bad = await client.callTool({ name: "ev_get-2dsum", arguments: { a: "two" } });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent.status, "blocked");
    assert.deepEqual(bad.structuredContent.errors.map((e) => [e.path, e.code]).sort(),
      [["/a", "invalid_type"], ["/b", "required"]]);
  } finally {
    await client.close();
  }
});

test("a high-write tool waits for a person, with its preview (arguments written as JSON)", async () => {
  const client = await connect();
  try {
    await client.listTools();
    const waiting = await client.callTool({ name: "ev_get-2dstructured-2dcontent", arguments: { location: "New York" } });
    assert.equal(waiting.isError, false);
    assert.equal(waiting.structuredContent.status, "awaiting_approval");
    assert.equal(waiting.structuredContent.preview, 'Weather for "New York"');
  } finally {
    await client.close();
  }
});

test("an upstream reached by url: its tools governed the same way, the credential from the environment", async () => {
  const seen = [];
  const url = await relay(await everythingOverHttp(), seen);
  const config = CONFIG.replace(
    /\[upstreams\.ev\][\s\S]*?(?=\[tools\.ev\.echo\])/,
    `[upstreams.ev]\nurl = "${url}"\ntoken_env = "EVERYTHING_TOKEN"\n\n`,
  );
  assert.match(config, /url = /);
  // Without the variable the gateway refuses to start, naming it.
  const dir = mkdtempSync(join(tmpdir(), "cairnloop-gateway-everything-url-"));
  writeFileSync(join(dir, "gateway.toml"), config);
  const { EVERYTHING_TOKEN: _, ...without } = process.env;
  const missing = spawnSync(GATEWAY, ["serve", join(dir, "gateway.toml"), "--store", join(dir, "lanes.db")], {
    encoding: "utf8", env: without, input: "",
  });
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /EVERYTHING_TOKEN holds no token/);

  const client = await connect(config, { ...process.env, EVERYTHING_TOKEN: "upstream-secret" });
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(),
      ["ev_echo", "ev_get-2dstructured-2dcontent", "ev_get-2dsum", "ev_get-2dtiny-2dimage"]);
    const echoed = await client.callTool({ name: "ev_echo", arguments: { message: "over http" } });
    assert.deepEqual(echoed.content, [{ type: "text", text: "Echo: over http" }]);
    const waiting = await client.callTool({ name: "ev_get-2dstructured-2dcontent", arguments: { location: "Chicago" } });
    assert.equal(waiting.structuredContent.status, "awaiting_approval");
  } finally {
    await client.close();
  }
  // Every request the gateway made carried its own credential for the upstream.
  assert.ok(seen.length >= 3, `requests: ${seen.length}`);
  assert.ok(seen.every((header) => header === "Bearer upstream-secret"), JSON.stringify(seen));
});
