//! One governed tool as a rig handler: it receives rig's tool call (the name and the raw
//! argument text), puts it through the governor, and answers with a rig tool result.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use rig_core::effect::{
    EffectKind, FamilyDescriptor, HandlerDescriptor, Outcome as RigOutcome, family, tool_key,
};
use rig_core::error::{ErrorKind, ErrorReport};
use rig_core::message::ToolResultContent;
use rig_core::serve::{Dispatch, Reply, Serve};
use rig_core::tool::{ToolExecutionError, ToolOutput, ToolResult};
use serde_json::Value;

use super::error::RigError;
use super::tools::Shared;
use crate::approvals::{ApprovalError, ApprovalStore, ModelReply, Outcome};
use crate::declare::ToolEntry;
use crate::gate::Blocked;
use crate::json::ToolCall;

/// Said to the model in the description of a tool whose calls a person approves.
const APPROVAL_NOTE: &str = " A person approves each call before it runs: the first call \
     returns a proposal id to give the user, and the same call made again after the \
     approval runs once.";

pub(crate) struct GovernedTool<C: 'static, S> {
    shared: Arc<Shared<C, S>>,
    entry: &'static ToolEntry<C>,
    description: String,
    parameters: Value,
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> GovernedTool<C, S> {
    /// The rig tool for `entry`; `needs_approval` when a person approves its calls.
    pub(crate) fn new(
        shared: Arc<Shared<C, S>>,
        entry: &'static ToolEntry<C>,
        needs_approval: bool,
    ) -> Result<Self, RigError> {
        let spec = entry.spec();
        let parameters = entry
            .input_schema()
            .ok_or(RigError::NoSchema { name: spec.name() })?;
        let mut description = spec.description().to_string();
        if needs_approval {
            description.push_str(APPROVAL_NOTE);
        }
        Ok(Self {
            shared,
            entry,
            description,
            parameters,
        })
    }
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> Serve
    for GovernedTool<C, S>
{
    type Family = family::Tool;

    fn descriptor(&self) -> HandlerDescriptor {
        let name = self.entry.spec().name();
        HandlerDescriptor {
            key: tool_key(name),
            family: FamilyDescriptor::Tool {
                name: name.to_string(),
                description: self.description.clone(),
                parameters: self.parameters.clone(),
                embedding: None,
            },
            layers: Vec::new(),
        }
    }

    async fn serve(&self, kind: EffectKind, _dispatch: Dispatch) -> Reply {
        let name = self.entry.spec().name();
        match kind {
            EffectKind::ToolCall { name: asked, args } if asked == name => {
                let shared = &*self.shared;
                let scopes = shared.caller.scope_refs();
                let actor = shared.caller.actor(&scopes);
                // The argument text as rig has it: the strict decoder sees what was sent.
                let call = ToolCall::new(name, &args);
                let outcome = shared.governor.call(&call, &actor, &shared.context).await;
                Reply::Outcome(Ok(RigOutcome::ToolResult {
                    result: tool_result(outcome),
                }))
            }
            // Routing by key must never run one tool for another's name.
            EffectKind::ToolCall { name: asked, .. } => Reply::Outcome(Err(ErrorReport::new(
                ErrorKind::Internal,
                format!("the governed tool `{name}` was asked to run `{asked}`; nothing ran"),
            ))),
            other => Reply::Outcome(Err(ErrorReport::new(
                ErrorKind::HandlerUnavailable,
                format!(
                    "the governed tool `{name}` serves tool calls, not `{}`",
                    other.name()
                ),
            ))),
        }
    }
}

/// The rig result of a governed call. Only a call that ran is a success; one that waits
/// for a person is a skipped call (nothing ran, nothing failed); the rest are refusals or
/// errors. Each one that did not run carries the governor's text and its JSON body.
fn tool_result(outcome: Result<Outcome, ApprovalError>) -> ToolResult {
    let outcome = match outcome {
        Ok(Outcome::Executed(output)) => return ToolResult::success(ToolOutput::json(output)),
        Ok(outcome) => outcome,
        Err(error) => {
            let reply = ModelReply::not_recorded(&error);
            return failed(
                ToolExecutionError::other(reply.text()).with_retryable(true),
                reply,
            );
        }
    };
    // (The tool's own name always resolves: no call here is an unknown tool.)
    let error = match &outcome {
        Outcome::Failed(_) => ToolExecutionError::other,
        Outcome::Blocked(Blocked::NeedsInput { .. }) => ToolExecutionError::invalid_args,
        _ => ToolExecutionError::refused,
    };
    let reply = outcome.into_reply();
    if reply.is_error() {
        failed(error(reply.text()), reply)
    } else {
        ToolResult::skipped(String::new()).with_output(output_of(reply))
    }
}

fn failed(error: ToolExecutionError, reply: ModelReply) -> ToolResult {
    ToolResult::failed(error.with_model_output(output_of(reply)))
}

/// The text first, for a model that reads only text, then the JSON body.
fn output_of(reply: ModelReply) -> ToolOutput {
    let (body, text) = reply.into_parts();
    ToolOutput::content(vec![
        ToolResultContent::text(text),
        ToolResultContent::json(body),
    ])
    // Two blocks are never the empty list `content` refuses.
    .unwrap_or_else(|_| ToolOutput::text(String::new()))
}
