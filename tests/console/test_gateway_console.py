"""The approval console served by cairnloop-gateway itself, in a real browser.

The gateway runs over stdio in front of the official filesystem MCP server (from npm),
as a desktop client starts it, with `[console]` in its configuration; this test speaks
MCP to it frame by frame while an operator decides in Chromium: the write waits, the
proposer is not offered an approval, another operator approves it, the re-issued call
writes the file once. Two replicas on one PostgreSQL database: a call taken as a task by
one is approved in the other's console, and the first runs it once.

Run by .ci/run under scripts/with_postgres.sh, with $CAIRNLOOP_GATEWAY (the built
binary), $CAIRNLOOP_FILESYSTEM_SERVER (the server `npm ci` put in tests/mcp-ts) and
$CAIRNLOOP_CHROMIUM.
"""

import asyncio
import concurrent.futures
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from playwright.sync_api import expect
from serving import free_port, wait_for_console

ROOT = Path(__file__).resolve().parents[2]
GATEWAY = os.environ.get("CAIRNLOOP_GATEWAY", str(ROOT / "target/debug/cairnloop-gateway"))
FILESYSTEM = os.environ.get(
    "CAIRNLOOP_FILESYSTEM_SERVER",
    str(ROOT / "tests/mcp-ts/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"),
)
TOOLS = ROOT / "gateway/tests/configs/filesystem-tools.toml"


# What a client on protocol 2026-07-28 sends with each request, declaring the Tasks
# extension: such a client follows a waiting call as a task and needs no `initialize`.
TASKS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "console-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
}


class Gateway:
    """The gateway over stdio, spoken to one JSON-RPC frame at a time: as a 2025-06-18
    client, or as a 2026-07-28 one that follows tasks (`tasks=True`)."""

    def __init__(self, config, store, env, tasks=False):
        self.process = subprocess.Popen(
            [GATEWAY, "serve", config, "--store", store],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, env=env,
        )
        self.next_id = 0
        if tasks:
            return
        self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "console-test", "version": "1"},
        })
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        self.process.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        frame = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(frame) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        assert answer["id"] == self.next_id, answer
        return answer["result"]

    def call(self, name, arguments):
        return self.request("tools/call", {"name": name, "arguments": arguments})["structuredContent"]

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def start_with_console(config, store, port, env, tasks=False):
    """The gateway serving `config` on `store`, and its console's address once it
    answers."""
    gateway = Gateway(str(config), store, env, tasks)
    base = f"http://127.0.0.1:{port}"
    wait_for_console(base, gateway.process, "the gateway's console")
    return gateway, base


OPERATORS = dict(CONSOLE_LEAD_TOKEN="lead-token-0123456789", CONSOLE_ALICE_TOKEN="alice-token-0123456789")


def filesystem_with_console(work, share, name="gateway"):
    """A configuration in `work`, named `name`, of a gateway in front of the filesystem
    server on `share`, with a console on a free port for the operators `ops-lead` and
    `alice` (the caller): its path and the console's port."""
    if not Path(FILESYSTEM).is_file():
        pytest.fail(f"no filesystem server at {FILESYSTEM}: run `npm ci` in tests/mcp-ts")
    port = free_port()
    config = work / f"{name}.toml"
    config.write_text(
        '[gateway]\nlocal_actor = "alice"\nlocal_scopes = ["fs:read", "fs:write"]\nhold_secs = 0\n\n'
        f'[upstreams.fs]\ncommand = "node"\nargs = [{json.dumps(FILESYSTEM)}, {json.dumps(str(share))}]\n\n'
        f'[console]\naddress = "127.0.0.1:{port}"\n\n'
        '[console.operators.ops-lead]\ntoken_env = "CONSOLE_LEAD_TOKEN"\n\n'
        '[console.operators.alice]\ntoken_env = "CONSOLE_ALICE_TOKEN"\n\n'
        + TOOLS.read_text()
    )
    return config, port


def shared_folder(prefix):
    work = Path(tempfile.mkdtemp(prefix=prefix))
    share = (work / "share").resolve()
    share.mkdir()
    return work, share


@pytest.fixture(scope="module")
def served():
    work, share = shared_folder("cairnloop-gateway-console-")
    config, port = filesystem_with_console(work, share)
    env = dict(os.environ, **OPERATORS)
    gateway, base = start_with_console(config, str(work / "lanes.db"), port, env)
    yield {"gateway": gateway, "base": base, "share": share}
    gateway.close()


