//! The person at the MCP client, as an approver: who they are, which tiers their answer
//! may approve, and how an approval is asked of them and their answer read.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::{String, ToString};
use core::time::Duration;

use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Value, json};

use crate::approvals::ApprovalLane;
use crate::declare::RiskTier;

/// The person who answers the MCP client's approval prompts (`elicitation/create`), and
/// the risk tiers for which their answer approves a call.
///
/// That person is often the very user the agent acts for, so trusting their answer is
/// the host's choice, tier by tier; the strict default trusts it for none. A call of a
/// tier not named here waits for another operator, out of band (the proposal stays in
/// the store). The person's id must differ from the agent's: the governor's four-eyes
/// rule holds here as everywhere. A declined prompt rejects the call; a cancelled or
/// unanswered one leaves it pending.
///
/// ```
/// use std::time::Duration;
/// use cairnloop::RiskTier;
/// use cairnloop::mcp::ClientApprover;
///
/// let alice = ClientApprover::new("user:alice")
///     .may_approve(RiskTier::LowWrite)
///     .with_timeout(Duration::from_secs(120));
/// assert!(alice.approves(RiskTier::LowWrite));
/// assert!(!alice.approves(RiskTier::HighWrite)); // another operator decides those
/// assert!(!ClientApprover::new("user:bob").approves(RiskTier::LowWrite)); // strict default
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientApprover {
    id: String,
    low_write: bool,
    high_write: bool,
    timeout: Duration,
}

impl ClientApprover {
    /// The person `id`, trusted for no tier yet, with a 5-minute timeout per prompt.
    ///
    /// ```
    /// let approver = cairnloop::mcp::ClientApprover::new("user:alice");
    /// assert_eq!(approver.id(), "user:alice");
    /// ```
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            low_write: false,
            high_write: false,
            timeout: Duration::from_secs(300),
        }
    }

    /// Trusts this person's answer for calls of `tier`. Read-only calls need no approval
    /// and destructive ones are never approved, so only the two write tiers count.
    ///
    /// ```
    /// use cairnloop::{RiskTier, mcp::ClientApprover};
    /// let approver = ClientApprover::new("user:alice").may_approve(RiskTier::Destructive);
    /// assert!(!approver.approves(RiskTier::Destructive)); // always blocked, whoever asks
    /// ```
    #[must_use]
    pub fn may_approve(mut self, tier: RiskTier) -> Self {
        match tier {
            RiskTier::LowWrite => self.low_write = true,
            RiskTier::HighWrite => self.high_write = true,
            RiskTier::ReadOnly | RiskTier::Destructive => {}
        }
        self
    }

    /// How long a prompt waits for an answer before the call is left pending.
    ///
    /// ```
    /// use std::time::Duration;
    /// let approver = cairnloop::mcp::ClientApprover::new("u").with_timeout(Duration::from_secs(9));
    /// assert_eq!(approver.timeout(), Duration::from_secs(9));
    /// ```
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether this person's answer approves a call of `tier`.
    ///
    /// ```
    /// use cairnloop::{RiskTier, mcp::ClientApprover};
    /// assert!(ClientApprover::new("u").may_approve(RiskTier::HighWrite).approves(RiskTier::HighWrite));
    /// ```
    #[must_use]
    pub fn approves(&self, tier: RiskTier) -> bool {
        match tier {
            RiskTier::LowWrite => self.low_write,
            RiskTier::HighWrite => self.high_write,
            RiskTier::ReadOnly | RiskTier::Destructive => false,
        }
    }

    /// The person's id, recorded as the decider of what they approve or reject.
    ///
    /// ```
    /// assert_eq!(cairnloop::mcp::ClientApprover::new("user:alice").id(), "user:alice");
    /// ```
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// How long a prompt waits.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(cairnloop::mcp::ClientApprover::new("u").timeout(), Duration::from_secs(300));
    /// ```
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The same trust (tiers, timeout) for another person: over HTTP, whoever the access
    /// token names answers the prompt.
    pub(crate) fn for_person(&self, id: &str) -> Self {
        Self {
            id: id.to_string(),
            ..self.clone()
        }
    }
}

/// The key of the approval prompt in a multi-round-trip `inputRequests` map.
pub(crate) const APPROVAL_INPUT: &str = "approval";

