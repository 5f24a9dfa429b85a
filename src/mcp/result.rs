//! What a `tools/call` answers, for each outcome of the governor: every result carries
//! `structuredContent` with a `status`, and a text a model can act on (the governor's
//! [`ModelReply`]).

use alloc::vec;

use rmcp::model::{CallToolResult, ContentBlock};

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
