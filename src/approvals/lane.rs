use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::{String, ToString};

use serde_json::Value;

use crate::declare::IdempotencyKey;
use crate::gate::{LaneAction, LaneState, Timestamp, TransitionError};
use crate::json::Proposal;

/// One proposal's way through the approval lifecycle: the proposal itself, where it
/// stands, when it expires, who decided and why, and a version for compare-and-set.
///
/// Plain data (serialisable) so a host can keep it in its own database through an
/// [`ApprovalStore`](crate::approvals::ApprovalStore). Only the approval service moves it.
///
/// ```
/// # fn f(lane: &cairnloop::ApprovalLane) {
/// println!("{} is {} until {}", lane.proposal().tool(), lane.state(), lane.expires_at());
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApprovalLane {
    proposal: Proposal,
    state: LaneState,
    proposed_at: Timestamp,
    expires_at: Timestamp,
    updated_at: Timestamp,
    decided_by: Option<Box<str>>,
    reason: Option<String>,
    attempts: u32,
    /// Who holds the execution claim, and until when (absent before the first claim).
    #[serde(default)]
    claim: Option<Claim>,
    /// What the run returned, once it is recorded as executed.
    #[serde(default)]
    output: Option<Box<Recorded>>,
    /// Each approval given, in order: one, or a quorum's.
    #[serde(default, skip_serializing_if = "alloc::vec::Vec::is_empty")]
    approvals: alloc::vec::Vec<Approval>,
    /// The call a person approved in its place, with changed arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    superseded_by: Option<IdempotencyKey>,
    /// The call this one was approved in place of (this one's arguments are a person's
    /// change of that one's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    supersedes: Option<IdempotencyKey>,
    version: u64,
}

/// One person's approval of a lane, and when it was given. A call with a quorum collects
/// several before it is approved.
///
/// ```
/// # fn f(lane: &cairnloop::ApprovalLane) {
/// for approval in lane.approvals() {
///     println!("approved by {} at {}", approval.by(), approval.at());
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Approval {
    by: Box<str>,
    at: Timestamp,
}

impl Approval {
    /// Who approved.
    ///
    /// ```
    /// # fn f(approval: &cairnloop::approvals::Approval) -> &str {
    /// approval.by()
    /// # }
    /// ```
    #[must_use]
    pub fn by(&self) -> &str {
        &self.by
    }

    /// When.
    ///
    /// ```
    /// # fn f(approval: &cairnloop::approvals::Approval) -> cairnloop::gate::Timestamp {
    /// approval.at()
    /// # }
    /// ```
    #[must_use]
    pub const fn at(&self) -> Timestamp {
        self.at
    }
}

/// A run's output as stored: wrapped, so that an output of `null` stays an output (a
/// bare `Option<Value>` would read `null` back as no output at all).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Recorded {
    value: Value,
}

/// Who claimed a lane to run it, and until when the claim holds. A claim whose lease ran
/// out with no outcome recorded means the holder died: the lane's outcome is unknown.
///
/// ```
/// # fn f(lane: &cairnloop::ApprovalLane) {
/// if let Some(claim) = lane.claim() {
///     println!("{} runs it until {}", claim.holder(), claim.until());
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Claim {
    holder: String,
    until: Timestamp,
}

impl Claim {
    /// Who holds the claim: the process or worker that runs the call.
    ///
    /// ```
    /// # fn f(claim: &cairnloop::approvals::Claim) -> &str {
    /// claim.holder()
    /// # }
    /// ```
    #[must_use]
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// When the claim's lease runs out.
    ///
    /// ```
    /// # fn f(claim: &cairnloop::approvals::Claim) -> cairnloop::gate::Timestamp {
    /// claim.until()
    /// # }
    /// ```
    #[must_use]
    pub const fn until(&self) -> Timestamp {
        self.until
    }
}

impl ApprovalLane {
    /// A pending lane for `proposal`, expiring at `expires_at`.
    pub(crate) fn open(proposal: Proposal, now: Timestamp, expires_at: Timestamp) -> Self {
        Self {
            proposal,
            state: LaneState::Pending,
            proposed_at: now,
            expires_at,
            updated_at: now,
            decided_by: None,
            reason: None,
            attempts: 0,
            claim: None,
            output: None,
            approvals: alloc::vec::Vec::new(),
            superseded_by: None,
            supersedes: None,
            version: 0,
        }
    }

    /// The same lane, linked to the call it was approved in place of.
    pub(crate) fn supersedes(mut self, original: IdempotencyKey) -> Self {
        self.supersedes = Some(original);
        self
    }

    /// The same lane, linked to the call approved in its place.
    pub(crate) fn superseded_by(mut self, edited: IdempotencyKey) -> Self {
        self.superseded_by = Some(edited);
        self
    }

