//! cairnloop's gateway: tiers, approvals bound to the exact call, four eyes and audit in
//! front of MCP servers cairnloop did not write.
//!
//! - [`config`]: the TOML file (upstreams, and per upstream tool its tier, scopes, mode,
//!   preview and accounts), checked by `cairnloop-gateway check CONFIG`, which prints
//!   every problem of a file at once with its line.
//! - [`catalogue`]: what the gateway offers from an upstream's listing, each tool matched
//!   with its declaration, the upstream's hints only ever tightening, declared to the
//!   crate as a [`cairnloop::declared::DeclaredTool`].
//! - [`upstream`]: an upstream started by a command or reached by URL, started again
//!   with growing waits when it goes away, its listing and calls bounded.
//! - [`serve`]: one governor over every upstream's tools, with its store; the catalogue
//!   kept in line with each upstream's listing. The `cairnloop-gateway` binary serves it
//!   over stdio or Streamable HTTP, with the console if configured.
//! - [`metrics`]: what a serving gateway counts, for Prometheus (`[metrics]`).
//! - [`audit`]: the audit trail's chain checked, in a store or an export, and exported.
//! - [`store`]: where the lanes are, a SQLite file or a PostgreSQL database that replicas
//!   share, its connection string read from the environment and never shown.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod audit;
pub mod catalogue;
mod child;
pub mod config;
mod direct;
pub mod metrics;
mod result_text;
pub mod serve;
pub mod store;
pub mod upstream;
