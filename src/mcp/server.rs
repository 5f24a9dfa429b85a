//! An MCP server handler for rmcp over a governor: `tools/list` shows what the actor may
//! call, `tools/call` goes through the governor, which records every decision.

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

use crate::approvals::{ApprovalStore, Governor, MemoryStore, Outcome};
use crate::declare::Actor;
use crate::gate::Blocked;
use crate::json::ToolCall;

/// Serves a [`Governor`](crate::Governor)'s tools over MCP with rmcp, for one actor:
/// `tools/list` answers with the tools the actor may call (the same gates as a call), and
/// `tools/call` goes through the governor, which records every decision in its audit
/// trail.
///
/// | the governor says | `tools/call` answers |
/// |---|---|
/// | *executed* | the tool's output as text (and as `structuredContent` when it is an object) |
/// | *awaiting approval* | a result with `status: awaiting_approval`, the proposal's id and the preview; the proposal is in the governor's store |
/// | *blocked* | a tool error (`isError: true`) with the code and reason; for invalid input, every field error |
/// | unknown tool | the protocol error the spec prescribes: `-32602` (invalid params) |
///
/// Arguments reach the server already parsed by the MCP transport, so duplicate keys
/// cannot be seen here; every other rule of the input gate applies.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use cairnloop::{Governor, Registry, mcp::McpServer};
/// # static TOOLS: Registry<()> = Registry::new(&[]);
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// use rmcp::ServiceExt;
///
/// let governor = Arc::new(Governor::new(&TOOLS));
/// let server = McpServer::new(governor, (), "agent-7").with_scopes(["orders:read"]);
/// server.serve(rmcp::transport::stdio()).await?.waiting().await?;
/// # Ok(())
/// # }
/// ```
pub struct McpServer<
    C: Send + Sync + 'static,
    S: ApprovalStore + Send + Sync + 'static = MemoryStore,
