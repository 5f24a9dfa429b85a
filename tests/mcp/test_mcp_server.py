"""End to end: the official Python MCP SDK drives examples/mcp_server over stdio.

Run by .ci/run after `cargo build --features rmcp --example mcp_server`; the server binary
is taken from $CAIRNLOOP_MCP_SERVER (default: target/debug/examples/mcp_server).
"""

import asyncio
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from mcp import Client, ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parents[2]
SERVER = os.environ.get("CAIRNLOOP_MCP_SERVER", str(ROOT / "target/debug/examples/mcp_server"))

AGENT = ["--actor", "agent-7", "--account", "acme", "--scopes", "orders:read,tickets:write"]
ADMIN = [
    "--actor", "admin-1", "--account", "acme",
    "--scopes", "orders:read,tickets:write,refunds:write,customers:delete",
]


# The person at the client may approve low-write calls through the client's prompt.
TRUSTING = [*AGENT, "--client-approver", "user:alice", "--client-approves", "low_write"]


def fresh_store():
    return f"{tempfile.mkdtemp(prefix='cairnloop-mcp-')}/approvals.db"


def session(args, steps, store=None, elicitation=None):
    """Starts the server with `args` on `store` (default: a fresh one), initializes (with
    an approval prompt answered by `elicitation`, when given), and runs `steps(session)`."""

    async def run():
        path = store or fresh_store()
        params = StdioServerParameters(command=SERVER, args=[*args, "--store", path])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicitation) as client:
                init = await client.initialize()
                assert init.server_info.name == "cairnloop"
                return await steps(client)

    return asyncio.run(run())


def listed(args):
    async def steps(client):
        return {tool.name: tool for tool in (await client.list_tools()).tools}

    return session(args, steps)


def test_each_actor_sees_exactly_its_tools():
    assert sorted(listed(AGENT)) == ["internal_note", "lookup_order"]
    # delete_customer is always blocked: visible means callable, so no one is shown it.
    assert sorted(listed(ADMIN)) == ["internal_note", "lookup_order", "refund_order"]
    # No scopes and no account: every tool needs a scope (and lookup_order an account).
    assert listed(["--actor", "guest"]) == {}
    # Wildcards grant nothing.
    assert listed(["--actor", "w", "--account", "acme", "--scopes", "*,all,orders:*"]) == {}


def test_annotations_are_explicit_and_honest():
    tools = listed(ADMIN)
    expected = {
        # name: (readOnly, destructive, idempotent, openWorld, tier, mode)
        "lookup_order": (True, False, False, True, "read_only", "auto"),
        "internal_note": (False, False, False, True, "low_write", "requires_approval"),
        "refund_order": (False, True, False, True, "high_write", "requires_approval"),
    }
    for name, (read_only, destructive, idempotent, open_world, tier, mode) in expected.items():
        hints = tools[name].annotations
        assert (hints.read_only_hint, hints.destructive_hint) == (read_only, destructive), name
        assert (hints.idempotent_hint, hints.open_world_hint) == (idempotent, open_world), name
        assert tools[name].meta == {"io.cairnloop/risk_tier": tier, "io.cairnloop/approval_mode": mode}
        schema = tools[name].input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
    assert sorted(tools["refund_order"].input_schema["required"]) == ["cents", "order", "reason"]


def calls(args, *requests, store=None, elicitation=None):
    async def steps(client):
        results = []
        for name, arguments in requests:
            try:
                results.append(await client.call_tool(name, arguments))
            except MCPError as error:
                results.append(error)
        return results

    return session(args, steps, store, elicitation)


def answering(action, content=None, seen=None):
    """An approval prompt handler that answers `action` (and records each prompt)."""

    async def answer(context, params):
        if seen is not None:
            seen.append(params.message)
        return types.ElicitResult(action=action, content=content)

    return answer


