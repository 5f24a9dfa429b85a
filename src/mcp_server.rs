//! An MCP server handler for rmcp over a registry: `tools/list` shows the actor's visible
//! tools, `tools/call` goes through the pipeline.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::{
    Actor, ApprovalStore, Approvals, Blocked, CallDecision, Governance, MemoryStore, Registry,
    Timestamp, ToolCall,
};

/// Serves a [`Registry`] over MCP with rmcp, for one actor: `tools/list` answers with the
/// tools the actor may call (the same check as a call), and `tools/call` goes through the
/// pipeline.
///
/// | pipeline says | `tools/call` answers |
/// |---|---|
/// | *execute* | the tool's output as text (and as `structuredContent` when it is an object) |
/// | *await approval* | a result with `status: awaiting_approval`, the proposal's id and the preview; the proposal is recorded in the approval store |
/// | *blocked* | a tool error (`isError: true`) with the code and reason; for invalid input, every field error |
/// | unknown tool | the protocol error the spec prescribes: `-32602` (invalid params) |
///
/// Arguments reach the server already parsed by the MCP transport, so duplicate keys
/// cannot be seen here; every other rule of the input gate applies.
///
/// ```no_run
/// # use cairnloop::{McpServer, Registry};
/// # static TOOLS: Registry<()> = Registry::new(&[]);
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// use rmcp::ServiceExt;
///
/// let server = McpServer::new(&TOOLS, (), "agent-7").with_scopes(["orders:read"]);
/// server.serve(rmcp::transport::stdio()).await?.waiting().await?;
/// # Ok(())
/// # }
/// ```
pub struct McpServer<
    C: Send + Sync + 'static,
    S: ApprovalStore + Send + Sync + 'static = MemoryStore,
> {
    registry: &'static Registry<C>,
    context: C,
    actor_id: String,
    account: Option<String>,
    scopes: Vec<String>,
    governance: Governance<C>,
    approvals: Arc<Approvals<S>>,
    clock: fn() -> Option<Timestamp>,
}

