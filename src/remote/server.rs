//! The HTTP front of the MCP server: the token, the limits and the scope challenge come
//! first; rmcp's Streamable HTTP service and the governor after.

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::limits::{HttpLimits, RateCounter};
use super::sessions::{Ownership, SessionOwners};

/// The header that names a Streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";
use super::token::{TokenError, TokenVerifier};
use crate::approvals::{ApprovalStore, Governor};
use crate::declare::{Actor, Registry};
use crate::gate::check_scopes;
use crate::mcp::{Caller, ClientApprover, FrameLimits, McpServer, RawArguments};

/// The governor's tools over MCP's Streamable HTTP transport, for callers with an
/// access token.
///
/// ```no_run
/// use std::sync::Arc;
/// use cairnloop::{Governor, Registry};
/// use cairnloop::remote::{RemoteMcp, TokenVerifier};
///
/// static TOOLS: Registry<()> = Registry::new(&[]);
///
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// let jwks = std::fs::read_to_string("jwks.json")?;
/// let verifier = TokenVerifier::new("https://auth.example", "http://127.0.0.1:8378/mcp", &jwks)?;
/// RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier)
///     .with_authorization_server("https://auth.example")
///     .serve(([127, 0, 0, 1], 8378).into())
///     .await?;
/// # Ok(())
/// # }
/// ```
pub struct RemoteMcp<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> {
    governor: Arc<Governor<C, S>>,
    context: C,
    verifier: TokenVerifier,
    authorization_servers: Vec<String>,
    limits: HttpLimits,
    approver: Option<ClientApprover>,
    origins: Vec<String>,
    hosts: Vec<String>,
    shape: Option<SessionShape<C, S>>,
}

/// What shapes each session's server (see [`RemoteMcp::with_each_session`]).
type SessionShape<C, S> = Arc<dyn Fn(McpServer<C, S>) -> McpServer<C, S> + Send + Sync>;

/// What every request's checks share.
struct Guard<C: ?Sized + 'static> {
    verifier: TokenVerifier,
    limits: HttpLimits,
    rate: RateCounter,
    sessions: SessionOwners,
    streams: Arc<Semaphore>,
    metadata_url: String,
    registry: &'static Registry<C>,
}