def signed_in(browser, base, operator, secret):
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/login")
    page.fill("input[name=operator]", operator)
    page.fill("input[name=password]", secret)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/queue")
    return context, page


def test_a_write_through_the_gateway_is_approved_in_its_console_and_runs_once(served, browser):
    gateway, base, share = served["gateway"], served["base"], served["share"]
    target = share / "from-console.txt"
    write = ("fs_write_file", {"path": str(target), "content": "approved in the console"})
    waiting = gateway.call(*write)
    assert waiting["status"] == "awaiting_approval"
    proposal = waiting["proposal_id"]
    assert not target.exists()

    # The proposer signs in too: the proposal is shown, its approval is not offered.
    context, page = signed_in(browser, base, "alice", "alice-token-0123456789")
    page.goto(f"{base}/proposals/{proposal}")
    expect(page.locator("p.why-not")).to_contain_text("someone else must approve it")
    assert page.locator("button.approve").count() == 0
    context.close()

    context, page = signed_in(browser, base, "ops-lead", "lead-token-0123456789")
    expect(page.locator("#queue-rows tr")).to_have_count(1)
    page.click(f"a[href='/proposals/{proposal}']")
    expect(page.locator("main")).to_contain_text(str(target))
    page.click("button.approve")
    expect(page.locator("p.state")).to_have_text("approved")
    context.close()

    ran = gateway.call(*write)
    assert ran["status"] == "executed", ran
    assert target.read_text() == "approved in the console"
    target.write_text("sentinel")
    again = gateway.call(*write)
    assert again["status"] == "executed", again
    assert target.read_text() == "sentinel", "the approved call ran once"


HOSTILE = ROOT / "gateway/tests/hostile/upstream.py"


@pytest.fixture(scope="module")
def died():
    """The gateway's console over a lane whose high_write call the upstream died under
    (outcome unknown), with an operator who may decide only read_only and low_write."""
    work = Path(tempfile.mkdtemp(prefix="cairnloop-gateway-settle-"))
    port = free_port()
    config = work / "gateway.toml"
    config.write_text(
        '[gateway]\nlocal_actor = "alice"\nhold_secs = 0\n\n'
        f'[upstreams.bad]\ncommand = "python3"\nargs = [{json.dumps(str(HOSTILE))}, "exit", '
        f'{json.dumps(str(work / "calls.log"))}]\n\n'
        '[tools.bad.write]\ntier = "high_write"\n\n'
        f'[console]\naddress = "127.0.0.1:{port}"\n\n'
        '[console.operators.ops-lead]\ntoken_env = "CONSOLE_LEAD_TOKEN"\n\n'
        '[console.operators.junior]\ntoken_env = "CONSOLE_JUNIOR_TOKEN"\n'
        'tiers = ["read_only", "low_write"]\n'
    )
    env = dict(os.environ, CONSOLE_LEAD_TOKEN="lead-token-0123456789",
               CONSOLE_JUNIOR_TOKEN="junior-token-0123456789")
    gateway, base = start_with_console(config, str(work / "lanes.db"), port, env)
    write = ("bad_write", {"text": "move the money"})
    waiting = gateway.call(*write)
    assert waiting["status"] == "awaiting_approval", waiting
    yield {"gateway": gateway, "base": base, "write": write, "proposal": waiting["proposal_id"]}
    gateway.close()


