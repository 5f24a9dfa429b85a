//! The webhook notifier against a real HTTP endpoint on this machine that fails, hangs or
//! answers slowly as each test asks: the proposal is always stored, retries stop at the
//! cap, the audit trail says what happened, and every body is signed. And against a
//! receiver of our own over HTTPS (tests/support/receiver.py, with a certificate of a test
//! authority made by `openssl`): trusted only under that authority, never redirected.
#![cfg(feature = "webhook")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cairnloop::approvals::AuditRecord;
use cairnloop::gate::LaneState;
use cairnloop::notifiers::{SIGNATURE_HEADER, Webhook, WebhookFormat, verify};
use cairnloop::{Actor, Governor, Outcome, Registry, ToolCall, ToolEntry};

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;
#[path = "fixtures/receiver.rs"]
mod receiver;
#[path = "fixtures/scratch.rs"]
mod scratch;

#[derive(serde::Deserialize, serde::Serialize)]
struct Wire {
    iban: String,
    memo: String,
    api_token: String,
}

plain_tool!(WireTool, "wire", HighWrite, [], |input: Wire| -> () {});

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<WireTool>()]);

const SECRET: &[u8] = b"a long random shared secret";

/// What the endpoint does with each request, in turn; past the list it answers 200.
#[derive(Clone, Copy)]
enum Answer {
    Status(u16),
    After(Duration, u16),
}

struct Received {
    signature: Option<String>,
    body: String,
}

/// An HTTP endpoint on a free port; returns its URL and what it received.
fn endpoint(script: Vec<Answer>) -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook/s3cr3t-path", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    std::thread::spawn(move || {
        let mut script = script.into_iter();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let answer = script.next().unwrap_or(Answer::Status(200));
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let (mut length, mut signature) = (0, None);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':') {
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap();
                        }
                        if name.eq_ignore_ascii_case(SIGNATURE_HEADER) {
                            signature = Some(value.trim().to_owned());
                        }
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                log.lock().unwrap().push(Received {
                    signature,
                    body: String::from_utf8(body).unwrap(),
                });
                let status = match answer {
                    Answer::Status(status) => status,
                    Answer::After(wait, status) => {
                        std::thread::sleep(wait);
                        status
                    }
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
            });
        }
    });
    (url, received)
}

fn propose(governor: &Governor<()>, memo: &str) -> cairnloop::IdempotencyKey {
    propose_on(governor, memo)
}

fn propose_on<S: cairnloop::approvals::ApprovalStore>(
    governor: &Governor<(), S>,
    memo: &str,
) -> cairnloop::IdempotencyKey {
    let agent = Actor::new("agent-7", &[]).with_account("acme");
    let arguments = serde_json::json!({"iban": "DE89370400440532013000", "memo": memo, "api_token": "tok-hunter2"});
    let arguments = arguments.to_string();
    let call = ToolCall::new("wire", &arguments);
    match pollster::block_on(governor.call(&call, &agent, &())) {
        Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
        other => panic!("a proposal, got {other:?}"),
    }
}