impl<C, S> RemoteMcp<C, S>
where
    C: Clone + Send + Sync + 'static,
    S: ApprovalStore + Send + Sync + 'static,
{
    /// The tools of `governor`, called with `context`, for tokens `verifier` accepts.
    /// No authorization server is named until one is added; the default limits; no
    /// browser origin allowed; the host `localhost`, `127.0.0.1` or `::1` only.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::remote::{RemoteMcp, TokenVerifier};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let verifier = TokenVerifier::new("https://auth", "http://127.0.0.1:8378/mcp", r#"{"keys": []}"#)?;
    /// let remote = RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier);
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    pub fn new(governor: Arc<Governor<C, S>>, context: C, verifier: TokenVerifier) -> Self {
        Self {
            governor,
            context,
            verifier,
            authorization_servers: Vec::new(),
            limits: HttpLimits::new(),
            approver: None,
            origins: Vec::new(),
            hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            shape: None,
        }
    }

    /// Names an authorization server in the protected-resource metadata.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::remote::{RemoteMcp, TokenVerifier};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # let verifier = TokenVerifier::new("https://auth", "http://127.0.0.1:8378/mcp", r#"{"keys": []}"#)?;
    /// let remote = RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier)
    ///     .with_authorization_server("https://auth");
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub fn with_authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The transport's limits.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::remote::{HttpLimits, RemoteMcp, TokenVerifier};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # let verifier = TokenVerifier::new("https://auth", "http://127.0.0.1:8378/mcp", r#"{"keys": []}"#)?;
    /// let remote = RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier)
    ///     .with_limits(HttpLimits::new().with_requests_per_minute(60));
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub const fn with_limits(mut self, limits: HttpLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Lets the person a token names (its `sub`) approve calls of the approver's tiers by
    /// answering the client's prompt. The approver's id is not used: each caller's own
    /// subject answers. Without it, every call that needs approval waits for an operator.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, RiskTier};
    /// # use cairnloop::mcp::ClientApprover;
    /// # use cairnloop::remote::{RemoteMcp, TokenVerifier};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # let verifier = TokenVerifier::new("https://auth", "http://127.0.0.1:8378/mcp", r#"{"keys": []}"#)?;
    /// let remote = RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier)
    ///     .with_client_approver(ClientApprover::new("(the token's sub)").may_approve(RiskTier::LowWrite));
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub fn with_client_approver(mut self, approver: ClientApprover) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Shapes the [`McpServer`] of each session: how long a waiting call is held open,
    /// where a person decides, and any other setting of the server.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::remote::{RemoteMcp, TokenVerifier};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # let verifier = TokenVerifier::new("https://auth", "http://127.0.0.1:8378/mcp", r#"{"keys": []}"#)?;
    /// let remote = RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier)
    ///     .with_each_session(|server| server.with_hold(Duration::from_secs(45)));
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub fn with_each_session(
        mut self,
        shape: impl Fn(McpServer<C, S>) -> McpServer<C, S> + Send + Sync + 'static,
    ) -> Self {
        self.shape = Some(Arc::new(shape));
        self
    }

    /// Browser origins allowed to call (`https://app.example:443`). None by default: a
    /// request with an `Origin` header is refused unless its origin is listed, against
    /// DNS rebinding.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::remote::{RemoteMcp, TokenVerifier};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # let verifier = TokenVerifier::new("https://auth", "http://127.0.0.1:8378/mcp", r#"{"keys": []}"#)?;
    /// let remote = RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier)
    ///     .with_allowed_origins(["http://localhost:6274"]);
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub fn with_allowed_origins<I: IntoIterator<Item = T>, T: Into<String>>(
        mut self,
        origins: I,
    ) -> Self {
        self.origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Host names the server answers to (the `Host` header); loopback names by default.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::remote::{RemoteMcp, TokenVerifier};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # let verifier = TokenVerifier::new("https://auth", "https://mcp.example/mcp", r#"{"keys": []}"#)?;
    /// let remote = RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier)
    ///     .with_allowed_hosts(["mcp.example"]);
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub fn with_allowed_hosts<I: IntoIterator<Item = T>, T: Into<String>>(
        mut self,
        hosts: I,
    ) -> Self {
        self.hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// The router: the MCP endpoint at `/mcp` and the protected-resource metadata under
    /// `/.well-known/oauth-protected-resource`. Serve it with `TCP_NODELAY` on its
    /// connections (as [`RemoteMcp::serve`] does): its answers are small and streamed,
    /// and Nagle's algorithm would hold each one back for about 40 ms.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::remote::{RemoteMcp, TokenVerifier};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # let verifier = TokenVerifier::new("https://auth", "http://127.0.0.1:8378/mcp", r#"{"keys": []}"#)?;
    /// let app: axum::Router = RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier).router();
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    pub fn router(self) -> Router {
        let resource = self.verifier.audience().to_string();
        let (origin, path) = split_resource(&resource);
        let metadata_url = format!("{origin}/.well-known/oauth-protected-resource{path}");
        let registry = self.governor.registry();
        let mut scopes: Vec<&str> = registry
            .tools()
            .iter()
            .flat_map(|entry| entry.scopes().iter().map(|scope| scope.as_str()))
            .collect();
        scopes.sort_unstable();
        scopes.dedup();
        let metadata = Arc::new(json!({
            "resource": resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "cairnloop governed tools",
        }));
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(self.hosts)
            .with_max_request_body_bytes(self.limits.max_body_bytes());
        config = if self.origins.is_empty() {
            config.enforce_origin_validation()
        } else {
            config.with_allowed_origins(self.origins)
        };
        let (governor, context, approver, shape) =
            (self.governor, self.context, self.approver, self.shape);
        let service = StreamableHttpService::new(
            move || {
                let server = McpServer::for_callers(Arc::clone(&governor), context.clone());
                let server = match &approver {
                    Some(approver) => server.with_client_approver(approver.clone()),
                    None => server,
                };
                Ok(match &shape {
                    Some(shape) => shape(server),
                    None => server,
                })
            },
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let guard = Arc::new(Guard {
            verifier: self.verifier,
            limits: self.limits,
            rate: RateCounter::default(),
            sessions: SessionOwners::default(),
            // tokio's semaphore holds at most MAX_PERMITS: a larger setting is "no limit".
            streams: Arc::new(Semaphore::new(
                self.limits.max_streams().min(Semaphore::MAX_PERMITS),
            )),
            metadata_url,
            registry,
        });
        let published = |metadata: Arc<Value>| {
            get(move || {
                let metadata = Arc::clone(&metadata);
                async move { axum::Json((*metadata).clone()) }
            })
        };
        let well_known = "/.well-known/oauth-protected-resource";
        let mut router = Router::new()
            .route_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(guard, check::<C>))
            .route(well_known, published(Arc::clone(&metadata)));
        if !path.is_empty() && path != "/mcp" {
            router = router.route(
                &format!("{well_known}{path}"),
                published(Arc::clone(&metadata)),
            );
        }
        router.route(&format!("{well_known}/mcp"), published(metadata))
    }

    /// Serves the router on `address` until the process stops.
    ///
    /// # Errors
    ///
    /// The listener's error.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::remote::{RemoteMcp, TokenVerifier};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// # let verifier = TokenVerifier::new("https://auth", "http://127.0.0.1:8378/mcp", r#"{"keys": []}"#)?;
    /// RemoteMcp::new(Arc::new(Governor::new(&TOOLS)), (), verifier)
    ///     .serve(([127, 0, 0, 1], 8378).into())
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn serve(self, address: SocketAddr) -> std::io::Result<()> {
        use axum::serve::ListenerExt as _;
        // Answers are small and streamed: Nagle's algorithm would hold each one back
        // for the client's delayed acknowledgement.
        let listener = tokio::net::TcpListener::bind(address)
            .await?
            .tap_io(|stream| {
                let _ = stream.set_nodelay(true);
            });
        axum::serve(listener, self.router()).await
    }
}

/// `https://host:port/path` → (`https://host:port`, `/path`); the path without a
/// trailing slash, empty for the root.
fn split_resource(resource: &str) -> (&str, &str) {
    let after_scheme = resource.find("://").map_or(0, |at| at + 3);
    match resource[after_scheme..].find('/') {
        Some(at) => {
            let (origin, path) = resource.split_at(after_scheme + at);
            (origin, path.trim_end_matches('/'))
        }
        None => (resource, ""),
    }
}

/// A quoted-string's content for `WWW-Authenticate`: no quote, backslash or control.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                ' '
            } else {
                c
            }
        })
        .collect()
}

