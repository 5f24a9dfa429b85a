"""Decisions from Slack, as Slack sends them, to cairnloop-gateway.

Two gateway replicas share the throwaway PostgreSQL database: the first serves a
classic client (its waiting calls held open), the console, `[slack]` and a Slack-format
`[[notify]]` receiver (HTTPS on loopback, with a test authority); the second follows a
2026-07-28 client's calls as tasks. Each click is signed as Slack signs it, by Slack's own
SDK (`slack_sdk.signature.SignatureVerifier.generate_signature`), not by the code under
test. Forged, stale, future, tampered, unsigned, oversized, replayed, unmapped,
proposer's and under-tier clicks are refused with the lane unchanged and recorded in the
audit trail (read in Chromium); a signed approval wakes the other replica's task and a
held call, each run once; a rejection carries the reason typed in the message.

Run by .ci/run under scripts/with_postgres.sh, with $CAIRNLOOP_GATEWAY,
$CAIRNLOOP_FILESYSTEM_SERVER and $CAIRNLOOP_CHROMIUM.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect
from slack_sdk.signature import SignatureVerifier

from serving import free_port
from test_gateway_console import (
    FILESYSTEM, GATEWAY, ROOT, TASKS_META, TOOLS, Gateway, signed_in, start_with_console,
)

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TOKENS = dict(LEAD_TOKEN="lead-token-0123456789", ALICE_TOKEN="alice-token-0123456789",
              JUNIOR_TOKEN="junior-token-0123456789")
USERS = {"ULEAD": "ops-lead", "UALICE": "alice", "UJUNIOR": "junior"}


def openssl(work, *args):
    subprocess.run(["openssl", *args], cwd=work, check=True, capture_output=True)


def authority(work):
    """A test authority (ca.pem) and a certificate for 127.0.0.1 it signed."""
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl(work, "req", "-x509", *curve, "-days", "2", "-subj", "/CN=test-ca",
            "-keyout", "ca.key", "-out", "ca.pem")
    openssl(work, "req", *curve, "-subj", "/CN=127.0.0.1", "-keyout", "server.key", "-out", "server.csr")
    (work / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl(work, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.pem")


class Receiver:
    """tests/support/receiver.py over TLS: what Slack's webhook and response_url got."""

    def __init__(self, work):
        self.log = work / "received.jsonl"
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "tests/support/receiver.py"), str(self.log),
             "--tls", str(work / "server.pem"), str(work / "server.key")])
        port_file = Path(str(self.log) + ".port")
        deadline = time.monotonic() + 10
        while not port_file.exists():
            assert time.monotonic() < deadline, "the receiver did not start"
            time.sleep(0.05)
        self.base = f"https://127.0.0.1:{port_file.read_text()}"

    def posts(self, path):
        if not self.log.exists():
            return []
        lines = self.log.read_text().splitlines()
        return [json.loads(body["body"]) for body in map(json.loads, lines) if body["path"] == path]

    def wait_for(self, path, test, what):
        deadline = time.monotonic() + 20
        while True:
            found = [post for post in self.posts(path) if test(post)]
            if found:
                return found
            assert time.monotonic() < deadline, f"no {what} at {path}: {self.posts(path)}"
            time.sleep(0.1)


def configs(work, share, port, receiver):
    """The first replica's configuration (console, [slack], [[notify]]) and the second's."""
    upstream = (f'[upstreams.fs]\ncommand = "node"\n'
                f'args = [{json.dumps(FILESYSTEM)}, {json.dumps(str(share))}]\n\n')
    gateway = '[gateway]\nlocal_actor = "alice"\nlocal_scopes = ["fs:read", "fs:write"]\n'
    first = work / "first.toml"
    first.write_text(
        gateway + 'hold_secs = 60\n\n' + upstream
        + f'[console]\naddress = "127.0.0.1:{port}"\n\n'
        + '[console.operators.ops-lead]\ntoken_env = "LEAD_TOKEN"\n\n'
        + '[console.operators.alice]\ntoken_env = "ALICE_TOKEN"\n\n'
        + '[console.operators.junior]\ntoken_env = "JUNIOR_TOKEN"\ntiers = ["read_only"]\n\n'
        + '[slack]\nsigning_secret_env = "SLACK_SIGNING_SECRET"\n'
        + f'root_certificate = {json.dumps(str(work / "ca.pem"))}\n'
        + 'users = { ' + ", ".join(f'{user} = "{op}"' for user, op in USERS.items()) + ' }\n\n'
        + '[[notify]]\nname = "ops-slack"\nformat = "slack"\nurl_env = "SLACK_WEBHOOK"\n'
        + f'root_certificate = {json.dumps(str(work / "ca.pem"))}\n\n'
        + TOOLS.read_text())
    second = work / "second.toml"
    second.write_text(gateway + '\n' + upstream + TOOLS.read_text())
    return first, second


