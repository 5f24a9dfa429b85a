#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

// The layers, each built only on the ones listed before it (`scripts/layers.sh` checks
// it); the README's "Layers and features" draws them.
pub mod declare;
pub mod gate;
#[cfg(feature = "serde")]
pub mod json;
#[cfg(all(feature = "serde", feature = "std"))]
pub mod approvals;
#[cfg(feature = "mcp")]
pub mod mcp;

pub use declare::{
    Actor, ApprovalMode, FieldError, IdempotencyKey, InputErrors, Invocation, PolicyDenial,
    Registry, RiskTier, Scope, SpecError, Tool, ToolEntry, ToolSpec, derive_approval_mode,
};
pub use gate::{Blocked, Decision, ModePolicy, decide, execute};
#[cfg(feature = "serde")]
pub use json::{Governance, ToolCall};
#[cfg(all(feature = "serde", feature = "std"))]
pub use approvals::{ApprovalError, ApprovalLane, Governor, Outcome};

/// The guide's code blocks, compiled and run as doctests.
#[cfg(all(doctest, feature = "rmcp"))]
#[doc = include_str!("../docs/guide.md")]
pub struct GuideDoctests;
