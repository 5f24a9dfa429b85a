//! Slack's clicks on the console's route, in process, against a model of who may decide:
//! any body, signed or not, fresh or not, naming any lane, button and user, gets an
//! answer (never a panic), and a lane moves only when the click is genuine, fresh, new,
//! from a mapped operator who did not propose the call and holds its tier right.
//!
//! The signatures are made here with HMAC-SHA256 written from its definition (RFC 2104
//! over `sha2`), not with the code under test.

use std::sync::Arc;

#[macro_use]
#[path = "../../tests/fixtures/plain_tool.rs"]
mod plain_tool;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use cairnloop::approvals::{AuditRecord, MemoryStore};
use cairnloop::console::{Accounts, Console, ConsoleConfig, Credential, Operator, SlackDecisions};
use cairnloop::gate::LaneState;
use cairnloop::{Actor, Governor, Outcome, Registry, RiskTier, ToolCall, ToolEntry, ToolSpec};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tower::ServiceExt;

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

plain_tool!(Post(Note) -> Result<(), String>, (),
    ToolSpec::new("post_note", "Post a note", "Posts a note.", RiskTier::HighWrite),
    ["notes:write"],
    |call| { Ok(()) }
);

plain_tool!(Deploy(Note) -> Result<(), String>, (),
    ToolSpec::new("deploy", "Deploy", "Deploys.", RiskTier::HighWrite).with_quorum(2),
    ["notes:write"],
    |call| { Ok(()) }
);

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::mcp::<Post>(), ToolEntry::mcp::<Deploy>()]);

const SECRET: &[u8] = b"8f742231b10e8888abcd99yyyzzz85a5";

/// HMAC-SHA256 (RFC 2104), as Slack signs: over `v0:{timestamp}:{body}`.
fn slack_signature(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    let mut key = [0u8; 64];
    if secret.len() > 64 {
        key[..32].copy_from_slice(&Sha256::digest(secret));
    } else {
        key[..secret.len()].copy_from_slice(secret);
    }
    let pad = |byte: u8| key.map(|k| k ^ byte);
    let mut inner = Sha256::new();
    inner.update(pad(0x36));
    inner.update(format!("v0:{timestamp}:").as_bytes());
    inner.update(body);
    let mut outer = Sha256::new();
    outer.update(pad(0x5c));
    outer.update(inner.finalize());
    let hex: String = outer
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("v0={hex}")
}

