//! cairnloop's gateway: tiers, approvals bound to the exact call, four eyes and audit in
//! front of MCP servers cairnloop did not write. Built so far: its configuration
//! ([`config`], checked by `cairnloop-gateway check CONFIG`, which prints every problem of
//! a file at once), and what it offers from an upstream's tool listing ([`catalogue`]:
//! each tool matched with its declaration, the upstream's hints only ever tightening,
//! declared to the crate as a [`cairnloop::json::DeclaredTool`]). It does not yet start
//! upstreams or serve.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod catalogue;
pub mod config;
pub mod serve;
pub mod upstream;