def test_settling_a_run_takes_the_tier_right_that_deciding_it_takes(died, browser):
    gateway, base, proposal = died["gateway"], died["base"], died["proposal"]
    context, page = signed_in(browser, base, "ops-lead", "lead-token-0123456789")
    page.goto(f"{base}/proposals/{proposal}")
    page.click("button.approve")
    expect(page.locator("p.state")).to_have_text("approved")
    context.close()
    # The upstream dies under the approved call: nobody knows whether it acted.
    died_under = gateway.call(*died["write"])
    assert died_under["status"] == "outcome_unknown", died_under

    # The lead sees the form, and the lane's version in it.
    lead, page = signed_in(browser, base, "ops-lead", "lead-token-0123456789")
    page.goto(f"{base}/reconcile")
    version = page.locator("section.settle input[name=version]").get_attribute("value")
    lead.close()

    context, page = signed_in(browser, base, "junior", "junior-token-0123456789")
    page.goto(f"{base}/reconcile")
    settle = page.locator("section.settle")
    expect(settle).to_have_count(1)
    expect(settle.locator("p.why-not")).to_contain_text("may not decide or settle high_write calls")
    assert settle.locator("form").count() == 0
    # Posted anyway, with a genuine form token and the lane's version: refused.
    page.goto(f"{base}/queue")
    token = page.locator("form.logout input[name=csrf]").get_attribute("value")
    answer = page.request.post(
        f"{base}/proposals/{proposal}/reconcile",
        form={"csrf": token, "version": version, "resolution": "closed", "note": "looked"},
        headers={"origin": base},
        max_redirects=0,
    )
    assert answer.status == 403, answer.text()
    assert "Not your tier" in answer.text()
    page.goto(f"{base}/reconcile")
    expect(page.locator("section.settle p.state")).to_have_text("outcome_unknown")
    context.close()

    # The lead, who may decide it, may settle it.
    context, page = signed_in(browser, base, "ops-lead", "lead-token-0123456789")
    page.goto(f"{base}/reconcile")
    settle = page.locator("section.settle")
    settle.locator("select[name=resolution]").select_option("closed")
    settle.locator("input[name=note]").fill("the bank shows no transfer")
    settle.locator("button[type=submit]").click()
    expect(page.locator("p.empty")).to_have_text("Nothing to settle.")
    context.close()


@pytest.fixture(scope="module")
def replicas():
    """Two replicas of the gateway, each with its console, sharing one PostgreSQL database
    (the throwaway server scripts/with_postgres.sh starts, reached over TLS with a
    password); the first followed by a 2026-07-28 client that takes tasks."""
    url = os.environ.get("CAIRNLOOP_POSTGRES_PASSWORD")
    if url is None:
        pytest.fail("no CAIRNLOOP_POSTGRES_PASSWORD: run under scripts/with_postgres.sh")
    work, share = shared_folder("cairnloop-gateway-replicas-")
    env = dict(os.environ, GATEWAY_DATABASE=url, **OPERATORS)
    started = []
    for name, tasks in (("one", True), ("two", False)):
        config, port = filesystem_with_console(work, share, name)
        started.append(start_with_console(config, "env:GATEWAY_DATABASE", port, env, tasks))
    yield {"one": started[0], "two": started[1], "share": share}
    for gateway, _ in started:
        gateway.close()


def test_a_task_opened_on_one_replica_is_approved_in_the_other_replicas_console_and_runs_once(replicas, browser):
    (one, one_base), (_, two_base), share = replicas["one"], replicas["two"], replicas["share"]
    target = share / "across-replicas.txt"
    write = {"name": "fs_write_file", "arguments": {"path": str(target), "content": "approved on two"},
             "_meta": TASKS_META}
    created = one.request("tools/call", write)
    assert created["resultType"] == "task", created
    task = {"taskId": created["taskId"], "_meta": TASKS_META}
    assert one.request("tasks/get", task)["status"] == "working"

    # The second replica's console lists the call the first one took, and approves it.
    context, page = signed_in(browser, two_base, "ops-lead", "lead-token-0123456789")
    row = page.locator("#queue-rows tr", has_text="across-replicas.txt")
    expect(row).to_have_count(1)
    row.locator("a").first.click()
    expect(page.locator("main")).to_contain_text(str(target))
    proposal = page.url.rsplit("/", 1)[1]
    page.click("button.approve")
    # The first replica may already be running it when the page is drawn.
    expect(page.locator("p.state")).to_have_text(re.compile("^(approved|execution_pending|executed)$"))
    context.close()

    # The first replica, woken by the database, runs it; its task completes with the
    # upstream's result.
    deadline = time.monotonic() + 20
    while (done := one.request("tasks/get", task))["status"] == "working":
        assert time.monotonic() < deadline, done
        time.sleep(0.1)
    assert done["status"] == "completed", done
    assert done["result"]["isError"] is False, done
    assert "Successfully wrote" in json.dumps(done["result"]["content"])
    assert target.read_text() == "approved on two"

    # Both consoles show it run, once; polled again, the task does not run it again.
    for base in (one_base, two_base):
        context, page = signed_in(browser, base, "ops-lead", "lead-token-0123456789")
        page.goto(f"{base}/proposals/{proposal}")
        expect(page.locator("p.state")).to_have_text("executed")
        context.close()
    target.write_text("sentinel")
    assert one.request("tasks/get", task)["status"] == "completed"
    time.sleep(0.5)
    assert target.read_text() == "sentinel", "the approved call ran once"


