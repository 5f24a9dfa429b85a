//! The text form of what a durable store keeps: lanes and audit records as JSON.

use std::format;
use std::string::{String, ToString};

use crate::approvals::StoreError;

/// A lane or a record as the text a store writes.
pub(crate) fn encode<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| StoreError::Backend(error.to_string()))
}

/// A stored row that does not decode is corruption: reported, never rewritten.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text)
        .map_err(|error| StoreError::Corrupt(format!("a stored record does not decode: {error}")))
}

/// A task as a row keeps it: its id, its lane's key and its owner as text, when it was
/// opened in milliseconds, and the questions it has issued. A row that does not read back
/// as a task is corruption.
pub(crate) fn task_from_row(
    id: &str,
    lane: &str,
    owner: String,
    opened_at: i64,
    issued: i64,
) -> Result<crate::approvals::TaskRecord, StoreError> {
    use crate::approvals::{TaskId, TaskRecord};
    let corrupt = |what: &str| StoreError::Corrupt(format!("a stored task has {what}"));
    let id = TaskId::parse(id).ok_or_else(|| corrupt("a malformed id"))?;
    let lane: crate::declare::IdempotencyKey =
        lane.parse().map_err(|_| corrupt("a malformed lane key"))?;
    let opened_at = u64::try_from(opened_at).map_err(|_| corrupt("a negative time"))?;
    let issued = u32::try_from(issued).map_err(|_| corrupt("a question count out of range"))?;
    Ok(TaskRecord::new(
        id,
        lane,
        owner,
        crate::gate::Timestamp::from_unix_millis(opened_at),
    )
    .with_inputs_issued(issued))
}

/// A lane's key and version as a row keeps them; a row that does not read back is
/// corruption.
pub(crate) fn stored_version(
    key: &str,
    version: i64,
) -> Result<(crate::declare::IdempotencyKey, u64), StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("a stored lane has {what}"));
    let key = key.parse().map_err(|_| corrupt("a malformed key"))?;
    let version = u64::try_from(version).map_err(|_| corrupt("a negative version"))?;
    Ok((key, version))
}

/// How a settled notice is kept: its stage, and when it is due again (never, for one
/// delivered or given up).
pub(crate) fn notice_stage(outcome: crate::approvals::NoticeOutcome) -> (&'static str, i64) {
    use crate::approvals::NoticeOutcome;
    match outcome {
        NoticeOutcome::Retry(at) => ("retry", i64::try_from(at.unix_millis()).unwrap_or(i64::MAX)),
        NoticeOutcome::Delivered => ("delivered", i64::MAX),
        NoticeOutcome::GaveUp => ("given_up", i64::MAX),
    }
}
