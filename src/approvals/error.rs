use alloc::string::String;

use crate::approvals::IdentityError;
use crate::declare::RunError;
use crate::gate::{Blocked, LaneAction, LaneState, Timestamp, TransitionError};

/// A part of what an approval binds: the call, who made it, and the policy it was
/// approved under. Before an approved call runs, each is compared with its current value.
///
/// ```
/// assert_eq!(cairnloop::approvals::BoundField::RiskTier.to_string(), "risk tier");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundField {
    /// The tool (gone from the registry, or another tool).
    Tool,
    /// The canonical arguments and dedupe token.
    Arguments,
    /// The actor who proposed the call.
    Actor,
    /// The account the call acts in.
    Account,
    /// The tool's risk tier.
    RiskTier,
    /// The scopes the tool requires.
    Scopes,
    /// The approval mode in force and where it came from.
    Mode,
    /// The host's policy for the tool's tier.
    HostPolicy,
    /// How many approvers the call needs.
    Quorum,
}

impl BoundField {
    /// How the part reads in a reason: `tool`, `arguments`, `actor`, `account`,
    /// `risk tier`, `required scopes`, `approval mode`, `host policy` or `quorum`.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::BoundField::Scopes.as_str(), "required scopes");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Arguments => "arguments",
            Self::Actor => "actor",
            Self::Account => "account",
            Self::RiskTier => "risk tier",
            Self::Scopes => "required scopes",
            Self::Mode => "approval mode",
            Self::HostPolicy => "host policy",
            Self::Quorum => "quorum",
        }
    }
}

impl core::fmt::Display for BoundField {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an approval operation was refused. Nothing ran in any of these cases, except
/// [`ApprovalError::ExecutionFailed`], where the tool ran and failed every attempt, and
/// [`ApprovalError::OutcomeNotRecorded`], where it ran and the record failed.
///
/// ```
/// assert_eq!(cairnloop::ApprovalError::SelfApproval.to_string(), "the proposer cannot approve their own call");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No lane has this key.
    #[error("no approval lane has this key")]
    UnknownLane,
    /// The lifecycle does not allow this move from the lane's state.
    #[error(transparent)]
    Transition(#[from] TransitionError),
    /// Rejecting or deferring needs a non-empty, single-line reason.
    #[error("a reason is required to {0}")]
    ReasonRequired(LaneAction),
    /// An approver, rejecter or deferrer must be named.
    #[error("the deciding person must be named")]
    MissingDecider,
    /// The proposer's id, as recorded, breaks the identity rule, so four eyes cannot be
    /// checked.
    #[error("the proposer's id is empty or has control or invisible characters")]
    InvalidProposer,
    /// The deciding person's id breaks the identity rule (see [`check_id`]).
    ///
    /// [`check_id`]: crate::approvals::check_id
    #[error("the deciding person's id is refused: {0}")]
    InvalidDecider(IdentityError),
    /// The calling actor's id, or its account's, breaks the identity rule (see
    /// [`check_id`]); nothing was decided or recorded.
    ///
    /// [`check_id`]: crate::approvals::check_id
    #[error("the actor is refused: {0}")]
    InvalidActor(IdentityError),
    /// The proposer tried to approve their own call (the ids name the same person: see
    /// [`same_person`]), and the host does not allow it.
    ///
    /// [`same_person`]: crate::approvals::same_person
    #[error("the proposer cannot approve their own call")]
    SelfApproval,
    /// The call needs approvals from several people (a quorum), and this person, by the
    /// identity rule, has already given one: another must.
    ///
    /// ```
    /// let twice = cairnloop::ApprovalError::ApprovedAlready { of: 2 };
    /// assert_eq!(twice.to_string(), "you have already approved this call, which needs 2 different approvers");
    /// ```
    #[error("you have already approved this call, which needs {of} different approvers")]
    ApprovedAlready {
        /// How many approvers the call needs.
        of: u8,
    },
    /// Approved with changes that change nothing: the same call (approve it instead).
    #[error("the changed arguments are the call's own: approve it as it is instead")]
    EditUnchanged,
    /// The changed arguments do not pass the gates the call passed (a field the tool does
    /// not take, a value its validation refuses, a scope the proposer lacks): nothing
    /// changed, the call still waits.
    #[error("the changed call is refused: {0}")]
    EditRefused(Blocked),
    /// The changed call is of a tier the approver may not decide (a change raised it):
    /// nothing changed.
    #[error("the changed call is {0}, which you may not approve")]
    EditOutsideRights(crate::declare::RiskTier),
    /// The lane expired; it is now `expired`.
    #[error("the approval expired")]
    Expired,
    /// Another execution holds the lane's claim: the call is running there (or its
    /// process died, and the lease says until when that is not known). Nothing ran here.
    ///
    /// ```
    /// use cairnloop::ApprovalError;
    /// use cairnloop::gate::Timestamp;
    /// let busy = ApprovalError::RunningElsewhere {
    ///     holder: "gateway-2".into(),
    ///     until: Timestamp::from_unix_millis(1_700_000_030_000),
    /// };
    /// assert_eq!(busy.to_string(), "another execution is running it: claimed by gateway-2, its lease until 1700000030000 ms");
    /// ```
    #[error("another execution is running it: claimed by {holder}, its lease until {} ms", until.unix_millis())]
    RunningElsewhere {
        /// Who holds the claim (a process's holder name).
        holder: String,
        /// When its lease runs out.
        until: Timestamp,
    },
    /// The approved call already ran (here or in another process): the lane is in this
    /// state. Nothing ran again.
    ///
    /// ```
    /// use cairnloop::ApprovalError;
    /// use cairnloop::gate::LaneState;
    /// let ran = ApprovalError::AlreadyRun(LaneState::Executed);
    /// assert_eq!(ran.to_string(), "it has already run: the lane is executed");
    /// ```
    #[error("it has already run: the lane is {0}")]
    AlreadyRun(LaneState),
    /// `now` is earlier than the lane's last move: the clock went backwards.
    #[error("the clock went backwards")]
    ClockWentBackwards,
    /// The clock gave no time, so nothing time-bound can be decided.
    #[error("the clock is unavailable")]
    ClockUnavailable,
    /// The call's input could not be encoded for the record.
    #[error("the input cannot be recorded: {0}")]
    Encoding(String),
    /// Time arithmetic would overflow.
    #[error("time arithmetic would overflow")]
    TimeOverflow,
    /// The call to execute is not the approved one.
    #[error("the call differs from the approved one in its {0}")]
    Mismatch(BoundField),
    /// The call is no longer allowed; the lane is now `invalidated`.
    #[error("invalidated: {0}")]
    Invalidated(Invalidation),
    /// The tool ran and failed every attempt; the lane is now `execution_failed`.
    #[error("the tool failed after {attempts} attempt(s): {error}")]
    ExecutionFailed {
        /// How many runs.
        attempts: u32,
        /// The last run's error.
        error: RunError,
    },
    /// Whether the run did its work cannot be known (the server it was forwarded to went
    /// away or stopped answering mid-call): the lane is now `outcome_unknown`, and it is
    /// never run again on its own; a person resolves it.
    #[error("the run's outcome is unknown: {0}")]
    OutcomeUnknown(RunError),
    /// The tool ran (this holds what it returned), but its outcome could not be recorded:
    /// the lane stays claimed until its lease runs out and a sweep marks its outcome
    /// unknown, for a person to resolve. It is never run again on its own.
    #[error("the tool ran, but its outcome could not be recorded: {store}")]
    OutcomeNotRecorded {
        /// What the run returned.
        ran: Result<serde_json::Value, RunError>,
        /// Why the record failed.
        store: alloc::boxed::Box<ApprovalError>,
    },
    /// The store refused the move (a concurrent move won, or the store failed).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ApprovalError {
    /// The error for an approval rule of the core that a decision broke.
    pub(crate) const fn from_rule(rule: crate::gate::RuleBroken) -> Self {
        match rule {
            crate::gate::RuleBroken::ClockWentBackwards => Self::ClockWentBackwards,
            crate::gate::RuleBroken::SelfApproval => Self::SelfApproval,
        }
    }
}

/// Why re-validation at execution invalidated an approved call.
///
/// ```
/// use cairnloop::approvals::{BoundField, Invalidation};
///
/// let changed = Invalidation::Changed { field: BoundField::RiskTier, was: "low_write".into(), now: "high_write".into() };
/// assert_eq!(changed.to_string(), "the risk tier changed since the approval: was low_write, now high_write");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Invalidation {
    /// A gate blocks the call now (a scope revoked, a policy denying, the tool always
    /// blocked or gone).
    #[error("{0}")]
    Blocked(Blocked),
    /// A part of what the approval binds differs now.
    #[error("the {field} changed since the approval: was {was}, now {now}")]
    Changed {
        /// What changed.
        field: BoundField,
        /// Its value when the call was proposed.
        was: String,
        /// Its value now.
        now: String,
    },
}