def raw(args, *lines, store=None):
    """Sends raw lines to the server after an initialize handshake, and reads one answer
    per line (stdin stays open until then: closing it ends the session)."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}
    server = subprocess.Popen(
        [SERVER, *args, "--store", store or fresh_store()],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        server.stdin.write("\n".join([json.dumps(init), *lines]) + "\n")
        server.stdin.flush()
        answers = [json.loads(server.stdout.readline()) for _ in range(len(lines) + 1)]
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    assert answers[0]["id"] == 0, answers
    return answers[1:]


def operator(store, *words):
    """Runs the example's operator command on `store`; its standard output."""
    done = subprocess.run(
        [SERVER, "operator", "--store", store, *words], capture_output=True, text=True, check=True
    )
    return done.stdout


def test_calls_execute_await_approval_or_block():
    auto, note, refund, delete, unknown, bad = calls(
        ADMIN,
        ("lookup_order", {"order": 1001}),
        ("internal_note", {"ticket": 42, "body": "Called twice.", "api_token": "tok-123"}),
        ("refund_order", {"order": 1001, "cents": 1250, "reason": "damaged"}),
        ("delete_customer", {"customer": 9}),
        ("drop_tables", {}),
        ("lookup_order", {"order": "1001", "force": True}),
    )
    # Auto: the tool ran.
    assert auto.is_error is False
    assert auto.content[0].text == '"shipped"'

    # Approval: nothing ran; the proposal and its preview came back.
    for result in (note, refund):
        assert result.is_error is False
        assert result.structured_content["status"] == "awaiting_approval"
        assert re.fullmatch(r"[0-9a-f]{64}", result.structured_content["proposal_id"])
        assert result.structured_content["state"] == "pending"
    assert "api_token: ******" in note.structured_content["preview"]
    assert "tok-123" not in note.content[0].text
    assert refund.structured_content["preview"] == "Refund 12.50 EUR for order 1001 (Damaged)"

    # Destructive: blocked, as a tool error the model can read.
    assert delete.is_error is True
    assert delete.structured_content["code"] == "always_blocked"

    # Unknown tool: the protocol error of the spec.
    assert isinstance(unknown, MCPError)
    assert unknown.error.code == -32602
    assert "Unknown tool" in unknown.error.message

    # The result is the envelope the tool's outputSchema describes.
    assert auto.structured_content == {"status": "executed", "output": "shipped"}

    # Bad arguments: every field error, with paths.
    assert bad.is_error is True
    assert bad.structured_content["code"] == "needs_input"
    errors = {(e["path"], e["code"]) for e in bad.structured_content["errors"]}
    assert errors == {("/force", "unknown_field"), ("/order", "invalid_type")}


def test_a_tool_the_actor_cannot_see_is_blocked_when_called():
    (refund,) = calls(AGENT, ("refund_order", {"order": 1, "cents": 5, "reason": "late"}))
    assert refund.is_error is True
    assert refund.structured_content["code"] == "scope_missing"
    assert refund.structured_content["reason"] == "missing scope: refunds:write"


def test_the_same_call_twice_is_one_proposal():
    first, second = calls(
        ADMIN,
        ("refund_order", {"order": 7, "cents": 100, "reason": "late"}),
        ("refund_order", {"reason": "late", "cents": 100, "order": 7}),
    )
    assert first.structured_content["proposal_id"] == second.structured_content["proposal_id"]


