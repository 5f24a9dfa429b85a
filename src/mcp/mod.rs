//! MCP (feature `mcp`): tools as `tools/list` entries; with feature `rmcp`, a server
//! handler over a [`Governor`](crate::Governor) and the stdio transport it is served on.
//! The top layer: it builds on every other.

#[cfg(feature = "rmcp")]
mod approver;
#[cfg(feature = "rmcp")]
mod cancel;
#[cfg(feature = "rmcp")]
mod fast;
#[cfg(feature = "rmcp")]
mod frame;
#[cfg(feature = "rmcp")]
mod handed_on_text;
#[cfg(feature = "rmcp")]
mod line_sink;
mod listed;
mod projection;
#[cfg(feature = "rmcp")]
mod result;
#[cfg(feature = "rmcp")]
mod server;
#[cfg(feature = "rmcp")]
mod tasks;
#[cfg(feature = "rmcp")]
mod transport;
#[cfg(feature = "rmcp")]
mod waiting;

/// Who makes a call (it lives with the governor, for any transport).
#[cfg(feature = "rmcp")]
pub use crate::approvals::Caller;
#[cfg(feature = "rmcp")]
pub use approver::ClientApprover;
#[cfg(feature = "rmcp")]
pub use cancel::request_cancelled;
#[cfg(feature = "rmcp")]
pub use frame::FrameLimits;
#[cfg(feature = "remote")]
pub(crate) use frame::{Frame, RawArguments, judge};
#[cfg(feature = "rmcp")]
pub use line_sink::LineSink;
pub use listed::ListedTool;
pub use projection::{META_APPROVAL_MODE, META_RISK_TIER, ProjectionError};
#[cfg(feature = "rmcp")]
pub use server::McpServer;
#[cfg(feature = "rmcp")]
pub use transport::LineTransport;
#[cfg(feature = "rmcp")]
pub use waiting::WaitingCalls;
