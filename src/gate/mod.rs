//! Deciding a call: the one gate sequence every entrance uses, and the approval state
//! machine. `no_std`, no `alloc`; it builds only on [`declare`](crate::declare).

mod access;
mod decision;
mod lane;
mod mode_policy;
mod time;
mod visibility;

pub use access::{MissingScopes, check_scopes};
pub use decision::{Blocked, Decision, Pending, Verdict, decide, execute, verdict_for};
#[cfg(feature = "serde")]
pub(crate) use decision::{InputGate, Subject, run_gates};
pub use lane::{LaneAction, LaneState, TransitionError};
pub use mode_policy::{ModeHook, ModePolicy, ModeResolution, ModeSource};
pub use time::{Timestamp, Ttl, Utc};
pub use visibility::{verdicts, visible};
