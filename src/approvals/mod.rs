//! Approvals (features `serde` and `std`): the [`Governor`], the approval
//! service over a store, the store contract and the memory store, clocks and audit sinks;
//! who calls ([`Caller`]) and what a model is told of its call ([`ModelReply`]), for every
//! surface an agent reaches the governor through.
//! It builds on [`json`](crate::json), [`gate`](crate::gate) and
//! [`declare`](crate::declare).

mod audit;
mod block_on;
mod caller;
mod chain;
mod clock;
mod config;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod governor;
mod identity;
mod lane;
mod notify;
mod outbox;
mod query;
mod recent;
mod reply;
mod service;
mod store;
mod task;
mod unwind;
mod waiters;
mod watch;

#[cfg(feature = "tracing")]
pub use audit::TracingSink;
pub use audit::{AuditRecord, AuditSink, DiscardAudit, RefusalEvent};
pub(crate) use block_on::block_on;
pub use caller::Caller;
pub use chain::{
    CHAIN_GENESIS, ChainBreak, ChainHash, ChainReport, ChainVerifier, ChainedRecord,
    chain_from_hex, chain_hex, chain_link,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::ApprovalConfig;
pub use error::{ApprovalError, BoundField, Invalidation, StoreError};
pub use governor::{Governor, Outcome, Reconciliation, TypedOutcome};
#[cfg(feature = "rmcp")]
pub(crate) use governor::{HandingOn, MAX_CHANGES};
pub use identity::{
    IdentityError, MAX_ID_BYTES, check_id, comparison_form, is_invisible, is_mixed_script,
    same_person,
};
pub use lane::{Approval, ApprovalLane, Claim, TransitionEvent};
pub use notify::{Notice, NoticeEvent, NoticeReport, Notifier};
pub(crate) use notify::{Recorder, announce};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use outbox::STORED_WITHIN_MILLIS;
pub use outbox::{DueNotice, NoticeClaim, NoticeOutcome, OutboxPass, OutboxPolicy};
pub(crate) use query::newest_first;
pub use query::{LaneMark, LaneQuery};
pub use reply::ModelReply;
#[cfg(feature = "rmcp")]
pub(crate) use reply::{executed_body, superseded_note};
pub(crate) use service::Approvals;
pub use store::{ApprovalStore, MemoryStore};
pub use task::{TASK_ID_LEN, TaskId, TaskRecord};
pub(crate) use waiters::Waiters;
pub use watch::{Changed, StoreWatch};
