use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use serde_json::Value;

use crate::approvals::StoreError;
use crate::approvals::identity::{check_id, same_person};
use crate::approvals::outbox::{Answer, Told, millis_of};
use crate::approvals::unwind::CatchPanic;
use crate::approvals::{
    ApprovalConfig, ApprovalError, ApprovalLane, ApprovalStore, AuditRecord, AuditSink, BoundField,
    Invalidation, Notice, NoticeClaim, NoticeOutcome, NoticeReport, Notifier, OutboxPass,
    OutboxPolicy, Recorder, TransitionEvent, announce, block_on,
};
use crate::declare::text;
use crate::declare::{
    Actor, Codec, ErasedInput, IdempotencyKey, Registry, RunError, RunKey, ToolEntry,
};
use crate::gate::{
    Blocked, LaneAction, LaneState, Raising, Subject, Timestamp, Ttl, Verdict, is_due, run_gates,
};
use crate::json::{Governance, PolicySnapshot, Proposal, decode_stored, run_ready};

/// The approval lifecycle over a store: propose, approve, reject, defer, expire, and
/// execute an approved call exactly once, re-validated against what is in force. The
/// [`Governor`](crate::Governor) holds one and gives it the time.
pub(crate) struct Approvals<S> {
    store: Arc<S>,
    config: ApprovalConfig,
    sink: Option<Arc<dyn AuditSink>>,
    /// Sees a copy of every record, wherever it goes (the host's metrics).
    tap: Option<Arc<dyn AuditSink>>,
    /// Appends a record to the store from any thread (a notifier's report).
    append: Recorder,
    telling: Telling,
}

/// What a governor carries over to another store: its rules, its sink and its tap.
pub(crate) type Parts = (
    ApprovalConfig,
    Option<Arc<dyn AuditSink>>,
    Option<Arc<dyn AuditSink>>,
);

/// Who is told of new proposals: a notifier told at once by the process that opened the
/// lane, and the outbox's targets, told by whichever process claims each notice.
#[derive(Clone, Default)]
pub(crate) struct Telling {
    pub(crate) notifier: Option<Arc<dyn Notifier>>,
    pub(crate) outbox: Vec<(String, Arc<dyn Notifier>)>,
    pub(crate) policy: OutboxPolicy,
}

impl<S: ApprovalStore> Approvals<S> {
    pub(crate) fn new(store: S, config: ApprovalConfig) -> Self
    where
        S: 'static,
    {
        let store = Arc::new(store);
        let appending = Arc::clone(&store);
        let append: Recorder = Arc::new(move |record: AuditRecord| {
            // A report that cannot be written is lost, never the proposal it is about.
            let _ = block_on(appending.append(record));
        });
        Self {
            store,
            config,
            sink: None,
            tap: None,
            append,
            telling: Telling::default(),
        }
    }

    /// Who is told of new proposals; reports go to the store and the sink.
    pub(crate) fn set_telling(&mut self, telling: Telling) {
        self.telling = telling;
    }

    pub(crate) fn telling(&self) -> Telling {
        self.telling.clone()
    }

    pub(crate) fn telling_mut(&mut self) -> &mut Telling {
        &mut self.telling
    }

    /// Writes a record to the store and the sink, from any thread.
    fn recorder(&self) -> Recorder {
        let (append, sink, tap) = (
            Arc::clone(&self.append),
            self.sink.clone(),
            self.tap.clone(),
        );
        Arc::new(move |record: AuditRecord| {
            if let Some(tap) = &tap {
                tap.record(&record);
            }
            if let Some(sink) = &sink {
                sink.record(&record);
            }
            append(record);
        })
    }

    /// Tells the notifier, if there is one, of a lane just opened (the outbox's targets
    /// are told by whichever process claims the notice).
    fn announce(&self, lane: &ApprovalLane) {
        if let Some(notifier) = &self.telling.notifier {
            announce(notifier.as_ref(), &self.recorder(), lane);
        }
    }

