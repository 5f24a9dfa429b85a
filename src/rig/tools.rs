use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use rig_agent::tool::{RegisteredTool, ToolSet};

use super::error::RigError;
use super::handler::GovernedTool;
use super::hook::GovernedHook;
use crate::approvals::{ApprovalStore, Caller, Governor, MemoryStore};
use crate::gate::Verdict;

/// A [`Governor`]'s tools for a rig agent, for one caller: each tool the caller may call
/// becomes a rig tool (its name, description and input schema), and each call the model
/// makes goes through the governor with the caller as its actor.
///
/// | the governor says | the model gets (a tool result; the turn goes on) |
/// |---|---|
/// | *executed* | the tool's output as JSON |
/// | *awaiting approval* | a skipped call: what to tell the user and, as JSON, `status: awaiting_approval`, the `proposal_id`, the preview and when it expires; the proposal waits in the governor's store |
/// | *blocked* | a refusal (invalid arguments: an `invalid_args` error, listing every field error) with the reason and `status: blocked`; nothing ran |
/// | rejected, expired, … | a refusal with the lane's state and reason |
/// | the tool ran and failed | an error with the tool's message |
///
/// rig's raw argument text goes to the governor's strict decoder as rig holds it, not a map
/// re-serialised from it. Only the tools the caller may call are offered; the gates run
/// again on every call, so a tool whose policy turns against the caller after it was
/// offered is blocked. A model that names a governed tool it was not offered would end
/// the agent's whole run in rig; with [`RigTools::hook`] added to the agent, the governor
/// answers (and records) that call as well.
///
/// ```
/// # use std::sync::Arc;
/// # use cairnloop::{Governor, Registry, approvals::Caller, rig::RigTools};
/// # static TOOLS: Registry<()> = Registry::new(&[]);
/// use rig_agent::tool::{ToolSet, server::ToolServer};
///
/// let governor = Arc::new(Governor::new(&TOOLS));
/// let governed = RigTools::new(governor, (), Caller::new("agent-7", ["orders:read"]));
/// let mut tools = ToolSet::default();
/// let added = governed.add_to(&mut tools)?;
/// assert_eq!(added.len(), tools.len());
///
/// // An agent gets them through a tool server, and the hook beside them:
/// let server = ToolServer::new().run();
/// server.add_tools(tools);
/// let hook = governed.hook();
/// // AgentBuilder::new(model).tool_server_handle(server).add_hook(hook).build()
/// # let _ = hook;
/// # Ok::<(), cairnloop::rig::RigError>(())
/// ```
pub struct RigTools<
    C: Send + Sync + 'static,
    S: ApprovalStore + Send + Sync + 'static = MemoryStore,
> {
    shared: Arc<Shared<C, S>>,
}

/// What every tool of one [`RigTools`] calls with.
pub(crate) struct Shared<C: 'static, S> {
    pub(crate) governor: Arc<Governor<C, S>>,
    pub(crate) context: C,
    pub(crate) caller: Caller,
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> RigTools<C, S> {
    /// The tools of `governor`, called by `caller` with `context`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, approvals::Caller, rig::RigTools};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let caller = Caller::new("agent-7", ["orders:read"]).with_account("acme");
    /// let governed = RigTools::new(Arc::new(Governor::new(&TOOLS)), (), caller);
    /// assert_eq!(governed.caller().account(), Some("acme"));
    /// ```
    pub fn new(governor: Arc<Governor<C, S>>, context: C, caller: Caller) -> Self {
        Self {
            shared: Arc::new(Shared {
                governor,
                context,
                caller,
            }),
        }
    }

    /// The caller every call is made as.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, approvals::Caller, rig::RigTools};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governed = RigTools::new(Arc::new(Governor::new(&TOOLS)), (), Caller::new("a", ["s"]));
    /// assert_eq!(governed.caller().id(), "a");
    /// ```
    #[must_use]
    pub fn caller(&self) -> &Caller {
        &self.shared.caller
    }

    /// One rig registration for each tool the caller may call now (its verdict is
    /// *execute* or *await approval*), in the registry's order; a tool whose calls a person
    /// approves says so in its description. The others are not offered to the model: a
    /// call to one is answered by [`RigTools::hook`].
    ///
    /// # Errors
    ///
    /// [`RigError::NoSchema`] for a tool registered without its input schema (with
    /// `ToolEntry::json` instead of `ToolEntry::mcp`); [`RigError::Refused`] if rig
    /// refuses one.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, approvals::Caller, rig::RigTools};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governed = RigTools::new(Arc::new(Governor::new(&TOOLS)), (), Caller::new("a", ["s"]));
    /// assert!(governed.registrations()?.is_empty());
    /// # Ok::<(), cairnloop::rig::RigError>(())
    /// ```
    pub fn registrations(&self) -> Result<Vec<RegisteredTool>, RigError> {
        let shared = &self.shared;
        let scopes = shared.caller.scope_refs();
        let actor = shared.caller.actor(&scopes);
        shared
            .governor
            .verdicts(&actor, &shared.context)
            .filter(|(entry, _)| entry.is_callable_by_name())
            .filter_map(|(entry, verdict)| match verdict {
                Verdict::Execute { .. } => Some((entry, false)),
                Verdict::AwaitApproval { .. } => Some((entry, true)),
                Verdict::Blocked(_) => None,
            })
            .map(|(entry, needs_approval)| {
                let tool = GovernedTool::new(Arc::clone(shared), entry, needs_approval)?;
                RegisteredTool::from_handler(tool).map_err(|report| RigError::Refused {
                    name: entry.spec().name(),
                    reason: report.to_string(),
                })
            })
            .collect()
    }

    /// The hook that answers a model naming one of the governor's tools it was not offered:
    /// the call goes through the governor (which decides and records it) instead of rig
    /// ending the run. Add it to the agent with `AgentBuilder::add_hook`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, approvals::Caller, rig::RigTools};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governed = RigTools::new(Arc::new(Governor::new(&TOOLS)), (), Caller::new("a", ["s"]));
    /// let hook = governed.hook();
    /// # let _ = hook;
    /// ```
    #[must_use]
    pub fn hook(&self) -> GovernedHook<C, S> {
        GovernedHook::new(Arc::clone(&self.shared))
    }

    /// Adds [`RigTools::registrations`] to `set`, and returns their names. All or none:
    /// if `set` already holds a tool of one of the names, nothing is added, because rig's
    /// tool set would replace that tool without a word.
    ///
    /// # Errors
    ///
    /// [`RigError::NameTaken`], or an error of [`RigTools::registrations`]; `set` is
    /// unchanged then.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, approvals::Caller, rig::RigTools};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governed = RigTools::new(Arc::new(Governor::new(&TOOLS)), (), Caller::new("a", ["s"]));
    /// let mut set = rig_agent::tool::ToolSet::default();
    /// assert!(governed.add_to(&mut set)?.is_empty());
    /// # Ok::<(), cairnloop::rig::RigError>(())
    /// ```
    pub fn add_to(&self, set: &mut ToolSet) -> Result<Vec<String>, RigError> {
        let tools = self.registrations()?;
        if let Some(taken) = tools.iter().find(|tool| set.contains(&tool.name())) {
            return Err(RigError::NameTaken { name: taken.name() });
        }
        Ok(tools
            .into_iter()
            .map(|tool| set.add_registered_tool(tool))
            .collect())
    }
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> Clone for RigTools<C, S> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}
