//! rig (feature `rig`): a [`Governor`](crate::Governor)'s tools as tools of a
//! [rig](https://docs.rs/rig-agent) agent, so that every call the agent's model makes goes
//! through the governor: it runs, waits for a person, or is blocked, and the model reads
//! which, as a tool result it can act on. The agent's turn goes on in every case: a tool
//! the caller may not call is not offered, and [`RigTools::hook`] answers a model that
//! names one anyway.
//!
//! rig 0.44 needs Rust 1.95; the rest of the crate needs less.

mod error;
mod handler;
mod hook;
mod tools;

pub use error::RigError;
pub use hook::GovernedHook;
pub use tools::RigTools;
