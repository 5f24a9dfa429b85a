"""The approval console in a real browser (Debian's Chromium, driven by Playwright).

An agent proposes calls through the MCP server example; an operator decides them in the
console example, both on one SQLite file; the agent's call made again runs once.

Run by .ci/run with $CAIRNLOOP_CONSOLE and $CAIRNLOOP_MCP_SERVER pointing at the built
examples, and $CAIRNLOOP_CHROMIUM at the browser (default /usr/bin/chromium). With
$CAIRNLOOP_SCREENSHOTS set to a folder, the tests also save the screenshots shown in the
README there.
"""

import asyncio
import concurrent.futures
import json
import os
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from playwright.sync_api import expect
from serving import free_port, wait_for_console

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = os.environ.get("CAIRNLOOP_CONSOLE", str(ROOT / "target/debug/examples/console"))
SERVER = os.environ.get("CAIRNLOOP_MCP_SERVER", str(ROOT / "target/debug/examples/mcp_server"))
SHOTS = os.environ.get("CAIRNLOOP_SCREENSHOTS")

AGENT = [
    "--actor", "agent-7", "--account", "acme",
    "--scopes", "orders:read,tickets:write,refunds:write",
]
HOSTILE = (
    '<script>alert("xss")</script>"><img src=x onerror=alert(2)> '
    "[click](javascript:alert(3)) \u202eevil\u200b "
    # Characters no hand-written list named: a soft hyphen inside an IBAN, a Hangul filler,
    # a braille blank, a tag letter, a combining grapheme joiner, a C1 control.
    "DE89\u00ad3704 \u3164 \u2800 \U000e0041 a\u034fb \u0085"
)
NOTE = ("internal_note", {"ticket": 4211, "body": HOSTILE})
REFUND = ("refund_order", {"order": 1001, "cents": 1250, "reason": "late"})
BIG_REFUND = ("refund_order", {"order": 1002, "cents": 89900, "reason": "damaged"})


def agent_calls(store, *calls):
    """The agent's calls through the MCP server on `store`: their structured results."""

    async def run():
        params = StdioServerParameters(command=SERVER, args=[*AGENT, "--store", store])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                return [await client.call_tool(name, args) for name, args in calls]

    # Playwright's synchronous API runs an event loop on this thread: the MCP client
    # gets a thread of its own.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result()


def lane(store, key):
    shown = subprocess.run(
        [SERVER, "operator", "--store", store, "show", key],
        capture_output=True, text=True, check=True,
    )
    return json.loads(shown.stdout)