    /// One pass of the outbox: for each target, the notices due now claimed for `holder`
    /// (a batch at a time), handed to its notifier, and settled by what it says: delivered;
    /// failed, tried again after the policy's wait or given up after its last attempt;
    /// refused, given up. A notice its notifier says nothing of within the claim is left
    /// to its lease, and claimed again after it.
    pub(crate) async fn deliver_notices(
        &self,
        holder: &str,
        clock: impl Fn() -> Result<Timestamp, ApprovalError>,
    ) -> Result<OutboxPass, ApprovalError> {
        const BATCH: usize = 64;
        let policy = self.telling.policy;
        let lease = policy.claim_lease();
        // An answer is awaited for most of the claim, so that settling it still finds
        // the claim this holder's.
        let patience = lease.saturating_sub(lease / 5);
        let mut pass = OutboxPass::default();
        for (target, notifier) in &self.telling.outbox {
            let now = clock()?;
            let until = now
                .checked_add(Ttl::from_millis(millis_of(lease)))
                .ok_or(ApprovalError::TimeOverflow)?;
            let claim = NoticeClaim::new(target.as_str(), holder, now, until).limit(BATCH);
            let due = self.store.claim_notices(&claim).await?;
            let started = std::time::Instant::now();
            // The pass's audit records, written together with its settlements; one that
            // comes after the pass is over is written on its own.
            let written = Arc::new(std::sync::Mutex::new(Some(Vec::new())));
            let mut handed = Vec::with_capacity(due.len());
            for notice in due {
                let answer = Arc::new(Answer::default());
                let (attempt, written, late) =
                    (notice.attempt(), Arc::clone(&written), self.recorder());
                // The audit record says which of the outbox's attempts this was.
                let record: Recorder = Arc::new(move |mut record: AuditRecord| {
                    if let AuditRecord::Notice(event) = &mut record {
                        event.attempts = attempt;
                    }
                    match written.lock().as_deref_mut() {
                        Ok(Some(kept)) => kept.push(record),
                        _ => late(record),
                    }
                });
                let told = Notice::of(notice.lane());
                let report = NoticeReport::answering(&told, record, Arc::clone(&answer));
                // A notifier's panic is an answer of nothing: the lease runs out.
                let _ = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| {
                    notifier.proposed(told, report);
                }));
                handed.push((notice, answer));
            }
            let mut settled = Vec::with_capacity(handed.len());
            for (notice, answer) in handed {
                let left = patience.saturating_sub(started.elapsed());
                let outcome = match answer.wait(left).await {
                    None => {
                        pass.unanswered += 1;
                        continue;
                    }
                    Some(Told::Delivered) => NoticeOutcome::Delivered,
                    Some(Told::Failed) if notice.attempt() < policy.max_attempts() => {
                        let wait = policy.wait_after(notice.attempt());
                        let at = clock()?
                            .checked_add(Ttl::from_millis(millis_of(wait)))
                            .ok_or(ApprovalError::TimeOverflow)?;
                        NoticeOutcome::Retry(at)
                    }
                    Some(Told::Failed | Told::Refused) => NoticeOutcome::GaveUp,
                };
                settled.push((notice, outcome));
            }
            // Every record and settlement of the pass is asked for before any is awaited:
            // a store with one writer commits them together, not one by one.
            let records = written.lock().ok().and_then(|mut kept| kept.take());
            let appends: Vec<_> = (records.unwrap_or_default().into_iter())
                .map(|record| {
                    self.tapped(&record);
                    if let Some(sink) = &self.sink {
                        sink.record(&record);
                    }
                    self.store.append(record)
                })
                .collect();
            let settles: Vec<_> = (settled.iter())
                .map(|(notice, outcome)| self.store.settle_notice(notice, *outcome))
                .collect();
            for append in appends {
                // A record that cannot be written is lost, never the notice's settlement.
                let _ = append.await;
            }
            for (settle, (_, outcome)) in settles.into_iter().zip(&settled) {
                // A claim lost meanwhile (its lease ran out, another holder took it) is
                // that holder's to settle.
                if settle.await? {
                    match outcome {
                        NoticeOutcome::Delivered => pass.delivered += 1,
                        NoticeOutcome::Retry(_) => pass.retried += 1,
                        NoticeOutcome::GaveUp => pass.given_up += 1,
                    }
                }
            }
        }
        Ok(pass)
    }

    pub(crate) fn set_sink(&mut self, sink: Option<Arc<dyn AuditSink>>) {
        self.sink = sink;
    }

    pub(crate) fn set_tap(&mut self, tap: Option<Arc<dyn AuditSink>>) {
        self.tap = tap;
    }

    /// Hands the tap, if there is one, a copy of `record`.
    pub(crate) fn tapped(&self, record: &AuditRecord) {
        if let Some(tap) = &self.tap {
            tap.record(record);
        }
    }

    /// Whether anything taps the records.
    pub(crate) fn is_tapped(&self) -> bool {
        self.tap.is_some()
    }

    pub(crate) fn set_config(&mut self, config: ApprovalConfig) {
        self.config = config;
    }

    pub(crate) fn store(&self) -> &S {
        &self.store
    }

    pub(crate) const fn config(&self) -> &ApprovalConfig {
        &self.config
    }

    pub(crate) fn into_parts(self) -> Parts {
        (self.config, self.sink, self.tap)
    }

    /// The lane with this key.
    pub(crate) async fn lane(&self, key: &IdempotencyKey) -> Result<ApprovalLane, ApprovalError> {
        self.store.get(key).await?.ok_or(ApprovalError::UnknownLane)
    }

    /// Opens a pending lane for `proposal` at `now`. A proposal whose idempotency key is
    /// already known returns the existing lane and opens nothing, unless that lane was
    /// closed by a person: then it is reopened, pending, for the new proposal.
    pub(crate) async fn propose(
        &self,
        proposal: Proposal,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let expires_at = now
            .checked_add(self.config.ttl())
            .ok_or(ApprovalError::TimeOverflow)?;
        // One step: the store adds the lane unless its key is known, and answers with the
        // lane that is there.
        let lane = ApprovalLane::open(proposal.clone(), now, expires_at);
        let event = TransitionEvent::of(None, &lane, None, None);
        let kept = self.kept(&event);
        let (existing, inserted) = self.store.insert(lane, event).await?;
        if inserted {
            if let Some(event) = kept {
                self.notify(event);
            }
            self.announce(&existing);
            return Ok(existing);
        }
        if existing.state() != LaneState::Closed {
            return Ok(existing);
        }
        // A person closed this call's last run without an outcome: propose it afresh.
        let (_, now) = self.due(&existing, now)?; // a closed lane never expires: only the clock is checked
        let reopened = existing
            .moved(LaneAction::Reopen, now, None, None)?
            .reopened(proposal, now, expires_at);
        // Boxed: a rare path, whose state every proposal would otherwise carry.
        let reopened =
            alloc::boxed::Box::pin(self.commit(&existing, reopened, LaneAction::Reopen, None))
                .await?;
        self.announce(&reopened);
        Ok(reopened)
    }

    /// Approves a pending lane, by `approver` at `now`. The approver may not be the
    /// proposer (the same person by the identity rule) unless the host allows it, and
    /// neither id may break that rule.
    pub(crate) async fn approve(
        &self,
        key: &IdempotencyKey,
        approver: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let (lane, kept) = self.lane_to_move(key).await?;
        let first = self.approve_lane(lane, approver, now).await;
        let mut outcome = self
            .again_if_stale(key, kept, first, |lane| {
                self.approve_lane(lane, approver, now)
            })
            .await;
        // Approvers of a quorum race one another: each lost compare-and-set means another
        // approval landed first, so the approval is counted again on the lane as it is
        // now. Bounded: a lane takes at most a quorum's approvals.
        for _ in 0..crate::declare::MAX_QUORUM {
            if !matches!(outcome, Err(ApprovalError::Store(StoreError::Conflict))) {
                break;
            }
            let lane = self.lane(key).await?;
            outcome = self.approve_lane(lane, approver, now).await;
        }
        outcome
    }

    /// `lane`, live, if `approver` may make `action` on it: pending, not expired, and four
    /// eyes (neither id broken, the approver not the proposer); and the time to move it at.
    async fn approvable(
        &self,
        lane: ApprovalLane,
        action: LaneAction,
        approver: &str,
        now: Timestamp,
    ) -> Result<(ApprovalLane, Timestamp), ApprovalError> {
        refused_as_decided(&lane, action)?;
        let (lane, now) = self.live(lane, now).await?;
        check_decider(approver)?;
        let proposer = lane.proposal().actor_id();
        if check_id(proposer).is_err() {
            return Err(ApprovalError::InvalidProposer);
        }
        self.config
            .rules()
            .four_eyes(proposer, approver, same_person)
            .map_err(ApprovalError::from_rule)?;
        Ok((lane, now))
    }

    async fn approve_lane(
        &self,
        lane: ApprovalLane,
        approver: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let (lane, now) = self
            .approvable(lane, LaneAction::Approve, approver, now)
            .await?;
        // A quorum counts people: an approver the identity rule finds among those who
        // approved already gives no second approval.
        let quorum = lane.quorum();
        if lane
            .approvals()
            .iter()
            .any(|given| same_person(given.by(), approver))
        {
            return Err(ApprovalError::ApprovedAlready { of: quorum });
        }
        let action = if lane.approvals().len() + 1 >= usize::from(quorum) {
            LaneAction::Approve
        } else {
            LaneAction::Endorse
        };
        self.apply(&lane, action, now, Some(approver), None).await
    }

    /// Approves the pending lane `key` with changed arguments: `edited` is the changed
    /// call's proposal, through the gates already. The original is closed as
    /// `superseded`, linked to the changed call, whose lane is opened linked back and
    /// approved by `approver` (by its own quorum). The approver must be one who could
    /// approve the original.
    pub(crate) async fn approve_with_changes(
        &self,
        key: &IdempotencyKey,
        edited: Proposal,
        approver: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let lane = self.lane(key).await?;
        let first = self
            .supersede_lane(lane, edited.clone(), approver, now)
            .await;
        self.again_if_stale(key, false, first, |lane| {
            self.supersede_lane(lane, edited, approver, now)
        })
        .await
    }

    async fn supersede_lane(
        &self,
        lane: ApprovalLane,
        edited: Proposal,
        approver: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let (lane, now) = self
            .approvable(lane, LaneAction::Supersede, approver, now)
            .await?;
        let edited_key = edited.idempotency_key();
        if edited_key == lane.key() {
            return Err(ApprovalError::EditUnchanged);
        }
        // The original first: once it is superseded nobody can approve it, so of the two
        // calls at most the changed one ever runs.
        let reason = alloc::format!("approved with changed arguments as {edited_key}");
        let superseded = lane
            .moved(LaneAction::Supersede, now, Some(approver), Some(&reason))?
            .superseded_by(edited_key);
        self.commit(&lane, superseded, LaneAction::Supersede, Some(approver))
            .await?;
        let expires_at = now
            .checked_add(self.config.ttl())
            .ok_or(ApprovalError::TimeOverflow)?;
        let opened = ApprovalLane::open(edited, now, expires_at).supersedes(lane.key());
        let event = TransitionEvent::of(None, &opened, None, None);
        let kept = self.kept(&event);
        // The same changed call proposed already (by its caller, or an earlier change):
        // that lane is the one approved.
        let (_, inserted) = self.store.insert(opened, event).await?;
        if inserted && let Some(event) = kept {
            self.notify(event);
        }
        // As any approval: one that loses to another approver is counted again, so a lost
        // race here never reaches back to the original, superseded already.
        alloc::boxed::Box::pin(self.approve(&edited_key, approver, now)).await
    }

    /// Rejects (or defers) a pending lane, with a reason.
    pub(crate) async fn decide_with_reason(
        &self,
        key: &IdempotencyKey,
        action: LaneAction,
        by: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let (lane, kept) = self.lane_to_move(key).await?;
        let first = self.decide_lane(lane, action, by, reason, now).await;
        self.again_if_stale(key, kept, first, |lane| {
            self.decide_lane(lane, action, by, reason, now)
        })
        .await
    }

    async fn decide_lane(
        &self,
        lane: ApprovalLane,
        action: LaneAction,
        by: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        refused_as_decided(&lane, action)?;
        let (lane, now) = self.live(lane, now).await?;
        check_decider(by)?;
        if text::is_blank(reason) || text::has_control(reason, false) {
            return Err(ApprovalError::ReasonRequired(action));
        }
        self.apply(&lane, action, now, Some(by), Some(reason)).await
    }

    /// Expires a pending or approved lane whose time is up, and marks the outcome of a
    /// claim whose lease ran out unknown, as a sweep would. Returns the lane, moved or not.
    pub(crate) async fn expire_if_due(
        &self,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let lane = self.lane(key).await?;
        let (due, now) = self.due(&lane, now)?;
        let (action, reason) = if due {
            (LaneAction::Expire, None)
        } else if lease_lapsed(&lane, now) {
            (LaneAction::LoseLease, Some(LEASE_LAPSED))
        } else {
            return Ok(lane);
        };
        match self.apply(&lane, action, now, None, reason).await {
            // Its holder or a sweeper moved it first: the lane as it is now.
            Err(ApprovalError::Store(StoreError::Conflict)) => self.lane(key).await,
            moved => moved,
        }
    }

    /// The lane a move starts from: the copy the store kept of it in this process when it
    /// keeps one (a read saved), else the lane as read; and whether it was a kept copy.
    async fn lane_to_move(
        &self,
        key: &IdempotencyKey,
    ) -> Result<(ApprovalLane, bool), ApprovalError> {
        if let Some(lane) = self.store.last_known(key) {
            return Ok((lane, true));
        }
        Ok((self.lane(key).await?, false))
    }

    /// A kept copy may be stale (another process moved the lane since): a move it refused,
    /// or that lost its compare-and-set, is decided again on the lane as read now, so a
    /// stale copy never refuses what the stored lane allows. A move made on a lane read
    /// afresh that lost its compare-and-set to a racer is decided again too, so the loser
    /// is told what the winner did (a call approved already, say), not that the lane
    /// changed. A move that wrote something is not made again.
    async fn again_if_stale<T, F, Fut>(
        &self,
        key: &IdempotencyKey,
        kept: bool,
        first: Result<T, ApprovalError>,
        again: F,
    ) -> Result<T, ApprovalError>
    where
        F: FnOnce(ApprovalLane) -> Fut,
        Fut: core::future::Future<Output = Result<T, ApprovalError>>,
    {
        match first {
            Err(error) if kept && decided_on_the_copy(&error) => again(self.lane(key).await?).await,
            Err(ApprovalError::Store(StoreError::Conflict)) => again(self.lane(key).await?).await,
            first => first,
        }
    }

    /// `lane`, checked against the clock and expired (with an error) when its time is up;
    /// and the time to move it at ([`settled`]).
    async fn live(
        &self,
        lane: ApprovalLane,
        now: Timestamp,
    ) -> Result<(ApprovalLane, Timestamp), ApprovalError> {
        let (due, now) = self.due(&lane, now)?;
        if due {
            self.apply(&lane, LaneAction::Expire, now, None, None)
                .await?;
            return Err(ApprovalError::Expired);
        }
        Ok((lane, now))
    }

    /// Whether `lane` is due to expire, by the rules every lane store shares, at the time
    /// a move on it is made for a clock reading `now` ([`settled`]), and that time. A clock
    /// further back than the lane's last move is refused.
    fn due(&self, lane: &ApprovalLane, now: Timestamp) -> Result<(bool, Timestamp), ApprovalError> {
        let now = settled(now, lane);
        self.config
            .rules()
            .liveness(lane.state(), lane.updated_at(), lane.expires_at(), now)
            .map(|due| (due, now))
            .map_err(ApprovalError::from_rule)
    }

    async fn apply(
        &self,
        lane: &ApprovalLane,
        action: LaneAction,
        now: Timestamp,
        by: Option<&str>,
        reason: Option<&str>,
    ) -> Result<ApprovalLane, ApprovalError> {
        let next = lane.moved(action, now, by, reason)?;
        self.commit(lane, next, action, by).await
    }

    async fn commit(
        &self,
        before: &ApprovalLane,
        after: ApprovalLane,
        action: LaneAction,
        by: Option<&str>,
    ) -> Result<ApprovalLane, ApprovalError> {
        let event = TransitionEvent::of(Some(before), &after, Some(action), by);
        let kept = self.kept(&event);
        self.store
            .transition(before.version(), after.clone(), event)
            .await?;
        if let Some(event) = kept {
            self.notify(event);
        }
        Ok(after)
    }

    /// A copy of `event` for the host's sink, when it has one that keeps records (the
    /// store takes the event itself).
    fn kept(&self, event: &TransitionEvent) -> Option<TransitionEvent> {
        let kept = self.sink.as_ref().is_some_and(|sink| sink.keeps_records());
        (kept || self.tap.is_some()).then(|| event.clone())
    }

    /// Hands a transition the store has committed to the tap and the host's own sink.
    fn notify(&self, event: TransitionEvent) {
        let record = AuditRecord::Transition(event);
        self.tapped(&record);
        if let Some(sink) = &self.sink {
            sink.record(&record);
        }
    }

    /// Executes an approved call: the one way a call that required approval runs. What
    /// runs is the call as it was proposed (its stored canonical input), for the actor it
    /// was proposed by.
    ///
    /// In order: the lane must be `approved` and not expired (else it expires); `actor`
    /// must be the proposer, in the same account (else [`ApprovalError::Mismatch`] and the
    /// lane stays approved); the stored call must pass the gates again as they are now,
    /// and everything the approval binds (tool, risk tier, required scopes, mode, host
    /// policy, arguments) must be unchanged (else the lane is `invalidated`, with a reason
    /// that names what changed, and nothing runs). Then the lane is claimed by a
    /// compare-and-set, so of two racing executions one runs; the tool runs with the lane's
    /// key as run key; the lane ends `executed` or `execution_failed`.
    #[allow(
        clippy::too_many_arguments,
        reason = "each argument has its own type, so none can be swapped unnoticed"
    )]
    pub(crate) async fn execute<C: ?Sized + Sync + 'static>(
        &self,
        registry: &Registry<C>,
        key: &IdempotencyKey,
        actor: &Actor<'_>,
        context: &C,
        governance: &Governance<C>,
        holder: &str,
        now: Timestamp,
    ) -> Result<Value, ApprovalError> {
        let (lane, kept) = self.lane_to_move(key).await?;
        let first = self
            .claim(registry, lane, actor, context, governance, holder, now)
            .await;
        let Claim {
            claimed,
            codec,
            input,
            idempotent,
        } = self
            .again_if_stale(key, kept, first, |lane| {
                self.claim(registry, lane, actor, context, governance, holder, now)
            })
            .await?;
        let proposal = claimed.proposal();
        // The claim's time, if it was settled later than this clock read.
        let now = now.max(claimed.updated_at());
        // From here the tool may run: if this future is dropped before the outcome is
        // recorded, the guard records the lane as interrupted, synchronously.
        let mut guard = RunGuard {
            approvals: self,
            lane: Some(claimed.clone()),
            at: now,
        };
        // A tool that is not idempotent runs once: running it again could do its work
        // twice. An idempotent one gets the configured attempts.
        let attempts_allowed = if idempotent {
            self.config.max_attempts()
        } else {
            1
        };
        let mut input = Some(input);
        let mut attempts = 0;
        let outcome = loop {
            attempts += 1;
            // Each attempt runs the stored call, decoded afresh (a run consumes its input).
            let attempt = match input.take() {
                Some(input) => Ok(input),
                None => decode_stored(codec, proposal.input(), governance.limits()),
            };
            let attempt = match attempt {
                Ok(attempt) => attempt,
                Err(blocked) => break Err(Err(Invalidation::Blocked(blocked))),
            };
            let run = run_ready(codec, attempt, actor, context, RunKey::Known(claimed.key()));
            let result = match CatchPanic::new(run).await {
                Ok(result) => result,
                Err(panic) => Err(RunError::Failed(alloc::format!(
                    "the tool panicked: {panic}"
                ))),
            };
            match result {
                Ok(output) => break Ok(output),
                // Its work may be done: running it again could do it twice.
                Err(error @ RunError::OutcomeUnknown(_)) => break Err(Ok(error)),
                Err(error) if attempts >= attempts_allowed => break Err(Ok(error)),
                Err(_) => {}
            }
        };
        guard.lane = None;
        let recorded = match &outcome {
            Ok(output) => claimed
                .moved(LaneAction::Succeed, now, None, None)
                .map(|done| {
                    (
                        done.with_attempts(attempts).with_output(output.clone()),
                        LaneAction::Succeed,
                    )
                }),
            Err(Ok(error)) => {
                let reason = error.to_string();
                // Not known to have failed: a person resolves it, nothing runs it again.
                let action = match error {
                    RunError::OutcomeUnknown(_) => LaneAction::LoseLease,
                    _ => LaneAction::Fail,
                };
                claimed
                    .moved(action, now, None, Some(&reason))
                    .map(|failed| (failed.with_attempts(attempts), action))
            }
            Err(Err(invalidation)) => {
                let reason = invalidation.to_string();
                claimed
                    .moved(LaneAction::Invalidate, now, None, Some(&reason))
                    .map(|invalidated| (invalidated, LaneAction::Invalidate))
            }
        };
        let committed = match recorded {
            Ok((after, action)) => self.commit(&claimed, after, action, None).await,
            Err(error) => Err(ApprovalError::from(error)),
        };
        match (outcome, committed) {
            (Ok(output), Ok(_)) => Ok(output),
            (Err(Ok(error @ RunError::OutcomeUnknown(_))), Ok(_)) => {
                Err(ApprovalError::OutcomeUnknown(error))
            }
            (Err(Ok(error)), Ok(_)) => Err(ApprovalError::ExecutionFailed { attempts, error }),
            (Err(Err(invalidation)), Ok(_)) => Err(ApprovalError::Invalidated(invalidation)),
            // The tool was entered: never say that nothing ran.
            (Ok(output), Err(store)) => Err(ApprovalError::OutcomeNotRecorded {
                ran: Ok(output),
                store: alloc::boxed::Box::new(store),
            }),
            (Err(Ok(error)), Err(store)) => Err(ApprovalError::OutcomeNotRecorded {
                ran: Err(error),
                store: alloc::boxed::Box::new(store),
            }),
            (Err(Err(_)), Err(store)) => Err(store),
        }
    }

    /// Everything before an approved call runs: the lane checked (live, approved, the
    /// same actor and account), the call re-validated (else the lane is invalidated), and
    /// the claim made by a compare-and-set, so of two racing executions one runs.
    #[allow(
        clippy::too_many_arguments,
        reason = "each argument has its own type, so none can be swapped unnoticed"
    )]
    async fn claim<C: ?Sized + Sync + 'static>(
        &self,
        registry: &Registry<C>,
        lane: ApprovalLane,
        actor: &Actor<'_>,
        context: &C,
        governance: &Governance<C>,
        holder: &str,
        now: Timestamp,
    ) -> Result<Claim<C>, ApprovalError> {
        // A lane already claimed or run is said so before the clock is read: a loser of
        // a race learns what happened, whatever its clock says.
        if let Some(refusal) = not_to_run(&lane) {
            return Err(refusal);
        }
        let (lane, now) = self.live(lane, now).await?;
        if lane.state() != LaneState::Approved {
            return Err(lane
                .state()
                .apply(LaneAction::StartExecution)
                .unwrap_err()
                .into());
        }
        let proposal = lane.proposal();
        if actor.id() != proposal.actor_id() {
            return Err(ApprovalError::Mismatch(BoundField::Actor));
        }
        if actor.account() != proposal.account_id() {
            return Err(ApprovalError::Mismatch(BoundField::Account));
        }
        let (codec, input, idempotent) =
            match revalidate(registry, &lane, actor, context, governance) {
                Ok(checked) => checked,
                Err(invalidation) => {
                    let reason = invalidation.to_string();
                    self.apply(&lane, LaneAction::Invalidate, now, None, Some(&reason))
                        .await?;
                    return Err(ApprovalError::Invalidated(invalidation));
                }
            };

        // The claim: exactly one execution wins this compare-and-set, and it holds the
        // lane for a lease. A holder that dies leaves the lease to run out.
        let until = now
            .checked_add(self.config.lease())
            .ok_or(ApprovalError::TimeOverflow)?;
        let claimed = lane
            .moved(LaneAction::StartExecution, now, None, None)?
            .claimed_by(holder, until);
        let claimed = match self
            .commit(&lane, claimed, LaneAction::StartExecution, None)
            .await
        {
            Ok(claimed) => claimed,
            // Another execution moved it first: say what it did.
            Err(ApprovalError::Store(StoreError::Conflict)) => {
                let stored = self.lane(&lane.key()).await?;
                return Err(not_to_run(&stored).unwrap_or(StoreError::Conflict.into()));
            }
            Err(error) => return Err(error),
        };
        Ok(Claim {
            claimed,
            codec,
            input,
            idempotent,
        })
    }

    /// Marks every claim whose lease ran out by `now` as an unknown outcome, and expires
    /// every pending or approved lane whose time is up, a page of `page` lanes at a time.
    /// A lane whose outcome is unknown is never run again on its own: a person resolves
    /// it ([`Approvals::reconcile`]). Returns how many lanes it moved.
    pub(crate) async fn sweep(&self, now: Timestamp, page: usize) -> Result<usize, ApprovalError> {
        let page = page.max(1);
        let mut moved = 0;
        for state in [
            LaneState::ExecutionPending,
            LaneState::Pending,
            LaneState::Approved,
        ] {
            let mut after = None;
            loop {
                let lanes = self.store.list(state, after.as_ref(), page).await?;
                for lane in &lanes {
                    let action = match state {
                        LaneState::ExecutionPending if lease_lapsed(lane, now) => {
                            LaneAction::LoseLease
                        }
                        LaneState::Pending | LaneState::Approved
                            if is_due(lane.state(), lane.expires_at(), now) =>
                        {
                            LaneAction::Expire
                        }
                        _ => continue,
                    };
                    let reason = (action == LaneAction::LoseLease).then_some(LEASE_LAPSED);
                    match self.apply(lane, action, now, None, reason).await {
                        Ok(_) => moved += 1,
                        // Another sweeper or the holder moved it first: nothing to do.
                        Err(ApprovalError::Store(StoreError::Conflict)) => {}
                        Err(error) => return Err(error),
                    }
                }
                if lanes.len() < page {
                    break;
                }
                after = lanes.last().map(ApprovalLane::key);
            }
        }
        Ok(moved)
    }

    /// A person resolves an interrupted or unknown outcome: it ran, it did not, or it is
    /// closed so that the same call can be proposed afresh. A note is required.
    pub(crate) async fn reconcile(
        &self,
        key: &IdempotencyKey,
        action: LaneAction,
        by: &str,
        note: &str,
        now: Timestamp,
    ) -> Result<ApprovalLane, ApprovalError> {
        let lane = self.lane(key).await?;
        let (_, now) = self.due(&lane, now)?; // an interrupted or unknown lane never expires: the clock only
        check_decider(by)?;
        if text::is_blank(note) || text::has_control(note, false) {
            return Err(ApprovalError::ReasonRequired(action));
        }
        self.apply(&lane, action, now, Some(by), Some(note)).await
    }
}

