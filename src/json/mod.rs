//! Calls by name with JSON (feature `serde`): strict decoding with every field error,
//! RFC 8785 canonical JSON, idempotency keys, previews, proposals and decision records.
//! It builds on [`declare`](crate::declare) and [`gate`](crate::gate).

// Without `std` there is no governor to use the pipeline's by-name helpers.
#![cfg_attr(not(feature = "std"), allow(dead_code, unused_imports))]

mod audit;
mod call;
mod canonical;
mod canonical_writer;
mod entry;
mod key;
mod map_key;
mod preview;
mod proposal;
#[cfg(feature = "schemars")]
pub(crate) mod schema;
mod scope_names;
mod stand_in;
pub(crate) mod strict;
mod watch;

pub use audit::AuditEvent;
pub(crate) use call::{
    Admitted, decode_stored, gate_call, keyed_call, proposal_key, propose_call, run_ready,
};
pub use call::{Governance, ToolCall};
pub use canonical::canonical_json;
pub(crate) use canonical_writer::canonical_text;
pub(crate) use entry::derive_key;
#[cfg(feature = "console")]
pub(crate) use preview::is_secret_name;
pub use preview::{Preview, PreviewSource};
pub(crate) use proposal::Draft;
pub use proposal::{PolicySnapshot, Proposal};
pub use scope_names::ScopeNames;
