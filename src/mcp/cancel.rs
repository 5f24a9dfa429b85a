//! The cancellation of the MCP request a tool call runs for (`notifications/cancelled`
//! from the client), where the tool's own code can see it: a tool that forwards the call
//! elsewhere passes the cancellation on.

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tokio_util::sync::CancellationToken;

tokio::task_local! {
    /// The running request's token, set by the server around each `tools/call`.
    static REQUEST: CancellationToken;
}

/// Resolves once the client has cancelled the MCP request whose `tools/call` is running
/// on this task; never, outside such a request (a call through the governor directly,
/// a test). The governor still records the call's outcome as the tool reports it: a tool
/// that stops early says so in its result, or reports its outcome as unknown.
///
/// ```
/// # async fn demo() {
/// use cairnloop::mcp::request_cancelled;
///
/// tokio::select! {
///     _ = request_cancelled() => { /* tell whoever does the work to stop */ }
///     _ = tokio::time::sleep(std::time::Duration::from_millis(1)) => {}
/// }
/// # }
/// ```
pub async fn request_cancelled() {
    match REQUEST.try_with(CancellationToken::clone) {
        Ok(token) => token.cancelled().await,
        Err(_) => core::future::pending().await,
    }
}

/// Runs `future` with the cancellation of the request `context` answers visible to it.
pub(crate) async fn within<F: Future>(
    context: &RequestContext<RoleServer>,
    future: F,
) -> F::Output {
    REQUEST.scope(context.ct.clone(), future).await
}

/// Runs `future` with `token` as its request's cancellation: a call the transport answers
/// itself, whose client may cancel it as any other.
pub(crate) async fn within_token<F: Future>(token: CancellationToken, future: F) -> F::Output {
    REQUEST.scope(token, future).await
}