#[test]
fn the_signature_here_is_slacks_published_example() {
    // Slack's documentation: "Verifying requests from Slack", its worked example.
    let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    assert_eq!(
        slack_signature(
            b"8f742231b10e8888abcd99yyyzzz85a5",
            "1531420618",
            body.as_bytes()
        ),
        "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    );
}

struct App {
    router: axum::Router,
    governor: Arc<Governor<(), MemoryStore>>,
}

/// A console whose Slack users are the proposer (`UAGENT`), an operator of every tier
/// (`ULEAD`) and one of low tiers only (`UJUNIOR`); `USTRANGER` is nobody.
fn app() -> App {
    let governor = Arc::new(Governor::new(&TOOLS));
    let config = ConsoleConfig::new()
        .with_operator(Operator::new(
            "ops-lead",
            Credential::token("a"),
            Accounts::All,
        ))
        .with_operator(Operator::new(
            "agent-7",
            Credential::token("b"),
            Accounts::All,
        ))
        .with_operator(
            Operator::new("junior", Credential::token("c"), Accounts::All)
                .deciding_only([RiskTier::ReadOnly, RiskTier::LowWrite]),
        );
    let slack = SlackDecisions::new(SECRET.to_vec())
        .with_user("ULEAD", "ops-lead")
        .with_user("UAGENT", "agent-7")
        .with_user("UJUNIOR", "junior");
    serving(governor, config, slack)
}

/// The console over `governor` with `config`'s operators, taking `slack`'s clicks.
fn serving(
    governor: Arc<Governor<(), MemoryStore>>,
    config: ConsoleConfig,
    slack: SlackDecisions,
) -> App {
    let router = Console::new(Arc::clone(&governor), config)
        .with_slack(slack)
        .router();
    App { router, governor }
}

async fn propose(app: &App) -> String {
    let actor = Actor::new("agent-7", &["notes:write"]);
    let call = ToolCall::new("post_note", r#"{"text":"hello"}"#);
    match app.governor.call(&call, &actor, &()).await.expect("a call") {
        Outcome::AwaitingApproval(lane) => lane.key().to_string(),
        other => panic!("expected a proposal, got {other:?}"),
    }
}

fn payload(action: &str, key: &str, user: &str, reason: Option<&str>) -> String {
    let values = match reason {
        Some(reason) => {
            serde_json::json!({"b": {"cairnloop_reason": {"type": "plain_text_input", "value": reason}}})
        }
        None => serde_json::json!({}),
    };
    let payload = serde_json::json!({
        "type": "block_actions",
        "user": {"id": user},
        "actions": [{"action_id": action, "value": key}],
        "state": {"values": values},
    });
    let text = payload.to_string();
    let mut encoded = String::from("payload=");
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                encoded.push(byte as char)
            }
            b' ' => encoded.push('+'),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

async fn post(app: &App, body: &[u8], timestamp: &str, signature: Option<&str>) -> StatusCode {
    let mut request = Request::post("/slack/actions")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", timestamp);
    if let Some(signature) = signature {
        request = request.header("x-slack-signature", signature);
    }
    let request = request.body(Body::from(body.to_vec())).expect("a request");
    app.router
        .clone()
        .oneshot(request)
        .await
        .expect("an answer")
        .status()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

async fn state(app: &App, key: &str) -> LaneState {
    let key = key.parse().expect("a key");
    app.governor.lane(&key).await.expect("the lane").state()
}

/// Every click made of these parts, signed or not, fresh or not (2,304 of them, each on a
/// console of its own): the lane moves exactly when the model says it may, and only as
/// the button says; every refusal is in the trail; a genuine request is never taken twice.
#[tokio::test]
async fn a_lane_moves_only_for_a_genuine_fresh_click_by_someone_who_may() {
    let mut moved = 0;
    for action in ["cairnloop_approve", "cairnloop_reject", "other"] {
        for user in ["ULEAD", "UAGENT", "UJUNIOR", "USTRANGER"] {
            for right_key in [true, false] {
                for reason in [None, Some(""), Some("  "), Some("wrong folder")] {
                    for age in [0i64, 299, -299, 301, -301, 3_600] {
                        for signed_with in ["right", "wrong", "none", "tampered"] {
                            let click = Click {
                                action,
                                user,
                                right_key,
                                reason,
                                age,
                                signed_with,
                            };
                            moved += usize::from(click.check().await);
                        }
                    }
                }
            }
        }
    }
    // ULEAD approving (any reason) or rejecting with one, and UAGENT rejecting with one:
    // on the right lane, rightly signed, within 300 s (3 ages of 6).
    assert_eq!(moved, (4 + 1 + 1) * 3);
}

struct Click {
    action: &'static str,
    user: &'static str,
    right_key: bool,
    reason: Option<&'static str>,
    age: i64,
    signed_with: &'static str,
}

impl Click {
    /// Sends it to a console of its own and checks what came of it; whether it moved.
    async fn check(&self) -> bool {
        let app = app();
        let key = propose(&app).await;
        // Another lane's key, well formed: the first digit changed.
        let first = if key.starts_with('0') { "1" } else { "0" };
        let other = format!("{first}{}", &key[1..]);
        let named = if self.right_key {
            key.as_str()
        } else {
            other.as_str()
        };
        let body = payload(self.action, named, self.user, self.reason);
        let timestamp = (now() as i64 - self.age).to_string();
        let signature = match self.signed_with {
            "right" => Some(slack_signature(SECRET, &timestamp, body.as_bytes())),
            "wrong" => Some(slack_signature(
                b"another secret",
                &timestamp,
                body.as_bytes(),
            )),
            "tampered" => Some(slack_signature(
                SECRET,
                &timestamp,
                format!("{body}&x=1").as_bytes(),
            )),
            _ => None,
        };
        let status = post(&app, body.as_bytes(), &timestamp, signature.as_deref()).await;
        let what = format!("{} by {} ({status})", self.action, self.user);

        let genuine = self.signed_with == "right" && self.age.abs() <= 300;
        let clicked = matches!(self.action, "cairnloop_approve" | "cairnloop_reject");
        let approve = self.action == "cairnloop_approve";
        let allowed = self.user == "ULEAD" || (self.user == "UAGENT" && !approve);
        let reasoned = self.reason.is_some_and(|reason| !reason.trim().is_empty());
        let moves = genuine && clicked && self.right_key && allowed && (approve || reasoned);
        let expected = match (moves, approve) {
            (true, true) => LaneState::Approved,
            (true, false) => LaneState::Rejected,
            (false, _) => LaneState::Pending,
        };
        assert_eq!(state(&app, &key).await, expected, "{what}");
        assert_eq!(status == StatusCode::OK, moves, "{what}");
        if !genuine {
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}");
        }
        // Every refusal is in the trail; a genuine click names its lane.
        let refusals: Vec<_> = (app.governor.events().await.unwrap().into_iter())
            .filter_map(|record| match record {
                AuditRecord::Refusal(event) => Some(event),
                _ => None,
            })
            .collect();
        assert_eq!(refusals.len(), usize::from(!moves), "{what}");
        if let Some(refusal) = refusals.first() {
            assert_eq!(
                refusal.key.is_some(),
                genuine && clicked,
                "{what}: {refusal:?}"
            );
        }
        // The same request again is never taken twice.
        if genuine {
            let again = post(&app, body.as_bytes(), &timestamp, signature.as_deref()).await;
            assert_eq!(again, StatusCode::CONFLICT, "{what}");
            assert_eq!(state(&app, &key).await, expected, "{what}");
        }
        moves
    }
}

proptest::proptest! {
    /// Any bytes as a body, signed correctly and fresh: an answer, never a panic, and the
    /// lane unchanged unless the bytes are a genuine click.
    #[test]
    fn any_signed_body_is_answered_and_moves_nothing(
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let app = app();
            let key = propose(&app).await;
            let timestamp = now().to_string();
            let signature = slack_signature(SECRET, &timestamp, &body);
            let status = post(&app, &body, &timestamp, Some(&signature)).await;
            proptest::prop_assert_eq!(status, StatusCode::BAD_REQUEST);
            proptest::prop_assert_eq!(state(&app, &key).await, LaneState::Pending);
            Ok(())
        })?;
    }
}