def scratch_gateway(prefix, gateway):
    """A gateway in front of the filesystem server whose `write_file` is low_write inside
    a scratch folder and raised to high_write by a CEL rule anywhere else, `gateway` added
    to its [gateway] table; its console has a lead who decides every tier and a junior who
    decides low_write calls only. The gateway, the console's address, the share, the
    scratch folder and the store."""
    if not Path(FILESYSTEM).is_file():
        pytest.fail(f"no filesystem server at {FILESYSTEM}: run `npm ci` in tests/mcp-ts")
    work, share = shared_folder(prefix)
    scratch = share / "scratch"
    scratch.mkdir()
    port = free_port()
    config = work / "gateway.toml"
    when = f"!args.path.startsWith('{scratch}/')"
    served = (
        '[gateway]\nlocal_actor = "alice"\nlocal_scopes = ["fs:write"]\n' + gateway + '\n'
        f'[upstreams.fs]\ncommand = "node"\nargs = [{json.dumps(FILESYSTEM)}, {json.dumps(str(share))}]\n\n'
        '[tools.fs.write_file]\ntier = "low_write"\nscopes = ["fs:write"]\npreview = "Write {path}"\n'
        f'raise = [{{ when = {json.dumps(when)}, tier = "high_write", reason = "outside the scratch folder" }}]\n\n'
    )
    # The same gateway for another client of the store, without a console of its own.
    (work / "agent.toml").write_text(served)
    config.write_text(
        served +
        f'[console]\naddress = "127.0.0.1:{port}"\n\n'
        '[console.operators.ops-lead]\ntoken_env = "CONSOLE_LEAD_TOKEN"\n\n'
        '[console.operators.junior]\ntoken_env = "CONSOLE_JUNIOR_TOKEN"\ntiers = ["low_write"]\n'
    )
    env = dict(os.environ, CONSOLE_LEAD_TOKEN="lead-token-0123456789",
               CONSOLE_JUNIOR_TOKEN="junior-token-0123456789")
    store = str(work / "lanes.db")
    gateway, base = start_with_console(config, store, port, env)
    return {"gateway": gateway, "base": base, "share": share, "scratch": scratch, "store": store,
            "agent": work / "agent.toml"}


def sdk_call(config, store, name, arguments):
    """`name` called with `arguments` by the official Python SDK, through a gateway of its
    own serving `config` on `store`: the SDK checks the result's structured content
    against the tool's listed output schema, and raises if it does not conform."""

    async def run():
        params = StdioServerParameters(command=GATEWAY, args=["serve", str(config), "--store", store])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                listed = {tool.name: tool for tool in (await client.list_tools()).tools}
                assert listed[name].output_schema is not None, "nothing to check the result against"
                return await client.call_tool(name, arguments)

    # Playwright's synchronous API runs an event loop on this thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result()


@pytest.fixture(scope="module")
def raised():
    """Two people must approve a high_write call; a waiting call is not held."""
    served = scratch_gateway("cairnloop-gateway-raised-", 'hold_secs = 0\nquorum = { high_write = 2 }\n')
    yield served
    served["gateway"].close()


