//! MCP (feature `mcp`): tools as `tools/list` entries; with feature `rmcp`, a server
//! handler over a [`Governor`](crate::Governor). The top layer: it builds on every other.

mod projection;
#[cfg(feature = "rmcp")]
mod server;

pub use projection::{META_APPROVAL_MODE, META_RISK_TIER, ProjectionError};
#[cfg(feature = "rmcp")]
pub use server::McpServer;