@pytest.fixture(scope="module")
def slack():
    url = os.environ.get("CAIRNLOOP_POSTGRES_PASSWORD")
    if url is None:
        pytest.fail("no CAIRNLOOP_POSTGRES_PASSWORD: run under scripts/with_postgres.sh")
    if not Path(FILESYSTEM).is_file():
        pytest.fail(f"no filesystem server at {FILESYSTEM}: run `npm ci` in tests/mcp-ts")
    work = Path(tempfile.mkdtemp(prefix="cairnloop-slack-"))
    share = (work / "share").resolve()
    share.mkdir()
    authority(work)
    receiver = Receiver(work)
    port = free_port()
    first, second = configs(work, share, port, receiver)
    env = dict(os.environ, GATEWAY_DATABASE=url, SLACK_SIGNING_SECRET=SECRET,
               SLACK_WEBHOOK=f"{receiver.base}/webhook", **TOKENS)
    one, base = start_with_console(first, "env:GATEWAY_DATABASE", port, env)
    two = Gateway(str(second), "env:GATEWAY_DATABASE", env, tasks=True)
    yield {"one": one, "two": two, "base": base, "share": share, "receiver": receiver, "env": env}
    one.close()
    two.close()
    receiver.process.kill()


def notice_of(receiver, path):
    """The Slack message the receiver got for the call that writes `path`: its lane's key."""
    [message] = receiver.wait_for("/webhook", lambda post: str(path) in json.dumps(post), "notice")
    actions = [block for block in message["blocks"] if block["type"] == "actions"][0]["elements"]
    ids = [element.get("action_id") for element in actions]
    assert ids[:2] == ["cairnloop_approve", "cairnloop_reject"], message
    assert any(block["type"] == "input" for block in message["blocks"]), message
    return actions[0]["value"]


def payload(key, user, action="cairnloop_approve", reason=None, receiver=None):
    """A block_actions payload as Slack posts it for a click on one of the buttons."""
    values = {}
    if reason is not None:
        values = {"b1": {"cairnloop_reason": {"type": "plain_text_input", "value": reason}}}
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0"},
        "team": {"id": "T0", "domain": "example"},
        "actions": [{"action_id": action, "block_id": "b2", "value": key, "type": "button",
                     "action_ts": str(time.time())}],
        "response_url": f"{receiver.base}/response" if receiver else None,
        "state": {"values": values},
    }


