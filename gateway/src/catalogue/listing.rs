//! An upstream's `tools/list` answer, read as untrusted data: every field bounded,
//! anything malformed set aside with the reason, never a panic.

use serde_json::Value;

/// The most tools one upstream may list; the rest are hidden.
pub const MAX_UPSTREAM_TOOLS: usize = 1024;

/// The longest title or description taken from an upstream, in bytes.
pub const MAX_UPSTREAM_TEXT: usize = 16 * 1024;

/// One tool as an upstream lists it. Its annotations are hints (the MCP specification
/// calls them untrusted): they can only make the gateway stricter.
///
/// ```
/// use cairnloop_gateway::catalogue::read_listing;
///
/// let listing = serde_json::json!({"tools": [{
///     "name": "read_text_file",
///     "description": "Reads a file.",
///     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
///     "annotations": {"readOnlyHint": true}
/// }]});
/// let (tools, set_aside) = read_listing(&listing)?;
/// assert_eq!(tools[0].name, "read_text_file");
/// assert_eq!(tools[0].read_only_hint, Some(true));
/// assert!(set_aside.is_empty());
/// # Ok::<(), cairnloop_gateway::catalogue::ListingError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct UpstreamTool {
    /// Its name at the upstream.
    pub name: String,
    /// Its title, if it gives one.
    pub title: Option<String>,
    /// Its description, if it gives one.
    pub description: Option<String>,
    /// The JSON Schema of its input.
    pub input_schema: Value,
    /// `annotations.readOnlyHint`, if given.
    pub read_only_hint: Option<bool>,
    /// `annotations.destructiveHint`, if given.
    pub destructive_hint: Option<bool>,
    /// `annotations.idempotentHint`, if given.
    pub idempotent_hint: Option<bool>,
}

/// Why a `tools/list` answer cannot be read at all.
///
/// ```
/// use cairnloop_gateway::catalogue::{ListingError, read_listing};
///
/// assert_eq!(read_listing(&serde_json::json!({"tools": 7})).err(), Some(ListingError::NoTools));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListingError {
    /// The answer has no `tools` array.
    #[error("the upstream's tools/list answer has no `tools` array")]
    NoTools,
}

/// A listed tool the gateway could not read, and why.
///
/// ```
/// use cairnloop_gateway::catalogue::read_listing;
///
/// let (_, set_aside) = read_listing(&serde_json::json!({"tools": [{"name": 7}]}))?;
/// assert_eq!(set_aside[0].reason, "a tool without a name");
/// # Ok::<(), cairnloop_gateway::catalogue::ListingError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetAside {
    /// Its name, when it had one that could be read.
    pub name: Option<String>,
    /// Why it was set aside.
    pub reason: String,
}

/// The tools of a `tools/list` answer, and those set aside.
///
/// # Errors
///
/// [`ListingError::NoTools`]: the answer has no `tools` array.
///
/// ```
/// use cairnloop_gateway::catalogue::read_listing;
///
/// let listing = serde_json::json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}, {"name": "b"}]});
/// let (tools, set_aside) = read_listing(&listing)?;
/// assert_eq!(tools.len(), 1);
/// assert_eq!(set_aside[0].reason, "no `inputSchema` object");
/// # Ok::<(), cairnloop_gateway::catalogue::ListingError>(())
/// ```
pub fn read_listing(answer: &Value) -> Result<(Vec<UpstreamTool>, Vec<SetAside>), ListingError> {
    let listed = answer
        .get("tools")
        .and_then(Value::as_array)
        .ok_or(ListingError::NoTools)?;
    let mut tools = Vec::new();
    let mut set_aside = Vec::new();
    for (i, tool) in listed.iter().enumerate() {
        let name = tool.get("name").and_then(Value::as_str).map(str::to_owned);
        let aside = |reason: &str| SetAside {
            name: name.clone(),
            reason: reason.to_owned(),
        };
        if i >= MAX_UPSTREAM_TOOLS {
            set_aside.push(aside("past the most tools one upstream may list"));
            continue;
        }
        let Some(name) = name.clone() else {
            set_aside.push(aside("a tool without a name"));
            continue;
        };
        let text = |key: &str| -> Result<Option<String>, &'static str> {
            match tool.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) if text.len() <= MAX_UPSTREAM_TEXT => {
                    Ok(Some(text.clone()))
                }
                Some(Value::String(_)) => Err("a title or description longer than 16 KiB"),
                Some(_) => Err("a title or description that is not text"),
            }
        };
        let (title, description) = match (text("title"), text("description")) {
            (Ok(title), Ok(description)) => (title, description),
            (Err(reason), _) | (_, Err(reason)) => {
                set_aside.push(aside(reason));
                continue;
            }
        };
        let Some(input_schema) = tool.get("inputSchema").filter(|schema| schema.is_object()) else {
            set_aside.push(aside("no `inputSchema` object"));
            continue;
        };
        let hint = |key: &str| {
            tool.get("annotations")
                .and_then(|annotations| annotations.get(key))
                .and_then(Value::as_bool)
        };
        tools.push(UpstreamTool {
            name,
            title,
            description,
            input_schema: input_schema.clone(),
            read_only_hint: hint("readOnlyHint"),
            destructive_hint: hint("destructiveHint"),
            idempotent_hint: hint("idempotentHint"),
        });
    }
    Ok((tools, set_aside))
}
