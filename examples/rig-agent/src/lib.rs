//! A rig agent over the support desk the other examples use, with three of its tools, one
//! per way a governed call can end: look up an order (read-only: runs at once), refund an
//! order (high-write: a person approves it), delete a customer (destructive: always
//! blocked). The desk records every tool that ran, so that a run can show what did and
//! what did not.

use cairnloop::Registry;
use cairnloop::rig::{RigError, RigTools};
use rig_agent::agent::{Agent, AgentBuilder};
use rig_agent::completion::{CompletionRequest, Message};
use rig_agent::core::message::{ToolResultContent, UserContent};
use rig_agent::test_utils::MockCompletionModel;
use rig_agent::tool::ToolSet;
use rig_agent::tool::server::ToolServer;
use serde_json::Value;

#[macro_use]
#[path = "../../desk/tools.rs"]
mod tools;

pub use tools::{CustomerRef, DeleteCustomer, Desk, LookupOrder, OrderRef, Refund, RefundOrder};

/// The desk's tools an agent may be offered, each callable by name with its input schema.
pub static DESK: Registry<Desk> = Registry::new(&[
    by_name!(LookupOrder),
    by_name!(RefundOrder),
    by_name!(DeleteCustomer),
]);

/// A rig agent over `model` whose tools are the governed ones (and nothing else), with the
/// hook that answers a governed tool the model was not offered.
///
/// # Errors
///
/// As [`RigTools::add_to`].
pub fn governed_agent<S>(
    model: MockCompletionModel,
    governed: &RigTools<Desk, S>,
) -> Result<Agent, RigError>
where
    S: cairnloop::approvals::ApprovalStore + Send + Sync + 'static,
{
    let mut tools = ToolSet::default();
    governed.add_to(&mut tools)?;
    let server = ToolServer::new().run();
    server.add_tools(tools);
    Ok(AgentBuilder::new(model)
        .preamble("You help a support desk's customers. Tell the user what each tool result says.")
        .tool_server_handle(server)
        .add_hook(governed.hook())
        .build())
}

/// A tool result as the model was sent it.
#[derive(Debug)]
pub struct Seen {
    /// The id of the call it answers.
    pub call: String,
    /// Whether rig marked it an error (failed, refused, or not run).
    pub is_error: bool,
    /// Its text blocks, joined.
    pub text: String,
    /// Its JSON block: a tool's output, or the governor's body for a call that did not run.
    pub json: Option<Value>,
}

/// Every tool result in `request`'s history, oldest first.
pub fn tool_results(request: &CompletionRequest) -> Vec<Seen> {
    let mut seen = Vec::new();
    for message in &request.chat_history {
        let Message::User { content } = message else {
            continue;
        };
        for item in content {
            let UserContent::ToolResult(result) = item else {
                continue;
            };
            let mut text = String::new();
            let mut json = None;
            for block in &result.content {
                match block {
                    ToolResultContent::Text(block) => text.push_str(&block.text),
                    ToolResultContent::Json { value } => json = Some(value.clone()),
                    ToolResultContent::Image(_) => {}
                }
            }
            seen.push(Seen {
                call: result.call.to_string(),
                is_error: result.is_error,
                text,
                json,
            });
        }
    }
    seen
}