def post(base, body, timestamp=None, secret=SECRET, headers=None, signed_body=None):
    """POSTs `body` to the gateway's Slack route, signed by slack_sdk over `signed_body`
    (by default the body itself) at `timestamp` (now): the answer's status and text."""
    timestamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(
        timestamp=timestamp, body=signed_body if signed_body is not None else body)
    sent = {"Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature}
    if headers is not None:
        sent = headers
    request = urllib.request.Request(f"{base}/slack/actions", data=body.encode(), headers=sent,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def form(data):
    return urllib.parse.urlencode({"payload": json.dumps(data)})


def lane_state(env, key):
    shown = subprocess.run([GATEWAY, "operator", "--store", "env:GATEWAY_DATABASE", "show", key],
                           env=env, capture_output=True, text=True, check=True)
    return json.loads(shown.stdout)


def test_clicks_that_are_not_genuine_or_not_allowed_are_refused_and_change_nothing(slack, browser):
    two, base, receiver, env = slack["two"], slack["base"], slack["receiver"], slack["env"]
    target = slack["share"] / "task.txt"
    created = two.request("tools/call", {"name": "fs_write_file", "_meta": TASKS_META,
                                         "arguments": {"path": str(target), "content": "from slack"}})
    assert created["resultType"] == "task", created
    task = {"taskId": created["taskId"], "_meta": TASKS_META}
    key = notice_of(receiver, target)
    good = form(payload(key, "ULEAD", receiver=receiver))
    now = int(time.time())

    refusals = [
        ("forged", lambda: post(base, good, secret="not-the-secret"), 401),
        ("six minutes old", lambda: post(base, good, timestamp=now - 360), 401),
        ("six minutes ahead", lambda: post(base, good, timestamp=now + 360), 401),
        ("tampered", lambda: post(base, form(payload(key, "ULEAD", "cairnloop_reject", "x")), signed_body=good), 401),
        ("unsigned", lambda: post(base, good, headers={"Content-Type": "application/x-www-form-urlencoded"}), 401),
        ("oversized", lambda: post(base, good + "&pad=" + "a" * 70_000), 413),
        ("unmapped", lambda: post(base, form(payload(key, "USTRANGER", receiver=receiver))), 403),
        ("the proposer", lambda: post(base, form(payload(key, "UALICE", receiver=receiver))), 403),
        ("under the tier", lambda: post(base, form(payload(key, "UJUNIOR", receiver=receiver))), 403),
        ("a rejection without a reason",
         lambda: post(base, form(payload(key, "ULEAD", "cairnloop_reject", "  ", receiver))), 422),
        ("not our button", lambda: post(base, form(payload(key, "ULEAD", "something_else"))), 400),
    ]
    # Each one sent and checked before the next: the lane is pending after every one.
    for what, send, expected in refusals:
        status, text = send()
        assert status == expected, f"{what}: {status} {text}"
        assert lane_state(env, key)["state"] == "pending", what
        assert two.request("tasks/get", task)["status"] == "working", what
    assert not target.exists()
    # The person who clicked is told why (ephemeral), the message is not replaced.
    told = receiver.wait_for("/response", lambda post: post.get("response_type") == "ephemeral"
                             and "someone else must approve" in post["text"], "answer to the proposer")
    assert told[0]["replace_original"] is False

    # A genuine click approves; the other replica's task runs it, once.
    status, text = post(base, good, timestamp=now)
    assert status == 200, text
    deadline = time.monotonic() + 20
    while (done := two.request("tasks/get", task))["status"] == "working":
        assert time.monotonic() < deadline, done
        time.sleep(0.1)
    assert done["status"] == "completed" and done["result"]["isError"] is False, done
    assert target.read_text() == "from slack"
    replaced = receiver.wait_for("/response", lambda post: post.get("replace_original") is True, "replacement")
    assert "approved by ops-lead" in replaced[0]["text"], replaced

    # The same request again, even signed and fresh: refused as a replay, nothing runs.
    target.write_text("sentinel")
    status, text = post(base, good, timestamp=now)
    assert status == 409, text
    assert target.read_text() == "sentinel"
    assert lane_state(env, key)["state"] == "executed"
    # A fresh click on the decided call: refused for what the call is.
    status, text = post(base, good, timestamp=now + 1)
    assert status == 409 and "executed" in text, text

    # Every refusal is in the audit trail, read in the console.
    context, page = signed_in(browser, base, "ops-lead", "lead-token-0123456789")
    page.goto(f"{base}/audit?kind=refusal")
    rows = page.locator("table.audit tbody tr")
    expect(rows).to_have_count(12)
    text = page.locator("table.audit").inner_text()
    for reason in ("forged", "stale", "unsigned", "unmapped", "proposer", "under_tier",
                   "reason_required", "malformed", "replayed", "decided"):
        assert reason in text, (reason, text)
    context.close()


def test_a_held_call_is_approved_from_slack_and_a_rejection_carries_its_reason(slack):
    one, two, base, receiver = slack["one"], slack["two"], slack["base"], slack["receiver"]
    held = slack["share"] / "held.txt"
    answers = {}
    thread = threading.Thread(target=lambda: answers.update(one.request(
        "tools/call", {"name": "fs_write_file", "arguments": {"path": str(held), "content": "held"}})))
    thread.start()
    key = notice_of(receiver, held)
    status, text = post(base, form(payload(key, "ULEAD", receiver=receiver)))
    assert status == 200, text
    thread.join(timeout=30)
    assert answers and answers.get("isError") is False, answers
    assert "Successfully wrote" in json.dumps(answers["content"])
    assert held.read_text() == "held"

    refused = slack["share"] / "refused.txt"
    created = two.request("tools/call", {"name": "fs_write_file", "_meta": TASKS_META,
                                         "arguments": {"path": str(refused), "content": "no"}})
    task = {"taskId": created["taskId"], "_meta": TASKS_META}
    key = notice_of(receiver, refused)
    status, text = post(base, form(payload(key, "ULEAD", "cairnloop_reject", "wrong folder", receiver)))
    assert status == 200, text
    deadline = time.monotonic() + 20
    while (done := two.request("tasks/get", task))["status"] == "working":
        assert time.monotonic() < deadline, done
        time.sleep(0.1)
    assert done["result"]["isError"] is True, done
    assert "wrong folder" in json.dumps(done["result"]), done
    assert not refused.exists()
    assert lane_state(slack["env"], key)["reason"] == "wrong folder"
