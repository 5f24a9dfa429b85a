//! What a webhook sends: one body per kind of receiver, each built from a notice whose
//! text came from a model and is escaped for the receiver's markup.

use std::string::{String, ToString};

use serde_json::{Value, json};

use crate::approvals::Notice;

/// The body a webhook sends, for the receiver at its URL.
///
/// ```
/// use cairnloop::notifiers::WebhookFormat;
///
/// assert_eq!("slack".parse::<WebhookFormat>(), Ok(WebhookFormat::Slack));
/// assert_eq!(WebhookFormat::Teams.as_str(), "teams");
/// assert!("email".parse::<WebhookFormat>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WebhookFormat {
    /// A JSON object with every field of the notice (`"type": "proposal.waiting"`), for
    /// a receiver of the host's own.
    #[default]
    Json,
    /// A Slack incoming webhook's message: text and blocks, with Slack's control
    /// characters escaped so a model's text cannot make a link or a mention.
    Slack,
    /// A Microsoft Teams workflow's message ("When a Teams webhook request is
    /// received"): an Adaptive Card, with Markdown escaped in a model's text.
    Teams,
}

impl WebhookFormat {
    /// The format's name, as configuration spells it.
    ///
    /// ```
    /// assert_eq!(cairnloop::notifiers::WebhookFormat::Json.as_str(), "json");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Slack => "slack",
            Self::Teams => "teams",
        }
    }

    /// The body for `notice`, with `link` to the proposal's page when there is one, and
    /// (in Slack's) the buttons that decide it when `buttons`.
    pub(crate) fn body(self, notice: &Notice, link: Option<&str>, buttons: bool) -> Value {
        match self {
            Self::Json => generic(notice, link),
            Self::Slack => slack(notice, link, buttons),
            Self::Teams => teams(notice, link),
        }
    }
}

impl core::str::FromStr for WebhookFormat {
    type Err = UnknownFormat;

    fn from_str(text: &str) -> Result<Self, UnknownFormat> {
        match text {
            "json" => Ok(Self::Json),
            "slack" => Ok(Self::Slack),
            "teams" => Ok(Self::Teams),
            _ => Err(UnknownFormat(())),
        }
    }
}

impl core::fmt::Display for WebhookFormat {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name that is none of `json`, `slack`, `teams`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no such webhook format (json, slack, teams)")]
pub struct UnknownFormat(());

fn generic(notice: &Notice, link: Option<&str>) -> Value {
    json!({
        "type": "proposal.waiting",
        "key": notice.key.to_string(),
        "tool": notice.tool,
        "title": notice.title,
        "tier": notice.tier.as_str(),
        "raised_because": notice.raised_because,
        "proposer": notice.proposer,
        "account": notice.account_id,
        "preview": notice.preview,
        "proposed_at": notice.proposed_at.unix_millis(),
        "expires_at": notice.expires_at.unix_millis(),
        "link": link,
    })
}

/// One line that says what waits, in plain words (each format escapes it its own way).
fn headline(notice: &Notice, escape: fn(&str) -> String) -> String {
    let account = notice
        .account_id
        .as_deref()
        .map(|account| std::format!(" in {}", escape(account)))
        .unwrap_or_default();
    let raised = notice
        .raised_because
        .as_deref()
        .map(|why| std::format!(": {}", escape(&bounded(why, 300))))
        .unwrap_or_default();
    std::format!(
        "{} ({}{raised}) proposed by {}{account} waits for a decision",
        escape(&notice.title),
        notice.tier.as_str(),
        escape(&notice.proposer),
    )
}

/// Slack's mrkdwn: `&`, `<` and `>` are its control characters (links, mentions).
fn slack_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The `action_id` of a Slack message's Approve button (its `value` is the lane's key).
pub(crate) const SLACK_APPROVE: &str = "cairnloop_approve";
/// The `action_id` of a Slack message's Reject button (its `value` is the lane's key).
pub(crate) const SLACK_REJECT: &str = "cairnloop_reject";
/// The `action_id` of a Slack message's reason box, read from the message's state when
/// Reject is clicked.
pub(crate) const SLACK_REASON: &str = "cairnloop_reason";