/// A quorum of two through Slack: each mapped operator's click counts once; the first
/// leaves the call pending with its approval, the same operator again is refused, a
/// second operator approves it; the proposer's click never counts.
#[tokio::test]
async fn slack_clicks_count_once_each_toward_a_quorum() {
    let config = ConsoleConfig::new()
        .with_operator(Operator::new(
            "ops-lead",
            Credential::token("a"),
            Accounts::All,
        ))
        .with_operator(Operator::new(
            "agent-7",
            Credential::token("b"),
            Accounts::All,
        ))
        .with_operator(Operator::new(
            "sre-on-call",
            Credential::token("d"),
            Accounts::All,
        ));
    let slack = SlackDecisions::new(SECRET.to_vec())
        .with_user("ULEAD", "ops-lead")
        .with_user("UAGENT", "agent-7")
        .with_user("USRE", "sre-on-call");
    let app = serving(Arc::new(Governor::new(&TOOLS)), config, slack);
    let actor = Actor::new("agent-7", &["notes:write"]);
    let call = ToolCall::new("deploy", r#"{"text":"v2"}"#);
    let key = match app.governor.call(&call, &actor, &()).await.expect("a call") {
        Outcome::AwaitingApproval(lane) => lane.key(),
        other => panic!("a deploy waits: {other:?}"),
    };
    let click = |user: &str, n: u64| {
        let body = payload("cairnloop_approve", &key.to_string(), user, None);
        let timestamp = (now() - n).to_string();
        let signature = slack_signature(SECRET, &timestamp, body.as_bytes());
        (body, timestamp, signature)
    };
    let send = async |user: &str, n: u64| {
        let (body, timestamp, signature) = click(user, n);
        post(&app, body.as_bytes(), &timestamp, Some(&signature)).await
    };
    assert_eq!(send("UAGENT", 1).await, StatusCode::FORBIDDEN);
    assert_eq!(send("ULEAD", 2).await, StatusCode::OK);
    let lane = app.governor.lane(&key).await.unwrap();
    assert_eq!(lane.state(), LaneState::Pending);
    assert_eq!(
        lane.quorum_progress().as_deref(),
        Some("1 of 2 approvals (ops-lead)")
    );
    // The same operator, a fresh click: counted already.
    assert_eq!(send("ULEAD", 3).await, StatusCode::CONFLICT);
    assert_eq!(app.governor.lane(&key).await.unwrap().approvals().len(), 1);
    assert_eq!(send("USRE", 4).await, StatusCode::OK);
    let lane = app.governor.lane(&key).await.unwrap();
    assert_eq!(lane.state(), LaneState::Approved);
    assert_eq!(
        lane.quorum_progress().as_deref(),
        Some("2 of 2 approvals (ops-lead, sre-on-call)")
    );
    // Each refusal is on the record, by reason.
    let reasons: Vec<String> = app
        .governor
        .events()
        .await
        .unwrap()
        .into_iter()
        .filter_map(|record| match record {
            AuditRecord::Refusal(refusal) => Some(refusal.reason.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, ["proposer", "approved_already"]);
}
