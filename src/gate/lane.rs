use core::fmt;

/// Where an approval lane stands. A lane starts `Pending`; the terminal states are
/// `Rejected`, `Deferred`, `Expired`, `Executed`, `ExecutionFailed`, `Invalidated` and
/// `Withdrawn`.
///
/// ```text
/// pending ──approve──▶ approved ──start──▶ execution_pending ──succeed──▶ executed
///    │                    │                   │ ├──────fail──────▶ execution_failed
///    ├─reject─▶ rejected  ├─expire─▶ expired  │ ├──invalidate────▶ invalidated
///    ├─withdraw─▶ withdrawn                   │ │
///    ├─defer──▶ deferred  └─invalidate─▶      │ ├──interrupt─────▶ interrupted ─┐
///    └─expire─▶ expired       invalidated     │ └──lose_lease────▶ outcome_unknown
///                                             │   a person: mark_executed, mark_failed
///    closed ──reopen──▶ pending  ◀── close ───┘   or close either of the two
/// ```
///
/// ```
/// use cairnloop::gate::{LaneAction, LaneState};
///
/// assert_eq!(LaneState::Pending.apply(LaneAction::Approve), Ok(LaneState::Approved));
/// assert!(LaneState::Rejected.apply(LaneAction::Approve).is_err());
/// assert!(LaneState::Executed.is_terminal());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum LaneState {
    /// Waiting for a human's decision.
    Pending,
    /// Approved, not yet run.
    Approved,
    /// Refused, with a reason. Terminal.
    Rejected,
    /// Put off, with a reason. Terminal: a later attempt is a new call.
    Deferred,
    /// Not decided or not run in time. Terminal.
    Expired,
    /// Claimed for execution; the tool is running.
    ExecutionPending,
    /// Ran successfully. Terminal.
    Executed,
    /// Ran and failed on every attempt. Terminal.
    ExecutionFailed,
    /// No longer allowed when it was to run (a scope revoked, the tool tightened). Terminal.
    Invalidated,
    /// The run was entered and its future dropped before it finished (a timeout, a
    /// cancelled request): the tool may or may not have done its work. Only a person
    /// resolves it. Wire name `interrupted`.
    Interrupted,
    /// The claim's lease ran out before the run was recorded (the process died): the tool
    /// may or may not have done its work. Only a person resolves it, and it is never run
    /// again on its own. Wire name `outcome_unknown`.
    OutcomeUnknown,
    /// A person closed an interrupted or unknown outcome without saying it ran or failed;
    /// the same call may be proposed afresh. Wire name `closed`.
    Closed,
    /// Withdrawn by its caller before anyone decided it (a client cancelled its task): it
    /// can no longer be approved. Terminal.
    Withdrawn,
    /// A person approved the call with changed arguments: the changed call is a lane of
    /// its own, and this one never runs. Terminal.
    Superseded,
}

/// A move of an approval lane.
///
/// ```
/// assert_eq!(cairnloop::gate::LaneAction::Reject.as_str(), "reject");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum LaneAction {
    /// A human approves: the last approval a call needs.
    Approve,
    /// A human approves a call that needs more approvals than it has (a quorum): the
    /// approval is recorded and the lane stays pending.
    Endorse,
    /// A human rejects (reason required).
    Reject,
    /// A human defers (reason required).
    Defer,
    /// The time to live ran out.
    Expire,
    /// The approved call is claimed for execution.
    StartExecution,
    /// The run succeeded.
    Succeed,
    /// The run failed on its last attempt.
    Fail,
    /// Re-validation at execution failed.
    Invalidate,
    /// The run's future was dropped before it finished.
    Interrupt,
    /// The claim's lease ran out with no outcome recorded.
    LoseLease,
    /// A person records that an interrupted or unknown run did its work.
    MarkExecuted,
    /// A person records that an interrupted or unknown run did not do its work.
    MarkFailed,
    /// A person closes an interrupted or unknown run without an outcome.
    Close,
    /// The same call is proposed again after its lane was closed.
    Reopen,
    /// Its caller withdraws a pending call (reason required).
    Withdraw,
    /// A person approves the call with changed arguments, as another lane.
    Supersede,
}

