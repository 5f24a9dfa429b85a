#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

mod access;
mod actor;
#[cfg(feature = "serde")]
mod approval;
mod approval_mode;
#[cfg(feature = "serde")]
mod approvals;
#[cfg(feature = "serde")]
mod audit;
#[cfg(feature = "serde")]
mod call;
#[cfg(feature = "serde")]
mod canonical;
mod decision;
mod idempotency;
mod input_error;
mod lane;
mod limits;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "rmcp")]
mod mcp_server;
mod messages;
mod mode_policy;
mod parse_error;
mod policy;
#[cfg(feature = "serde")]
mod preview;
#[cfg(feature = "serde")]
mod proposal;
mod registry;
mod risk_tier;
#[cfg(feature = "schemars")]
mod schema;
mod scope;
mod spec;
mod spec_error;
#[cfg(feature = "serde")]
mod store;
#[cfg(feature = "serde")]
mod strict_json;
mod text;
mod time;
mod tool;

pub use access::{AccessDenied, MissingScopes, check_scopes};
pub use actor::Actor;
pub use approval_mode::{ApprovalMode, derive_approval_mode};
pub use decision::{Blocked, Decision, Pending, decide, execute};
pub use idempotency::IdempotencyKey;
pub use input_error::{FieldError, InputErrors};
pub use lane::{LaneAction, LaneState, TransitionError};
pub use limits::InputLimits;
pub use mode_policy::{ModeHook, ModePolicy, ModeResolution, ModeSource};
pub use parse_error::ParseError;
pub use policy::PolicyDenial;
pub use registry::{MAX_TOOLS, Registry, ToolEntry};
pub use risk_tier::RiskTier;
pub use scope::Scope;
pub use spec::ToolSpec;
pub use spec_error::SpecError;
pub use time::{Timestamp, Ttl};
pub use tool::{Invocation, Tool};

#[cfg(feature = "serde")]
pub use approval::{
    ApprovalError, ApprovalLane, BoundField, Invalidation, StoreError, TransitionEvent,
};
#[cfg(feature = "serde")]
pub use approvals::{ApprovalConfig, Approvals};
#[cfg(feature = "serde")]
pub use audit::AuditEvent;
#[cfg(feature = "serde")]
pub use call::{CallDecision, CallOutcome, Governance, ReadyCall, RunError, RunFuture, ToolCall};
#[cfg(feature = "serde")]
pub use canonical::canonical_json;
#[cfg(feature = "mcp")]
pub use mcp::{META_APPROVAL_MODE, META_RISK_TIER, ProjectionError};
#[cfg(feature = "rmcp")]
pub use mcp_server::McpServer;
#[cfg(feature = "serde")]
pub use preview::{Preview, PreviewSource};
#[cfg(feature = "serde")]
pub use proposal::{PolicySnapshot, Proposal};
#[cfg(feature = "serde")]
pub use store::ApprovalStore;
#[cfg(all(feature = "serde", feature = "std"))]
pub use store::MemoryStore;

/// The guide's code blocks, compiled and run as doctests.
#[cfg(all(doctest, feature = "rmcp"))]
#[doc = include_str!("../docs/guide.md")]
pub struct GuideDoctests;
