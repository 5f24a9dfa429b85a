//! The answer to a model that names a governed tool it was not offered: rig would end the
//! whole run on that name; this hook puts the call through the governor instead.

use alloc::sync::Arc;

use rig_agent::agent::{
    AgentHook, HookContext, InvalidToolCallAction, InvalidToolCallContext, InvalidToolCallReason,
};

use super::tools::Shared;
use crate::approvals::{ApprovalStore, ModelReply};
use crate::json::ToolCall;

/// A rig agent hook for the tools of one [`RigTools`](crate::rig::RigTools): when the
/// model names a tool of the governor's registry that it was not offered (the caller may
/// not call it: a missing scope, its policy, or always blocked), the call goes through the
/// governor, which decides and records it, and the model reads the governor's answer as
/// the call's result (`Nothing ran: …`). Without it, rig ends the agent's whole run on a
/// name it does not hold. A name the registry does not have is left to rig and to the
/// host's other hooks.
///
/// rig answers such a call by skipping every tool call of that model turn, each with a
/// result that says so; the run goes on.
///
/// ```
/// # use std::sync::Arc;
/// # use cairnloop::{Governor, Registry, approvals::Caller, rig::RigTools};
/// # static TOOLS: Registry<()> = Registry::new(&[]);
/// let governed = RigTools::new(Arc::new(Governor::new(&TOOLS)), (), Caller::new("a", ["s"]));
/// let hook = governed.hook();
/// // rig_agent::agent::AgentBuilder::new(model).add_hook(hook)
/// # let _ = hook;
/// ```
pub struct GovernedHook<C: 'static, S> {
    shared: Arc<Shared<C, S>>,
}

impl<C: 'static, S> GovernedHook<C, S> {
    pub(crate) fn new(shared: Arc<Shared<C, S>>) -> Self {
        Self { shared }
    }
}

impl<C: 'static, S> Clone for GovernedHook<C, S> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> AgentHook
    for GovernedHook<C, S>
{
    async fn on_invalid_tool_call(
        &self,
        _ctx: &HookContext,
        event: &InvalidToolCallContext,
    ) -> Option<InvalidToolCallAction> {
        if !matches!(event.reason, InvalidToolCallReason::UnknownTool) {
            return None;
        }
        let shared = &*self.shared;
        shared.governor.registry().get(&event.tool_name)?;
        let scopes = shared.caller.scope_refs();
        let actor = shared.caller.actor(&scopes);
        let arguments = event.args.as_deref().unwrap_or("");
        let call = ToolCall::new(&event.tool_name, arguments);
        let reply = match shared.governor.call(&call, &actor, &shared.context).await {
            Ok(outcome) => outcome.into_reply(),
            Err(error) => ModelReply::not_recorded(&error),
        };
        Some(InvalidToolCallAction::skip(reply.text()))
    }
}
