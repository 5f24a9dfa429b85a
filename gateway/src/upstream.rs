//! An upstream MCP server started as a child process, spoken to over its standard input
//! and output: its listing for the catalogue, and the calls the gates let through.

use std::sync::Arc;
use std::time::Duration;

use cairnloop::Actor;
use cairnloop::declare::{RunError, RunFuture};
use cairnloop::json::Forward;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// The longest an upstream may take to start and answer its listing.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest one forwarded call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The largest result taken from an upstream, written as JSON; a larger one is a failed
/// call (the upstream's work may be done: the lane says so).
pub const MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;

/// Why an upstream could not be started or listed.
///
/// ```
/// use cairnloop_gateway::upstream::UpstreamError;
///
/// assert_eq!(UpstreamError::Timeout.to_string(), "the upstream did not answer in time");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The command could not be started.
    #[error("the upstream could not be started: {0}")]
    Start(String),
    /// The upstream did not complete MCP's handshake or its listing.
    #[error("the upstream does not speak MCP as expected: {0}")]
    Protocol(String),
    /// It took longer than [`START_TIMEOUT`].
    #[error("the upstream did not answer in time")]
    Timeout,
}

/// A running upstream server, started by a command.
///
/// ```no_run
/// # async fn demo() -> Result<(), cairnloop_gateway::upstream::UpstreamError> {
/// use cairnloop_gateway::upstream::Upstream;
///
/// let upstream = Upstream::start("npx", &["-y".into(), "@modelcontextprotocol/server-filesystem".into(), "/srv".into()], &[]).await?;
/// let listing = upstream.listing().await?;
/// assert!(listing["tools"].is_array());
/// # Ok(()) }
/// ```
pub struct Upstream {
    service: RunningService<RoleClient, ()>,
}

impl Upstream {
    /// Starts `command` with `args` and `env` added to its environment, and completes
    /// MCP's handshake.
    ///
    /// # Errors
    ///
    /// The command cannot start, does not speak MCP, or takes longer than
    /// [`START_TIMEOUT`].
    ///
    /// ```
    /// # use cairnloop_gateway::upstream::{Upstream, UpstreamError};
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// let started = runtime.block_on(Upstream::start("/nonexistent/server", &[], &[]));
    /// assert!(matches!(started, Err(UpstreamError::Start(_))));
    /// ```
    pub async fn start(
        command: &str,
        args: &[String],
        env: &[(String, String)],
    ) -> Result<Arc<Self>, UpstreamError> {
        let command = tokio::process::Command::new(command).configure(|command| {
            command.args(args);
            command.envs(env.iter().map(|(name, value)| (name, value)));
            command.stderr(std::process::Stdio::null());
        });
        let transport = TokioChildProcess::new(command)
            .map_err(|error| UpstreamError::Start(error.to_string()))?;
        let service = tokio::time::timeout(START_TIMEOUT, ().serve(transport))
            .await
            .map_err(|_| UpstreamError::Timeout)?
            .map_err(|error| UpstreamError::Protocol(error.to_string()))?;
        Ok(Arc::new(Self { service }))
    }

    /// The upstream's `tools/list` answer (every page), as the JSON it sent, for
    /// [`read_listing`](crate::catalogue::read_listing).
    ///
    /// # Errors
    ///
    /// The upstream does not answer, or not in time.
    pub async fn listing(&self) -> Result<Value, UpstreamError> {
        let tools = tokio::time::timeout(START_TIMEOUT, self.service.list_all_tools())
            .await
            .map_err(|_| UpstreamError::Timeout)?
            .map_err(|error| UpstreamError::Protocol(error.to_string()))?;
        let tools = serde_json::to_value(tools)
            .map_err(|error| UpstreamError::Protocol(error.to_string()))?;
        Ok(serde_json::json!({ "tools": tools }))
    }

    /// One call of `tool` with `arguments`: the upstream's `CallToolResult` as JSON, or
    /// why it failed (an error result's text; a timeout; a result too large).
    ///
    /// # Errors
    ///
    /// [`RunError::Failed`] with the reason.
    pub async fn call(&self, tool: &str, arguments: &Value) -> Result<Value, RunError> {
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let result = tokio::time::timeout(CALL_TIMEOUT, self.service.call_tool(request))
            .await
            .map_err(|_| RunError::Failed("the upstream did not answer in time".into()))?
            .map_err(|error| RunError::Failed(format!("the upstream failed: {error}")))?;
        let result =
            serde_json::to_value(&result).map_err(|error| RunError::Output(error.to_string()))?;
        if result.to_string().len() > MAX_RESULT_BYTES {
            return Err(RunError::Failed(format!(
                "the upstream's result is larger than {MAX_RESULT_BYTES} bytes"
            )));
        }
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return Err(RunError::Failed(error_text(&result)));
        }
        Ok(result)
    }
}

/// The text of an error result, as the upstream wrote it.
fn error_text(result: &Value) -> String {
    let text: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|content| {
            content
                .iter()
                .filter_map(|item| item.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if text.is_empty() {
        "the upstream answered with an error".into()
    } else {
        text.join("\n")
    }
}

/// What forwards one offered tool's calls to its upstream.
///
/// ```no_run
/// # async fn demo(offered: &cairnloop_gateway::catalogue::Offered, upstream: std::sync::Arc<cairnloop_gateway::upstream::Upstream>) {
/// use cairnloop_gateway::upstream::ToUpstream;
///
/// let tool = offered.declare::<()>(ToUpstream::new(upstream, &offered.tool)).unwrap();
/// # }
/// ```
pub struct ToUpstream {
    upstream: Arc<Upstream>,
    tool: String,
}

impl ToUpstream {
    /// Forwards to `tool` of `upstream`.
    ///
    /// ```no_run
    /// # fn demo(upstream: std::sync::Arc<cairnloop_gateway::upstream::Upstream>) {
    /// let forward = cairnloop_gateway::upstream::ToUpstream::new(upstream, "read_text_file");
    /// # }
    /// ```
    #[must_use]
    pub fn new(upstream: Arc<Upstream>, tool: &str) -> Self {
        Self {
            upstream,
            tool: tool.to_owned(),
        }
    }
}

impl<C: ?Sized + Sync> Forward<C> for ToUpstream {
    fn forward<'a>(&'a self, arguments: &'a Value, _: &'a Actor<'a>, _: &'a C) -> RunFuture<'a> {
        // The caller's identity and token stay here: the upstream sees the arguments only.
        Box::pin(self.upstream.call(&self.tool, arguments))
    }
}
