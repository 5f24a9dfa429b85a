//! cairnloop's gateway: tiers, approvals bound to the exact call, four eyes and audit in
//! front of MCP servers cairnloop did not write. This crate reads and checks its
//! configuration ([`config`]); `cairnloop-gateway check CONFIG` prints every problem of a
//! file at once.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod config;