impl<C: Send + Sync + 'static> McpServer<C> {
    /// A server for `actor_id`, with no scopes, no account, the default governance and a
    /// fresh in-memory approval store.
    ///
    /// ```
    /// # use cairnloop::{McpServer, Registry};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(&TOOLS, (), "agent-7");
    /// ```
    pub fn new(registry: &'static Registry<C>, context: C, actor_id: impl Into<String>) -> Self {
        Self {
            registry,
            context,
            actor_id: actor_id.into(),
            account: None,
            scopes: Vec::new(),
            governance: Governance::new(),
            approvals: Arc::new(Approvals::new(
                MemoryStore::new(),
                crate::ApprovalConfig::new(),
            )),
            clock: Timestamp::now,
        }
    }
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> McpServer<C, S> {
    /// Sets the actor's account.
    ///
    /// ```
    /// # use cairnloop::{McpServer, Registry};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(&TOOLS, (), "agent-7").with_account("acme");
    /// ```
    #[must_use]
    pub fn with_account(mut self, account: impl Into<String>) -> Self {
        self.account = Some(account.into());
        self
    }

    /// Sets the scopes granted to the actor.
    ///
    /// ```
    /// # use cairnloop::{McpServer, Registry};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(&TOOLS, (), "agent-7").with_scopes(["orders:read", "tickets:write"]);
    /// ```
    #[must_use]
    pub fn with_scopes<I: IntoIterator<Item = T>, T: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the governance (approval-mode overrides, input limits).
    ///
    /// ```
    /// # use cairnloop::{Governance, McpServer, Registry};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(&TOOLS, (), "agent-7").with_governance(Governance::new());
    /// ```
    #[must_use]
    pub fn with_governance(mut self, governance: Governance<C>) -> Self {
        self.governance = governance;
        self
    }

    /// Records proposals in `approvals` (shared with the host's approval UI).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Approvals, McpServer, MemoryStore, Registry};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let approvals = Arc::new(Approvals::new(MemoryStore::new(), Default::default()));
    /// let server = McpServer::new(&TOOLS, (), "agent-7").with_approvals(Arc::clone(&approvals));
    /// ```
    #[must_use]
    pub fn with_approvals<T: ApprovalStore + Send + Sync + 'static>(
        self,
        approvals: Arc<Approvals<T>>,
    ) -> McpServer<C, T> {
        McpServer {
            registry: self.registry,
            context: self.context,
            actor_id: self.actor_id,
            account: self.account,
            scopes: self.scopes,
            governance: self.governance,
            approvals,
            clock: self.clock,
        }
    }

    /// The approval store proposals are recorded in.
    ///
    /// ```
    /// # use cairnloop::{McpServer, Registry};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(&TOOLS, (), "agent-7");
    /// assert_eq!(server.approvals().config().max_attempts(), 3);
    /// ```
    pub fn approvals(&self) -> &Arc<Approvals<S>> {
        &self.approvals
    }

    /// The actor of this session, borrowing `scopes` (from [`McpServer::scopes`]).
    fn actor<'a>(&'a self, scopes: &'a [&'a str]) -> Actor<'a> {
        let actor = Actor::new(&self.actor_id, scopes);
        match &self.account {
            Some(account) => actor.with_account(account),
            None => actor,
        }
    }

    fn scopes(&self) -> Vec<&str> {
        self.scopes.iter().map(String::as_str).collect()
    }

    async fn answer(&self, name: &str, arguments: &str) -> Result<CallToolResult, ErrorData> {
        let scopes = self.scopes();
        let actor = self.actor(&scopes);
        let call = ToolCall::new(name, arguments);
        let outcome = self
            .registry
            .call(&call, &actor, &self.context, &self.governance);
        match outcome.decision {
            CallDecision::Execute(ready) => match ready.run().await {
                Ok(output) => {
                    let mut result =
                        CallToolResult::success(vec![ContentBlock::text(output.to_string())]);
                    if output.is_object() {
                        result.structured_content = Some(output);
                    }
                    Ok(result)
                }
                Err(error) => Ok(tool_error(json!({
                    "status": "failed",
                    "code": "run_failed",
                    "reason": error.to_string(),
                }))),
            },
            CallDecision::AwaitApproval(proposal) => {
                let Some(now) = (self.clock)() else {
                    return Ok(tool_error(json!({
                        "status": "blocked",
                        "code": "clock_unavailable",
                        "reason": "the server clock is unavailable, so no approval can be recorded",
                    })));
                };
                let preview = proposal.preview().text().to_string();
                match self.approvals.propose(proposal, now) {
                    Ok(lane) => {
                        let body = json!({
                            "status": "awaiting_approval",
                            "proposal_id": lane.key().to_string(),
                            "state": lane.state().as_str(),
                            "preview": preview,
                        });
                        let text = format!(
                            "Awaiting a human's approval (proposal {}). Nothing has run yet.\n{preview}",
                            lane.key()
                        );
                        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                        result.structured_content = Some(body);
                        Ok(result)
                    }
                    Err(error) => Ok(tool_error(json!({
                        "status": "blocked",
                        "code": "approval_store",
                        "reason": error.to_string(),
                    }))),
                }
            }
            CallDecision::Blocked(Blocked::UnknownTool) => Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", outcome.audit.tool),
                None,
            )),
            CallDecision::Blocked(blocked) => {
                let mut body = json!({
                    "status": "blocked",
                    "code": blocked.code(),
                    "reason": blocked.to_string(),
                });
                if let Blocked::NeedsInput { errors } = &blocked {
                    body["errors"] = serde_json::to_value(errors).unwrap_or(Value::Null);
                }
                Ok(tool_error(body))
            }
        }
    }
}

fn tool_error(body: Value) -> CallToolResult {
    let text = body["reason"].as_str().unwrap_or("blocked").to_string();
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(body);
    result
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> ServerHandler
    for McpServer<C, S>
{
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("cairnloop", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let scopes = self.scopes();
        let entries = self
            .registry
            .mcp_tools_for(&self.actor(&scopes), &self.context)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let tools = entries
            .into_iter()
            .map(serde_json::from_value::<Tool>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default()).to_string();
        self.answer(&request.name, &arguments).await.map(Into::into)
    }
}
