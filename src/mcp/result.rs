//! What a `tools/call` answers, for each outcome of the governor: every result carries
//! `structuredContent` with a `status`, and a text a model can act on (the governor's
//! [`ModelReply`]).

use alloc::vec;

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Deserialize;
use serde_json::Value;

use crate::approvals::{ApprovalError, ModelReply, Outcome};
use crate::approvals::{executed_body, superseded_note};

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
    if let Some(content) = plain_text(&output) {
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(executed_body(output));
        return result;
    }
    // Read from the value in place: the output itself goes along whole.
    match CallToolResult::deserialize(&output) {
        Ok(upstream) if upstream.is_error != Some(true) && !upstream.content.is_empty() => {
            let mut result = CallToolResult::success(upstream.content);
            result.structured_content = Some(executed_body(output));
            result
        }
        _ => outcome_result(Outcome::Executed(output), None),
    }
}

/// The content of a successful result whose blocks are all plain text (`type` and
/// `text`, nothing else), built as rmcp's decoder builds them, without it: the common
/// answer of a tool, read in a fraction of the time. `None` for anything else.
fn plain_text(output: &Value) -> Option<alloc::vec::Vec<ContentBlock>> {
    let object = output.as_object()?;
    if object
        .get("isError")
        .is_some_and(|error| *error != Value::Bool(false))
    {
        return None;
    }
    let blocks = object.get("content")?.as_array()?;
    if blocks.is_empty() {
        return None;
    }
    blocks
        .iter()
        .map(|block| {
            let block = block.as_object().filter(|block| block.len() == 2)?;
            let text = block.get("text")?.as_str()?;
            (block.get("type")?.as_str()? == "text").then(|| ContentBlock::text(text))
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the decoder reads from `output`, as `handed_on` answered before it had a
    /// shortcut.
    fn decoded(output: &Value) -> Option<CallToolResult> {
        let upstream = CallToolResult::deserialize(output).ok()?;
        (upstream.is_error != Some(true) && !upstream.content.is_empty()).then(|| {
            let mut result = CallToolResult::success(upstream.content);
            result.structured_content =
                Some(json!({ "status": "executed", "output": output.clone() }));
            result
        })
    }

    #[test]
    fn plain_text_blocks_are_handed_on_as_the_decoder_reads_them() {
        for output in [
            json!({ "content": [{ "type": "text", "text": "hello" }] }),
            json!({ "content": [{ "text": "a", "type": "text" }, { "type": "text", "text": "" }], "isError": false }),
            json!({ "content": [{ "type": "text", "text": "x" }], "structuredContent": { "a": 1 }, "_meta": {} }),
        ] {
            assert!(plain_text(&output).is_some(), "{output}");
            assert_eq!(
                Some(handed_on(output.clone())),
                decoded(&output),
                "{output}"
            );
        }
    }

    #[test]
    fn anything_else_takes_the_decoder() {
        for output in [
            json!({ "content": [{ "type": "text", "text": "x", "annotations": { "priority": 1.0 } }] }),
            json!({ "content": [{ "type": "image", "data": "AA==", "mimeType": "image/png" }] }),
            json!({ "content": [{ "type": "text", "text": 5 }] }),
            json!({ "content": [] }),
            json!({ "content": [{ "type": "text", "text": "x" }], "isError": true }),
            json!({ "content": [{ "type": "text", "text": "x" }], "isError": "no" }),
            json!("text"),
        ] {
            assert!(plain_text(&output).is_none(), "{output}");
        }
    }
}
