//! Durable stores (feature `sqlite`): approval lanes and the audit trail in a file that
//! survives restarts. It builds on [`approvals`](crate::approvals), whose store contract
//! it keeps.

mod sqlite;
mod worker;

pub use sqlite::{SCHEMA_VERSION, SqliteOptions, SqliteStore};
