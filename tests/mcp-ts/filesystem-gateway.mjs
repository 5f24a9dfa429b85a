// What every end-to-end test of cairnloop-gateway in front of the official filesystem
// server sets up: a share holding `hello.txt`, and the configuration's upstream table with
// the tool declarations the gateway's Rust tests use too. Node's own modules only, so the
// Inspector's package (tests/inspector) imports it as well.

import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
/** The filesystem server `npm ci` installed here. */
export const FILESYSTEM = join(HERE, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const TOOLS = join(ROOT, "gateway/tests/configs/filesystem-tools.toml");

/** A fresh folder (named from `prefix`) and, in it, a share holding `hello.txt` ("hello"). */
export function shareWithHello(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const share = join(dir, "share");
  mkdirSync(share);
  writeFileSync(join(share, "hello.txt"), "hello");
  return { dir, share: realpathSync(share) };
}

/** `[upstreams.fs]`, the filesystem server on `share` started with `node`, and its tools. */
export function filesystemUpstream(share, node = "node") {
  return `[upstreams.fs]
command = ${JSON.stringify(node)}
args = [${JSON.stringify(FILESYSTEM)}, ${JSON.stringify(share)}]

${readFileSync(TOOLS, "utf8")}`;
}

/**
 * A whole configuration: the local actor `agent` with `fs:read` and `fs:write`, a call that
 * waits for a person held open `hold` seconds (none by default: answered at once), any
 * `extra` lines of `[gateway]`, and the filesystem upstream on `share` (started with `node`).
 */
export function localGatewayConfig(share, { node = "node", extra = "", hold = 0 } = {}) {
  return `
[gateway]
local_actor = "agent"
local_scopes = ["fs:read", "fs:write"]
hold_secs = ${hold}
${extra}
${filesystemUpstream(share, node)}`;
}

/** The gateway under test: $CAIRNLOOP_GATEWAY, or the workspace's debug build. */
export const GATEWAY = process.env.CAIRNLOOP_GATEWAY ?? join(ROOT, "target/debug/cairnloop-gateway");

/**
 * A share (in a folder named from `prefix`), a configuration in front of the filesystem
 * server with `extra` lines of `[gateway]`, and a lane store: `{ share, config, store }`.
 */
export function localSetup(prefix, extra = "") {
  const { dir, share } = shareWithHello(prefix);
  const config = join(dir, "gateway.toml");
  writeFileSync(config, localGatewayConfig(share, { extra }));
  return { share, config, store: join(dir, "lanes.db") };
}