def test_out_of_band_approval_runs_the_reissued_call_once_then_gives_back_the_outcome():
    store = f"{tempfile.mkdtemp(prefix='cairnloop-mcp-')}/approvals.db"
    note = ("internal_note", {"ticket": 42, "body": "Called twice."})
    # No elicitation: the call stays pending in the store, and the model is told so.
    (first,) = calls(AGENT, note, store=store)
    assert first.is_error is False
    assert first.structured_content["status"] == "awaiting_approval"
    proposal = first.structured_content["proposal_id"]
    assert proposal in operator(store, "list")
    # An operator approves it elsewhere, on the same store; the proposer cannot.
    refused = subprocess.run(
        [SERVER, "operator", "--store", store, "approve", proposal, "--as", "Agent-7"],
        capture_output=True, text=True,
    )
    assert refused.returncode != 0 and "cannot approve their own call" in refused.stderr
    assert operator(store, "approve", proposal, "--as", "ops-lead").split() == [proposal, "approved"]
    # The model makes the same call again, in a new session: it runs, once; and again:
    # the recorded outcome comes back, nothing runs.
    ran, again = calls(AGENT, note, note, store=store)
    assert ran.is_error is False and ran.content[0].text == "null"
    assert again.is_error is False and again.content[0].text == "null"
    shown = json.loads(operator(store, "show", proposal))
    assert (shown["state"], shown["attempts"], shown["decided_by"]) == ("executed", 1, "ops-lead")


def test_a_rejected_call_says_so_and_does_not_run():
    store = f"{tempfile.mkdtemp(prefix='cairnloop-mcp-')}/approvals.db"
    refund = ("refund_order", {"order": 9, "cents": 500, "reason": "late"})
    (first,) = calls(ADMIN, refund, store=store)
    proposal = first.structured_content["proposal_id"]
    operator(store, "reject", proposal, "--as", "ops-lead", "--reason", "above the limit")
    (again,) = calls(ADMIN, refund, store=store)
    assert again.is_error is True
    assert again.structured_content["status"] == "rejected"
    assert again.structured_content["reason"] == "above the limit"
    assert "rejected" in again.content[0].text


NOTE = ("internal_note", {"ticket": 42, "body": "Called twice."})


def test_an_accepted_prompt_approves_and_the_call_runs_in_the_same_call():
    store, seen = fresh_store(), []
    approve = answering("accept", {"decision": "approve"}, seen)
    (ran,) = calls(TRUSTING, NOTE, store=store, elicitation=approve)
    assert ran.is_error is False
    assert ran.structured_content == {"status": "executed", "output": None}
    # The prompt showed the preview, the tier, the scopes and the expiry.
    for shown in ("Add internal note", "low_write", "tickets:write", "Approval open until"):
        assert shown in seen[0]
    proposal = json.loads(operator(store, "show", re.search(r"Proposal: ([0-9a-f]{64})", seen[0])[1]))
    assert (proposal["state"], proposal["attempts"], proposal["decided_by"]) == ("executed", 1, "user:alice")


def test_a_declined_prompt_rejects_the_call():
    (rejected,) = calls(TRUSTING, NOTE, elicitation=answering("decline"))
    assert rejected.is_error is True
    assert rejected.structured_content["status"] == "rejected"
    assert rejected.structured_content["reason"] == "declined by user:alice in the MCP client"


def test_a_tier_the_person_is_not_trusted_for_is_never_prompted():
    seen = []
    refund = ("refund_order", {"order": 1, "cents": 5, "reason": "late"})
    admin_trusting = [*ADMIN, "--client-approver", "user:alice", "--client-approves", "low_write"]
    (waiting,) = calls(admin_trusting, refund, elicitation=answering("accept", {"decision": "approve"}, seen))
    assert waiting.structured_content["status"] == "awaiting_approval"
    assert seen == []


def test_the_multi_round_trip_form_carries_the_prompt_and_the_answer():
    """A client on protocol 2026-07-28: no request mid-call; the prompt comes back in the
    result, and the SDK retries with the answer and the server's opaque handle."""
    store, seen = fresh_store(), []

    async def run():
        params = StdioServerParameters(command=SERVER, args=[*TRUSTING, "--store", store])
        approve = answering("accept", {"decision": "approve"}, seen)
        async with Client(params, mode="2026-07-28", elicitation_callback=approve) as client:
            return await client.call_tool(*NOTE)

    ran = asyncio.run(run())
    assert ran.structured_content == {"status": "executed", "output": None}
    key = re.search(r"Proposal: ([0-9a-f]{64})", seen[0])[1]
    shown = json.loads(operator(store, "show", key))
    assert (shown["state"], shown["attempts"], shown["decided_by"]) == ("executed", 1, "user:alice")