/// The notice record, once the notifier's threads have written it (at most 30 s).
fn notice_record(governor: &Governor<()>) -> cairnloop::approvals::NoticeEvent {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = pollster::block_on(governor.events())
            .unwrap()
            .into_iter()
            .find_map(|record| match record {
                AuditRecord::Notice(event) => Some(event),
                _ => None,
            });
        if let Some(event) = found {
            return event;
        }
        assert!(Instant::now() < deadline, "no notice record");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn a_500_is_tried_again_and_every_attempt_is_signed() {
    let (url, received) = endpoint(vec![Answer::Status(500), Answer::Status(503)]);
    let hook = Webhook::new(&url)
        .unwrap()
        .signed_with(SECRET)
        .console("https://approvals.example.com/")
        .first_retry(Duration::from_millis(10))
        .start()
        .unwrap();
    let governor = Governor::new(&TOOLS).with_notifier(hook);
    let key = propose(&governor, "rent");
    let event = notice_record(&governor);
    assert!(event.delivered, "{event:?}");
    assert_eq!(event.attempts, 3);
    assert_eq!(event.target, "webhook:127.0.0.1");
    let received = received.lock().unwrap();
    assert_eq!(received.len(), 3);
    for request in received.iter() {
        let signature = request.signature.as_deref().expect("a signature");
        verify(
            SECRET,
            signature,
            request.body.as_bytes(),
            now(),
            Duration::from_secs(300),
        )
        .unwrap();
        // Another secret, or a changed body, is refused.
        assert!(
            verify(
                b"not it",
                signature,
                request.body.as_bytes(),
                now(),
                Duration::from_secs(300)
            )
            .is_err()
        );
    }
    let body: serde_json::Value = serde_json::from_str(&received[0].body).unwrap();
    assert_eq!(body["type"], "proposal.waiting");
    assert_eq!(body["key"], key.to_string());
    assert_eq!(body["tier"], "high_write");
    assert_eq!(body["account"], "acme");
    assert_eq!(
        body["link"],
        format!("https://approvals.example.com/proposals/{key}")
    );
    // The preview masks what looks secret.
    assert!(
        !received[0].body.contains("tok-hunter2"),
        "{}",
        received[0].body
    );
}

#[test]
fn a_hanging_endpoint_stops_at_the_cap_and_the_proposal_stands() {
    let hang = Answer::After(Duration::from_secs(10), 200);
    let (url, received) = endpoint(vec![hang, hang, hang, hang]);
    let hook = Webhook::new(&url)
        .unwrap()
        .timeout(Duration::from_millis(200))
        .attempts(3)
        .first_retry(Duration::from_millis(10))
        .start()
        .unwrap();
    let governor = Governor::new(&TOOLS).with_notifier(hook);
    let key = propose(&governor, "rent");
    // Stored and waiting before any attempt ends.
    assert_eq!(
        pollster::block_on(governor.lane(&key)).unwrap().state(),
        LaneState::Pending
    );
    let event = notice_record(&governor);
    assert!(!event.delivered);
    assert_eq!(event.attempts, 3);
    let reason = event.reason.unwrap();
    assert!(reason.contains("did not answer in time"), "{reason}");
    // The record names the host, never the URL's path (a token, for Slack and Teams).
    assert!(!reason.contains("s3cr3t"));
    assert_eq!(received.lock().unwrap().len(), 3);
}

#[test]
fn a_slow_answer_within_the_timeout_is_delivered_once() {
    let (url, received) = endpoint(vec![Answer::After(Duration::from_millis(300), 204)]);
    let hook = Webhook::new(&url)
        .unwrap()
        .timeout(Duration::from_secs(5))
        .start()
        .unwrap();
    let governor = Governor::new(&TOOLS).with_notifier(hook);
    propose(&governor, "rent");
    let event = notice_record(&governor);
    assert!(event.delivered && event.attempts == 1, "{event:?}");
    assert_eq!(received.lock().unwrap().len(), 1);
}

#[test]
fn a_refusal_is_not_tried_again() {
    let (url, received) = endpoint(vec![Answer::Status(400)]);
    let hook = Webhook::new(&url)
        .unwrap()
        .first_retry(Duration::from_millis(10))
        .start()
        .unwrap();
    let governor = Governor::new(&TOOLS).with_notifier(hook);
    propose(&governor, "rent");
    let event = notice_record(&governor);
    assert_eq!((event.delivered, event.attempts), (false, 1));
    assert!(event.reason.unwrap().contains("400"));
    assert_eq!(received.lock().unwrap().len(), 1);
}

#[test]
fn slack_and_teams_bodies_keep_a_models_text_from_making_links() {
    let hostile = "<https://evil.example|click here> [click](https://evil.example) @channel";
    for (format, check) in [
        (WebhookFormat::Slack, "slack"),
        (WebhookFormat::Teams, "teams"),
    ] {
        let (url, received) = endpoint(vec![]);
        let hook = Webhook::new(&url)
            .unwrap()
            .format(format)
            .console("https://approvals.example.com")
            .start()
            .unwrap();
        let governor = Governor::new(&TOOLS).with_notifier(hook);
        propose(&governor, hostile);
        assert!(notice_record(&governor).delivered);
        let body: serde_json::Value =
            serde_json::from_str(&received.lock().unwrap()[0].body).unwrap();
        let text = body.to_string();
        match check {
            "slack" => {
                // Markup only where Slack reads it (mrkdwn); the preview is plain text.
                let blocks = body["blocks"].as_array().unwrap();
                assert_eq!(blocks[1]["text"]["type"], "plain_text");
                assert!(
                    blocks[1]["text"]["text"]
                        .as_str()
                        .unwrap()
                        .contains("evil.example")
                );
                assert!(!blocks[0]["text"]["text"].as_str().unwrap().contains('<'));
                let button = blocks[2]["elements"][0]["url"].as_str().unwrap();
                assert!(button.starts_with("https://approvals.example.com/proposals/"));
            }
            _ => {
                let card = &body["attachments"][0]["content"];
                assert_eq!(card["type"], "AdaptiveCard");
                let preview = card["body"][1]["text"].as_str().unwrap();
                assert!(
                    preview.contains(r"\[click\]\(https://evil\.example\)"),
                    "{preview}"
                );
                assert_eq!(card["actions"][0]["type"], "Action.OpenUrl");
            }
        }
        assert!(!text.contains("tok-hunter2"));
    }
}

#[test]
fn a_governor_dropped_right_after_a_proposal_still_delivers_its_notice() {
    let store = Arc::new(cairnloop::approvals::MemoryStore::new());
    let (url, received) = endpoint(vec![Answer::After(Duration::from_millis(300), 200)]);
    let hook = Webhook::new(&url).unwrap().start().unwrap();
    let governor = Governor::new(&TOOLS)
        .with_store(Arc::clone(&store))
        .with_notifier(hook);
    propose_on(&governor, "rent");
    // A process ending: the governor, and with it the notifier, goes at once.
    drop(governor);
    assert_eq!(received.lock().unwrap().len(), 1);
    let records = pollster::block_on(cairnloop::approvals::ApprovalStore::events_since(
        &*store, 0, 100,
    ))
    .unwrap();
    assert!(
        records
            .iter()
            .any(|(_, record)| matches!(record, AuditRecord::Notice(event) if event.delivered))
    );
}

/// The notice record of one proposal notified through `hook`.
fn notified(hook: Webhook) -> cairnloop::approvals::NoticeEvent {
    let hook = hook
        .attempts(2)
        .first_retry(Duration::from_millis(10))
        .start()
        .unwrap();
    let governor = Governor::new(&TOOLS).with_notifier(hook);
    propose(&governor, "rent");
    notice_record(&governor)
}

#[test]
fn an_https_receiver_is_trusted_under_its_private_root_only() {
    let scratch = scratch::Scratch::new("webhook-tls");
    receiver::authorities(scratch.path());
    let receiver = receiver::Receiver::start(scratch.path(), true, &[]);
    let url = format!("{}/hook", receiver.base);
    let pem = |name: &str| std::fs::read(scratch.file(name)).unwrap();

    let trusted = notified(
        Webhook::new(&url)
            .unwrap()
            .trusting(&pem("ca.pem"))
            .unwrap(),
    );
    assert!(trusted.delivered, "{trusted:?}");
    assert_eq!(receiver.paths(), ["/hook"]);

    // Another authority, or the public web roots: the certificate is refused, nothing
    // is posted.
    for hook in [
        Webhook::new(&url)
            .unwrap()
            .trusting(&pem("stranger.pem"))
            .unwrap(),
        Webhook::new(&url).unwrap(),
    ] {
        let refused = notified(hook);
        assert!(!refused.delivered, "{refused:?}");
        assert!(
            refused
                .reason
                .as_deref()
                .unwrap_or("")
                .contains("certificate"),
            "{refused:?}"
        );
    }
    assert_eq!(receiver.paths(), ["/hook"]);
    // What is not a certificate is said at once.
    let key = Webhook::new(&url).unwrap().trusting(&pem("server.key"));
    assert!(matches!(
        key,
        Err(cairnloop::notifiers::WebhookError::Certificate(_))
    ));
}

#[test]
fn a_redirect_is_never_followed_nor_tried_again() {
    let scratch = scratch::Scratch::new("webhook-redirect");
    let receiver = receiver::Receiver::start(scratch.path(), false, &[302, 307]);
    let event = notified(Webhook::new(&format!("{}/hook", receiver.base)).unwrap());
    assert_eq!((event.delivered, event.attempts), (false, 1), "{event:?}");
    assert!(
        event.reason.as_deref().unwrap_or("").contains("redirected"),
        "{event:?}"
    );
    // Posted once, where it was sent; never to where the redirect pointed.
    assert_eq!(receiver.paths(), ["/hook"]);
}
