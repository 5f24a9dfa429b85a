use alloc::string::ToString;

use serde_json::Value;

use crate::strict_json::parse_arguments;
use crate::{
    Actor, ApprovalError, ApprovalLane, ApprovalMode, ApprovalStore, Blocked, BoundField,
    Governance, IdempotencyKey, Invalidation, LaneAction, LaneState, PolicySnapshot, Proposal,
    Registry, Timestamp, ToolCall, TransitionEvent, Ttl, canonical_json, text,
};

/// How a host runs approvals: how long they live, whether a proposer may approve their
/// own call, and how often a failed run is tried.
///
/// ```
/// use cairnloop::{ApprovalConfig, Ttl};
///
/// const CONFIG: ApprovalConfig = ApprovalConfig::new().with_ttl(Ttl::from_secs(3600)).with_max_attempts(2);
/// assert_eq!(CONFIG.ttl(), Ttl::from_secs(3600));
/// assert!(!CONFIG.allows_self_approval());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApprovalConfig {
    ttl: Ttl,
    allow_self_approval: bool,
    max_attempts: u32,
}

impl ApprovalConfig {
    /// 48 hours to live, no self-approval, up to 3 attempts.
    ///
    /// ```
    /// assert_eq!(cairnloop::ApprovalConfig::new().max_attempts(), 3);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            ttl: Ttl::DEFAULT,
            allow_self_approval: false,
            max_attempts: 3,
        }
    }

    /// Sets how long a proposal stays valid.
    ///
    /// ```
    /// # use cairnloop::{ApprovalConfig, Ttl};
    /// assert_eq!(ApprovalConfig::new().with_ttl(Ttl::from_secs(60)).ttl(), Ttl::from_secs(60));
    /// ```
    #[must_use]
    pub const fn with_ttl(self, ttl: Ttl) -> Self {
        Self { ttl, ..self }
    }

    /// Lets a proposer approve their own calls (off by default: four eyes).
    ///
    /// ```
    /// assert!(cairnloop::ApprovalConfig::new().allowing_self_approval().allows_self_approval());
    /// ```
    #[must_use]
    pub const fn allowing_self_approval(self) -> Self {
        Self {
            allow_self_approval: true,
            ..self
        }
    }

    /// Sets how many times an approved call is run before it counts as failed (at least 1).
    ///
    /// ```
    /// assert_eq!(cairnloop::ApprovalConfig::new().with_max_attempts(0).max_attempts(), 1);
    /// ```
    #[must_use]
    pub const fn with_max_attempts(self, max_attempts: u32) -> Self {
        Self {
            max_attempts: if max_attempts == 0 { 1 } else { max_attempts },
            ..self
        }
    }

    /// How long a proposal stays valid.
    ///
    /// ```
    /// assert_eq!(cairnloop::ApprovalConfig::new().ttl(), cairnloop::Ttl::DEFAULT);
    /// ```
    #[must_use]
    pub const fn ttl(&self) -> Ttl {
        self.ttl
    }

    /// Whether a proposer may approve their own call.
    ///
    /// ```
    /// assert!(!cairnloop::ApprovalConfig::new().allows_self_approval());
    /// ```
    #[must_use]
    pub const fn allows_self_approval(&self) -> bool {
        self.allow_self_approval
    }

    /// How many runs an approved call gets.
    ///
    /// ```
    /// assert_eq!(cairnloop::ApprovalConfig::new().with_max_attempts(5).max_attempts(), 5);
    /// ```
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// The approval lifecycle over a store: propose, approve, reject, defer, expire, and
/// execute an approved call exactly once, re-validated against the current registry.
///
/// ```
/// use cairnloop::{ApprovalConfig, Approvals, MemoryStore};
///
/// let approvals = Approvals::new(MemoryStore::new(), ApprovalConfig::new());
/// assert!(approvals.store().events().unwrap().is_empty());
/// # use cairnloop::ApprovalStore;
/// ```
#[derive(Debug)]
pub struct Approvals<S> {
    store: S,
    config: ApprovalConfig,
}

