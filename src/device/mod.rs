//! A governed agent on a device with no heap: calls decoded from JSON text without an
//! allocator, a fixed table of approval lanes moved by the core's transitions and
//! approval rules, approvals by an operator at the device, and an audit trail in a ring.
//! `no_std`, no `alloc`; it builds on [`declare`](crate::declare) and
//! [`gate`](crate::gate), and SHA-256 for idempotency keys (feature `device`).
//!
//! A device declares each tool as a host does ([`Tool`](crate::Tool), with its spec
//! checked at compile time) and adds its argument [`Field`]s ([`DeviceTool`]). A call
//! goes through the same gates as on a host: an unknown name and invalid arguments
//! (every field error at once, duplicate keys, unknown fields, integers past 2^53, depth
//! checked before descending) are blocked, then scopes, policy and the approval mode.
//! A call that needs approval waits in a lane bound to its exact arguments (the key a
//! host computes for the same call) until an operator approves it, quoting the code the
//! device shows; the approval is single-use, expires, and never comes from the proposer.
//!
//! `examples/firmware` runs three tools on an emulated Cortex-M4 in CI.

mod audit;
mod call;
mod fields;
mod fixed;
mod governor;
mod key;
mod lanes;
mod reader;
mod reply;
mod tool;

pub use audit::{AuditEntry, AuditEvent, AuditRing, By};
pub use call::{CallText, MAX_CALL_BYTES};
pub use fields::{Args, Field, FieldKind, MAX_FIELDS, MAX_TEXT};
pub use fixed::FixedText;
pub use governor::DeviceGovernor;
pub use lanes::{ARGS_BYTES, ID_BYTES, Lane, LaneTable};
pub use reply::{Refusal, Reply};
pub use tool::{DeviceEntry, DeviceRegistry, DeviceTool, MAX_FIELD_NAME, OUTPUT_BYTES};