    /// The call a person approved in this one's place with changed arguments (the lane
    /// is then `superseded`).
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) {
    /// if let Some(edited) = lane.replaced_by() {
    ///     println!("approved with changes as {edited}");
    /// }
    /// # }
    /// ```
    #[must_use]
    pub const fn replaced_by(&self) -> Option<IdempotencyKey> {
        self.superseded_by
    }

    /// The call this one was approved in place of: its arguments are a person's change of
    /// that call's.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> bool {
    /// lane.replaces().is_some()
    /// # }
    /// ```
    #[must_use]
    pub const fn replaces(&self) -> Option<IdempotencyKey> {
        self.supersedes
    }

    /// The same lane, claimed by `holder` until `until`.
    pub(crate) fn claimed_by(mut self, holder: &str, until: Timestamp) -> Self {
        self.claim = Some(Claim {
            holder: holder.to_string(),
            until,
        });
        self
    }

    /// The lane of a closed call proposed afresh (already moved by `Reopen`): the new
    /// proposal, a new time to live, and nothing of the closed run.
    pub(crate) fn reopened(
        mut self,
        proposal: Proposal,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Self {
        self.proposal = proposal;
        self.proposed_at = now;
        self.expires_at = expires_at;
        self.decided_by = None;
        self.reason = None;
        self.attempts = 0;
        self.claim = None;
        self.output = None;
        self.approvals.clear();
        self.superseded_by = None;
        self.supersedes = None;
        self
    }

    /// The same lane, with the run's output recorded.
    pub(crate) fn with_output(mut self, output: Value) -> Self {
        self.output = Some(Box::new(Recorded { value: output }));
        self
    }

    /// The claim to run the lane, if it was ever claimed.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> bool {
    /// lane.claim().is_some()
    /// # }
    /// ```
    #[must_use]
    pub const fn claim(&self) -> Option<&Claim> {
        self.claim.as_ref()
    }

    /// What the run returned, once the lane is executed (a re-issued call gets it back
    /// instead of a second run). A lane a person marked executed has none.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> Option<&serde_json::Value> {
    /// lane.output()
    /// # }
    /// ```
    #[must_use]
    pub fn output(&self) -> Option<&Value> {
        self.output.as_ref().map(|recorded| &recorded.value)
    }

    /// The lane after `action` at `now`, by `by`, with `reason`; the version moves on.
    pub(crate) fn moved(
        &self,
        action: LaneAction,
        now: Timestamp,
        by: Option<&str>,
        reason: Option<&str>,
    ) -> Result<Self, TransitionError> {
        let state = self.state.apply(action)?;
        let mut next = self.clone();
        next.state = state;
        next.updated_at = now;
        next.version = self.version.wrapping_add(1);
        if matches!(
            action,
            LaneAction::Approve
                | LaneAction::Supersede
                | LaneAction::Reject
                | LaneAction::Defer
                | LaneAction::MarkExecuted
                | LaneAction::MarkFailed
                | LaneAction::Close
                | LaneAction::Withdraw
        ) {
            next.decided_by = by.map(Box::from);
        }
        if let (LaneAction::Approve | LaneAction::Endorse, Some(by)) = (action, by) {
            next.approvals.push(Approval {
                by: Box::from(by),
                at: now,
            });
        }
        if let Some(reason) = reason {
            next.reason = Some(reason.to_string());
        }
        Ok(next)
    }

    /// The approvals given so far, in order: for a call with a quorum, those it has; for
    /// any other approved call, its one approval.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) {
    /// println!("{} of {} approvals", lane.approvals().len(), lane.quorum());
    /// # }
    /// ```
    #[must_use]
    pub fn approvals(&self) -> &[Approval] {
        &self.approvals
    }

    /// How far a call that needs several approvals has come, as an operator reads it:
    /// `1 of 2 approvals (alice)`; `None` for a call that needs one.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) {
    /// if let Some(progress) = lane.quorum_progress() {
    ///     println!("{progress}");
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn quorum_progress(&self) -> Option<String> {
        let quorum = self.quorum();
        if quorum <= 1 {
            return None;
        }
        let mut text = alloc::format!("{} of {quorum} approvals", self.approvals.len());
        for (i, approval) in self.approvals.iter().enumerate() {
            text.push_str(if i == 0 { " (" } else { ", " });
            text.push_str(approval.by());
        }
        if !self.approvals.is_empty() {
            text.push(')');
        }
        Some(text)
    }

    /// How many approvals the call needs (its proposal's quorum; 1 for most calls).
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> bool {
    /// lane.quorum() > 1
    /// # }
    /// ```
    #[must_use]
    pub fn quorum(&self) -> u8 {
        self.proposal.policy().quorum
    }

    pub(crate) fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    /// The key of the proposal, which identifies the lane.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> cairnloop::IdempotencyKey {
    /// lane.key()
    /// # }
    /// ```
    #[must_use]
    pub fn key(&self) -> IdempotencyKey {
        self.proposal.idempotency_key()
    }

    /// The proposal awaiting (or past) approval.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> &str {
    /// lane.proposal().preview().text()
    /// # }
    /// ```
    #[must_use]
    pub const fn proposal(&self) -> &Proposal {
        &self.proposal
    }

    /// Where the lane stands.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> bool {
    /// lane.state() == cairnloop::gate::LaneState::Pending
    /// # }
    /// ```
    #[must_use]
    pub const fn state(&self) -> LaneState {
        self.state
    }

    /// When the call was proposed.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> cairnloop::gate::Timestamp {
    /// lane.proposed_at()
    /// # }
    /// ```
    #[must_use]
    pub const fn proposed_at(&self) -> Timestamp {
        self.proposed_at
    }

    /// From when on the lane can no longer be approved or executed.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> cairnloop::gate::Timestamp {
    /// lane.expires_at()
    /// # }
    /// ```
    #[must_use]
    pub const fn expires_at(&self) -> Timestamp {
        self.expires_at
    }

    /// When the lane last moved.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> cairnloop::gate::Timestamp {
    /// lane.updated_at()
    /// # }
    /// ```
    #[must_use]
    pub const fn updated_at(&self) -> Timestamp {
        self.updated_at
    }

    /// Who approved, rejected or deferred.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> Option<&str> {
    /// lane.decided_by()
    /// # }
    /// ```
    #[must_use]
    pub fn decided_by(&self) -> Option<&str> {
        self.decided_by.as_deref()
    }

    /// The reason of a rejection, deferral or invalidation, or the last run error.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> Option<&str> {
    /// lane.reason()
    /// # }
    /// ```
    #[must_use]
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// How many times the tool was run.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> u32 {
    /// lane.attempts()
    /// # }
    /// ```
    #[must_use]
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The version a compare-and-set expects; it grows with every move.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::ApprovalLane) -> u64 {
    /// lane.version()
    /// # }
    /// ```
    #[must_use]
    pub const fn version(&self) -> u64 {
        self.version
    }
}

/// One append-only audit record of the approval lifecycle: a proposal opened, or a lane
/// moved.
///
/// ```
/// # fn f(event: &cairnloop::approvals::TransitionEvent) {
/// println!("{} {:?} -> {} by {:?}", event.tool, event.from, event.to, event.by);
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TransitionEvent {
    /// The lane's key (the proposal's idempotency key).
    pub key: IdempotencyKey,
    /// The tool (borrowed from its declaration when the lane was proposed here).
    pub tool: Cow<'static, str>,
    /// Who proposed the call.
    pub proposer: String,
    /// The account the call acts in.
    pub account_id: Option<String>,
    /// The move; `None` when the proposal was opened.
    pub action: Option<LaneAction>,
    /// The state before; `None` when the proposal was opened.
    pub from: Option<LaneState>,
    /// The state after.
    pub to: LaneState,
    /// Who moved it; `None` for the system (expiry, re-validation, execution).
    pub by: Option<String>,
    /// When.
    pub at: Timestamp,
    /// The reason given or found.
    pub reason: Option<String>,
    /// The spec's justification for a loosened approval mode, if any.
    pub loosened_because: Option<String>,
    /// How many runs, for execution outcomes.
    pub attempts: Option<u32>,
    /// When the call was proposed (the time to a decision or a run is counted from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_at: Option<Timestamp>,
}

impl TransitionEvent {
    pub(crate) fn of(
        before: Option<&ApprovalLane>,
        after: &ApprovalLane,
        action: Option<LaneAction>,
        by: Option<&str>,
    ) -> Self {
        let proposal = after.proposal();
        Self {
            key: after.key(),
            tool: proposal.tool_name(),
            proposer: proposal.actor_id().to_string(),
            account_id: proposal.account_id().map(ToString::to_string),
            action,
            from: before.map(ApprovalLane::state),
            to: after.state(),
            by: by.map(ToString::to_string),
            at: after.updated_at(),
            reason: if before.is_some_and(|b| b.reason() == after.reason()) {
                None
            } else {
                after.reason().map(ToString::to_string)
            },
            loosened_because: proposal.policy().loosened_because.clone(),
            attempts: matches!(action, Some(LaneAction::Succeed | LaneAction::Fail))
                .then_some(after.attempts()),
            proposed_at: Some(after.proposed_at()),
        }
    }
}