/// The prompt for one pending call: what it does (the preview), its tier, the scopes it
/// uses and until when the approval can be given; a choice of approve or reject, with an
/// optional reason.
pub(crate) fn approval_prompt(lane: &ApprovalLane) -> ElicitRequest {
    let proposal = lane.proposal();
    let scopes = if proposal.required_scopes().is_empty() {
        "none".to_owned()
    } else {
        proposal.required_scopes().join(", ")
    };
    let quorum = lane
        .quorum_progress()
        .map(|progress| format!("\nApprovals: {progress}; yours counts once"))
        .unwrap_or_default();
    let raised = proposal
        .raised_because()
        .map(|why| format!(" (raised: {why})"))
        .unwrap_or_default();
    let message = format!(
        "An agent ({agent}) asks to run {title} ({tool}).\n\n{preview}\n\nRisk tier: {tier}{raised}\n\
         Scopes: {scopes}\nApproval open until: {expires}{quorum}\nProposal: {key}",
        agent = proposal.actor_id(),
        title = proposal.title(),
        tool = proposal.tool(),
        preview = proposal.preview().text(),
        tier = proposal.risk_tier(),
        expires = lane.expires_at().utc(),
        key = lane.key(),
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": ["approve", "reject"],
                "enumNames": ["Approve: run it once", "Reject: it never runs"],
            },
            "reason": {
                "type": "string",
                "title": "Reason (for a rejection)",
                "maxLength": 500,
            },
        },
        "required": ["decision"],
    });
    let requested_schema = serde_json::from_value(schema)
        .unwrap_or_else(|_| rmcp::model::ElicitationSchema::builder().build_unchecked());
    ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    })
}

/// What the person's answer means for the call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Approve,
    Reject(String),
    /// No decision: the call stays pending. Says why.
    Undecided(String),
}

/// Reads an answer. Only an explicit `approve` approves: an accepted form without it, or
/// with anything else, decides nothing.
pub(crate) fn read_answer(result: &ElicitResult, who: &str) -> Answer {
    match result.action {
        ElicitationAction::Decline => {
            Answer::Reject(format!("declined by {who} in the MCP client"))
        }
        ElicitationAction::Cancel => Answer::Undecided(format!("{who} dismissed the prompt")),
        ElicitationAction::Accept => {
            let content = result.content.as_ref();
            let field = |name: &str| {
                content
                    .and_then(|content| content.get(name))
                    .and_then(Value::as_str)
            };
            match field("decision") {
                Some("approve") => Answer::Approve,
                Some("reject") => {
                    let given = field("reason")
                        .and_then(|reason| reason.lines().next())
                        .unwrap_or("")
                        .trim();
                    let reason: String = given
                        .chars()
                        .filter(|c| !c.is_control())
                        .take(500)
                        .collect();
                    Answer::Reject(if reason.is_empty() {
                        format!("rejected by {who} in the MCP client")
                    } else {
                        reason
                    })
                }
                _ => Answer::Undecided(
                    "the answer neither approved nor rejected the call".to_string(),
                ),
            }
        }
        _ => Answer::Undecided("the answer was not understood".to_string()),
    }
}

/// Reads an answer echoed in a multi-round-trip retry, where it arrives as plain JSON.
pub(crate) fn read_echoed_answer(value: Option<&Value>, who: &str) -> Answer {
    match value.map(|value| serde_json::from_value::<ElicitResult>(value.clone())) {
        Some(Ok(result)) => read_answer(&result, who),
        Some(Err(error)) => Answer::Undecided(format!("the answer was not understood: {error}")),
        None => Answer::Undecided("the retry carried no answer to the approval prompt".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(content: Value) -> ElicitResult {
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
    }

    #[test]
    fn only_an_explicit_approve_approves() {
        assert_eq!(
            read_answer(&accepted(json!({"decision": "approve"})), "u"),
            Answer::Approve
        );
        for content in [
            json!({}),
            json!({"decision": "yes"}),
            json!({"decision": true}),
            json!("approve"),
        ] {
            assert!(matches!(
                read_answer(&accepted(content), "u"),
                Answer::Undecided(_)
            ));
        }
        assert!(matches!(
            read_answer(&ElicitResult::new(ElicitationAction::Cancel), "u"),
            Answer::Undecided(_)
        ));
    }

    #[test]
    fn a_rejection_keeps_one_clean_line_of_reason() {
        let answer = read_answer(
            &accepted(json!({"decision": "reject", "reason": "not today\nrm -rf"})),
            "u",
        );
        assert_eq!(answer, Answer::Reject("not today".into()));
        let answer = read_answer(&ElicitResult::new(ElicitationAction::Decline), "user:alice");
        assert_eq!(
            answer,
            Answer::Reject("declined by user:alice in the MCP client".into())
        );
    }
}