impl<S: ApprovalStore> Approvals<S> {
    /// The lifecycle over `store`.
    ///
    /// ```
    /// let approvals = cairnloop::Approvals::new(cairnloop::MemoryStore::new(), Default::default());
    /// ```
    pub const fn new(store: S, config: ApprovalConfig) -> Self {
        Self { store, config }
    }

    /// The store.
    ///
    /// ```
    /// # use cairnloop::{Approvals, ApprovalStore, MemoryStore};
    /// let approvals = Approvals::new(MemoryStore::new(), Default::default());
    /// assert!(approvals.store().events().unwrap().is_empty());
    /// ```
    pub const fn store(&self) -> &S {
        &self.store
    }

    /// The configuration.
    ///
    /// ```
    /// # use cairnloop::{Approvals, MemoryStore};
    /// let approvals = Approvals::new(MemoryStore::new(), Default::default());
    /// assert_eq!(approvals.config().max_attempts(), 3);
    /// ```
    pub const fn config(&self) -> &ApprovalConfig {
        &self.config
    }

    /// The lane with this key.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::UnknownLane`], or the store's error.
    pub fn lane(&self, key: &IdempotencyKey) -> Result<ApprovalLane, ApprovalError> {
        self.store.get(key)?.ok_or(ApprovalError::UnknownLane)
    }

    /// Opens a pending lane for `proposal` at `now`. A proposal whose idempotency key is
    /// already known returns the existing lane, whatever its state, and opens nothing.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::TimeOverflow`] when `now` plus the time to live overflows; the
    /// store's error.
    pub fn propose(
        &self,
        proposal: Proposal,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        if let Some(existing) = self.store.get(&proposal.idempotency_key())? {
            return Ok(existing);
        }
        let expires_at = now
            .checked_add(self.config.ttl)
            .ok_or(ApprovalError::TimeOverflow)?;
        let lane = ApprovalLane::open(proposal, now, expires_at);
        let event = TransitionEvent::of(None, &lane, None, None);
        Ok(self.store.insert(lane, event)?.0)
    }

    /// Approves a pending lane, by `approver` at `now`.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::SelfApproval`] when the approver proposed the call and the host did
    /// not opt in; [`ApprovalError::Expired`] at or after expiry (the lane is then
    /// `expired`); [`ApprovalError::ClockWentBackwards`]; a refused transition; the store's
    /// error.
    pub fn approve(
        &self,
        key: &IdempotencyKey,
        approver: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let lane = self.live_lane(key, now)?;
        check_decider(approver)?;
        if approver == lane.proposal().actor_id() && !self.config.allow_self_approval {
            return Err(ApprovalError::SelfApproval);
        }
        self.apply(&lane, LaneAction::Approve, now, Some(approver), None)
    }

    /// Rejects a pending lane, with a reason.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::ReasonRequired`] for an empty or multi-line reason; otherwise as
    /// [`Approvals::approve`].
    pub fn reject(
        &self,
        key: &IdempotencyKey,
        by: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        self.decide_with_reason(key, LaneAction::Reject, by, reason, now)
    }

    /// Defers a pending lane, with a reason.
    ///
    /// # Errors
    ///
    /// As [`Approvals::reject`].
    pub fn defer(
        &self,
        key: &IdempotencyKey,
        by: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        self.decide_with_reason(key, LaneAction::Defer, by, reason, now)
    }

    /// Expires a pending or approved lane whose time is up (a sweep a host may run).
    /// Returns the lane, moved or not.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::ClockWentBackwards`]; the store's error.
    pub fn expire_if_due(
        &self,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let lane = self.lane(key)?;
        check_clock(&lane, now)?;
        if is_due(&lane, now) {
            return self.apply(&lane, LaneAction::Expire, now, None, None);
        }
        Ok(lane)
    }

