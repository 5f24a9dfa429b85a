//! Durable stores: approval lanes and the audit trail where they survive restarts, in a
//! SQLite file (feature `sqlite`) or a PostgreSQL database shared by many processes
//! (feature `postgres`). It builds on [`approvals`](crate::approvals), whose store
//! contract each keeps.

#[cfg(feature = "sqlite")]
mod checkpointer;
#[cfg(feature = "postgres")]
mod kept_lanes;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod lane_filter;
#[cfg(feature = "postgres")]
mod pg_chain;
#[cfg(feature = "postgres")]
mod pg_relay;
#[cfg(feature = "postgres")]
mod pg_tls;
#[cfg(feature = "postgres")]
mod postgres;
mod record;
#[cfg(feature = "postgres")]
mod runtime;
#[cfg(feature = "postgres")]
mod server_time;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod trail;
#[cfg(feature = "sqlite")]
mod worker;

#[cfg(feature = "postgres")]
pub use postgres::{POSTGRES_SCHEMA_VERSION, PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SCHEMA_VERSION, SqliteOptions, SqliteStore};
#[cfg(feature = "sqlite")]
pub(crate) use trail::verify_pages;
