//! Decisions from Slack (feature `slack`): the Approve and Reject buttons of a notice
//! (see [`Webhook::with_decisions`](crate::notifiers::Webhook::with_decisions)) post here,
//! signed by Slack; each click is checked before anything in it is believed, taken once
//! across every process sharing the store, and decided as the mapped operator would
//! decide it in the console.

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::approvals::{ApprovalError, ApprovalLane, RefusalEvent};
use crate::declare::IdempotencyKey;
use crate::gate::{LaneState, Timestamp};
use crate::notifiers::{SLACK_APPROVE, SLACK_REASON, SLACK_REJECT, WebhookError, agent, roots_in};

use super::Inner;
use super::handlers::{Host, Store};

/// How far a request's timestamp may be from now, either way: Slack's own rule.
const TOLERANCE_SECS: u64 = 300;

/// How long Slack's answer to a click may take to be posted back.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Decisions taken from Slack's interactive buttons: the app's signing secret, and which
/// Slack user is which operator of the console.
///
/// Mounted by [`Console::with_slack`](super::Console::with_slack) at
/// `POST /slack/actions` (the app's *Interactivity Request URL*). A click is refused,
/// recorded in the audit trail and leaves the lane as it was when:
///
/// - its `X-Slack-Signature` (`v0=` HMAC-SHA256 of `v0:{timestamp}:{body}` with the
///   signing secret, compared in constant time) is missing or does not match (`forged`),
///   or its `X-Slack-Request-Timestamp` is more than 300 s from now either way (`stale`);
/// - it was taken before (`replayed`): the store remembers every click it took, so two
///   replicas never take one twice;
/// - its Slack user is mapped to no operator (`unmapped`), or the operator may not decide
///   the call's tier (`under_tier`) or see its account (`unknown_lane`);
/// - the governor refuses the decision: the operator proposed the call (`proposer`), it
///   is already decided (`decided`) or expired (`expired`), a rejection has no reason
///   (`reason_required`), the operator already gave one of a quorum's approvals
///   (`approved_already`).
///
/// A decision taken replaces the Slack message with what was decided and by whom (through
/// the click's `response_url`); an approval that leaves the call waiting for more (a
/// quorum) is posted in the channel, "1 of 2 approvals (ops-lead)", and the buttons stay
/// for the next approver. A refusal after the signature verified is told to the person
/// who clicked, and to nobody else.
///
/// ```
/// use cairnloop::console::SlackDecisions;
///
/// let slack = SlackDecisions::new(b"the app's signing secret".to_vec())
///     .with_user("U024BE7LH", "ops-lead");
/// ```
#[derive(Clone)]
pub struct SlackDecisions {
    secret: Vec<u8>,
    users: HashMap<String, String>,
    roots: Option<Vec<ureq::tls::Certificate<'static>>>,
}

impl core::fmt::Debug for SlackDecisions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SlackDecisions")
            .field("users", &self.users.len())
            .finish_non_exhaustive()
    }
}

impl SlackDecisions {
    /// Clicks signed with `signing_secret` (the Slack app's *Signing Secret*), from no
    /// user yet.
    ///
    /// ```
    /// let slack = cairnloop::console::SlackDecisions::new(b"8f742231b10e8888abcd99yyyzzz85a5".to_vec());
    /// ```
    #[must_use]
    pub fn new(signing_secret: impl Into<Vec<u8>>) -> Self {
        Self {
            secret: signing_secret.into(),
            users: HashMap::new(),
            roots: None,
        }
    }

    /// The Slack user `slack_user` (an id such as `U024BE7LH`) decides as the console's
    /// operator `operator`, with that operator's tier rights and accounts.
    ///
    /// ```
    /// let slack = cairnloop::console::SlackDecisions::new(b"secret".to_vec())
    ///     .with_user("U024BE7LH", "ops-lead")
    ///     .with_user("U0G9QF9C6", "junior");
    /// ```
    #[must_use]
    pub fn with_user(mut self, slack_user: impl Into<String>, operator: impl Into<String>) -> Self {
        self.users.insert(slack_user.into(), operator.into());
        self
    }

    /// Trusts the root certificates in `pem` for the answers posted to a click's
    /// `response_url`, in place of the public web roots (a test's receiver).
    ///
    /// # Errors
    ///
    /// [`WebhookError::Certificate`] when `pem` holds no certificate.
    ///
    /// ```
    /// # use cairnloop::console::SlackDecisions;
    /// assert!(SlackDecisions::new(b"secret".to_vec()).trusting(b"not a certificate").is_err());
    /// ```
    pub fn trusting(mut self, pem: &[u8]) -> Result<Self, WebhookError> {
        self.roots = Some(roots_in(pem)?);
        Ok(self)
    }

