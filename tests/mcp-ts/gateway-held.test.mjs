// A held call, for a client that follows no task: the official TypeScript SDK (1.x, protocol
// 2025-11-25, result validation on) calls `write_file` through cairnloop-gateway with
// `onprogress` and `resetTimeoutOnProgress`; the gateway holds the request open, tells the
// client who must decide, and once the operator approves from another process answers the
// same request with the upstream's result. A hold that ends gives the awaiting answer, and
// the call made again then runs once. With a quorum of two, the client is told of the first
// approval as it is given, and the second runs the call.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import { localGatewayConfig, shareWithHello } from "./filesystem-gateway.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
const GATEWAY = process.env.CAIRNLOOP_GATEWAY ?? join(ROOT, "target/debug/cairnloop-gateway");

async function gateway(hold, extra = "") {
  const { dir, share } = shareWithHello("cairnloop-gateway-held-");
  const config = join(dir, "gateway.toml");
  writeFileSync(config, localGatewayConfig(share, { hold, extra }));
  const store = join(dir, "lanes.db");
  const client = new Client({ name: "cairnloop-held-e2e", version: "1.0.0" });
  await client.connect(new StdioClientTransport({
    command: GATEWAY,
    args: ["serve", config, "--store", store],
    stderr: "ignore",
  }));
  return { client, share, store };
}

const operator = (store, ...words) =>
  execFileSync(GATEWAY, ["operator", "--store", store, ...words], { encoding: "utf8" });

async function waiting(store) {
  for (let tries = 0; tries < 200; tries++) {
    const listed = operator(store, "list").trim();
    if (listed !== "") return listed.split(/\s+/)[0];
    await new Promise((done) => setTimeout(done, 25));
  }
  throw new Error("nothing waits");
}

test("a held write is answered by the approval made meanwhile, in the same request, and written once", async () => {
  const { client, share, store } = await gateway(60);
  try {
    const target = join(share, "held.txt");
    const told = [];
    const answer = client.callTool(
      { name: "fs_write_file", arguments: { path: target, content: "held" } },
      undefined,
      { onprogress: (progress) => told.push(progress), resetTimeoutOnProgress: true, timeout: 20_000 },
    );
    const id = await waiting(store);
    assert.equal(existsSync(target), false, "nothing written before the approval");
    operator(store, "approve", id, "--as", "ops-lead");
    const result = await answer;
    assert.equal(result.isError, false);
    assert.equal(result.structuredContent.status, "executed");
    assert.match(JSON.stringify(result.content), /Successfully wrote/);
    assert.equal(readFileSync(target, "utf8"), "held");
    assert.ok(told.length >= 1, "told while it waited");
    assert.match(told[0].message, /low_write/);
    assert.equal(JSON.parse(operator(store, "show", id)).attempts, 1);
  } finally {
    await client.close();
  }
});

test("a hold that ends gives the awaiting answer; made again after the approval, the call runs once", async () => {
  const { client, share, store } = await gateway(1);
  try {
    const target = join(share, "later.txt");
    const call = { name: "fs_write_file", arguments: { path: target, content: "later" } };
    const first = await client.callTool(call);
    assert.equal(first.structuredContent.status, "awaiting_approval");
    const id = first.structuredContent.proposal_id;
    operator(store, "approve", id, "--as", "ops-lead");
    const again = await client.callTool(call);
    assert.equal(again.structuredContent.status, "executed");
    const third = await client.callTool(call);
    assert.equal(third.structuredContent.status, "executed");
    assert.equal(readFileSync(target, "utf8"), "later");
    assert.equal(JSON.parse(operator(store, "show", id)).attempts, 1, "ran once");
  } finally {
    await client.close();
  }
});

test("with a quorum of two, the held client is told of the first approval, and the second runs the write once", async () => {
  const { client, share, store } = await gateway(60, "quorum = { low_write = 2 }");
  try {
    const target = join(share, "quorum.txt");
    const told = [];
    let toldOfOne;
    const first = new Promise((done) => { toldOfOne = done; });
    const answer = client.callTool(
      { name: "fs_write_file", arguments: { path: target, content: "two yeses" } },
      undefined,
      {
        onprogress: (progress) => {
          told.push(progress);
          if (/1 of 2 approvals \(ops-lead\)/.test(progress.message)) toldOfOne();
        },
        resetTimeoutOnProgress: true,
        timeout: 20_000,
      },
    );
    const id = await waiting(store);
    operator(store, "approve", id, "--as", "ops-lead");
    await first;
    assert.equal(existsSync(target), false, "nothing written after one approval of two");
    assert.match(told[0].message, /0 of 2 approvals/);
    operator(store, "approve", id, "--as", "ops-second");
    const result = await answer;
    assert.equal(result.isError, false);
    assert.equal(result.structuredContent.status, "executed");
    assert.equal(readFileSync(target, "utf8"), "two yeses");
    const shown = JSON.parse(operator(store, "show", id));
    assert.equal(shown.attempts, 1);
    assert.deepEqual(shown.approvals.map((given) => given.by), ["ops-lead", "ops-second"]);
  } finally {
    await client.close();
  }
});
