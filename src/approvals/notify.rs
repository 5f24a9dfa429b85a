//! Telling people that a call waits for them: the notifier contract, and what became of
//! each notice, in the audit trail.

use alloc::string::{String, ToString};
use alloc::sync::Arc;

use crate::approvals::outbox::{Answer, Told};
use crate::approvals::{ApprovalLane, AuditRecord};
use crate::declare::{IdempotencyKey, RiskTier};
use crate::gate::Timestamp;

/// Something that tells people about new proposals: a webhook, a chat, a pager.
///
/// A governor with a notifier ([`Governor::with_notifier`](crate::Governor::with_notifier))
/// calls it once for each new proposal, in the process whose proposal opened the lane:
/// the store adds a lane only if its key is new, so however many processes propose the
/// same call, one of them is told it opened the lane, and only that one notifies. (A
/// proposal that was reopened after a person closed its last run is new again.)
///
/// `proposed` must return at once: it is called on the agent's call path, before the
/// call's answer. Hand the work to a thread or task of your own, and say through
/// `report` what became of it; the report is written to the audit trail. A notifier
/// that fails never blocks or loses the proposal: the lane is stored before it is called.
/// A notice lives in the process until it is delivered: a process that dies first loses
/// it, and no record says so (the proposal itself is in the store, and in the console).
///
/// ```
/// use std::sync::Mutex;
/// use cairnloop::approvals::{Notice, NoticeReport, Notifier};
///
/// #[derive(Default)]
/// struct Outbox(Mutex<Vec<String>>);
///
/// impl Notifier for Outbox {
///     fn proposed(&self, notice: Notice, report: NoticeReport) {
///         self.0.lock().unwrap().push(format!("{} waits: {}", notice.tool, notice.preview));
///         report.delivered("outbox", 1);
///     }
/// }
/// ```
pub trait Notifier: Send + Sync {
    /// A new proposal waits for a person.
    fn proposed(&self, notice: Notice, report: NoticeReport);
}

/// A new proposal, as the people who may decide it are told of it. The preview is the
/// one the console shows (secret-looking fields masked by the generated preview; a
/// tool's own preview is its own).
///
/// ```
/// # fn show(notice: &cairnloop::approvals::Notice) -> String {
/// format!("{} ({}) by {}: {}", notice.title, notice.tier, notice.proposer, notice.preview)
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Notice {
    /// The lane's key: the console's page of it is `/proposals/{key}`.
    pub key: IdempotencyKey,
    /// The tool's name.
    pub tool: String,
    /// The tool's title.
    pub title: String,
    /// The call's risk tier: the tool's, or higher where the call's input raised it.
    pub tier: RiskTier,
    /// Why the call was raised above the tool's tier, when its rule said.
    pub raised_because: Option<String>,
    /// Who proposed the call.
    pub proposer: String,
    /// The account the call acts in.
    pub account_id: Option<String>,
    /// What the call would do, in words.
    pub preview: String,
    /// When it was proposed.
    pub proposed_at: Timestamp,
    /// When the proposal expires unless decided.
    pub expires_at: Timestamp,
}

impl Notice {
    pub(crate) fn of(lane: &ApprovalLane) -> Self {
        let proposal = lane.proposal();
        Self {
            key: lane.key(),
            tool: proposal.tool().to_string(),
            title: proposal.title().to_string(),
            tier: proposal.risk_tier(),
            raised_because: proposal.raised_because().map(ToString::to_string),
            proposer: proposal.actor_id().to_string(),
            account_id: proposal.account_id().map(ToString::to_string),
            preview: proposal.preview().text().to_string(),
            proposed_at: lane.proposed_at(),
            expires_at: lane.expires_at(),
        }
    }
}

/// What became of telling people about one proposal: one record per notice, in the
/// audit trail beside the lane's own moves.
///
/// ```
/// use cairnloop::approvals::{AuditRecord, NoticeEvent};
///
/// fn failures(records: &[AuditRecord]) -> Vec<&NoticeEvent> {
///     records
///         .iter()
///         .filter_map(|record| match record {
///             AuditRecord::Notice(event) if !event.delivered => Some(event),
///             _ => None,
///         })
///         .collect()
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct NoticeEvent {
    /// The lane's key.
    pub key: IdempotencyKey,
    /// The tool.
    pub tool: String,
    /// The account the call acts in.
    pub account_id: Option<String>,
    /// Where the notice went (a notifier's name for its target, never a secret).
    pub target: String,
    /// Whether the target took it.
    pub delivered: bool,
    /// How many attempts were made.
    pub attempts: u32,
    /// Why not, after the last attempt.
    pub reason: Option<String>,
    /// When the outcome was known.
    pub at: Timestamp,
}

