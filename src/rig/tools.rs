use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use rig_agent::tool::{RegisteredTool, ToolSet};

use super::error::RigError;
use super::handler::GovernedTool;
use crate::approvals::{ApprovalStore, Caller, Governor, MemoryStore};

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
/// re-serialised from it. Every tool callable by name is offered, a blocked one with a
/// description that says it is blocked and why: rig fails the agent's whole run when the
/// model names a tool it does not hold, so a blocked tool stays registered and the
/// governor answers, and records, each call to it. The gates run again on every call:
/// what the descriptions say is only the verdict when the tools were registered.
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
/// // An agent gets them through a tool server:
/// let server = ToolServer::new().run();
/// server.add_tools(tools);
/// // rig_agent::agent::AgentBuilder::new(model).tool_server_handle(server).build()
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

    /// One rig registration for each tool of the registry that can be called by name, in
    /// the registry's order: the blocked ones too, so that the governor answers (and
    /// records) a call to one, where rig would end the agent's run on a name it does not
    /// know. Each description says what the caller's calls meet now: a person's approval,
    /// or a block and why.
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
            .map(|(entry, verdict)| {
                let tool = GovernedTool::new(Arc::clone(shared), entry, &verdict)?;
                RegisteredTool::from_handler(tool).map_err(|report| RigError::Refused {
                    name: entry.spec().name(),
                    reason: report.to_string(),
                })
            })
            .collect()
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
