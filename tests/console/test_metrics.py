"""The gateway's /metrics after a scripted run, read by Prometheus' own parser.

cairnloop-gateway serves the official filesystem MCP server over stdio, with a console,
`[metrics]` (loopback only) and a `[[notify]]` receiver. The script makes reads, a write
approved in the console (in Chromium) and run, a destructive move, an unknown tool, and
arguments holding a marker; the scrape is parsed by `prometheus_client`'s OpenMetrics
parser, and every counter must equal what the script did, with no label value holding an
argument or the caller's id.

Run by .ci/run with $CAIRNLOOP_GATEWAY, $CAIRNLOOP_FILESYSTEM_SERVER and $CAIRNLOOP_CHROMIUM.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from serving import free_port
from playwright.sync_api import expect
from test_gateway_console import FILESYSTEM, ROOT, TOOLS, signed_in, start_with_console

MARKER = "MARKER-7f3a"
ACTOR = "caller-5e1d"


def frame(gateway, method, params):
    """The whole answer to one request: a result or an error."""
    gateway.next_id += 1
    request = {"jsonrpc": "2.0", "id": gateway.next_id, "method": method, "params": params}
    gateway.process.stdin.write(json.dumps(request) + "\n")
    gateway.process.stdin.flush()
    return json.loads(gateway.process.stdout.readline())


def wait_for_post(log, deadline=20):
    end = time.monotonic() + deadline
    while not (log.exists() and log.read_text().strip()):
        assert time.monotonic() < end, "the receiver got no notice"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def scripted(browser):
    if not Path(FILESYSTEM).is_file():
        pytest.fail(f"no filesystem server at {FILESYSTEM}: run `npm ci` in tests/mcp-ts")
    work = Path(tempfile.mkdtemp(prefix="cairnloop-metrics-"))
    share = (work / "share").resolve()
    share.mkdir()
    (share / "a.txt").write_text("a")
    log = work / "received.jsonl"
    receiver = subprocess.Popen([sys.executable, str(ROOT / "tests/support/receiver.py"), str(log)])
    port_file = Path(str(log) + ".port")
    while not port_file.exists():
        time.sleep(0.05)
    port = free_port()
    config = work / "gateway.toml"
    config.write_text(
        f'[gateway]\nlocal_actor = "{ACTOR}"\nlocal_scopes = ["fs:read", "fs:write"]\nhold_secs = 0\n\n'
        f'[upstreams.fs]\ncommand = "node"\nargs = [{json.dumps(FILESYSTEM)}, {json.dumps(str(share))}]\n\n'
        f'[console]\naddress = "0.0.0.0:{port}"\n\n'
        '[console.operators.ops-lead]\ntoken_env = "LEAD_TOKEN"\n\n'
        '[metrics]\n\n'
        '[[notify]]\nname = "desk"\nurl_env = "DESK_URL"\n\n'
        + TOOLS.read_text())
    store = work / "lanes.db"
    env = dict(os.environ, LEAD_TOKEN="lead-token-0123456789",
               DESK_URL=f"http://127.0.0.1:{port_file.read_text()}/hook")
    gateway, base = start_with_console(config, str(store), port, env)

    read = ("fs_read_text_file", {"path": str(share / "a.txt")})
    gateway.call(*read)
    gateway.call(*read)
    write = ("fs_write_file", {"path": str(share / f"{MARKER}.txt"), "content": MARKER})
    waiting = gateway.call(*write)
    assert waiting["status"] == "awaiting_approval", waiting
    wait_for_post(log)
    # Approved in this gateway's console, so that this process records the decision.
    context, page = signed_in(browser, base, "ops-lead", "lead-token-0123456789")
    page.goto(f"{base}/proposals/{waiting['proposal_id']}")
    page.click("button.approve")
    expect(page.locator("p.state")).to_have_text("approved")
    context.close()
    assert gateway.call(*write)["status"] == "executed"
    moved = gateway.request("tools/call", {"name": "fs_move_file", "arguments": {
        "source": str(share / "a.txt"), "destination": str(share / f"{MARKER}-moved.txt")}})
    assert moved["isError"] is True
    unknown = frame(gateway, "tools/call", {"name": f"no_such_{MARKER}", "arguments": {}})
    assert "error" in unknown or unknown["result"]["isError"] is True, unknown
    # The notice's pass is counted after it is settled.
    time.sleep(1.5)
    yield {"base": base, "gateway": gateway}
    gateway.close()
    receiver.kill()


def scrape(base):
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("application/openmetrics-text"), answer.headers
        return answer.read().decode()


def samples(text):
    """Every sample: (name, labels as a sorted tuple) -> value."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found, name, **labels):
    return found.get((name, tuple(sorted(labels.items()))), 0)