fn slack(notice: &Notice, link: Option<&str>, buttons: bool) -> Value {
    let headline = headline(notice, slack_text);
    let mut blocks = std::vec![
        json!({"type": "section", "text": {"type": "mrkdwn", "text": std::format!("*{headline}*")}}),
        json!({"type": "section", "text": {"type": "plain_text", "text": bounded(&notice.preview, 2_900)}}),
    ];
    let mut elements = std::vec::Vec::new();
    if buttons {
        let key = notice.key.to_string();
        blocks.push(json!({
            "type": "input", "optional": true,
            "label": {"type": "plain_text", "text": "Reason (to reject)"},
            "element": {"type": "plain_text_input", "action_id": SLACK_REASON, "max_length": 500},
        }));
        elements.push(
            json!({"type": "button", "style": "primary", "action_id": SLACK_APPROVE,
            "text": {"type": "plain_text", "text": "Approve"}, "value": key}),
        );
        elements.push(
            json!({"type": "button", "style": "danger", "action_id": SLACK_REJECT,
            "text": {"type": "plain_text", "text": "Reject"}, "value": key}),
        );
    }
    if let Some(link) = link {
        elements.push(json!({"type": "button", "text": {"type": "plain_text", "text": "Open in the console"}, "url": link}));
    }
    if !elements.is_empty() {
        blocks.push(json!({"type": "actions", "elements": elements}));
    }
    json!({"text": headline, "blocks": blocks})
}

/// Adaptive Cards read CommonMark in a text block: a backslash before each character
/// with a meaning keeps a model's `[text](url)` from becoming a link.
fn teams_text(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\`*_{}[]()#+-.!<>|~".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

fn teams(notice: &Notice, link: Option<&str>) -> Value {
    let mut card = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [
            {"type": "TextBlock", "text": headline(notice, teams_text), "weight": "Bolder", "wrap": true},
            {"type": "TextBlock", "text": teams_text(&bounded(&notice.preview, 2_900)), "wrap": true},
        ],
    });
    if let Some(link) = link {
        card["actions"] =
            json!([{"type": "Action.OpenUrl", "title": "Open in the console", "url": link}]);
    }
    json!({
        "type": "message",
        "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": card}],
    })
}

/// At most `most` bytes of `text`, cut at a character boundary, marked when cut (chat
/// services refuse long blocks).
fn bounded(text: &str, most: usize) -> String {
    if text.len() <= most {
        return text.to_string();
    }
    let mut end = most;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declare::{IdempotencyKey, RiskTier};
    use crate::gate::Timestamp;

    fn notice(raised_because: Option<&str>) -> Notice {
        Notice {
            key: IdempotencyKey::for_canonical_call("put", "{}", Some("agent-7"), None, None),
            tool: "put".into(),
            title: "Put".into(),
            tier: RiskTier::HighWrite,
            raised_because: raised_because.map(Into::into),
            proposer: "agent-7".into(),
            account_id: None,
            preview: "Write /etc/hosts".into(),
            proposed_at: Timestamp::from_unix_millis(0),
            expires_at: Timestamp::from_unix_millis(1),
        }
    }

    #[test]
    fn a_raised_call_says_why_in_every_format_and_escaped_for_each() {
        let raised = notice(Some("outside <scratch> & [here](x)"));
        let json = WebhookFormat::Json.body(&raised, None, false);
        assert_eq!(json["raised_because"], "outside <scratch> & [here](x)");
        let slack = WebhookFormat::Slack.body(&raised, None, false);
        assert_eq!(
            slack["text"],
            "Put (high_write: outside &lt;scratch&gt; &amp; [here](x)) proposed by agent-7 waits for a decision"
        );
        let teams = WebhookFormat::Teams.body(&raised, None, false);
        let headline = teams["attachments"][0]["content"]["body"][0]["text"]
            .as_str()
            .unwrap();
        assert!(
            headline.contains(r"high_write: outside \<scratch\> & \[here\]\(x\)"),
            "{headline}"
        );

        let plain = notice(None);
        assert!(WebhookFormat::Json.body(&plain, None, false)["raised_because"].is_null());
        assert_eq!(
            WebhookFormat::Slack.body(&plain, None, false)["text"],
            "Put (high_write) proposed by agent-7 waits for a decision"
        );
    }
}
