use alloc::sync::Arc;

use alloc::string::String;

use crate::approvals::{NoticeEvent, TransitionEvent};
use crate::declare::IdempotencyKey;
use crate::gate::Timestamp;
use crate::json::AuditEvent;

/// One record of the audit trail: a decision of the gates on a call, or a move of an
/// approval lane.
///
/// ```
/// use cairnloop::approvals::AuditRecord;
///
/// fn describe(record: &AuditRecord) -> String {
///     match record {
///         AuditRecord::Decision(event) => format!("{} {} {}", event.actor_id, event.tool, event.decision),
///         AuditRecord::Transition(event) => format!("{} -> {}", event.tool, event.to),
///         AuditRecord::Notice(event) => format!("{} told {}: {}", event.tool, event.target, event.delivered),
///         AuditRecord::Refusal(event) => format!("{} refused: {}", event.surface, event.reason),
///         _ => String::from("a record of a later kind"),
///     }
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuditRecord {
    /// What the gates decided on a call.
    Decision(AuditEvent),
    /// A lane moved (or was opened).
    Transition(TransitionEvent),
    /// What became of telling people about a new proposal.
    Notice(NoticeEvent),
    /// A decision asked for at a human surface (a chat's button) and refused before it
    /// reached the lane: a forged or replayed request, or a person who may not decide.
    Refusal(RefusalEvent),
}

/// A decision request refused at a human surface, and why: the lane it named is
/// unchanged. A request whose signature did not verify names no lane (nothing in it is
/// believed).
///
/// ```
/// use cairnloop::approvals::RefusalEvent;
/// use cairnloop::gate::Timestamp;
///
/// let event = RefusalEvent::new("slack", "forged", Timestamp::from_unix_millis(1_000));
/// assert_eq!(event.key, None);
/// assert_eq!(event.reason, "forged");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RefusalEvent {
    /// Where the request came from (`slack`).
    pub surface: String,
    /// Why, in a word the surface documents (`forged`, `stale`, `replayed`, `unmapped`,
    /// `under_tier`, `proposer`, …).
    pub reason: String,
    /// The lane the request named, once its signature verified.
    #[serde(default)]
    pub key: Option<IdempotencyKey>,
    /// The lane's tool, when the lane was read.
    #[serde(default)]
    pub tool: Option<String>,
    /// The lane's account, when the lane was read.
    #[serde(default)]
    pub account_id: Option<String>,
    /// Who asked, as the surface names them (a Slack user id), once it verified.
    #[serde(default)]
    pub by: Option<String>,
    /// The operator they are mapped to, if any.
    #[serde(default)]
    pub operator: Option<String>,
    /// When it was refused.
    pub at: Timestamp,
}

impl RefusalEvent {
    /// A refusal at `surface` for `reason`, at `at`, naming nothing else yet.
    ///
    /// ```
    /// use cairnloop::approvals::RefusalEvent;
    /// use cairnloop::gate::Timestamp;
    ///
    /// let mut event = RefusalEvent::new("slack", "unmapped", Timestamp::from_unix_millis(5));
    /// event.by = Some("U0123".into());
    /// ```
    pub fn new(surface: impl Into<String>, reason: impl Into<String>, at: Timestamp) -> Self {
        Self {
            surface: surface.into(),
            reason: reason.into(),
            key: None,
            tool: None,
            account_id: None,
            by: None,
            operator: None,
            at,
        }
    }
}

/// Where a [`Governor`](crate::Governor) sends every audit record, as it happens.
///
/// The governor calls it itself, for every decision and every transition, so no caller
/// can lose a record by ignoring a return value. Without a sink of its own, a governor
/// appends decisions to its store's event log, where the transitions already are.
/// [`TracingSink`] (feature `tracing`) emits `tracing` events instead, for hosts that ship
/// logs (to OpenTelemetry, say) with their usual subscriber.
///
/// [`TracingSink`]: https://docs.rs/cairnloop/latest/cairnloop/approvals/struct.TracingSink.html
///
/// ```
/// use std::sync::Mutex;
/// use cairnloop::approvals::{AuditRecord, AuditSink};
///
/// #[derive(Default)]
/// struct Collect(Mutex<Vec<AuditRecord>>);
///
/// impl AuditSink for Collect {
///     fn record(&self, record: &AuditRecord) {
///         self.0.lock().unwrap().push(record.clone());
///     }
/// }
/// ```
pub trait AuditSink: Send + Sync {
    /// Takes one record. It must not fail the call: a sink that can fail buffers or
    /// reports on its own.
    fn record(&self, record: &AuditRecord);