/// Records a claimed lane as interrupted if the run's future is dropped before its
/// outcome is recorded. It writes synchronously in `drop`: it never waits on a runtime.
/// An approved call, claimed: the lane as claimed and the call ready to run.
struct Claim<C: ?Sized + 'static> {
    claimed: ApprovalLane,
    codec: &'static dyn Codec<C>,
    input: ErasedInput,
    idempotent: bool,
}

/// A decision on a lane that is no longer pending is refused for what the lane is (a
/// call approved already, say), before the clock is read: another process that decided
/// it a moment ago may count time a few milliseconds ahead of this one, and its loser is
/// told what happened, not that the clock went backwards.
fn refused_as_decided(lane: &ApprovalLane, action: LaneAction) -> Result<(), ApprovalError> {
    if lane.state() == LaneState::Pending {
        return Ok(());
    }
    lane.moved(action, lane.updated_at(), None, None)
        .map(drop)
        .map_err(ApprovalError::from)
}

/// The time a move on `lane` is made at, for a clock reading `now`: `now`, unless the
/// lane was moved a little later than that (up to [`CLOCK_SKEW_MS`]) by another process
/// or thread: then the lane's last move's time. Processes that share a store count its
/// clock each from its own reading, a few milliseconds apart, and a process may read its
/// clock just before another moves the lane; either is counted at the lane's time, not
/// refused as a clock that went backwards. A clock further behind is still refused. Never
/// earlier than `now`: an expiry is decided no later than the clock says.
fn settled(now: Timestamp, lane: &ApprovalLane) -> Timestamp {
    let ahead = lane
        .updated_at()
        .unix_millis()
        .saturating_sub(now.unix_millis());
    if ahead > 0 && ahead <= CLOCK_SKEW_MS {
        lane.updated_at()
    } else {
        now
    }
}