> {
    governor: Arc<Governor<C, S>>,
    context: C,
    actor_id: String,
    account: Option<String>,
    scopes: Vec<String>,
    /// Every tool's `tools/list` entry, projected once (its schema included); a listing
    /// picks the ones the actor may call.
    projected: std::sync::OnceLock<Vec<Option<Result<Tool, String>>>>,
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> McpServer<C, S> {
    /// A server for `actor_id` over `governor`, with no scopes and no account.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
    /// ```
    pub fn new(governor: Arc<Governor<C, S>>, context: C, actor_id: impl Into<String>) -> Self {
        Self {
            governor,
            context,
            actor_id: actor_id.into(),
            account: None,
            scopes: Vec::new(),
            projected: std::sync::OnceLock::new(),
        }
    }

    /// Sets the actor's account.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7").with_account("acme");
    /// ```
    #[must_use]
    pub fn with_account(mut self, account: impl Into<String>) -> Self {
        self.account = Some(account.into());
        self
    }

    /// Sets the scopes granted to the actor.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7")
    ///     .with_scopes(["orders:read", "tickets:write"]);
    /// ```
    #[must_use]
    pub fn with_scopes<I: IntoIterator<Item = T>, T: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The governor, shared with the host (its operator's queue, its approvals).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
    /// assert!(pollster::block_on(server.governor().events()).unwrap().is_empty());
    /// ```
    pub fn governor(&self) -> &Arc<Governor<C, S>> {
        &self.governor
    }

    /// The `tools/list` entries of the tools this actor may call, as the handler answers
    /// them: each tool's entry (its input schema included) is projected once, on the
    /// first listing, and reused.
    ///
    /// # Errors
    ///
    /// An internal error for a tool that cannot be listed (no input schema, or an input
    /// that is not a JSON object).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
    /// assert!(server.list_tools_for_actor().unwrap().is_empty());
    /// ```
    pub fn list_tools_for_actor(&self) -> Result<Vec<Tool>, ErrorData> {
        let scopes = self.scopes();
        let actor = self.actor(&scopes);
        let registry = self.governor.registry();
        let projected = self.projected.get_or_init(|| {
            registry
                .tools()
                .iter()
                .map(|entry| {
                    entry.is_callable_by_name().then(|| {
                        entry
                            .mcp_tool()
                            .map_err(|error| error.to_string())
                            .and_then(|value| {
                                serde_json::from_value::<Tool>(value)
                                    .map_err(|error| error.to_string())
                            })
                    })
                })
                .collect()
        });
        let mut tools = Vec::new();
        for (entry, projection) in registry.tools().iter().zip(projected) {
            let Some(projection) = projection else {
                continue;
            };
            let verdict = crate::gate::verdict_for(
                entry,
                &actor,
                &self.context,
                self.governor.governance().mode_policy(),
            );
            if matches!(verdict, crate::gate::Verdict::Blocked(_)) {
                continue;
            }
            match projection {
                Ok(tool) => tools.push(tool.clone()),
                Err(error) => return Err(ErrorData::internal_error(error.clone(), None)),
            }
        }
        Ok(tools)
    }

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

    /// Answers a `tools/call` of `name` whose arguments are the JSON text `arguments`, as
    /// the handler does for a transport's request: through the governor, which records
    /// the decision in its audit trail before this returns.
    ///
    /// # Errors
    ///
    /// The protocol error for an unknown tool (`-32602`); every other outcome is a result.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
    /// let answer = pollster::block_on(server.call_tool_text("drop_tables", "{}"));
    /// assert_eq!(answer.unwrap_err().code.0, -32602);
    /// assert_eq!(pollster::block_on(server.governor().events()).unwrap().len(), 1); // the decision, recorded
    /// ```
    pub async fn call_tool_text(
        &self,
        name: &str,
        arguments: &str,
    ) -> Result<CallToolResult, ErrorData> {
        let scopes = self.scopes();
        let actor = self.actor(&scopes);
        let call = ToolCall::new(name, arguments);
        let outcome = match self.governor.call(&call, &actor, &self.context).await {
            Ok(outcome) => outcome,
            Err(error) => {
                return Ok(tool_error(json!({
                    "status": "blocked",
                    "code": "not_recorded",
                    "reason": error.to_string(),
                })));
            }
        };
        match outcome {
            Outcome::Executed(output) => {
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(output.to_string())]);
                if output.is_object() {
                    result.structured_content = Some(output);
                }
                Ok(result)
            }
            Outcome::Failed(error) => Ok(tool_error(json!({
                "status": "failed",
                "code": "run_failed",
                "reason": error.to_string(),
            }))),
            Outcome::AwaitingApproval(lane) => {
                let preview = lane.proposal().preview().text().to_string();
                let state = lane.state();
                let pending = state == crate::gate::LaneState::Pending;
                let body = json!({
                    "status": if pending { "awaiting_approval" } else { state.as_str() },
                    "proposal_id": lane.key().to_string(),
                    "state": state.as_str(),
                    "preview": preview,
                    "expires_at": lane.expires_at().unix_millis(),
                    "reason": lane.reason(),
                });
                let text = if pending {
                    format!(
                        "Awaiting a human's approval (proposal {}). Nothing has run yet. Make \
                         the same call again once it is approved.\n{preview}",
                        lane.key()
                    )
                } else {
                    format!(
                        "This call is {state} (proposal {}){}. Tell the user; do not retry it \
                         as it is.",
                        lane.key(),
                        lane.reason()
                            .map(|reason| format!(": {reason}"))
                            .unwrap_or_default()
                    )
                };
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(body);
                Ok(result)
            }
            Outcome::Blocked(Blocked::UnknownTool) => Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", name.escape_debug()),
                None,
            )),
            Outcome::Blocked(blocked) => {
                let mut body = json!({
                    "status": "blocked",
                    "blocked": blocked.code(),
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
        let tools = self.list_tools_for_actor()?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default()).to_string();
        self.call_tool_text(&request.name, &arguments)
            .await
            .map(Into::into)
    }
}