    /// Whether `signature` (`v0=<hex>`) signs `body` sent at `timestamp`, and the
    /// timestamp is within the tolerance of `now_secs`.
    fn verify(
        &self,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
        now_secs: u64,
    ) -> Result<u64, &'static str> {
        let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
            return Err("unsigned");
        };
        let at: u64 = timestamp.parse().map_err(|_| "forged")?;
        let digest = signature
            .strip_prefix("v0=")
            .and_then(decode_hex)
            .ok_or("forged")?;
        // Any key length is valid for HMAC: this cannot fail.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(format!("v0:{timestamp}:").as_bytes());
        mac.update(body);
        mac.verify_slice(&digest).map_err(|_| "forged")?;
        // Checked after the signature, so that a stale click is one Slack did send.
        if now_secs.abs_diff(at) > TOLERANCE_SECS {
            return Err("stale");
        }
        Ok(at)
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

/// The value of `name` in an `application/x-www-form-urlencoded` body.
fn form_value(body: &[u8], name: &str) -> Option<String> {
    let body = core::str::from_utf8(body).ok()?;
    let encoded = body
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?;
    let bytes = encoded.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'+' => decoded.push(b' '),
            b'%' => {
                let hex = bytes.get(at + 1..at + 3)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                decoded.push(u8::from_str_radix(core::str::from_utf8(hex).ok()?, 16).ok()?);
                at += 2;
            }
            other => decoded.push(other),
        }
        at += 1;
    }
    String::from_utf8(decoded).ok()
}

/// What a verified click asks: which button, on which lane, by whom, with what reason,
/// and where to answer.
struct Click {
    approve: bool,
    key: IdempotencyKey,
    user: String,
    reason: String,
    response_url: Option<String>,
}

fn click(payload: &Value) -> Option<Click> {
    if payload["type"] != "block_actions" {
        return None;
    }
    let action = payload["actions"].as_array()?.first()?;
    let approve = match action["action_id"].as_str()? {
        SLACK_APPROVE => true,
        SLACK_REJECT => false,
        _ => return None,
    };
    let key = action["value"].as_str()?.parse().ok()?;
    let user = payload["user"]["id"].as_str()?.to_string();
    // The reason box's value, from the message's state when the button was clicked.
    let reason = payload["state"]["values"]
        .as_object()
        .into_iter()
        .flat_map(|blocks| blocks.values())
        .find_map(|block| block[SLACK_REASON]["value"].as_str())
        .unwrap_or("")
        .trim()
        .to_string();
    let response_url = payload["response_url"]
        .as_str()
        .filter(|url| url.starts_with("https://"))
        .map(str::to_string);
    Some(Click {
        approve,
        key,
        user,
        reason,
        response_url,
    })
}

/// A refusal: its status, its word for the audit trail, and what the person is told.
struct Refused {
    status: StatusCode,
    reason: &'static str,
    message: String,
}

impl Refused {
    fn new(status: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            reason,
            message: message.into(),
        }
    }
}

/// `POST /slack/actions`.
pub(super) async fn actions<C: ?Sized + Host, S: Store>(
    State(inner): State<Arc<Inner<C, S>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(slack) = inner.slack.as_ref() else {
        return (StatusCode::NOT_FOUND, "Slack decisions are not served here").into_response();
    };
    let Ok(now) = inner.governor.now() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "no clock: nothing was changed",
        )
            .into_response();
    };
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let signature = header("x-slack-signature");
    let signed_at = match slack.verify(
        header("x-slack-request-timestamp"),
        signature,
        &body,
        now.unix_millis() / 1_000,
    ) {
        Ok(at) => at,
        Err(reason) => {
            // Nothing in an unverified request is believed: the record names no lane.
            let event = RefusalEvent::new("slack", reason, now);
            let _ = inner.governor.record_refusal(event).await;
            let message = match reason {
                "stale" => "the request's timestamp is more than 300 s from now",
                "unsigned" => "the request has no X-Slack-Signature or X-Slack-Request-Timestamp",
                _ => "the request's signature does not match its body",
            };
            return (StatusCode::UNAUTHORIZED, format!("refused: {message}")).into_response();
        }
    };
    // Taken once across every process sharing the store, for as long as it could verify.
    let forget_at = Timestamp::from_unix_millis((signed_at + TOLERANCE_SECS + 60) * 1_000);
    let token = signature.unwrap_or_default();
    match inner
        .governor
        .store()
        .accept_once(token, now, forget_at)
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            let _ = (inner.governor)
                .record_refusal(RefusalEvent::new("slack", "replayed", now))
                .await;
            return (
                StatusCode::CONFLICT,
                "refused: this request was taken before",
            )
                .into_response();
        }
        Err(error) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("nothing was changed: {error}"),
            )
                .into_response();
        }
    }
    let payload: Option<Value> =
        form_value(&body, "payload").and_then(|text| serde_json::from_str(&text).ok());
    let Some(click) = payload.as_ref().and_then(click) else {
        let _ = (inner.governor)
            .record_refusal(RefusalEvent::new("slack", "malformed", now))
            .await;
        return (
            StatusCode::BAD_REQUEST,
            "refused: not a click on a cairnloop button",
        )
            .into_response();
    };
    let mut event = RefusalEvent::new("slack", "", now);
    event.key = Some(click.key);
    event.by = Some(click.user.clone());
    let decided = decide(&inner, slack, &click, &mut event).await;
    match decided {
        Ok(lane) => {
            let call = format!(
                "{} ({}) proposed by {}",
                escaped(lane.proposal().title()),
                lane.proposal().risk_tier().as_str(),
                escaped(lane.proposal().actor_id()),
            );
            let progress = lane.quorum_progress().map(|progress| escaped(&progress));
            let body = match (lane.state(), progress) {
                // More approvals to come: the buttons stay for the next approver.
                (LaneState::Pending, Some(progress)) => json!({
                    "response_type": "in_channel",
                    "replace_original": false,
                    "text": format!("{call}: {progress}"),
                }),
                (state, progress) => {
                    let operator = lane.decided_by().unwrap_or_default();
                    let mut text = format!("{call}: {state} by {operator}");
                    if let Some(progress) = progress {
                        text.push_str(&format!(", {progress}"));
                    }
                    json!({"replace_original": true, "text": text})
                }
            };
            if let Some(url) = click.response_url {
                answer(slack, url, body);
            }
            StatusCode::OK.into_response()
        }
        Err(refused) => {
            event.reason = refused.reason.into();
            let _ = inner.governor.record_refusal(event).await;
            if let Some(url) = click.response_url {
                let text = format!("Not applied: {}", escaped(&refused.message));
                answer(
                    slack,
                    url,
                    json!({"response_type": "ephemeral", "replace_original": false, "text": text}),
                );
            }
            (refused.status, format!("refused: {}", refused.message)).into_response()
        }
    }
}