/// How far behind a lane's last move a clock may read and still move it.
const CLOCK_SKEW_MS: u64 = 250;

/// What the audit trail says of a claim whose holder never recorded an outcome.
const LEASE_LAPSED: &str = "the claim's lease ran out with no outcome recorded";

/// Whether `lane` is claimed to run and its claim's lease ran out by `now` (a claim with
/// no lease recorded is one whose holder is gone).
fn lease_lapsed(lane: &ApprovalLane, now: Timestamp) -> bool {
    lane.state() == LaneState::ExecutionPending
        && lane.claim().is_none_or(|claim| claim.until() <= now)
}

/// Why a lane is not to be run by this execution, if it was claimed or run by another:
/// running elsewhere (with the claim's holder and lease) or already run.
fn not_to_run(lane: &ApprovalLane) -> Option<ApprovalError> {
    match lane.state() {
        LaneState::ExecutionPending => Some(match lane.claim() {
            Some(claim) => ApprovalError::RunningElsewhere {
                holder: claim.holder().into(),
                until: claim.until(),
            },
            None => ApprovalError::AlreadyRun(LaneState::ExecutionPending),
        }),
        state @ (LaneState::Executed
        | LaneState::ExecutionFailed
        | LaneState::Interrupted
        | LaneState::OutcomeUnknown) => Some(ApprovalError::AlreadyRun(state)),
        _ => None,
    }
}