    fn decide_with_reason(
        &self,
        key: &IdempotencyKey,
        action: LaneAction,
        by: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let lane = self.live_lane(key, now)?;
        check_decider(by)?;
        if text::is_blank(reason) || text::has_control(reason, false) {
            return Err(ApprovalError::ReasonRequired(action));
        }
        self.apply(&lane, action, now, Some(by), Some(reason))
    }

    /// The lane, checked against the clock and expired (with an error) when its time is up.
    fn live_lane(
        &self,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let lane = self.lane(key)?;
        check_clock(&lane, now)?;
        if is_due(&lane, now) {
            self.apply(&lane, LaneAction::Expire, now, None, None)?;
            return Err(ApprovalError::Expired);
        }
        Ok(lane)
    }

    fn apply(
        &self,
        lane: &ApprovalLane,
        action: LaneAction,
        now: Timestamp,
        by: Option<&str>,
        reason: Option<&str>,
    ) -> Result<ApprovalLane, ApprovalError> {
        let next = lane.moved(action, now, by, reason)?;
        self.commit(lane, next, action, by)
    }

    fn commit(
        &self,
        before: &ApprovalLane,
        after: ApprovalLane,
        action: LaneAction,
        by: Option<&str>,
    ) -> Result<ApprovalLane, ApprovalError> {
        let event = TransitionEvent::of(Some(before), &after, Some(action), by);
        self.store
            .transition(before.version(), after.clone(), event)?;
        Ok(after)
    }

    /// Executes an approved call: the one way a call that required approval runs.
    ///
    /// `call`, `actor` and `context` are the request to run now. In order: the lane must be
    /// `approved` and not expired (else it expires); the request must be the approved call
    /// (tool, canonical arguments and dedupe token, actor, account; else
    /// [`ApprovalError::Mismatch`] and the lane stays approved); the call must pass the
    /// pipeline again against the current registry, scopes, policy and mode, with the
    /// policy in force unchanged (else the lane is `invalidated`). Then the lane is claimed
    /// by a compare-and-set, so of two racing executions one runs and the other gets
    /// [`ApprovalError::Store`]; the tool runs with the lane's key as run key, up to the
    /// configured attempts; the lane ends `executed` or `execution_failed`.
    ///
    /// # Errors
    ///
    /// As above; every error but [`ApprovalError::ExecutionFailed`] means nothing ran.
    #[allow(
        clippy::too_many_arguments,
        reason = "each argument has its own type, so none can be swapped unnoticed"
    )]
    pub async fn execute<C: ?Sized + Sync + 'static>(
        &self,
        registry: &Registry<C>,
        key: &IdempotencyKey,
        call: &ToolCall<'_>,
        actor: &Actor<'_>,
        context: &C,
        governance: &Governance<C>,
        now: Timestamp,
    ) -> Result<Value, ApprovalError> {
        let lane = self.live_lane(key, now)?;
        if lane.state() != LaneState::Approved {
            return Err(lane
                .state()
                .apply(LaneAction::StartExecution)
                .unwrap_err()
                .into());
        }
        check_binding(lane.proposal(), call, actor, governance)?;

        // Re-validation against what is in force now.
        if let Err(invalidation) = revalidate(registry, &lane, call, actor, context, governance) {
            let reason = invalidation.to_string();
            self.apply(&lane, LaneAction::Invalidate, now, None, Some(&reason))?;
            return Err(ApprovalError::Invalidated(invalidation));
        }

        // The claim: exactly one execution wins this compare-and-set.
        let claimed = self.apply(&lane, LaneAction::StartExecution, now, None, None)?;
        let mut attempts = 0;
        let outcome = loop {
            attempts += 1;
            let (_, admitted) = registry.admit(call, actor, context, governance);
            let ready = match admitted {
                Ok(admitted) => admitted.ready(),
                Err(blocked) => break Err(Err(Invalidation::Blocked(blocked))),
            };
            match ready.run().await {
                Ok(output) => break Ok(output),
                Err(error) if attempts >= self.config.max_attempts => break Err(Ok(error)),
                Err(_) => {}
            }
        };
        match outcome {
            Ok(output) => {
                let done = claimed.moved(LaneAction::Succeed, now, None, None)?;
                self.commit(
                    &claimed,
                    done.with_attempts(attempts),
                    LaneAction::Succeed,
                    None,
                )?;
                Ok(output)
            }
            Err(Ok(error)) => {
                let reason = error.to_string();
                let failed = claimed.moved(LaneAction::Fail, now, None, Some(&reason))?;
                self.commit(
                    &claimed,
                    failed.with_attempts(attempts),
                    LaneAction::Fail,
                    None,
                )?;
                Err(ApprovalError::ExecutionFailed { attempts, error })
            }
            Err(Err(invalidation)) => {
                let reason = invalidation.to_string();
                self.apply(&claimed, LaneAction::Invalidate, now, None, Some(&reason))?;
                Err(ApprovalError::Invalidated(invalidation))
            }
        }
    }
}