/// Writes a record to the governor's store and sink, from any thread.
pub(crate) type Recorder = Arc<dyn Fn(AuditRecord) + Send + Sync>;

/// Where a [`Notifier`] says what became of one notice; it is written to the audit
/// trail. Dropped without a word, it records nothing.
///
/// ```
/// use cairnloop::approvals::{Notice, NoticeReport, Notifier};
///
/// struct Pager;
/// impl Notifier for Pager {
///     fn proposed(&self, _notice: Notice, report: NoticeReport) {
///         report.failed("pager", 3, "the pager service answered 503 three times");
///     }
/// }
/// ```
pub struct NoticeReport {
    key: IdempotencyKey,
    tool: String,
    account_id: Option<String>,
    record: Recorder,
    /// For a notice an outbox handed over: where the outcome goes, to be settled.
    answer: Option<Arc<Answer>>,
}

impl core::fmt::Debug for NoticeReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NoticeReport")
            .field("key", &self.key)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl NoticeReport {
    pub(crate) fn new(notice: &Notice, record: Recorder) -> Self {
        Self {
            key: notice.key,
            tool: notice.tool.clone(),
            account_id: notice.account_id.clone(),
            record,
            answer: None,
        }
    }

    /// A report of a notice an outbox handed over, whose outcome also goes to `answer`.
    pub(crate) fn answering(notice: &Notice, record: Recorder, answer: Arc<Answer>) -> Self {
        Self {
            answer: Some(answer),
            ..Self::new(notice, record)
        }
    }

    /// The target took the notice, after `attempts` attempts.
    ///
    /// ```
    /// # fn f(report: cairnloop::approvals::NoticeReport) {
    /// report.delivered("webhook:ops", 1);
    /// # }
    /// ```
    pub fn delivered(self, target: &str, attempts: u32) {
        self.write(target, attempts, None, Told::Delivered);
    }

    /// The notifier gave up after `attempts` attempts, for `reason`.
    ///
    /// ```
    /// # fn f(report: cairnloop::approvals::NoticeReport) {
    /// report.failed("webhook:ops", 5, "the endpoint answered 500");
    /// # }
    /// ```
    pub fn failed(self, target: &str, attempts: u32, reason: impl Into<String>) {
        self.write(target, attempts, Some(reason.into()), Told::Failed);
    }

    /// The target refused the notice itself (it would refuse it again: a 4xx, a
    /// redirect), after `attempts` attempts, for `reason`. Recorded as a failure; an
    /// outbox gives the notice up instead of trying it again.
    ///
    /// ```
    /// # fn f(report: cairnloop::approvals::NoticeReport) {
    /// report.refused("webhook:ops", 1, "the endpoint refused the notice with 403");
    /// # }
    /// ```
    pub fn refused(self, target: &str, attempts: u32, reason: impl Into<String>) {
        self.write(target, attempts, Some(reason.into()), Told::Refused);
    }

    fn write(self, target: &str, attempts: u32, reason: Option<String>, told: Told) {
        let answer = self.answer.clone();
        let event = NoticeEvent {
            key: self.key,
            tool: self.tool,
            account_id: self.account_id,
            target: target.to_string(),
            delivered: reason.is_none(),
            attempts,
            reason,
            at: Timestamp::now().unwrap_or(Timestamp::from_unix_millis(0)),
        };
        (self.record)(AuditRecord::Notice(event));
        // Told after the record is written: an outbox settles the notice on this.
        if let Some(answer) = answer {
            answer.tell(told);
        }
    }
}

/// Tells `notifier` of the lane just opened; its report (or the news that it panicked)
/// goes to `record`.
pub(crate) fn announce(notifier: &dyn Notifier, record: &Recorder, lane: &ApprovalLane) {
    let notice = Notice::of(lane);
    let report = NoticeReport::new(&notice, Arc::clone(record));
    let failed = NoticeReport::new(&notice, Arc::clone(record));
    // A notifier's panic must not fail the call whose lane is already stored.
    let told = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| {
        notifier.proposed(notice, report);
    }));
    if told.is_err() {
        failed.failed("notifier", 0, "the notifier panicked");
    }
}