    /// Whether this sink keeps anything. A sink that answers `false` (like
    /// [`DiscardAudit`]) spares the governor building decision records for it; it may
    /// still be handed records of lane moves.
    ///
    /// ```
    /// use cairnloop::approvals::{AuditSink, DiscardAudit};
    /// assert!(!DiscardAudit.keeps_records());
    /// ```
    fn keeps_records(&self) -> bool {
        true
    }
}

impl<S: AuditSink + ?Sized> AuditSink for Arc<S> {
    fn record(&self, record: &AuditRecord) {
        (**self).record(record);
    }

    fn keeps_records(&self) -> bool {
        (**self).keeps_records()
    }
}

/// A sink that drops every record: for benchmarks that measure the pipeline alone.
///
/// ```
/// use cairnloop::approvals::{AuditSink, DiscardAudit};
///
/// fn takes(_: &dyn AuditSink) {}
/// takes(&DiscardAudit);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DiscardAudit;

impl AuditSink for DiscardAudit {
    fn record(&self, _: &AuditRecord) {}

    fn keeps_records(&self) -> bool {
        false
    }
}

/// A sink that emits each record as a `tracing` event (target `cairnloop::audit`, level
/// `INFO`), its fields as event fields; a blocked decision is a `WARN`.
///
/// ```
/// use cairnloop::approvals::{AuditSink, TracingSink};
///
/// fn takes(_: &dyn AuditSink) {}
/// takes(&TracingSink);
/// ```
#[cfg(feature = "tracing")]
#[derive(Clone, Copy, Debug, Default)]
pub struct TracingSink;

#[cfg(feature = "tracing")]
impl AuditSink for TracingSink {
    fn record(&self, record: &AuditRecord) {
        match record {
            AuditRecord::Decision(event) if event.decision == "blocked" => tracing::warn!(
                target: "cairnloop::audit",
                tool = %event.tool,
                actor = %event.actor_id,
                account = event.account_id.as_deref(),
                decision = %event.decision,
                code = event.code.as_deref(),
                reason = event.reason.as_deref(),
                "call blocked"
            ),
            AuditRecord::Decision(event) => tracing::info!(
                target: "cairnloop::audit",
                tool = %event.tool,
                actor = %event.actor_id,
                account = event.account_id.as_deref(),
                decision = %event.decision,
                mode = event.mode.map(|mode| mode.as_str()),
                key = event.idempotency_key.map(|key| alloc::string::ToString::to_string(&key)),
                "call decided"
            ),
            AuditRecord::Transition(event) => tracing::info!(
                target: "cairnloop::audit",
                key = %event.key,
                tool = %event.tool,
                proposer = %event.proposer,
                from = event.from.map(|state| state.as_str()),
                to = %event.to,
                by = event.by.as_deref(),
                reason = event.reason.as_deref(),
                "lane moved"
            ),
            AuditRecord::Notice(event) if event.delivered => tracing::info!(
                target: "cairnloop::audit",
                key = %event.key,
                tool = %event.tool,
                to = %event.target,
                attempts = event.attempts,
                "people told"
            ),
            AuditRecord::Notice(event) => tracing::warn!(
                target: "cairnloop::audit",
                key = %event.key,
                tool = %event.tool,
                to = %event.target,
                attempts = event.attempts,
                reason = event.reason.as_deref(),
                "people not told"
            ),
            AuditRecord::Refusal(event) => tracing::warn!(
                target: "cairnloop::audit",
                surface = %event.surface,
                reason = %event.reason,
                key = event.key.map(|key| alloc::string::ToString::to_string(&key)),
                by = event.by.as_deref(),
                operator = event.operator.as_deref(),
                "decision refused"
            ),
        }
    }
}
