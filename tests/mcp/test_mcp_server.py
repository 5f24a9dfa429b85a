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
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parents[2]
SERVER = os.environ.get("CAIRNLOOP_MCP_SERVER", str(ROOT / "target/debug/examples/mcp_server"))

AGENT = ["--actor", "agent-7", "--account", "acme", "--scopes", "orders:read,tickets:write"]
ADMIN = [
    "--actor", "admin-1", "--account", "acme",
    "--scopes", "orders:read,tickets:write,refunds:write,customers:delete",
]


def session(args, steps, store=None):
    """Starts the server with `args` on `store` (default: a fresh one), initializes, and
    runs `steps(session)`."""

    async def run():
        path = store or f"{tempfile.mkdtemp(prefix='cairnloop-mcp-')}/approvals.db"
        params = StdioServerParameters(command=SERVER, args=[*args, "--store", path])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
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


def calls(args, *requests, store=None):
    async def steps(client):
        results = []
        for name, arguments in requests:
            try:
                results.append(await client.call_tool(name, arguments))
            except MCPError as error:
                results.append(error)
        return results

    return session(args, steps, store)


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
    assert again.structured_content["status"] == "rejected"
    assert again.structured_content["reason"] == "above the limit"
    assert "rejected" in again.content[0].text


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