impl LaneState {
    /// Every state.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::LaneState::ALL.len(), 14);
    /// ```
    pub const ALL: [Self; 14] = [
        Self::Pending,
        Self::Approved,
        Self::Rejected,
        Self::Deferred,
        Self::Expired,
        Self::ExecutionPending,
        Self::Executed,
        Self::ExecutionFailed,
        Self::Invalidated,
        Self::Interrupted,
        Self::OutcomeUnknown,
        Self::Closed,
        Self::Withdrawn,
        Self::Superseded,
    ];

    /// The state after `action`, or the refused move. This table is the whole lifecycle;
    /// every move it does not list is an error.
    ///
    /// ```
    /// use cairnloop::gate::{LaneAction, LaneState};
    ///
    /// const NEXT: Result<LaneState, cairnloop::gate::TransitionError> =
    ///     LaneState::Approved.apply(LaneAction::StartExecution);
    /// assert_eq!(NEXT, Ok(LaneState::ExecutionPending));
    /// assert!(LaneState::Pending.apply(LaneAction::Succeed).is_err());
    /// ```
    pub const fn apply(self, action: LaneAction) -> Result<Self, TransitionError> {
        use LaneAction as A;
        use LaneState as S;
        let next = match (self, action) {
            (S::Pending, A::Approve) => S::Approved,
            (S::Pending, A::Endorse) => S::Pending,
            (S::Pending, A::Reject) => S::Rejected,
            (S::Pending, A::Defer) => S::Deferred,
            (S::Pending, A::Withdraw) => S::Withdrawn,
            (S::Pending, A::Supersede) => S::Superseded,
            (S::Pending | S::Approved, A::Expire) => S::Expired,
            (S::Approved, A::StartExecution) => S::ExecutionPending,
            (S::Approved | S::ExecutionPending, A::Invalidate) => S::Invalidated,
            (S::ExecutionPending, A::Succeed) => S::Executed,
            (S::ExecutionPending, A::Fail) => S::ExecutionFailed,
            (S::ExecutionPending, A::Interrupt) => S::Interrupted,
            (S::ExecutionPending, A::LoseLease) => S::OutcomeUnknown,
            (S::Interrupted | S::OutcomeUnknown, A::MarkExecuted) => S::Executed,
            (S::Interrupted | S::OutcomeUnknown, A::MarkFailed) => S::ExecutionFailed,
            (S::Interrupted | S::OutcomeUnknown, A::Close) => S::Closed,
            (S::Closed, A::Reopen) => S::Pending,
            _ => return Err(TransitionError { from: self, action }),
        };
        Ok(next)
    }

    /// Whether a lane in this state waits for a person: pending or deferred.
    ///
    /// ```
    /// use cairnloop::gate::LaneState;
    /// assert!(LaneState::Pending.waits_for_a_person());
    /// assert!(!LaneState::Expired.waits_for_a_person());
    /// ```
    #[must_use]
    pub const fn waits_for_a_person(self) -> bool {
        matches!(self, Self::Pending | Self::Deferred)
    }

    /// Whether no move leaves this state.
    ///
    /// ```
    /// assert!(!cairnloop::gate::LaneState::Approved.is_terminal());
    /// ```
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        !matches!(
            self,
            Self::Pending
                | Self::Approved
                | Self::ExecutionPending
                | Self::Interrupted
                | Self::OutcomeUnknown
                | Self::Closed
        )
    }

    /// The state as an operator would say it (`running` for `execution_pending`).
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::LaneState::OutcomeUnknown.words(), "of unknown outcome");
    /// ```
    #[must_use]
    pub const fn words(self) -> &'static str {
        match self {
            Self::ExecutionPending => "running",
            Self::ExecutionFailed => "failed",
            Self::OutcomeUnknown => "of unknown outcome",
            other => other.as_str(),
        }
    }

    /// The wire name, such as `execution_pending`.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::LaneState::ExecutionFailed.as_str(), "execution_failed");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Deferred => "deferred",
            Self::Expired => "expired",
            Self::ExecutionPending => "execution_pending",
            Self::Executed => "executed",
            Self::ExecutionFailed => "execution_failed",
            Self::Invalidated => "invalidated",
            Self::Interrupted => "interrupted",
            Self::OutcomeUnknown => "outcome_unknown",
            Self::Closed => "closed",
            Self::Withdrawn => "withdrawn",
            Self::Superseded => "superseded",
        }
    }
}