def test_each_counter_is_what_the_run_did_and_no_label_holds_an_argument_or_an_actor(scripted):
    text = scrape(scripted["base"])
    found = samples(text)
    decisions = "cairnloop_decisions_total"
    assert value(found, decisions, tool="fs_read_text_file", outcome="execute") == 2, text
    # Proposed, then re-issued: each awaits approval (the second finds it given and runs).
    assert value(found, decisions, tool="fs_write_file", outcome="await_approval") == 2, text
    assert value(found, decisions, tool="fs_write_file", outcome="execute") == 0, text
    assert value(found, decisions, tool="fs_move_file", outcome="blocked") == 1, text
    assert value(found, decisions, tool="(other)", outcome="blocked") == 1, text
    moves = "cairnloop_lane_moves_total"
    for to in ("pending", "approved", "execution_pending", "executed"):
        assert value(found, moves, tool="fs_write_file", to=to) == 1, (to, text)
    assert value(found, "cairnloop_time_to_decision_seconds_count", tool="fs_write_file") == 1
    assert value(found, "cairnloop_time_to_run_seconds_count", tool="fs_write_file") == 1
    assert value(found, "cairnloop_lanes", state="executed") == 1
    assert value(found, "cairnloop_lanes", state="pending") == 0
    assert value(found, "cairnloop_notices_total", outcome="delivered") == 1, text
    assert value(found, "cairnloop_notices_total", outcome="given_up") == 0
    upstream = "cairnloop_upstream_events_total"
    assert value(found, upstream, upstream="fs", event="start") == 1, text
    assert value(found, upstream, upstream="fs", event="call") == 3, text
    assert value(found, upstream, upstream="fs", event="call_failure") == 0, text
    assert value(found, "cairnloop_waiting_calls", kind="held") == 0
    labels = {value for (_, pairs) in found for (_, value) in pairs}
    for secret in (MARKER, ACTOR, "ops-lead"):
        assert not any(secret in label for label in labels), (secret, labels)


def other_address():
    """This machine's address on its network, not a loopback one (None without one)."""
    # Connecting a UDP socket sends nothing: it only picks the route, and its address.
    for far in ("10.255.255.255", "198.51.100.1", "8.8.8.8"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((far, 9))
            except OSError:
                continue
            address = probe.getsockname()[0]
            if not address.startswith("127."):
                return address
    return None


def test_a_scrape_from_another_address_is_refused_when_loopback_only(scripted):
    # The console listens on every address; [metrics] has no token.
    address = other_address()
    if address is None:
        pytest.skip("this machine has no address but loopback (the rule is unit-tested in gateway/src/metrics.rs)")
    port = scripted["base"].rsplit(":", 1)[1]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://{address}:{port}/metrics", timeout=10)
    assert refused.value.code == 403
    assert "this machine only" in refused.value.read().decode()
    # The console itself still answers there; only /metrics is kept to loopback.
    with urllib.request.urlopen(f"http://{address}:{port}/login", timeout=10) as page:
        assert page.status == 200
    assert "cairnloop_decisions" in scrape(scripted["base"])