/// Why an [`ApprovalStore`](crate::approvals::ApprovalStore) refused an operation.
///
/// ```
/// assert_eq!(cairnloop::approvals::StoreError::Conflict.to_string(), "the lane changed concurrently");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The compare-and-set found another version: someone else moved the lane first.
    #[error("the lane changed concurrently")]
    Conflict,
    /// The lane to move is not in the store.
    #[error("the lane is not in the store")]
    Missing,
    /// The store holds as many lanes as it may; nothing was added (and nothing evicted).
    #[error("the store is full: it holds at most {capacity} lanes")]
    Full {
        /// How many lanes the store holds at most.
        capacity: usize,
    },
    /// The store was opened read-only, or its file cannot be written: nothing changed.
    #[error("the store is read-only")]
    ReadOnly,
    /// The file is not a cairnloop store (another application's database); it was not
    /// touched.
    #[error("the file is not a cairnloop store")]
    Foreign,
    /// The file was written by a newer version of the library; it was not touched.
    #[error("the store's schema is version {found}, newer than the {supported} this library knows")]
    NewerSchema {
        /// The file's schema version.
        found: i32,
        /// The newest schema this library reads.
        supported: i32,
    },
    /// The file, or a record in it, is damaged; nothing was rewritten.
    #[error("the store is corrupt: {0}")]
    Corrupt(String),
    /// The store's backend failed; nothing changed.
    #[error("store backend: {0}")]
    Backend(String),
    /// The connection broke after a write was sent and before the store confirmed it: the
    /// move may or may not have happened. Read the lane to learn; never retry blindly.
    #[error("the store's connection broke before it confirmed the write: {0}")]
    OutcomeUnknown(String),
    /// The store does not keep this kind of record (a store written before it existed);
    /// nothing changed.
    #[error("the store does not keep {0}")]
    Unsupported(&'static str),
}