/// Whether `error` is a refusal decided on a copy of the lane (its state, its proposal,
/// its version, its times), which a stale copy could have caused; not one that follows
/// a write (an expiry, an invalidation) or that the store itself gave.
fn decided_on_the_copy(error: &ApprovalError) -> bool {
    matches!(
        error,
        ApprovalError::Transition(_)
            | ApprovalError::InvalidProposer
            | ApprovalError::SelfApproval
            | ApprovalError::ApprovedAlready { .. }
            | ApprovalError::EditUnchanged
            | ApprovalError::ClockWentBackwards
            | ApprovalError::RunningElsewhere { .. }
            | ApprovalError::AlreadyRun(_)
            | ApprovalError::Mismatch(_)
            | ApprovalError::Store(StoreError::Conflict | StoreError::Missing)
    )
}

struct RunGuard<'s, S: ApprovalStore> {
    approvals: &'s Approvals<S>,
    lane: Option<ApprovalLane>,
    at: Timestamp,
}

impl<S: ApprovalStore> Drop for RunGuard<'_, S> {
    fn drop(&mut self) {
        let Some(lane) = self.lane.take() else {
            return;
        };
        let reason = "the run's future was dropped before it finished";
        let Ok(interrupted) = lane.moved(LaneAction::Interrupt, self.at, None, Some(reason)) else {
            return;
        };
        let event =
            TransitionEvent::of(Some(&lane), &interrupted, Some(LaneAction::Interrupt), None);
        // `drop` cannot wait: the store takes the move without blocking. If it is lost
        // too, the lease runs out and a sweep marks the outcome unknown.
        self.approvals
            .store
            .transition_detached(lane.version(), interrupted, event.clone());
        self.approvals.notify(event);
    }
}