def operator(store, *words):
    """The gateway's operator command on `store`: its standard output."""
    done = subprocess.run([GATEWAY, "operator", "--store", store, *words],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_write_outside_the_scratch_folder_is_raised_to_high_write_and_needs_two_approvers(raised, browser):
    gateway, base, share, scratch = raised["gateway"], raised["base"], raised["share"], raised["scratch"]
    # In the scratch folder: the tool's own tier, which the junior may decide.
    inside = scratch / "note.txt"
    write = ("fs_write_file", {"path": str(inside), "content": "throwaway"})
    waiting = gateway.call(*write)
    assert waiting["status"] == "awaiting_approval", waiting
    context, page = signed_in(browser, base, "junior", "junior-token-0123456789")
    page.goto(f"{base}/proposals/{waiting['proposal_id']}")
    expect(page.locator("main span.tier")).to_have_text("low write")
    assert page.locator("span.raised").count() == 0, "not raised, nothing to say why"
    page.click("button.approve")
    expect(page.locator("p.state")).to_have_text("approved")
    context.close()
    assert gateway.call(*write)["status"] == "executed"
    assert inside.read_text() == "throwaway"

    # Outside it: the rule raises the call to high_write.
    target = share / "report.txt"
    write = ("fs_write_file", {"path": str(target), "content": "kept"})
    waiting = gateway.call(*write)
    assert waiting["status"] == "awaiting_approval", waiting
    proposal = waiting["proposal_id"]
    assert not target.exists()
    # The agent is told why its call waits for more than the tool's tier.
    assert waiting["risk_tier"] == "high_write", waiting
    assert waiting["raised_because"] == "outside the scratch folder", waiting

    # The junior may decide low_write calls: this one is high_write, shown and not offered.
    context, page = signed_in(browser, base, "junior", "junior-token-0123456789")
    page.goto(f"{base}/proposals/{proposal}")
    expect(page.locator("main span.tier")).to_have_text("high write")
    # Why, in the rule's own words.
    expect(page.locator("span.raised")).to_have_text(", raised by the call's arguments: outside the scratch folder")
    expect(page.locator("p.why-not")).to_contain_text("high_write")
    assert page.locator("button.approve").count() == 0
    context.close()

    # The lead's approval is the first of two: the call stays pending, and says so.
    context, page = signed_in(browser, base, "ops-lead", "lead-token-0123456789")
    page.goto(f"{base}/proposals/{proposal}")
    expect(page.locator("p.quorum")).to_have_text("0 of 2 approvals")
    page.click("button.approve")
    page.goto(f"{base}/proposals/{proposal}")
    expect(page.locator("p.state")).to_have_text("pending")
    expect(page.locator("p.quorum")).to_have_text("1 of 2 approvals (ops-lead)")
    # Not a second time by the same person.
    expect(page.locator("p.why-not")).to_contain_text("You have approved this call")
    assert page.locator("button.approve").count() == 0
    context.close()
    waits = gateway.call(*write)
    assert waits["status"] == "awaiting_approval", waits
    assert not target.exists()

    # The second approval comes from the operator command.
    listed = operator(raised["store"], "list")
    assert f"{proposal} fs_write_file alice" in listed and "[1 of 2 approvals (ops-lead)]" in listed, listed
    approved = operator(raised["store"], "approve", proposal, "--as", "sre-on-call")
    assert approved.strip() == f"{proposal} approved: 2 of 2 approvals (ops-lead, sre-on-call)", approved
    shown = json.loads(operator(raised["store"], "show", proposal))
    assert [a["by"] for a in shown["approvals"]] == ["ops-lead", "sre-on-call"], shown
    assert shown["quorum"] == 2
    assert (shown["risk_tier"], shown["raised_because"]) == ("high_write", "outside the scratch folder"), shown

    ran = gateway.call(*write)
    assert ran["status"] == "executed", ran
    assert target.read_text() == "kept"
    target.write_text("sentinel")
    assert gateway.call(*write)["status"] == "executed"
    assert target.read_text() == "sentinel", "the approved call ran once"


@pytest.fixture(scope="module")
def edited():
    """A waiting call is held open for 30 seconds."""
    served = scratch_gateway("cairnloop-gateway-edited-", "hold_secs = 30\n")
    yield served
    served["gateway"].close()


def edit_and_approve(page, base, proposal, arguments):
    """On the proposal's page, replaces its arguments with `arguments` and approves the
    changed call; the answer's status."""
    page.goto(f"{base}/proposals/{proposal}")
    page.fill("textarea[name=arguments]", json.dumps(arguments))
    with page.expect_navigation():
        page.click("button.approve-changed")
    return page


def test_an_operator_approves_a_held_call_with_changes_and_it_writes_the_changed_content_once(edited, browser):
    gateway, base, scratch, share = edited["gateway"], edited["base"], edited["scratch"], edited["share"]
    target = scratch / "notes.txt"
    typo = {"path": str(target), "content": "helo wrold"}

    # The agent's call is held open while a person decides (no answer is read yet).
    gateway.next_id += 1
    held_id = gateway.next_id
    frame = {"jsonrpc": "2.0", "id": held_id, "method": "tools/call",
             "params": {"name": "fs_write_file", "arguments": typo}}
    gateway.process.stdin.write(json.dumps(frame) + "\n")
    gateway.process.stdin.flush()

    context, page = signed_in(browser, base, "ops-lead", "lead-token-0123456789")
    row = page.locator("#queue-rows tr", has_text="notes.txt")
    expect(row).to_have_count(1)
    row.locator("a").first.click()
    original = page.url.rsplit("/", 1)[1]
    # The arguments to change are the call's own.
    assert json.loads(page.locator("textarea[name=arguments]").input_value()) == typo
    # A field the tool does not take: refused, nothing changes.
    page.fill("textarea[name=arguments]", json.dumps(dict(typo, mode="0777")))
    with page.expect_navigation():
        page.click("button.approve-changed")
    expect(page.locator("main")).to_contain_text("Change refused")
    page.goto(f"{base}/proposals/{original}")
    expect(page.locator("p.state")).to_have_text("pending")

    fixed = {"path": str(target), "content": "hello world"}
    edit_and_approve(page, base, original, fixed)
    # The changed call's page: approved by the lead, linked to the original.
    expect(page.locator("p.state")).to_have_text(re.compile("^(approved|execution_pending|executed)$"))
    expect(page.locator("a.replaces")).to_have_text(original)
    changed = page.url.rsplit("/", 1)[1]
    assert changed != original
    page.goto(f"{base}/proposals/{original}")
    expect(page.locator("p.state")).to_have_text("superseded")
    expect(page.locator("a.replaced-by")).to_have_text(changed)
    context.close()

    # The held call answers with the changed call's result, and says so.
    answer = json.loads(gateway.process.stdout.readline())
    assert answer["id"] == held_id, answer
    held = answer["result"]["structuredContent"]
    assert held["status"] == "superseded", held
    assert held["edited_status"] == "executed", held
    assert held["edited_arguments"]["content"] == "hello world", held
    # The note first, then the filesystem server's own answer, as it sent it.
    content = answer["result"]["content"]
    assert "approved this call with changed arguments" in content[0]["text"], content
    assert content[1]["text"].startswith("Successfully wrote"), content
    assert target.read_text() == "hello world"

    # The original re-issued, by another client of the store (the official Python SDK,
    # which checks the answer against the listed output schema): superseded, here is what
    # ran; nothing runs again.
    target.write_text("sentinel")
    reissued = sdk_call(edited["agent"], edited["store"], "fs_write_file", typo)
    assert not reissued.is_error, reissued
    again = reissued.structured_content
    assert again["status"] == "superseded" and again["edited_status"] == "executed", again
    assert again["proposal_id"] == original and again["edited_proposal_id"] == changed, again
    assert target.read_text() == "sentinel", "the changed call ran once"


def test_a_change_that_raises_the_call_needs_the_raised_tiers_right(edited, browser):
    gateway, base, scratch, share = edited["gateway"], edited["base"], edited["scratch"], edited["share"]
    inside = {"path": str(scratch / "plan.txt"), "content": "draft"}
    gateway.next_id += 1
    frame = {"jsonrpc": "2.0", "id": gateway.next_id, "method": "tools/call",
             "params": {"name": "fs_write_file", "arguments": inside}}
    gateway.process.stdin.write(json.dumps(frame) + "\n")
    gateway.process.stdin.flush()

    context, page = signed_in(browser, base, "junior", "junior-token-0123456789")
    row = page.locator("#queue-rows tr", has_text="plan.txt")
    expect(row).to_have_count(1)
    row.locator("a").first.click()
    original = page.url.rsplit("/", 1)[1]
    outside = {"path": str(share / "plan.txt"), "content": "draft"}
    edit_and_approve(page, base, original, outside)
    expect(page.locator("main")).to_contain_text("Not your tier")
    expect(page.locator("main")).to_contain_text("high_write")
    page.goto(f"{base}/proposals/{original}")
    expect(page.locator("p.state")).to_have_text("pending")
    # Rejected instead: the held call answers.
    page.fill("input[name=reason]", "not now")
    page.locator("form", has=page.locator("button.reject")).locator("button.reject").click()
    context.close()
    answer = json.loads(gateway.process.stdout.readline())
    assert answer["result"]["structuredContent"]["status"] == "rejected", answer
    assert not (share / "plan.txt").exists() and not (scratch / "plan.txt").exists()
