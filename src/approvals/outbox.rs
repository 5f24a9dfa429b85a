//! The notices a store still owes: every pending lane is a notice due to each target
//! until it is delivered or given up. The lane itself, written when the call was
//! proposed, is the outbox entry: a process that dies before it tells anyone loses
//! nothing, and a proposal pays no extra write for it. What became of each notice, per
//! target, is kept beside the lanes; a claim with a lease lets one of many processes
//! deliver each notice.

use alloc::string::String;

use crate::approvals::ApprovalLane;
use crate::gate::Timestamp;

/// A claim on the notices due to one target ([`ApprovalStore::claim_notices`]): who
/// claims (a process's name among the replicas), at what time, until when the claim
/// holds, and how many notices at most (64 unless [`NoticeClaim::limit`] says otherwise).
///
/// [`ApprovalStore::claim_notices`]: crate::approvals::ApprovalStore::claim_notices
///
/// ```
/// use cairnloop::approvals::NoticeClaim;
/// use cairnloop::gate::Timestamp;
///
/// let (now, until) = (Timestamp::from_unix_millis(1_000), Timestamp::from_unix_millis(31_000));
/// let claim = NoticeClaim::new("ops-slack", "replica-1", now, until).limit(10);
/// assert_eq!((claim.target(), claim.holder(), claim.max()), ("ops-slack", "replica-1", 10));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoticeClaim {
    target: String,
    holder: String,
    now: Timestamp,
    until: Timestamp,
    limit: usize,
}

impl NoticeClaim {
    /// `holder`'s claim at `now`, until `until`, on the notices due to `target`.
    ///
    /// ```
    /// # use cairnloop::{approvals::NoticeClaim, gate::Timestamp};
    /// let claim = NoticeClaim::new("pager", "replica-1", Timestamp::from_unix_millis(0), Timestamp::from_unix_millis(1));
    /// assert_eq!(claim.max(), 64);
    /// ```
    #[must_use]
    pub fn new(
        target: impl Into<String>,
        holder: impl Into<String>,
        now: Timestamp,
        until: Timestamp,
    ) -> Self {
        Self {
            target: target.into(),
            holder: holder.into(),
            now,
            until,
            limit: 64,
        }
    }

    /// At most `limit` notices.
    ///
    /// ```
    /// # use cairnloop::{approvals::NoticeClaim, gate::Timestamp};
    /// # let claim = NoticeClaim::new("pager", "replica-1", Timestamp::from_unix_millis(0), Timestamp::from_unix_millis(1));
    /// assert_eq!(claim.limit(3).max(), 3);
    /// ```
    #[must_use]
    pub fn limit(self, limit: usize) -> Self {
        Self { limit, ..self }
    }

    /// The target's name.
    ///
    /// ```
    /// # use cairnloop::{approvals::NoticeClaim, gate::Timestamp};
    /// # let claim = NoticeClaim::new("pager", "replica-1", Timestamp::from_unix_millis(0), Timestamp::from_unix_millis(1));
    /// assert_eq!(claim.target(), "pager");
    /// ```
    #[must_use]
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Who claims.
    ///
    /// ```
    /// # use cairnloop::{approvals::NoticeClaim, gate::Timestamp};
    /// # let claim = NoticeClaim::new("pager", "replica-1", Timestamp::from_unix_millis(0), Timestamp::from_unix_millis(1));
    /// assert_eq!(claim.holder(), "replica-1");
    /// ```
    #[must_use]
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// The time of the claim: what is due by then is claimed.
    ///
    /// ```
    /// # use cairnloop::{approvals::NoticeClaim, gate::Timestamp};
    /// # let claim = NoticeClaim::new("pager", "replica-1", Timestamp::from_unix_millis(0), Timestamp::from_unix_millis(1));
    /// assert_eq!(claim.now(), Timestamp::from_unix_millis(0));
    /// ```
    #[must_use]
    pub const fn now(&self) -> Timestamp {
        self.now
    }

    /// Until when the claim holds.
    ///
    /// ```
    /// # use cairnloop::{approvals::NoticeClaim, gate::Timestamp};
    /// # let claim = NoticeClaim::new("pager", "replica-1", Timestamp::from_unix_millis(0), Timestamp::from_unix_millis(1));
    /// assert_eq!(claim.until(), Timestamp::from_unix_millis(1));
    /// ```
    #[must_use]
    pub const fn until(&self) -> Timestamp {
        self.until
    }

    /// At most this many notices.
    ///
    /// ```
    /// # use cairnloop::{approvals::NoticeClaim, gate::Timestamp};
    /// # let claim = NoticeClaim::new("pager", "replica-1", Timestamp::from_unix_millis(0), Timestamp::from_unix_millis(1));
    /// assert_eq!(claim.max(), 64);
    /// ```
    #[must_use]
    pub const fn max(&self) -> usize {
        self.limit
    }
}

