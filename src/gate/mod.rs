//! Deciding a call: the one gate sequence every entrance uses, the approval state
//! machine, and the rules a person's decision must pass. `no_std`, no `alloc`; it builds only on [`declare`](crate::declare).

mod access;
mod approval;
mod decision;
mod lane;
mod mode_policy;
mod time;
mod visibility;

pub use access::{MissingScopes, check_scopes};
pub use approval::{
    ApprovalRules, InvalidAsciiId, MAX_ASCII_ID, RuleBroken, check_ascii_id, is_due, same_ascii_id,
};
#[cfg(all(feature = "serde", feature = "std"))]
pub(crate) use decision::Raising;
pub use decision::{Blocked, Decision, Pending, Verdict, decide, execute, verdict_for};
#[cfg(feature = "serde")]
pub(crate) use decision::{InputGate, Subject, run_gates};
pub use lane::{LaneAction, LaneState, TransitionError};
pub use mode_policy::{ModeHook, ModePolicy, ModeResolution, ModeSource};
pub use time::{Timestamp, Ttl, Utc};
pub use visibility::{verdicts, visible};
