//! What a `tools/call` answers, for each outcome of the governor: every result carries
//! `structuredContent` with a `status`, and a text a model can act on (the governor's
//! [`ModelReply`]).

use alloc::vec;

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::approvals::superseded_note;
use crate::approvals::{ApprovalError, ModelReply, Outcome};

/// The result of an outcome other than an unknown tool (a protocol error, decided by the
/// caller). `note` adds a line to the text (why an approval prompt decided nothing).
pub(crate) fn outcome_result(outcome: Outcome, note: Option<&str>) -> CallToolResult {
    call_result(outcome.into_reply_noting(note))
}

/// A call whose decision could not be recorded: nothing ran.
pub(crate) fn not_recorded(error: &ApprovalError) -> CallToolResult {
    call_result(ModelReply::not_recorded(error))
}

/// The executed result of a tool whose output is an MCP `CallToolResult` (forwarded to
/// an MCP server): its content blocks (text, images, resources) as the server sent them,
/// and the whole result as `output` beside the status. An output that is not a
/// `CallToolResult` is answered as any other.
pub(crate) fn handed_on(output: Value) -> CallToolResult {
    // Read from the value in place: the output itself goes along whole.
    match CallToolResult::deserialize(&output) {
        Ok(upstream) if upstream.is_error != Some(true) && !upstream.content.is_empty() => {
            let mut result = CallToolResult::success(upstream.content);
            result.structured_content = Some(json!({ "status": "executed", "output": output }));
            result
        }
        _ => outcome_result(Outcome::Executed(output), None),
    }
}

/// A call approved with changed arguments whose changed call ran on an MCP server: the
/// note that the arguments were changed, then the server's content blocks as it sent
/// them; the structured content of any `superseded` answer. Otherwise as any outcome.
pub(crate) fn superseded_handed_on(outcome: Outcome) -> CallToolResult {
    let handed = match &outcome {
        Outcome::Superseded {
            original, edited, ..
        } => match edited.as_ref() {
            Outcome::Executed(output) => CallToolResult::deserialize(output)
                .ok()
                .filter(|upstream| upstream.is_error != Some(true) && !upstream.content.is_empty())
                .map(|upstream| (superseded_note(original), upstream.content)),
            _ => None,
        },
        _ => None,
    };
    let reply = outcome.into_reply();
    match handed {
        Some((note, blocks)) => {
            let (body, _) = reply.into_parts();
            let mut content = vec![ContentBlock::text(alloc::format!(
                "{note} The changed call ran; the server's answer follows."
            ))];
            content.extend(blocks);
            let mut result = CallToolResult::success(content);
            result.structured_content = Some(body);
            result
        }
        None => call_result(reply),
    }
}

fn call_result(reply: ModelReply) -> CallToolResult {
    let error = reply.is_error();
    let (body, text) = reply.into_parts();
    let content = vec![ContentBlock::text(text)];
    let mut result = if error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = Some(body);
    result
}