/// A notice claimed for delivery ([`ApprovalStore::claim_notices`]): the lane it tells of
/// as it was read, the target it goes to, who holds the claim, and which attempt this is.
/// Its round is the lane's proposal time, so a lane proposed again after it was closed is
/// a new notice.
///
/// [`ApprovalStore::claim_notices`]: crate::approvals::ApprovalStore::claim_notices
///
/// ```
/// # use cairnloop::approvals::DueNotice;
/// fn describe(notice: &DueNotice) -> String {
///     format!("{} to {}, attempt {}", notice.lane().proposal().tool(), notice.claim().target(), notice.attempt())
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueNotice {
    lane: ApprovalLane,
    claim: NoticeClaim,
    attempt: u32,
}

impl DueNotice {
    /// The notice of `lane` that `claim` took, for its `attempt`-th attempt (a store makes
    /// these).
    ///
    /// ```
    /// # use cairnloop::{approvals::{DueNotice, NoticeClaim}, gate::Timestamp};
    /// # fn f(lane: cairnloop::approvals::ApprovalLane) {
    /// let claim = NoticeClaim::new("pager", "replica-1", Timestamp::from_unix_millis(0), Timestamp::from_unix_millis(1));
    /// let notice = DueNotice::claimed(lane, &claim, 1);
    /// assert_eq!((notice.claim().holder(), notice.attempt()), ("replica-1", 1));
    /// # }
    /// ```
    #[must_use]
    pub fn claimed(lane: ApprovalLane, claim: &NoticeClaim, attempt: u32) -> Self {
        Self {
            lane,
            claim: claim.clone(),
            attempt,
        }
    }

    /// The lane the notice tells of, as read when it was claimed.
    ///
    /// ```
    /// # fn f(notice: cairnloop::approvals::DueNotice) {
    /// let tool = notice.lane().proposal().tool();
    /// # }
    /// ```
    #[must_use]
    pub const fn lane(&self) -> &ApprovalLane {
        &self.lane
    }

    /// The claim that took it: its target, and its holder, who alone settles it.
    ///
    /// ```
    /// # fn f(notice: cairnloop::approvals::DueNotice) {
    /// assert!(!notice.claim().holder().is_empty());
    /// # }
    /// ```
    #[must_use]
    pub const fn claim(&self) -> &NoticeClaim {
        &self.claim
    }

    /// Which attempt this is, from 1.
    ///
    /// ```
    /// # fn f(notice: cairnloop::approvals::DueNotice) {
    /// assert!(notice.attempt() >= 1);
    /// # }
    /// ```
    #[must_use]
    pub const fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The notice's round: its lane's proposal time.
    ///
    /// ```
    /// # fn f(notice: cairnloop::approvals::DueNotice) {
    /// assert_eq!(notice.round(), notice.lane().proposed_at());
    /// # }
    /// ```
    #[must_use]
    pub fn round(&self) -> Timestamp {
        self.lane.proposed_at()
    }
}

/// What became of a claimed notice ([`ApprovalStore::settle_notice`]).
///
/// [`ApprovalStore::settle_notice`]: crate::approvals::ApprovalStore::settle_notice
///
/// ```
/// use cairnloop::approvals::NoticeOutcome;
/// use cairnloop::gate::Timestamp;
///
/// let later = NoticeOutcome::Retry(Timestamp::from_unix_millis(60_000));
/// assert_ne!(later, NoticeOutcome::Delivered);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoticeOutcome {
    /// The target took it: it is never claimed again.
    Delivered,
    /// It failed; it is due again at this time.
    Retry(Timestamp),
    /// It failed for the last time (the target refused it, or the attempts ran out): it
    /// is never claimed again.
    GaveUp,
}

/// How an outbox delivers ([`Governor::with_outbox`](crate::Governor::with_outbox)): how
/// long a claim on a notice holds while its target is tried, how long after a failure
/// it is tried again (doubling from the first wait up to the longest), and after how many
/// attempts it is given up. The defaults (a 30 s claim, 1 s doubling to 5 min, 30
/// attempts) keep trying a receiver that is down for about two hours; a notice is also
/// given up when its call no longer waits (decided or expired), since only pending lanes
/// are due.
///
/// ```
/// use std::time::Duration;
/// use cairnloop::approvals::OutboxPolicy;
///
/// let policy = OutboxPolicy::new().attempts(5).first_retry(Duration::from_secs(2));
/// assert_eq!(policy.wait_after(1), Duration::from_secs(2));
/// assert_eq!(policy.wait_after(3), Duration::from_secs(8));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutboxPolicy {
    lease: core::time::Duration,
    first_retry: core::time::Duration,
    longest_wait: core::time::Duration,
    attempts: u32,
}