def test_three_bad_fields_three_errors():
    (bad,) = calls(ADMIN, ("refund_order", {"order": "x", "cents": -5, "reason": "whenever"}))
    assert bad.is_error is True
    assert [e["path"] for e in bad.structured_content["errors"]] == ["/cents", "/order", "/reason"]
    for path in ("/cents", "/order", "/reason"):
        assert path in bad.content[0].text


def test_raw_frames_duplicate_keys_non_object_arguments_and_junk_are_answered():
    call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"refund_order","arguments":%s}}'
    answers = raw(
        ADMIN,
        call % (1, '{"order": 1, "cents": 1, "cents": 5000, "reason": "late"}'),
        call % (2, "[1, 2]"),
        "not json at all",
        '{"jsonrpc":"2.0","id":3,"method":"tools/list","params":"all"}',
    )
    # Answers come as they are ready, not in order: match them by id.
    by_id = {answer["id"]: answer for answer in answers}
    assert len(answers) == len(by_id) == 4
    duplicate, listed, junk, scalar = (by_id[key] for key in (1, 2, None, 3))
    assert duplicate["id"] == 1 and duplicate["result"]["isError"] is True
    assert duplicate["result"]["structuredContent"]["errors"][0]["code"] == "duplicate_key"
    assert (listed["id"], listed["error"]["code"]) == (2, -32602)
    assert (junk["id"], junk["error"]["code"]) == (None, -32700)
    assert (scalar["id"], scalar["error"]["code"]) == (3, -32602)


def test_help_and_bad_flags():
    done = subprocess.run([SERVER, "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--client-approver" in done.stdout
    done = subprocess.run([SERVER, "--actor", "a", "--bogus", "x"], capture_output=True, text=True)
    assert done.returncode == 2 and "invalid option '--bogus'" in done.stderr
    done = subprocess.run([SERVER, "--actor", "a", "--client-approves", "low_write"], capture_output=True, text=True)
    assert done.returncode == 2 and "needs --client-approver" in done.stderr
    done = subprocess.run([SERVER, "operator", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "approve" in done.stdout


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))


def test_a_proposal_is_told_to_a_webhook_once_with_a_signature_a_receiver_can_check():
    import hashlib
    import hmac
    import http.server
    import threading
    import time

    received = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.headers.get("Cairnloop-Signature"), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    hook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    secret = "a shared secret, known to the receiver"
    store = fresh_store()
    args = [
        *AGENT, "--store", store, "--notify", f"http://127.0.0.1:{hook.server_address[1]}/hook",
        "--console-url", "https://approvals.example.com",
    ]
    note = ("internal_note", {"ticket": 7, "body": "Tell someone."})

    async def run():
        env = {**os.environ, "CAIRNLOOP_WEBHOOK_SECRET": secret}
        params = StdioServerParameters(command=SERVER, args=args, env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                # The same call twice: one proposal, one notice.
                return [await client.call_tool(*note), await client.call_tool(*note)]

    first, second = asyncio.run(run())
    assert first.structured_content["status"] == "awaiting_approval"
    key = first.structured_content["proposal_id"]
    assert second.structured_content["proposal_id"] == key
    deadline = time.monotonic() + 20
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # room for a second notice, which must not come
    hook.shutdown()
    assert len(received) == 1, received
    signature, body = received[0]
    # Checked as a receiver in another language would: HMAC-SHA256 over "t.body".
    parts = dict(part.split("=", 1) for part in signature.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256)
    assert hmac.compare_digest(parts["v1"], expected.hexdigest())
    assert abs(time.time() - int(parts["t"])) < 300
    notice = json.loads(body)
    assert (notice["type"], notice["key"], notice["tool"]) == ("proposal.waiting", key, "internal_note")
    assert (notice["proposer"], notice["account"]) == ("agent-7", "acme")
    assert notice["link"] == f"https://approvals.example.com/proposals/{key}"
