// The waiting call as an MCP task, driven by the official requester of the Tasks extension
// (`@modelcontextprotocol/ext-tasks` over `@modelcontextprotocol/client` 2.x, protocol
// 2026-07-28) against cairnloop-gateway on stdio, in front of the npm filesystem server:
// `write_file` answers with a task; approved by another process (`operator approve`), the
// task completes with the upstream's result and the file is written once; rejected,
// expired and cancelled tasks end as the extension says and nothing is written. Every
// task object the gateway sends is checked against the extension's published Zod schemas.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

import { GATEWAY, localSetup } from "./filesystem-gateway.mjs";
import { stdioTaskSession } from "./tasks-requester.mjs";

const setup = (extra = "") => localSetup("cairnloop-gateway-tasks-", extra);

const operator = (store, ...words) =>
  execFileSync(GATEWAY, ["operator", "--store", store, ...words], { encoding: "utf8" });

/** The id of the one call that waits in `store`, once it is there. */
async function waiting(store) {
  for (let tries = 0; tries < 100; tries++) {
    const listed = operator(store, "list").trim();
    if (listed !== "") {
      const lines = listed.split("\n");
      assert.equal(lines.length, 1, listed);
      return lines[0].split(/\s+/)[0];
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error("nothing waits");
}

async function withSession(paths, body) {
  const requester = await stdioTaskSession(GATEWAY, ["serve", paths.config, "--store", paths.store]);
  try {
    await body(requester);
    assert.deepEqual(requester.invalid(), [], "every task object conforms to the extension's schemas");
  } finally {
    await requester.close();
  }
}

test("a write answers with a task; approved by another process, the task completes with the upstream's result and the file is written once", async () => {
  const paths = setup();
  const target = join(paths.share, "approved.txt");
  await withSession(paths, async ({ session, answers }) => {
    const execution = await session.callTool("fs_write_file", { path: target, content: "approved" });
    assert.equal(execution.kind, "task");
    assert.equal(existsSync(target), false, "nothing written before the approval");
    const created = answers[0].response.result;
    assert.equal(created.resultType, "task");
    assert.match(created.statusMessage, /low_write/);

    const id = await waiting(paths.store);
    assert.match(operator(paths.store, "approve", id, "--as", "ops-lead"), /approved/);
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, "completed");
    const result = resultFromTaskOutcome(outcome);
    assert.equal(result.isError, false);
    assert.match(JSON.stringify(result.content), /Successfully wrote/);
    assert.equal(readFileSync(target, "utf8"), "approved");
    assert.equal(JSON.parse(operator(paths.store, "show", id)).state, "executed");
    assert.equal(JSON.parse(operator(paths.store, "show", id)).attempts, 1, "written once");
  });
});

/** A write of `file` that waits as a task, then `body({ execution, id, store, target })`;
 * `extra` is added to the gateway's `[gateway]` table. */
async function writeWaiting(file, body, extra = "") {
  const paths = setup(extra);
  const target = join(paths.share, file);
  await withSession(paths, async ({ session }) => {
    const execution = await session.callTool("fs_write_file", { path: target, content: "no" });
    const id = await waiting(paths.store);
    await body({ execution, id, store: paths.store, target });
  });
}

test("a rejected write completes its task as a tool error and writes nothing", async () => {
  await writeWaiting("rejected.txt", async ({ execution, id, store, target }) => {
    operator(store, "reject", id, "--as", "ops-lead", "--reason", "not this file");
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, "completed");
    const result = resultFromTaskOutcome(outcome);
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent.status, "rejected");
    assert.match(JSON.stringify(result), /not this file/);
    assert.equal(existsSync(target), false);
  });
});

test("a cancelled task withdraws its call: it can no longer be approved and nothing is written", async () => {
  await writeWaiting("cancelled.txt", async ({ execution, id, store, target }) => {
    await execution.cancel();
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, "cancelled");
    const lane = JSON.parse(operator(store, "show", id));
    assert.equal(lane.state, "withdrawn");
    assert.equal(lane.decided_by, "agent");
    assert.throws(() => operator(store, "approve", id, "--as", "ops-lead"));
    assert.equal(existsSync(target), false);
  });
});

test("an expired write completes its task as a tool error and can no longer be approved", async () => {
  await writeWaiting("expired.txt", async ({ execution, id, store, target }) => {
    // Nobody decides within the two seconds the call waits.
    await new Promise((done) => setTimeout(done, 2500));
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, "completed");
    const result = resultFromTaskOutcome(outcome);
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent.status, "expired");
    assert.equal(JSON.parse(operator(store, "show", id)).state, "expired");
    assert.throws(() => operator(store, "approve", id, "--as", "ops-lead"));
    assert.equal(existsSync(target), false);
  }, "approval_ttl_secs = 2");
});