impl Default for OutboxPolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl OutboxPolicy {
    /// A 30 s claim; retries after 1 s, doubling up to 5 min; 30 attempts.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::OutboxPolicy::new().max_attempts(), 30);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            lease: core::time::Duration::from_secs(30),
            first_retry: core::time::Duration::from_secs(1),
            longest_wait: core::time::Duration::from_secs(300),
            attempts: 30,
        }
    }

    /// How long a claim holds while the target is tried (longer than one attempt takes).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let policy = cairnloop::approvals::OutboxPolicy::new().lease(Duration::from_secs(10));
    /// assert_eq!(policy.claim_lease(), Duration::from_secs(10));
    /// ```
    #[must_use]
    pub const fn lease(self, lease: core::time::Duration) -> Self {
        Self { lease, ..self }
    }

    /// The wait after the first failed attempt.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let policy = cairnloop::approvals::OutboxPolicy::new().first_retry(Duration::from_millis(50));
    /// assert_eq!(policy.wait_after(1), Duration::from_millis(50));
    /// ```
    #[must_use]
    pub const fn first_retry(self, first_retry: core::time::Duration) -> Self {
        Self {
            first_retry,
            ..self
        }
    }

    /// The longest wait between two attempts.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let policy = cairnloop::approvals::OutboxPolicy::new().longest_wait(Duration::from_secs(60));
    /// assert_eq!(policy.wait_after(20), Duration::from_secs(60));
    /// ```
    #[must_use]
    pub const fn longest_wait(self, longest_wait: core::time::Duration) -> Self {
        Self {
            longest_wait,
            ..self
        }
    }

    /// At most this many attempts per notice (at least 1).
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::OutboxPolicy::new().attempts(0).max_attempts(), 1);
    /// ```
    #[must_use]
    pub const fn attempts(self, attempts: u32) -> Self {
        Self {
            attempts: if attempts == 0 { 1 } else { attempts },
            ..self
        }
    }

    /// How long a claim holds.
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(cairnloop::approvals::OutboxPolicy::new().claim_lease(), Duration::from_secs(30));
    /// ```
    #[must_use]
    pub const fn claim_lease(&self) -> core::time::Duration {
        self.lease
    }

    /// At most this many attempts per notice.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::OutboxPolicy::new().attempts(3).max_attempts(), 3);
    /// ```
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.attempts
    }

    /// The wait after the `attempt`-th failed attempt: the first wait doubled per attempt
    /// before it, up to the longest.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let policy = cairnloop::approvals::OutboxPolicy::new();
    /// assert_eq!(policy.wait_after(2), Duration::from_secs(2));
    /// assert_eq!(policy.wait_after(30), Duration::from_secs(300));
    /// ```
    #[must_use]
    pub fn wait_after(&self, attempt: u32) -> core::time::Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.first_retry
            .saturating_mul(1 << doublings)
            .min(self.longest_wait)
    }
}

/// What a notifier said of one notice an outbox handed it, in this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Told {
    Delivered,
    /// Failed; worth trying again.
    Failed,
    /// The target refused the notice itself: never tried again.
    Refused,
}

/// Where a notifier's report of one outbox notice lands, and the signal that it did.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    told: std::sync::Mutex<Option<Told>>,
    signal: crate::approvals::StoreWatch,
}

impl Answer {
    pub(crate) fn tell(&self, told: Told) {
        if let Ok(mut slot) = self.told.lock() {
            slot.get_or_insert(told);
        }
        self.signal.notify();
    }

    /// The answer, once given, or `None` when `timeout` passes first.
    pub(crate) async fn wait(&self, timeout: core::time::Duration) -> Option<Told> {
        let deadline = std::time::Instant::now().checked_add(timeout);
        loop {
            let seen = self.signal.generation();
            if let Some(told) = self.told.lock().ok().and_then(|slot| *slot) {
                return Some(told);
            }
            let left = deadline?.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || !self.signal.changed(seen, left).await {
                return self.told.lock().ok().and_then(|slot| *slot);
            }
        }
    }
}

/// What one pass of an outbox did ([`Governor::deliver_notices`]): notices delivered,
/// failed and due again later, given up, and handed over with no answer within the claim
/// (claimed again once their lease runs out).
///
/// [`Governor::deliver_notices`]: crate::Governor::deliver_notices
///
/// ```
/// let pass = cairnloop::approvals::OutboxPass::default();
/// assert_eq!(pass.delivered + pass.retried + pass.given_up + pass.unanswered, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutboxPass {
    /// Delivered.
    pub delivered: usize,
    /// Failed, and due again later.
    pub retried: usize,
    /// Given up: refused, or failed at the last attempt.
    pub given_up: usize,
    /// Not answered within the claim.
    pub unanswered: usize,
}

/// A duration in whole milliseconds, saturating.
/// How long after its proposal time a lane is surely stored and seen by every claimer (its
/// insert committed, the clocks of the processes that share the store within it). A
/// durable store keeps, per target, a time below which every pending lane already has a
/// notice of its own; a pass that left nothing due moves it up to this long before now,
/// so that later passes look only at newer lanes and at notices due again, not at every
/// pending lane whose notice is done.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) const STORED_WITHIN_MILLIS: u64 = 60_000;

pub(crate) fn millis_of(duration: core::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