/// The decision a verified click asks for, as its operator would make it in the console.
async fn decide<C: ?Sized + Host, S: Store>(
    inner: &Inner<C, S>,
    slack: &SlackDecisions,
    click: &Click,
    event: &mut RefusalEvent,
) -> Result<ApprovalLane, Refused> {
    let operator = (slack.users.get(&click.user))
        .and_then(|id| inner.config.operator(id))
        .ok_or_else(|| {
            Refused::new(
                StatusCode::FORBIDDEN,
                "unmapped",
                "your Slack user is not one of the console's operators",
            )
        })?;
    event.operator = Some(operator.id().to_string());
    let unknown = || {
        Refused::new(
            StatusCode::NOT_FOUND,
            "unknown_lane",
            "no such call, or not one of your accounts",
        )
    };
    let lane = inner
        .governor
        .lane(&click.key)
        .await
        .map_err(|_| unknown())?;
    event.tool = Some(lane.proposal().tool().to_string());
    event.account_id = lane.proposal().account_id().map(str::to_string);
    if !operator.accounts().includes(lane.proposal().account_id()) {
        return Err(unknown());
    }
    let tier = lane.proposal().risk_tier();
    if !operator.may_decide(tier) {
        return Err(Refused::new(
            StatusCode::FORBIDDEN,
            "under_tier",
            format!("you may not decide {} calls", tier.as_str()),
        ));
    }
    let decided = if click.approve {
        inner.governor.approve(&click.key, operator.id()).await
    } else if click.reason.is_empty() {
        return Err(Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "reason_required",
            "a rejection needs a reason: write it in the box, then reject",
        ));
    } else {
        (inner.governor)
            .reject(&click.key, operator.id(), &click.reason)
            .await
    };
    decided.map_err(|error| match error {
        ApprovalError::SelfApproval => Refused::new(
            StatusCode::FORBIDDEN,
            "proposer",
            "you proposed this call, so someone else must approve it",
        ),
        ApprovalError::ApprovedAlready { of } => Refused::new(
            StatusCode::CONFLICT,
            "approved_already",
            format!("you have approved it already; it needs {of} different people"),
        ),
        ApprovalError::Expired => Refused::new(StatusCode::CONFLICT, "expired", "it expired"),
        ApprovalError::Transition(_) => {
            Refused::new(StatusCode::CONFLICT, "decided", format!("{error}"))
        }
        other => Refused::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_applied",
            format!("{other}"),
        ),
    })
}

/// Slack's mrkdwn control characters, escaped: a model's text makes no link or mention.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Posts `body` to a click's `response_url` after the click is answered (Slack waits 3 s
/// for that answer). Only the message is at stake: the decision is in the store and the
/// audit trail whatever becomes of it.
fn answer(slack: &SlackDecisions, url: String, body: Value) {
    let agent = agent(slack.roots.as_deref(), RESPONSE_TIMEOUT);
    tokio::task::spawn_blocking(move || {
        let _ = agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body.to_string().as_bytes());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_value_is_decoded() {
        let body = b"token=x&payload=%7B%22a%22%3A+%22b+c%22%7D&z=1";
        assert_eq!(
            form_value(body, "payload").as_deref(),
            Some("{\"a\": \"b c\"}")
        );
        assert_eq!(form_value(b"payload=%zz", "payload"), None);
        assert_eq!(form_value(b"payload=%2", "payload"), None);
        assert_eq!(form_value(b"payload=%+1", "payload"), None);
        assert_eq!(form_value(b"other=1", "payload"), None);
    }
}
