#!/usr/bin/env python3
"""One approval through cairnloop-gateway, recorded frame by frame.

The gateway runs in front of the official filesystem MCP server (from npm), as a desktop
client would start it; this script speaks MCP to it over stdio, and runs the operator
command from another process:

    python3 scripts/gateway_transcript.py [GATEWAY] [FILESYSTEM_SERVER_SCRIPT]

(defaults: target/debug/cairnloop-gateway and the server `npm ci` puts in tests/mcp-ts).
It prints every frame sent (->) and received (<-), and every operator command with its
output, then checks what a user relies on: the write waits, the proposer cannot approve
it, the approved call writes the file once, a re-issue replays the recorded result. It
exits non-zero when any of that does not hold.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GATEWAY = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/debug/cairnloop-gateway")
SERVER = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    ROOT, "tests/mcp-ts/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
TOOLS = os.path.join(ROOT, "gateway/tests/configs/filesystem-tools.toml")


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def main():
    work = tempfile.mkdtemp(prefix="cairnloop-transcript-")
    share = os.path.realpath(os.path.join(work, "share"))
    os.mkdir(share)
    config = os.path.join(work, "gateway.toml")
    store = os.path.join(work, "lanes.db")
    with open(TOOLS, encoding="utf-8") as tools, open(config, "w", encoding="utf-8") as out:
        out.write(
            '[gateway]\nlocal_actor = "alice"\nlocal_scopes = ["fs:read", "fs:write"]\nhold_secs = 0\n\n'
            f'[upstreams.fs]\ncommand = "node"\nargs = [{json.dumps(SERVER)}, {json.dumps(share)}]\n\n'
            + tools.read())
    print(f"$ cairnloop-gateway serve gateway.toml --store lanes.db   # the share: {share}")
    gateway = subprocess.Popen([GATEWAY, "serve", config, "--store", store],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    next_id = [0]

    def send(method, params, notification=False):
        frame = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notification:
            next_id[0] += 1
            frame["id"] = next_id[0]
        line = json.dumps(frame)
        print(f"-> {line}")
        gateway.stdin.write(line + "\n")
        gateway.stdin.flush()
        if notification:
            return None
        answer = gateway.stdout.readline()
        check(answer, f"the gateway answered {method}")
        print(f"<- {answer.strip()}")
        return json.loads(answer)

    def operator(*words, ok=True):
        shown = " ".join(words)
        print(f"$ cairnloop-gateway operator --store lanes.db {shown}")
        done = subprocess.run([GATEWAY, "operator", "--store", store, *words],
                              capture_output=True, text=True)
        for line in (done.stdout + done.stderr).splitlines():
            print(f"  {line}")
        check((done.returncode == 0) == ok, f"operator {shown} exits {'0' if ok else 'non-zero'}")
        return done.stdout

    try:
        send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "transcript", "version": "1"}})
        send("notifications/initialized", {}, notification=True)
        target = os.path.join(share, "notes.txt")
        call = {"name": "fs_write_file", "arguments": {"path": target, "content": "approved once"}}
        waiting = send("tools/call", call)["result"]
        check(waiting["structuredContent"]["status"] == "awaiting_approval", "the write waits")
        check(not os.path.exists(target), "nothing is written before the approval")
        proposal = waiting["structuredContent"]["proposal_id"]
        check(proposal in operator("list"), "the operator sees the proposal")
        operator("approve", proposal, "--as", "alice", ok=False)
        operator("approve", proposal, "--as", "ops-lead")
        ran = send("tools/call", call)["result"]
        check(ran["structuredContent"]["status"] == "executed", "the approved call runs")
        with open(target, encoding="utf-8") as written:
            check(written.read() == "approved once", "the file holds what was approved")
        os.remove(target)
        again = send("tools/call", call)["result"]
        check(again["structuredContent"]["status"] == "executed", "a re-issue replays the result")
        check(not os.path.exists(target), "a re-issue does not write again")
        print(f"# {target}: written once (removed, then the re-issue did not write it again)")
    finally:
        gateway.stdin.close()
        gateway.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
