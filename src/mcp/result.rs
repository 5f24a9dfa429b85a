//! What a `tools/call` answers, for each outcome of the governor: every result carries
//! `structuredContent` with a `status`, and a text a model can act on.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::approvals::{ApprovalError, ApprovalLane, Outcome};
use crate::gate::{Blocked, LaneState};

/// The result of an outcome other than an unknown tool (a protocol error, decided by the
/// caller). `note` adds a line to the text (why an approval prompt decided nothing).
pub(crate) fn outcome_result(outcome: Outcome, note: Option<&str>) -> CallToolResult {
    match outcome {
        Outcome::Executed(output) => {
            let text = output.to_string();
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(json!({ "status": "executed", "output": output }));
            result
        }
        Outcome::Failed(error) => tool_error(
            json!({ "status": "failed", "code": "run_failed", "reason": error.to_string() }),
            format!("The tool ran and failed: {error}"),
        ),
        Outcome::AwaitingApproval(lane) => lane_result(&lane, note),
        Outcome::Blocked(blocked) => blocked_result(&blocked),
    }
}

/// A call whose decision could not be recorded: nothing ran.
pub(crate) fn not_recorded(error: &ApprovalError) -> CallToolResult {
    tool_error(
        json!({ "status": "blocked", "blocked": "not_recorded", "code": "not_recorded", "reason": error.to_string() }),
        format!("Nothing ran: the decision could not be recorded ({error}). Try again later."),
    )
}

fn blocked_result(blocked: &Blocked) -> CallToolResult {
    let mut body = json!({
        "status": "blocked",
        "blocked": blocked.code(),
        "code": blocked.code(),
        "reason": blocked.to_string(),
    });
    let text = match blocked {
        Blocked::NeedsInput { errors } => {
            body["errors"] = serde_json::to_value(errors).unwrap_or(Value::Null);
            let mut text = format!(
                "Nothing ran: the arguments have {} error(s). Fix every one and call again:",
                errors.len()
            );
            for error in errors.iter() {
                let path = if error.path().is_empty() {
                    "(arguments)"
                } else {
                    error.path()
                };
                text.push_str(&format!(
                    "\n- {path}: {} ({})",
                    error.message(),
                    error.code()
                ));
            }
            text
        }
        Blocked::ScopeMissing { missing } => {
            body["missing_scopes"] = serde_json::to_value(missing).unwrap_or(Value::Null);
            format!(
                "Nothing ran: this actor lacks the scope(s) {missing}. Do not retry; ask the user."
            )
        }
        Blocked::PolicyDenied { reason } => {
            format!(
                "Nothing ran: the tool's policy refused this call ({reason}). Do not retry it as it is."
            )
        }
        Blocked::AlwaysBlocked { .. } => {
            "Nothing ran: this tool is blocked and never runs. Do not retry.".to_string()
        }
        other => format!("Nothing ran: {other}."),
    };
    tool_error(body, text)
}

/// A call with a lane: pending (or deferred) is a normal result, awaiting a person; any
/// other state (rejected, expired, invalidated, running elsewhere, unknown) is an error
/// result that says so, with its reason.
fn lane_result(lane: &ApprovalLane, note: Option<&str>) -> CallToolResult {
    let proposal = lane.proposal();
    let state = lane.state();
    let waiting = matches!(state, LaneState::Pending | LaneState::Deferred);
    let body = json!({
        "status": if waiting { "awaiting_approval" } else { state.as_str() },
        "proposal_id": lane.key().to_string(),
        "state": state.as_str(),
        "tool": proposal.tool(),
        "risk_tier": proposal.risk_tier().as_str(),
        "preview": proposal.preview().text(),
        "required_scopes": proposal.required_scopes(),
        "expires_at": lane.expires_at().utc().to_string(),
        "reason": lane.reason(),
    });
    let note = note.map(|note| format!(" ({note})")).unwrap_or_default();
    if waiting {
        let mut body = body;
        if body["reason"].is_null() {
            body.as_object_mut().map(|object| object.remove("reason"));
        }
        let text = format!(
            "Nothing has run yet: this call awaits a person's approval{note}. Proposal {key}, \
             open until {expires}. Tell the user; once it is approved, make exactly the same \
             call again and it runs once.\n\n{preview}",
            key = lane.key(),
            expires = lane.expires_at().utc(),
            preview = proposal.preview().text(),
        );
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(body);
        return result;
    }
    let reason = lane
        .reason()
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default();
    let text = format!(
        "This call is {state} (proposal {key}){reason}{note}. It did not run now. Tell the \
         user; do not retry it as it is.",
        key = lane.key(),
    );
    tool_error(body, text)
}

fn tool_error(body: Value, text: String) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(body);
    result
}