@pytest.fixture(scope="module")
def desk():
    """A store with three proposals of agent-7's, and the console serving it."""
    store = f"{tempfile.mkdtemp(prefix='cairnloop-console-')}/approvals.db"
    results = agent_calls(store, NOTE, REFUND, BIG_REFUND)
    keys = [result.structured_content["proposal_id"] for result in results]
    assert all(r.structured_content["status"] == "awaiting_approval" for r in results)
    port = free_port()
    console = subprocess.Popen(
        [
            CONSOLE, "--store", store, "--address", f"127.0.0.1:{port}",
            "--operator", "ops-lead=lead-token", "--operator", "agent-7=agent-token",
            "--operator", "junior=junior-token", "--decides", "junior=read_only,low_write",
        ],
        stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    wait_for_console(base, console, "the console")
    yield {"store": store, "base": base, "note": keys[0], "refund": keys[1], "big": keys[2]}
    console.terminate()
    console.wait(timeout=10)


def signed_in(browser, base, operator, secret, width=1280):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{base}/login")
    page.fill("input[name=operator]", operator)
    page.fill("input[name=password]", secret)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/queue")
    return context, page, dialogs


def test_sign_in_queue_proposal_approve_and_the_reissued_call_runs_once(desk, browser):
    context, page, dialogs = signed_in(browser, desk["base"], "ops-lead", "lead-token")
    expect(page.locator("#queue-rows tr")).to_have_count(3)
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/console-queue.png", full_page=True)
    page.click(f"a[href='/proposals/{desk['note']}']")
    expect(page.locator("h1")).to_contain_text("Add internal note")
    # The hostile body shows as text: no element, no script, no dialog, no link.
    assert page.locator("main script, main img, main a[href^='javascript']").count() == 0
    expect(page.locator("form.arguments textarea, form.arguments input").first).to_be_visible()
    body = page.locator("form.arguments").inner_text() + page.locator(
        "form.arguments"
    ).evaluate("form => [...form.elements].map(e => e.value).join(' ')")
    assert '<script>alert("xss")</script>' in body
    # The characters that would reorder or hide text show as their code points.
    for hidden in ["\u202e", "\u200b", "\u00ad", "\u3164", "\u2800", "\U000e0041", "\u034f", "\u0085"]:
        code = f"U+{ord(hidden):04X}"
        assert code in body, code
        assert hidden not in body, code
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/console-proposal.png", full_page=True)
    page.click("button.approve")
    expect(page.locator("p.state")).to_have_text("approved")
    assert dialogs == []
    assert lane(desk["store"], desk["note"])["state"] == "approved"
    # The agent makes the same call again: it runs, once; again: the recorded outcome.
    ran, again = agent_calls(desk["store"], NOTE, NOTE)
    assert ran.is_error is False and again.is_error is False
    shown = lane(desk["store"], desk["note"])
    assert (shown["state"], shown["attempts"], shown["decided_by"]) == ("executed", 1, "ops-lead")
    context.close()


def test_reject_with_a_reason(desk, browser):
    context, page, _ = signed_in(browser, desk["base"], "ops-lead", "lead-token")
    page.goto(f"{desk['base']}/proposals/{desk['refund']}")
    reject = page.locator("form:has(button.reject)")
    reject.locator("input[name=reason]").fill("above the weekly limit")
    reject.locator("button.reject").click()
    expect(page.locator("p.state")).to_have_text("rejected")
    expect(page.locator("dl.facts").first).to_contain_text("above the weekly limit")
    shown = lane(desk["store"], desk["refund"])
    assert (shown["state"], shown["reason"]) == ("rejected", "above the weekly limit")
    (refused,) = agent_calls(desk["store"], REFUND)
    assert refused.is_error is True and refused.structured_content["status"] == "rejected"
    context.close()


def test_the_proposer_is_not_offered_an_approval_and_is_told_why(desk, browser):
    context, page, _ = signed_in(browser, desk["base"], "agent-7", "agent-token")
    page.goto(f"{desk['base']}/proposals/{desk['big']}")
    expect(page.locator("p.why-not")).to_contain_text("someone else must approve it")
    assert page.locator("button.approve").count() == 0
    # Rejecting and deferring stay, each with a field that says what it is for.
    expect(page.get_by_label("Why reject it")).to_be_visible()
    expect(page.get_by_label("Why defer it")).to_be_visible()
    assert lane(desk["store"], desk["big"])["state"] == "pending"
    context.close()


def test_an_operator_sees_but_cannot_decide_a_tier_beyond_their_rights(desk, browser):
    context, page, _ = signed_in(browser, desk["base"], "junior", "junior-token")
    page.goto(f"{desk['base']}/proposals/{desk['big']}")
    expect(page.locator("h1")).to_contain_text("Refund order")
    expect(page.locator("p.why-not")).to_contain_text("may not decide or settle high_write calls")
    assert page.locator("section.decide form").count() == 0
    assert lane(desk["store"], desk["big"])["state"] == "pending"
    context.close()


def test_the_page_says_when_the_live_queue_stops(desk, browser):
    context, page, _ = signed_in(browser, desk["base"], "ops-lead", "lead-token")
    # The session ends in another tab of the same browser.
    other = context.new_page()
    other.goto(f"{desk['base']}/queue")
    other.click("form.logout button")
    expect(other).to_have_url(f"{desk['base']}/login")
    expect(page.locator("p.refresh-stopped")).to_contain_text("session ended", timeout=10_000)
    context.close()


def test_the_queue_reads_at_phone_width(desk, browser):
    context, page, _ = signed_in(browser, desk["base"], "ops-lead", "lead-token", width=390)
    page.goto(f"{desk['base']}/proposals/{desk['big']}")
    # Nothing wider than the screen: no sideways scrolling.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/console-phone.png", full_page=True)
    context.close()


def test_a_post_without_a_form_token_is_refused(desk, browser):
    context, page, _ = signed_in(browser, desk["base"], "ops-lead", "lead-token")
    (cookie,) = [c for c in context.cookies() if c["name"] == "cairnloop_console"]
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    page.goto(f"{desk['base']}/proposals/{desk['big']}")
    version = page.locator("input[name=version]").first.get_attribute("value")
    before = lane(desk["store"], desk["big"])
    request = urllib.request.Request(
        f"{desk['base']}/proposals/{desk['big']}/decide",
        data=f"decision=approve&version={version}".encode(),
        headers={"Cookie": f"cairnloop_console={cookie['value']}"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 403
    assert "security token" in refused.value.read().decode()
    assert lane(desk["store"], desk["big"]) == before
    context.close()


def test_the_queue_updates_without_a_reload(desk, browser):
    context, page, _ = signed_in(browser, desk["base"], "ops-lead", "lead-token")
    rows = page.locator("#queue-rows tr")
    before = rows.count()
    page.evaluate("window.stillThisPage = true")
    # Live: the console's event stream is open, and the page polls only without one.
    expect(page.locator("html")).to_have_attribute("data-live", "open")
    # Proposed by another process (the MCP server) on the same store file.
    (new,) = agent_calls(desk["store"], ("internal_note", {"ticket": 77, "body": "Live."}))
    key = new.structured_content["proposal_id"]
    expect(page.locator(f"#queue-rows a[href='/proposals/{key}']")).to_be_visible(timeout=10_000)
    assert rows.count() == before + 1
    assert page.evaluate("window.stillThisPage") is True
    expect(page.locator("html")).to_have_attribute("data-live", "open")
    context.close()


def test_a_decision_in_one_tab_updates_another(desk, browser):
    context, watching, _ = signed_in(browser, desk["base"], "ops-lead", "lead-token")
    expect(watching.locator("html")).to_have_attribute("data-live", "open")
    (new,) = agent_calls(desk["store"], ("internal_note", {"ticket": 78, "body": "Decide me."}))
    key = new.structured_content["proposal_id"]
    row = watching.locator(f"#queue-rows a[href='/proposals/{key}']")
    expect(row).to_be_visible(timeout=10_000)
    # Another tab approves it; the first tab's queue drops it without a reload.
    deciding = context.new_page()
    deciding.goto(f"{desk['base']}/proposals/{key}")
    deciding.click("button.approve")
    expect(deciding.locator("p.state")).to_have_text("approved")
    expect(row).to_have_count(0, timeout=10_000)
    expect(watching.locator("html")).to_have_attribute("data-live", "open")
    assert lane(desk["store"], key)["state"] == "approved"
    context.close()
