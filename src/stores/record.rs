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
