use alloc::borrow::Cow;
use alloc::string::{String, ToString};

use crate::declare::{Actor, ApprovalMode, IdempotencyKey, RiskTier, ToolSpec};
use crate::gate::{Blocked, Verdict};
use crate::json::call::Admitted;

/// The longest tool name an audit record copies from a model; the rest is cut.
const MAX_RECORDED_NAME_CHARS: usize = 128;

/// One append-only audit record: who asked for which tool, what was decided and why.
///
/// ```
/// # use cairnloop::json::AuditEvent;
/// fn log(event: &AuditEvent) {
///     println!("{} {} {} {:?}", event.actor_id, event.tool, event.decision, event.code);
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct AuditEvent {
    /// The tool's name; for an unknown tool, the requested name escaped and cut to 128
    /// characters. (Borrowed from the registry when the tool is known: a decision record
    /// copies only what the caller owns.)
    pub tool: Cow<'static, str>,
    /// Who asked.
    pub actor_id: String,
    /// The account the actor acted in.
    pub account_id: Option<String>,
    /// `execute`, `await_approval` or `blocked`; or `proposal_failed`, after an
    /// `await_approval` whose proposal could not be opened (the `reason` says why).
    pub decision: Cow<'static, str>,
    /// The block's code (`unknown_tool`, `needs_input`, ...), if blocked.
    pub code: Option<Cow<'static, str>>,
    /// The block's reason, fit for an operator, if blocked.
    pub reason: Option<String>,
    /// The call's idempotency key, once the input was valid.
    pub idempotency_key: Option<IdempotencyKey>,
    /// The approval mode in force, once it was resolved.
    pub mode: Option<ApprovalMode>,
    /// The spec's justification for a loosened mode, if it has one.
    pub loosened_because: Option<Cow<'static, str>>,
    /// The call's risk tier, where its input raised it above the tool's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_tier: Option<RiskTier>,
    /// A tier below the tool's that the call's input asked for: ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored_tier: Option<RiskTier>,
    /// Why the tool's rule raised the call to `risk_tier`, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raised_because: Option<String>,
}

impl AuditEvent {
    /// The record, with why the tool's rule raised the call by name it records.
    #[must_use]
    pub(crate) fn with_raise_reason<C: ?Sized>(mut self, verdict: &Verdict<Admitted<C>>) -> Self {
        if let Verdict::Execute { input, .. } | Verdict::AwaitApproval { input, .. } = verdict {
            self.raised_because.clone_from(&input.raised_because);
        }
        self
    }

    /// The record of the gates' verdict on a call of `requested` (the name as asked) by
    /// `actor`; `spec` is the resolved tool's, `None` for an unknown name.
    pub(crate) fn of_verdict<I>(
        requested: &str,
        spec: Option<&ToolSpec>,
        actor: &Actor<'_>,
        verdict: &Verdict<I>,
    ) -> Self {
        let tool = spec.map_or_else(
            || Cow::Owned(Self::recorded_name(requested)),
            |spec| Cow::Borrowed(spec.name()),
        );
        let mut event = Self::decided(tool, actor.id(), actor.account(), verdict.code());
        event.loosened_because = spec.and_then(ToolSpec::loosened_because).map(Cow::Borrowed);
        match verdict {
            Verdict::Execute { mode, .. } | Verdict::AwaitApproval { mode, .. } => {
                event.mode = Some(mode.resolved());
                event.risk_tier = (mode.tier() != mode.declared_tier()).then_some(mode.tier());
                event.ignored_tier = mode.ignored_tier();
            }
            Verdict::Blocked(blocked) => {
                if let Blocked::AlwaysBlocked { .. } = blocked {
                    event.mode = Some(ApprovalMode::AlwaysBlock);
                }
                event.code = Some(Cow::Borrowed(blocked.code()));
                event.reason = Some(blocked.to_string());
            }
        }
        event
    }

    /// A record of a decision about `tool` for `actor`.
    pub(crate) fn decided(
        tool: Cow<'static, str>,
        actor_id: &str,
        account_id: Option<&str>,
        decision: &'static str,
    ) -> Self {
        Self {
            tool,
            actor_id: actor_id.to_string(),
            account_id: account_id.map(ToString::to_string),
            decision: Cow::Borrowed(decision),
            code: None,
            reason: None,
            idempotency_key: None,
            mode: None,
            loosened_because: None,
            risk_tier: None,
            ignored_tier: None,
            raised_because: None,
        }
    }

    /// A requested name as it may be recorded: escaped, cut.
    pub(crate) fn recorded_name(name: &str) -> String {
        let mut recorded: String = name
            .chars()
            .take(MAX_RECORDED_NAME_CHARS)
            .flat_map(char::escape_debug)
            .collect();
        if name.chars().nth(MAX_RECORDED_NAME_CHARS).is_some() {
            recorded.push('…');
        }
        recorded
    }
}
