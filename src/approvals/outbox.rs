//! The notices a store still owes: every pending lane is a notice due to each target
//! until it is delivered or given up. The lane itself, written when the call was
//! proposed, is the outbox entry: a process that dies before it tells anyone loses
//! nothing, and a proposal pays no extra write for it. What became of each notice, per
//! target, is kept beside the lanes; a claim with a lease lets one of many processes
//! deliver each notice.

use alloc::string::String;

use crate::approvals::ApprovalLane;
use crate::gate::Timestamp;

/// A notice claimed for delivery ([`ApprovalStore::claim_notices`]): the lane it tells of
/// as it was read, the target it goes to, and which attempt this is. Its round is the
/// lane's proposal time, so a lane proposed again after it was closed is a new notice.
///
/// [`ApprovalStore::claim_notices`]: crate::approvals::ApprovalStore::claim_notices
///
/// ```
/// # use cairnloop::approvals::DueNotice;
/// fn describe(notice: &DueNotice) -> String {
///     format!("{} to {}, attempt {}", notice.lane().proposal().tool(), notice.target(), notice.attempt())
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueNotice {
    lane: ApprovalLane,
    target: String,
    attempt: u32,
}

impl DueNotice {
    /// The notice of `lane` to `target`, claimed for its `attempt`-th attempt (a store
    /// makes these).
    ///
    /// ```
    /// # fn f(lane: cairnloop::approvals::ApprovalLane) {
    /// let notice = cairnloop::approvals::DueNotice::new(lane, "webhook:ops", 1);
    /// assert_eq!(notice.attempt(), 1);
    /// # }
    /// ```
    #[must_use]
    pub fn new(lane: ApprovalLane, target: impl Into<String>, attempt: u32) -> Self {
        Self {
            lane,
            target: target.into(),
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

    /// The target's name.
    ///
    /// ```
    /// # fn f(notice: cairnloop::approvals::DueNotice) {
    /// assert!(!notice.target().is_empty());
    /// # }
    /// ```
    #[must_use]
    pub fn target(&self) -> &str {
        &self.target
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
