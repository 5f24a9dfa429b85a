// End to end: the official TypeScript MCP SDK drives cairnloop-gateway over stdio, in
// front of the official "everything" MCP server (a test server with many kinds of tool,
// from npm, not written here).
//
// Run by .ci/run (`npm ci && npm test` here) after the gateway is built; the binary is
// taken from $CAIRNLOOP_GATEWAY (default: target/debug/cairnloop-gateway).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
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

async function connect() {
  const dir = mkdtempSync(join(tmpdir(), "cairnloop-gateway-everything-"));
  const config = join(dir, "gateway.toml");
  writeFileSync(config, CONFIG);
  const client = new Client({ name: "cairnloop-gateway-everything", version: "1.0.0" });
  await client.connect(new StdioClientTransport({
    command: GATEWAY,
    args: ["serve", config, "--store", join(dir, "lanes.db")],
    stderr: "ignore",
  }));
  return client;
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