/// Whether a lane that can still expire has reached its expiry: at or after it.
fn is_due(lane: &ApprovalLane, now: Timestamp) -> bool {
    now >= lane.expires_at() && matches!(lane.state(), LaneState::Pending | LaneState::Approved)
}

fn check_clock(lane: &ApprovalLane, now: Timestamp) -> Result<(), ApprovalError> {
    if now < lane.updated_at() {
        return Err(ApprovalError::ClockWentBackwards);
    }
    Ok(())
}

fn check_decider(by: &str) -> Result<(), ApprovalError> {
    if text::is_blank(by) || text::has_control(by, false) {
        return Err(ApprovalError::MissingDecider);
    }
    Ok(())
}

/// The request must be the approved call: tool, actor, account, dedupe token and the
/// canonical arguments.
fn check_binding<C: ?Sized>(
    proposal: &Proposal,
    call: &ToolCall<'_>,
    actor: &Actor<'_>,
    governance: &Governance<C>,
) -> Result<(), ApprovalError> {
    if call.name() != proposal.tool() {
        return Err(ApprovalError::Mismatch(BoundField::Tool));
    }
    if actor.id() != proposal.actor_id() {
        return Err(ApprovalError::Mismatch(BoundField::Actor));
    }
    if actor.account() != proposal.account_id() {
        return Err(ApprovalError::Mismatch(BoundField::Account));
    }
    if call.dedupe_token() != proposal.dedupe_token() {
        return Err(ApprovalError::Mismatch(BoundField::Arguments));
    }
    let arguments = parse_arguments(call.arguments(), governance.limits())
        .map_err(|_| ApprovalError::Mismatch(BoundField::Arguments))?;
    if canonical_json(&Value::Object(arguments)) != proposal.input() {
        return Err(ApprovalError::Mismatch(BoundField::Arguments));
    }
    Ok(())
}

/// Gates 0 to 4 again, now, and the policy in force compared with the proposal's.
fn revalidate<C: ?Sized + Sync + 'static>(
    registry: &Registry<C>,
    lane: &ApprovalLane,
    call: &ToolCall<'_>,
    actor: &Actor<'_>,
    context: &C,
    governance: &Governance<C>,
) -> Result<(), Invalidation> {
    let (_, admitted) = registry.admit(call, actor, context, governance);
    let admitted = admitted.map_err(Invalidation::Blocked)?;
    if admitted.mode.resolved() == ApprovalMode::AlwaysBlock {
        let decided_by = admitted.mode.source();
        return Err(Invalidation::Blocked(Blocked::AlwaysBlocked { decided_by }));
    }
    if admitted.idempotency_key != lane.key()
        || PolicySnapshot::from(admitted.mode) != *lane.proposal().policy()
    {
        return Err(Invalidation::PolicyChanged);
    }
    Ok(())
}
