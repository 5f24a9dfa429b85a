use core::fmt;

use crate::gate::{LaneState, Timestamp};

/// The rules a person's decision on a lane must pass, shared by every lane store: the
/// host's governor and a device's fixed lane table read the same functions, so approval
/// means one thing everywhere. Allocation-free; the moves themselves are
/// [`LaneState::apply`].
///
/// In order: the clock must not have gone back past the lane's last move; a lane that can
/// still expire and whose time is up expires instead of being decided; the approver must
/// not be the proposer (by the host's identity rule) unless the host allows it.
///
/// ```
/// use cairnloop::gate::{ApprovalRules, LaneState, RuleBroken, Timestamp};
///
/// let rules = ApprovalRules::FOUR_EYES;
/// let at = Timestamp::from_unix_millis;
/// assert_eq!(rules.liveness(LaneState::Pending, at(10), at(100), at(50)), Ok(false));
/// assert_eq!(rules.liveness(LaneState::Pending, at(10), at(100), at(100)), Ok(true)); // due
/// assert_eq!(rules.liveness(LaneState::Pending, at(10), at(100), at(5)), Err(RuleBroken::ClockWentBackwards));
/// assert_eq!(rules.four_eyes("agent-7", "AGENT-7", |a, b| a.eq_ignore_ascii_case(b)), Err(RuleBroken::SelfApproval));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApprovalRules {
    allow_self_approval: bool,
}

impl ApprovalRules {
    /// The default: a proposer never approves their own call.
    pub const FOUR_EYES: Self = Self {
        allow_self_approval: false,
    };

    /// Rules under which a proposer may approve their own call (a host that opted in).
    ///
    /// ```
    /// let rules = cairnloop::gate::ApprovalRules::allowing_self_approval();
    /// assert_eq!(rules.four_eyes("a", "a", |x, y| x == y), Ok(()));
    /// ```
    #[must_use]
    pub const fn allowing_self_approval() -> Self {
        Self {
            allow_self_approval: true,
        }
    }

    /// Whether a lane in `state`, last moved at `updated_at` and expiring at `expires_at`,
    /// is due to expire at `now` (`Ok(true)`: expire it, decide nothing), or may be
    /// decided (`Ok(false)`). A clock earlier than the lane's last move is refused: time
    /// read from a clock that went back would stretch an approval's life.
    ///
    /// ```
    /// use cairnloop::gate::{ApprovalRules, LaneState, Timestamp};
    /// let at = Timestamp::from_unix_millis;
    /// // Only pending and approved lanes expire.
    /// assert_eq!(ApprovalRules::FOUR_EYES.liveness(LaneState::Executed, at(0), at(1), at(9)), Ok(false));
    /// ```
    pub const fn liveness(
        &self,
        state: LaneState,
        updated_at: Timestamp,
        expires_at: Timestamp,
        now: Timestamp,
    ) -> Result<bool, RuleBroken> {
        if now.unix_millis() < updated_at.unix_millis() {
            return Err(RuleBroken::ClockWentBackwards);
        }
        Ok(is_due(state, expires_at, now))
    }

    /// Four eyes: `approver` may approve a call proposed by `proposer` unless they are the
    /// same person by `same_person` (the host's Unicode identity rule, or
    /// [`same_ascii_id`] on a device), and self-approval is not allowed.
    ///
    /// ```
    /// use cairnloop::gate::{ApprovalRules, same_ascii_id};
    /// assert!(ApprovalRules::FOUR_EYES.four_eyes("agent-7", "op-1", same_ascii_id).is_ok());
    /// ```
    pub fn four_eyes(
        &self,
        proposer: &str,
        approver: &str,
        same_person: impl FnOnce(&str, &str) -> bool,
    ) -> Result<(), RuleBroken> {
        if !self.allow_self_approval && same_person(approver, proposer) {
            return Err(RuleBroken::SelfApproval);
        }
        Ok(())
    }
}

impl Default for ApprovalRules {
    fn default() -> Self {
        Self::FOUR_EYES
    }
}

/// Whether a lane that can still expire (pending or approved) has reached its expiry: at
/// or after it.
///
/// ```
/// use cairnloop::gate::{LaneState, Timestamp, is_due};
/// assert!(is_due(LaneState::Approved, Timestamp::from_unix_millis(5), Timestamp::from_unix_millis(5)));
/// assert!(!is_due(LaneState::Rejected, Timestamp::from_unix_millis(5), Timestamp::from_unix_millis(9)));
/// ```
#[must_use]
pub const fn is_due(state: LaneState, expires_at: Timestamp, now: Timestamp) -> bool {
    now.unix_millis() >= expires_at.unix_millis()
        && matches!(state, LaneState::Pending | LaneState::Approved)
}

/// The identity rule where ids are ASCII (a device): an id is 1 to 64 printable ASCII
/// characters with no space. Hosts use the Unicode rule of the `approvals` layer, which
/// gives the same answer for every id this one accepts, except look-alikes across
/// letters and digits (`l` and `1`), which it also treats as one person.
///
/// ```
/// use cairnloop::gate::check_ascii_id;
/// assert!(check_ascii_id("op-1").is_ok());
/// assert!(check_ascii_id("op 1").is_err());
/// assert!(check_ascii_id("").is_err());
/// assert!(check_ascii_id("émile").is_err());
/// ```
pub const fn check_ascii_id(id: &str) -> Result<(), InvalidAsciiId> {
    let bytes = id.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_ASCII_ID {
        return Err(InvalidAsciiId);
    }
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_graphic() {
            return Err(InvalidAsciiId);
        }
        i += 1;
    }
    Ok(())
}

/// Longest id [`check_ascii_id`] accepts.
pub const MAX_ASCII_ID: usize = 64;

/// Whether two ASCII ids name the same person: equal ignoring ASCII case.
///
/// ```
/// assert!(cairnloop::gate::same_ascii_id("Op-1", "op-1"));
/// assert!(!cairnloop::gate::same_ascii_id("op-1", "op-2"));
/// ```
#[must_use]
pub fn same_ascii_id(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Which approval rule a decision broke.
///
/// ```
/// use cairnloop::gate::RuleBroken;
/// assert_eq!(RuleBroken::SelfApproval.to_string(), "the proposer cannot approve their own call");
/// assert_eq!(RuleBroken::SelfApproval.code(), "self_approval");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleBroken {
    /// The clock reads earlier than the lane's last move.
    ClockWentBackwards,
    /// The approver is the proposer, and the rules do not allow it.
    SelfApproval,
}

impl RuleBroken {
    /// A stable machine code: `clock_went_backwards` or `self_approval`.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::RuleBroken::ClockWentBackwards.code(), "clock_went_backwards");
    /// ```
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            Self::ClockWentBackwards => "clock_went_backwards",
            Self::SelfApproval => "self_approval",
        }
    }
}

impl fmt::Display for RuleBroken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ClockWentBackwards => "the clock went backwards",
            Self::SelfApproval => "the proposer cannot approve their own call",
        })
    }
}

impl core::error::Error for RuleBroken {}

/// An id that [`check_ascii_id`] refuses.
///
/// ```
/// let err = cairnloop::gate::check_ascii_id("op 1").unwrap_err();
/// assert_eq!(err.to_string(), "an id must be 1 to 64 printable ASCII characters with no space");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InvalidAsciiId;

impl fmt::Display for InvalidAsciiId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an id must be 1 to 64 printable ASCII characters with no space")
    }
}

impl core::error::Error for InvalidAsciiId {}