/// The deciding person's id, by the identity rule: an empty or blank one is missing.
fn check_decider(by: &str) -> Result<(), ApprovalError> {
    if text::is_blank(by) {
        return Err(ApprovalError::MissingDecider);
    }
    check_id(by).map_err(ApprovalError::InvalidDecider)
}

/// The stored call through the gates as they are now, and everything the approval binds
/// compared with its current value. On success, the tool's codec and the decoded input.
fn revalidate<C: ?Sized + 'static>(
    registry: &Registry<C>,
    lane: &ApprovalLane,
    actor: &Actor<'_>,
    context: &C,
    governance: &Governance<C>,
) -> Result<(&'static dyn Codec<C>, ErasedInput, bool), Invalidation> {
    let proposal = lane.proposal();
    // Withdrawn by its upstream since the approval: as if removed.
    let entry = registry
        .get(proposal.tool())
        .filter(|entry| entry.is_offered());
    let codec = entry.and_then(ToolEntry::codec);
    // The gates again, the tier's rule included: an approved call the host's rule now
    // gives another tier does not run.
    let gate = Raising {
        decode: || match codec {
            Some(codec) => decode_stored(codec, proposal.input(), governance.limits()),
            None => Err(Blocked::NotCallableByName),
        },
        tier: |input: &ErasedInput| match codec {
            Some(codec) => codec
                .tier(input, actor)
                .map(|asked| asked.map(|(tier, _)| tier))
                .map_err(|()| Blocked::TierRuleFailed),
            None => Ok(None),
        },
    };
    let verdict = run_gates(
        entry.map(Subject::of),
        gate,
        actor,
        context,
        governance.mode_policy(),
    );
    let (input, mode) = match verdict {
        Verdict::Execute { input, mode } | Verdict::AwaitApproval { input, mode } => (input, mode),
        Verdict::Blocked(blocked) => return Err(Invalidation::Blocked(blocked)),
    };
    let (Some(entry), Some(codec)) = (entry, codec) else {
        return Err(Invalidation::Blocked(Blocked::UnknownTool));
    };
    let spec = entry.spec();
    let changed = |field, was: &dyn ToString, now: &dyn ToString| {
        Err(Invalidation::Changed {
            field,
            was: was.to_string(),
            now: now.to_string(),
        })
    };
    if mode.tier() != proposal.risk_tier() {
        return changed(BoundField::RiskTier, &proposal.risk_tier(), &mode.tier());
    }
    let required = entry.scopes();
    let same_scopes = required
        .iter()
        .map(|scope| scope.as_str())
        .eq(proposal.required_scopes().iter());
    if !same_scopes {
        let now: alloc::vec::Vec<&str> = required.iter().map(|scope| scope.as_str()).collect();
        return changed(
            BoundField::Scopes,
            &proposal.required_scopes().join(" "),
            &now.join(" "),
        );
    }
    let host_floor = governance.mode_policy().tier_floor(mode.tier());
    let policy = PolicySnapshot::new(&mode, host_floor);
    let was = proposal.policy();
    if policy.host_floor != was.host_floor {
        return changed(BoundField::HostPolicy, &was.host_floor, &policy.host_floor);
    }
    if policy.quorum != was.quorum {
        return changed(BoundField::Quorum, &was.quorum, &policy.quorum);
    }
    if policy != *was {
        return changed(BoundField::Mode, &describe(was), &describe(&policy));
    }
    let canonical = codec
        .canonical(&input)
        .map_err(|error| Invalidation::Changed {
            field: BoundField::Arguments,
            was: proposal.input().to_string(),
            now: error,
        })?;
    let key = IdempotencyKey::for_canonical_call(
        spec.name(),
        &canonical,
        Some(actor.id()),
        actor.account(),
        proposal.dedupe_token(),
    );
    if key != lane.key() {
        return changed(BoundField::Arguments, &proposal.input(), &canonical);
    }
    Ok((codec, input, spec.is_idempotent()))
}

/// A policy snapshot as a reason reads it: `requires_approval (spec)`.
fn describe(policy: &PolicySnapshot) -> alloc::string::String {
    alloc::format!("{} ({})", policy.resolved, policy.decided_by.as_str())
}