fn challenge(status: StatusCode, value: &str, body: Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    if let Ok(value) = HeaderValue::from_str(value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

fn unauthorized<C: ?Sized>(guard: &Guard<C>, error: &TokenError) -> Response {
    let metadata = &guard.metadata_url;
    let value = match error {
        // RFC 6750 §3.1: a request with no token gets no error code.
        TokenError::Missing => format!("Bearer resource_metadata=\"{metadata}\""),
        other => format!(
            "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{metadata}\"",
            quoted(&other.to_string())
        ),
    };
    challenge(
        StatusCode::UNAUTHORIZED,
        &value,
        json!({"error": "invalid_token", "error_description": error.to_string()}),
    )
}

fn too_many(wait_seconds: u64, what: &str) -> Response {
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        axum::Json(json!({"error": "too_many_requests", "error_description": what})),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&wait_seconds.max(1).to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

fn bearer(headers: &HeaderMap) -> Result<&str, TokenError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(TokenError::Missing)?
        .to_str()
        .map_err(|_| TokenError::Malformed("the Authorization header is not text".into()))?;
    let (scheme, token) = value.split_once(' ').ok_or_else(|| {
        TokenError::Malformed("the Authorization header is not `Bearer <token>`".into())
    })?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(' ') {
        return Err(TokenError::Malformed(
            "the Authorization header is not `Bearer <token>`".into(),
        ));
    }
    Ok(token)
}

/// Every request to `/mcp`: the token, the rate, the open streams, the body and the
/// scope challenge; then the caller goes along to the handler.
async fn check<C: ?Sized + Sync + 'static>(
    State(guard): State<Arc<Guard<C>>>,
    request: Request,
    next: Next,
) -> Response {
    let principal = match bearer(request.headers()).and_then(|token| guard.verifier.verify(token)) {
        Ok(principal) => principal,
        Err(error) => return unauthorized(&guard, &error),
    };
    if let Err(wait) = guard.rate.admit(principal.subject(), &guard.limits) {
        return too_many(
            wait.as_secs(),
            "this token's subject is past its request rate",
        );
    }
    // A session is its opener's: another caller's token, or an id not opened here, gets
    // the answer for a session that does not exist (the client then opens its own).
    let owner = principal.actor_id();
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .map(|id| id.to_str().unwrap_or_default().to_string());
    if let Some(id) = &session {
        match guard.sessions.check(id, &owner) {
            Ownership::Owned => {}
            Ownership::Foreign | Ownership::Unknown => {
                return (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({"error": "session_not_found", "error_description":
                        "no session with this id belongs to this token's caller; start a new session"})),
                )
                    .into_response();
            }
        }
    }
    let ending = request.method() == Method::DELETE;
    let Ok(permit) = Arc::clone(&guard.streams).try_acquire_owned() else {
        return too_many(1, "the server has as many requests in progress as it takes");
    };
    let (mut parts, body) = request.into_parts();
    let body = if parts.method == Method::POST {
        let limit = guard.limits.max_body_bytes();
        let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                axum::Json(json!({"error": "payload_too_large", "error_description":
                    format!("the body is larger than {limit} bytes; nothing was done")})),
            )
                .into_response();
        };
        let frame_limits = FrameLimits::new()
            .with_max_line_bytes(limit)
            .with_max_depth(guard.limits.max_depth());
        match crate::mcp::judge(&bytes, &frame_limits) {
            crate::mcp::Frame::Reply(error) => {
                return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
            }
            crate::mcp::Frame::Skip(why) => {
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": "invalid_request", "error_description":
                        why.unwrap_or_else(|| "an empty body".into())})),
                )
                    .into_response();
            }
            crate::mcp::Frame::Message(message) => {
                if let ClientJsonRpcMessage::Request(request) = &message
                    && let ClientRequest::CallToolRequest(call) = &request.request
                {
                    if let Some(entry) = guard.registry.get(&call.params.name) {
                        let granted: Vec<&str> =
                            principal.scopes().iter().map(String::as_str).collect();
                        if let Err(missing) =
                            check_scopes(entry.scopes(), &Actor::new("", &granted))
                        {
                            let needed: Vec<&str> =
                                entry.scopes().iter().map(|scope| scope.as_str()).collect();
                            let needed = needed.join(" ");
                            return challenge(
                                StatusCode::FORBIDDEN,
                                &format!(
                                    "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"{}\"",
                                    quoted(&needed),
                                    guard.metadata_url,
                                    quoted(&format!("missing scope: {missing}"))
                                ),
                                json!({"error": "insufficient_scope", "scope": needed,
                                       "error_description": format!("missing scope: {missing}")}),
                            );
                        }
                    }
                    if let Some(raw) = call.extensions.get::<RawArguments>() {
                        parts.extensions.insert(raw.clone());
                    }
                }
            }
        }
        Body::from(bytes)
    } else {
        body
    };
    let mut caller = Caller::new(principal.actor_id(), principal.scopes().iter().cloned())
        .with_person(principal.subject());
    if let Some(account) = principal.account() {
        caller = caller.with_account(account);
    }
    parts.extensions.insert(caller);
    let response = next.run(Request::from_parts(parts, body)).await;
    match (&session, response.headers().get(SESSION_HEADER)) {
        (None, Some(opened)) => {
            if let Ok(opened) = opened.to_str() {
                guard.sessions.opened(opened, &owner);
            }
        }
        (Some(id), _) if ending && response.status().is_success() => guard.sessions.ended(id),
        _ => {}
    }
    // The permit is held while the answer streams.
    response.map(|body| {
        use http_body_util::BodyExt as _;
        Body::new(body.map_frame(move |frame| {
            let _held = &permit;
            frame
        }))
    })
}