impl LaneAction {
    /// Every action.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::LaneAction::ALL.len(), 17);
    /// ```
    pub const ALL: [Self; 17] = [
        Self::Approve,
        Self::Endorse,
        Self::Reject,
        Self::Defer,
        Self::Expire,
        Self::StartExecution,
        Self::Succeed,
        Self::Fail,
        Self::Invalidate,
        Self::Interrupt,
        Self::LoseLease,
        Self::MarkExecuted,
        Self::MarkFailed,
        Self::Close,
        Self::Reopen,
        Self::Withdraw,
        Self::Supersede,
    ];

    /// What the move does, as an operator would say it (`run` for `start_execution`).
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::LaneAction::MarkExecuted.verb(), "mark as executed");
    /// ```
    #[must_use]
    pub const fn verb(self) -> &'static str {
        match self {
            Self::Approve | Self::Endorse => "approve",
            Self::Reject => "reject",
            Self::Defer => "defer",
            Self::Expire => "expire",
            Self::StartExecution => "run",
            Self::Succeed => "record the success of",
            Self::Fail => "record the failure of",
            Self::Invalidate => "invalidate",
            Self::Interrupt => "interrupt",
            Self::LoseLease => "give up the claim on",
            Self::MarkExecuted => "mark as executed",
            Self::MarkFailed => "mark as failed",
            Self::Close => "close",
            Self::Reopen => "propose again",
            Self::Withdraw => "withdraw",
            Self::Supersede => "approve with changes",
        }
    }

    /// The wire name, such as `start_execution`.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::LaneAction::StartExecution.as_str(), "start_execution");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Endorse => "endorse",
            Self::Reject => "reject",
            Self::Defer => "defer",
            Self::Expire => "expire",
            Self::StartExecution => "start_execution",
            Self::Succeed => "succeed",
            Self::Fail => "fail",
            Self::Invalidate => "invalidate",
            Self::Interrupt => "interrupt",
            Self::LoseLease => "lose_lease",
            Self::MarkExecuted => "mark_executed",
            Self::MarkFailed => "mark_failed",
            Self::Close => "close",
            Self::Reopen => "reopen",
            Self::Withdraw => "withdraw",
            Self::Supersede => "supersede",
        }
    }
}

impl fmt::Display for LaneState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for LaneAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A move the lifecycle does not allow.
///
/// ```
/// use cairnloop::gate::{LaneAction, LaneState};
///
/// let err = LaneState::Executed.apply(LaneAction::StartExecution).unwrap_err();
/// assert_eq!(err.to_string(), "cannot run a call that is executed");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("cannot {} a call that is {}", action.verb(), from.words())]
pub struct TransitionError {
    from: LaneState,
    action: LaneAction,
}

impl TransitionError {
    /// The state the move was tried from.
    ///
    /// ```
    /// # use cairnloop::gate::{LaneAction, LaneState};
    /// let err = LaneState::Rejected.apply(LaneAction::Approve).unwrap_err();
    /// assert_eq!(err.from(), LaneState::Rejected);
    /// ```
    #[must_use]
    pub const fn from(&self) -> LaneState {
        self.from
    }

    /// The move that was tried.
    ///
    /// ```
    /// # use cairnloop::gate::{LaneAction, LaneState};
    /// let err = LaneState::Rejected.apply(LaneAction::Approve).unwrap_err();
    /// assert_eq!(err.action(), LaneAction::Approve);
    /// ```
    #[must_use]
    pub const fn action(&self) -> LaneAction {
        self.action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn display_is_the_wire_name() {
        for state in LaneState::ALL {
            assert_eq!(state.to_string(), state.as_str());
        }
        for action in LaneAction::ALL {
            assert_eq!(action.to_string(), action.as_str());
        }
        assert_eq!(LaneState::ExecutionPending.to_string(), "execution_pending");
    }
}
