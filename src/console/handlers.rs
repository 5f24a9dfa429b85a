//! The routes: who is asking, whether their form is genuine, and what the governor says.

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;

use axum::Form;
use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequestParts, Path, Query, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::approvals::{
    ApprovalError, ApprovalLane, ApprovalStore, AuditRecord, LaneQuery, Reconciliation,
};
use crate::declare::IdempotencyKey;
use crate::gate::LaneState;

use super::Inner;
use super::config::{Accounts, Credential, Operator};
use super::events::LaneEvents;
use super::pages::{self, AuditFilter, QUEUE_COUNT_CAP, QUEUE_PAGE, QueueFilter};
use super::session::{self, Lookup};

type Shared<C, S> = Arc<Inner<C, S>>;

/// What every route asks of the host's context: shared across the server's tasks.
pub(super) trait Host: Send + Sync + 'static {}
impl<T: ?Sized + Send + Sync + 'static> Host for T {}

/// What every route asks of the store.
pub(super) trait Store: ApprovalStore + Send + Sync + 'static {}
impl<T: ApprovalStore + Send + Sync + 'static> Store for T {}

/// The largest form body accepted (a reason or a note is a line, not a file).
const MAX_FORM_BYTES: usize = 64 * 1024;

pub(super) fn router<C: ?Sized + Host, S: Store>(inner: Shared<C, S>) -> Router {
    let router = Router::new()
        .route("/", get(|| async { Redirect::to("/queue") }))
        .route("/login", get(login_page::<C, S>).post(login::<C, S>))
        .route("/logout", post(logout::<C, S>))
        .route("/queue", get(queue::<C, S>))
        .route("/queue/rows", get(queue_rows::<C, S>))
        .route("/events", get(lane_events::<C, S>))
        .route("/proposals/{key}", get(proposal::<C, S>))
        .route("/proposals/{key}/input.json", get(proposal_input::<C, S>))
        .route("/proposals/{key}/decide", post(decide::<C, S>))
        .route("/proposals/{key}/reconcile", post(reconcile::<C, S>))
        .route("/reconcile", get(reconcile_page::<C, S>))
        .route("/audit", get(audit::<C, S>))
        .route("/audit.jsonl", get(audit_export::<C, S>))
        .route("/assets/console.css", get(stylesheet))
        .route("/assets/console.js", get(script));
    #[cfg(feature = "slack")]
    let router = router.route("/slack/actions", post(super::slack::actions::<C, S>));
    router
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .layer(axum::middleware::from_fn(same_origin_writes))
        .layer(axum::middleware::map_response(security_headers))
        .layer(axum::middleware::from_fn(mounted))
        .with_state(inner)
}

/// The largest page the mount rewriting reads (a page shows at most 2,000 characters of
/// any one value, so pages stay far below it).
const MAX_PAGE_BYTES: usize = 8 << 20;

/// The pages link from the console's root (`/queue`, `/proposals/...`). Nested in a host's
/// router (at `/approvals`, say), the console finds where from the request, and puts that
/// path before its own links and redirects. Only the console's own attributes are
/// rewritten: text from a model is escaped, so it cannot spell `href="/`.
async fn mounted(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let base = request
        .extensions()
        .get::<axum::extract::OriginalUri>()
        .and_then(|original| {
            original
                .path()
                .strip_suffix(request.uri().path())
                .map(|base| base.trim_end_matches('/').to_string())
        })
        .unwrap_or_default();
    let response = next.run(request).await;
    if base.is_empty() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    if let Some(location) = parts
        .headers
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        && location.starts_with('/')
        && let Ok(value) = HeaderValue::from_str(&format!("{base}{location}"))
    {
        parts.headers.insert(header::LOCATION, value);
    }
    let html = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|kind| kind.starts_with("text/html"));
    if !html {
        return Response::from_parts(parts, body);
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_PAGE_BYTES).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    for attribute in ["href", "src", "action", "data-refresh", "data-events"] {
        text = text.replace(
            &format!("{attribute}=\"/"),
            &format!("{attribute}=\"{base}/"),
        );
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(text))
}

/// A second line behind the form tokens: a request that changes state (any method but
/// `GET` and `HEAD`) is refused when the browser says it comes from another site
/// (`Sec-Fetch-Site`), or names an `Origin` whose host is not the one it was sent to. A
/// client that sends neither (not a browser) still needs a valid form token.
async fn same_origin_writes(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if !matches!(*request.method(), Method::GET | Method::HEAD)
        && let Some(why) = cross_site(request.headers())
    {
        return pages::refusal(
            StatusCode::FORBIDDEN,
            "Refused: another site",
            &format!("Nothing was changed: {why}. Use the console's own pages."),
            None,
        );
    }
    next.run(request).await
}

/// Why the headers show a request from another site, if they do. A browser that sends
/// `Sec-Fetch-Site` (every current one) is taken at its word; otherwise `Origin`, when
/// present, must name the host the request was sent to (`null`, an opaque origin, never
/// does).
fn cross_site(headers: &HeaderMap) -> Option<&'static str> {
    let text = |name| headers.get(name).map(|value: &HeaderValue| value.to_str());
    match text("sec-fetch-site") {
        Some(Ok("same-origin")) => return None,
        Some(_) => return Some("the browser says this form came from another site"),
        None => {}
    }
    // No `Origin` (not a browser): the token decides.
    let origin = text(header::ORIGIN.as_str())?;
    let host = text(header::HOST.as_str()).and_then(Result::ok);
    // `Origin` is `scheme://host[:port]`.
    let origin_host = origin
        .ok()
        .and_then(|origin| origin.split_once("://"))
        .map(|(_, host)| host);
    match (origin_host, host) {
        (Some(origin), Some(host)) if origin.eq_ignore_ascii_case(host) => None,
        _ => Some("the request's origin is not this console"),
    }
}

/// On every answer: no inline script, no framing, no sniffing, no caching, no referrer
/// to another site.
async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let mut set = |name: &'static str, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    set("x-content-type-options", "nosniff");
    set("x-frame-options", "DENY");
    // Same-origin requests keep their origin (a form post then says where it came
    // from); nothing is sent to another site.
    set("referrer-policy", "same-origin");
    set("cache-control", "no-store");
    response
}

/// The client's address, when the server was started with connection info.
struct ClientAddress(Option<SocketAddr>);

impl<St: Send + Sync> FromRequestParts<St> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &St) -> Result<Self, Self::Rejection> {
        Ok(Self(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|info| info.0),
        ))
    }
}

/// A signed-in operator, their session, and the cookie to set if the session is new.
struct Signed {
    operator: Operator,
    session: String,
    cookie: Option<HeaderValue>,
}

/// A page or form is let in only for a signed-in operator: a page is sent to the sign-in
/// form, a post is answered plainly, and nothing it asked for is done.
impl<C, S> FromRequestParts<Shared<C, S>> for Signed
where
    C: ?Sized + Send + Sync + 'static,
    S: Send + Sync + 'static,
{
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        inner: &Shared<C, S>,
    ) -> Result<Self, Self::Rejection> {
        inner
            .signed_in(&parts.headers)
            .map_err(|refused| refused.response(&parts.method))
    }
}

impl Signed {
    /// `response` with the session cookie, when there is a new one to set.
    fn with_cookie(&self, mut response: Response) -> Response {
        if let Some(cookie) = &self.cookie {
            response
                .headers_mut()
                .append(header::SET_COOKIE, cookie.clone());
        }
        response
    }

    fn token<C: ?Sized, S>(&self, inner: &Inner<C, S>) -> String {
        inner
            .sessions
            .issue_token(&self.session)
            .unwrap_or_default()
    }
}

fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(session::COOKIE)?.strip_prefix('='))
}

fn cookie_for<C: ?Sized, S>(inner: &Inner<C, S>, id: &str) -> Option<HeaderValue> {
    let secure = if inner.config.secure_cookie {
        "; Secure"
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        "{}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        session::COOKIE,
        inner.config.session_ttl.as_secs()
    ))
    .ok()
}

/// Why a request is not let in.
enum Refused {
    /// No session, or one before sign-in.
    SignIn,
    /// The session ran out.
    Expired,
    /// The trusted header names nobody configured.
    NotAnOperator,
}

impl Refused {
    /// A page is sent to the sign-in form; a form post is answered plainly, and
    /// nothing it asked for is done.
    fn response(self, method: &Method) -> Response {
        match (self, method == Method::GET) {
            (Self::NotAnOperator, _) => pages::refusal(
                StatusCode::FORBIDDEN,
                "Not an operator",
                "The name your sign-in proxy gave is not an operator of this console.",
                None,
            ),
            (Self::Expired, true) => Redirect::to("/login?expired=1").into_response(),
            (Self::SignIn, true) => Redirect::to("/login").into_response(),
            (Self::Expired, false) => pages::refusal(
                StatusCode::UNAUTHORIZED,
                "Session expired",
                "Your session expired, so nothing was changed. Sign in again and retry.",
                None,
            ),
            (Self::SignIn, false) => pages::refusal(
                StatusCode::UNAUTHORIZED,
                "Not signed in",
                "Sign in first; nothing was changed.",
                None,
            ),
        }
    }
}

impl<C: ?Sized, S> Inner<C, S> {
    fn signed_in(&self, headers: &HeaderMap) -> Result<Signed, Refused> {
        let cookie = session_cookie(headers);
        let current = cookie.map(|id| (id, self.sessions.lookup(id)));
        if let Some(header) = &self.config.trusted_header
            && let Some(name) = headers.get(header.as_str()).and_then(|v| v.to_str().ok())
        {
            let operator = self.config.operator(name).ok_or(Refused::NotAnOperator)?;
            if let Some((id, Lookup::SignedIn(who))) = &current
                && who == operator.id()
            {
                return Ok(Signed {
                    operator: operator.clone(),
                    session: (*id).to_string(),
                    cookie: None,
                });
            }
            let id = self
                .sessions
                .open(Some(operator.id()), self.config.session_ttl)
                .ok_or(Refused::SignIn)?;
            return Ok(Signed {
                operator: operator.clone(),
                cookie: cookie_for(self, &id),
                session: id,
            });
        }
        match current {
            Some((id, Lookup::SignedIn(who))) => match self.config.operator(&who) {
                Some(operator) => Ok(Signed {
                    operator: operator.clone(),
                    session: id.to_string(),
                    cookie: None,
                }),
                // Removed from the configuration since signing in.
                None => Err(Refused::SignIn),
            },
            Some((_, Lookup::Expired)) => Err(Refused::Expired),
            Some((_, Lookup::Anonymous)) | None => Err(Refused::SignIn),
        }
    }

    /// The lane with this key, if it exists and the operator may see it.
    async fn visible_lane(&self, key: &str, operator: &Operator) -> Option<ApprovalLane>
    where
        C: Send + Sync,
        S: ApprovalStore,
    {
        let key = IdempotencyKey::from_str(key).ok()?;
        let lane = self.governor.lane(&key).await.ok()?;
        operator
            .accounts()
            .includes(lane.proposal().account_id())
            .then_some(lane)
    }
}

fn store_failure(error: &ApprovalError) -> Response {
    pages::refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        "The store did not answer",
        &format!("Nothing was changed. The store said: {error}"),
        None,
    )
}

/// Runs to settle shown at once, per state, the newest first (each one settled leaves
/// room for the next).
const RECONCILE_PAGE: usize = 200;

/// A queue address whose filters or position do not parse.
fn bad_page(operator: Option<&str>) -> Response {
    pages::refusal(
        StatusCode::BAD_REQUEST,
        "No such page",
        "A filter or the page's position is not one the queue knows. Open the queue again \
         and use its own links.",
        operator,
    )
}

fn not_found(operator: &Operator) -> Response {
    pages::refusal(
        StatusCode::NOT_FOUND,
        "No such proposal",
        "There is no proposal with this key that you may see.",
        Some(operator.id()),
    )
}

// ---------------------------------------------------------------------------------------
// Sign-in

#[derive(Deserialize)]
struct LoginQuery {
    expired: Option<u8>,
}

async fn login_page<C: ?Sized + Send + Sync + 'static, S: Send + Sync + 'static>(
    State(inner): State<Shared<C, S>>,
    Query(query): Query<LoginQuery>,
) -> Response {
    // The sign-in form has a session of its own, so that its post carries a token too.
    let Some(id) = inner.sessions.open(None, inner.config.session_ttl) else {
        return pages::refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "No randomness",
            "The console could not make a session id.",
            None,
        );
    };
    let token = inner.sessions.issue_token(&id).unwrap_or_default();
    let note = query
        .expired
        .map(|_| "Your session expired. Sign in again.");
    let mut response = pages::login(&token, note, StatusCode::OK);
    if let Some(cookie) = cookie_for(&inner, &id) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    operator: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrf: String,
}

async fn login<C: ?Sized + Send + Sync + 'static, S: Send + Sync + 'static>(
    State(inner): State<Shared<C, S>>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let session = session_cookie(&headers).unwrap_or_default().to_string();
    if !inner.sessions.use_token(&session, &form.csrf) {
        return pages::refusal(
            StatusCode::FORBIDDEN,
            "Form expired",
            "This sign-in form is no longer valid. Open the sign-in page again.",
            None,
        );
    }
    let mut keys = vec![format!("id:{}", form.operator)];
    if let Some(address) = address {
        keys.push(format!("ip:{}", address.ip()));
    }
    let (attempts, window) = (inner.config.login_attempts, inner.config.login_window);
    if let Some(wait) = inner.limiter.blocked(&keys, attempts, window) {
        let mut response = pages::refusal(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many attempts",
            "Too many failed sign-ins. Wait a minute and try again.",
            None,
        );
        let seconds = wait.as_secs().max(1).to_string();
        if let Ok(value) = HeaderValue::from_str(&seconds) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let operator = inner.config.operator(&form.operator).cloned();
    let password = form.password;
    // Argon2 takes tens of milliseconds on purpose: off the async threads. An unknown
    // name costs the same verification as a known one.
    let accepted = tokio::task::spawn_blocking(move || {
        let proven = Credential::sign_in(operator.as_ref().map(Operator::credential), &password);
        operator.filter(|_| proven)
    })
    .await
    .ok()
    .flatten();
    let Some(operator) = accepted else {
        inner.limiter.failed(&keys, window);
        let token = inner.sessions.issue_token(&session).unwrap_or_default();
        return pages::login(
            &token,
            Some("That name and password or token do not match an operator."),
            StatusCode::UNAUTHORIZED,
        );
    };
    inner.limiter.succeeded(&keys[..1]);
    // A new session id at sign-in: one fixed before it is worth nothing after.
    inner.sessions.close(&session);
    let Some(id) = inner
        .sessions
        .open(Some(operator.id()), inner.config.session_ttl)
    else {
        return pages::refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "No randomness",
            "The console could not make a session id.",
            None,
        );
    };
    let mut response = Redirect::to("/queue").into_response();
    if let Some(cookie) = cookie_for(&inner, &id) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

#[derive(Deserialize)]
struct TokenForm {
    #[serde(default)]
    csrf: String,
}

async fn logout<C: ?Sized + Send + Sync + 'static, S: Send + Sync + 'static>(
    State(inner): State<Shared<C, S>>,
    signed: Signed,
    Form(form): Form<TokenForm>,
) -> Response {
    if !inner.sessions.use_token(&signed.session, &form.csrf) {
        return pages::bad_token(Some(signed.operator.id()));
    }
    inner.sessions.close(&signed.session);
    Redirect::to("/login").into_response()
}

// ---------------------------------------------------------------------------------------
// Queue

/// A page of the operator's queue under `query`, and whether older rows follow.
async fn queue_page<C: ?Sized + Host, S: Store>(
    inner: &Inner<C, S>,
    query: &LaneQuery,
) -> Result<(Vec<ApprovalLane>, bool), ApprovalError> {
    // One row more than the page tells whether an "Older" link leads anywhere.
    let mut lanes = inner.governor.query_lanes(query, QUEUE_PAGE + 1).await?;
    let older = lanes.len() > QUEUE_PAGE;
    lanes.truncate(QUEUE_PAGE);
    Ok((lanes, older))
}

async fn queue<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Signed,
    Query(filter): Query<QueueFilter>,
) -> Response {
    let Some(query) = filter.query(&signed.operator) else {
        return bad_page(Some(signed.operator.id()));
    };
    let counted = inner
        .governor
        .count_lanes(&query, QUEUE_COUNT_CAP + 1)
        .await;
    match (queue_page(&inner, &query).await, counted) {
        (Ok((lanes, older)), Ok(waiting)) => {
            let token = signed.token(&inner);
            let tools: Vec<&str> = inner
                .governor
                .registry()
                .tools()
                .iter()
                .map(|entry| entry.spec().name())
                .collect();
            signed.with_cookie(pages::queue(&pages::QueueView {
                operator: signed.operator.id(),
                logout_token: &token,
                filter: &filter,
                tools: &tools,
                lanes: &lanes,
                older,
                waiting,
                now: inner.governor.now().ok(),
            }))
        }
        (Err(error), _) | (_, Err(error)) => store_failure(&error),
    }
}

async fn queue_rows<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Result<Signed, Response>,
    Query(filter): Query<QueueFilter>,
) -> Response {
    // The script sees a status, not the sign-in page.
    let Ok(signed) = signed else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let Some(query) = filter.query(&signed.operator) else {
        return bad_page(Some(signed.operator.id()));
    };
    match queue_page(&inner, &query).await {
        Ok((lanes, _)) => pages::queue_rows_fragment(&lanes, inner.governor.now().ok()),
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

/// Server-sent events: "the lanes changed", for an open queue to fetch its rows again.
/// 401 without a session (as the rows); 204 when the store cannot be watched or every
/// stream is taken, which tells a browser not to reconnect: the page then polls.
async fn lane_events<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Result<Signed, Response>,
) -> Response {
    let Ok(signed) = signed else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let (Some(watch), Some(slot)) = (inner.governor.watch(), inner.streams.take()) else {
        return StatusCode::NO_CONTENT.into_response();
    };
    let (sessions, id) = (Arc::clone(&inner), signed.session);
    let session_stands = move || matches!(sessions.sessions.lookup(&id), Lookup::SignedIn(_));
    let mut response = Sse::new(LaneEvents::new(watch, slot, session_stands))
        .keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)))
        .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

// ---------------------------------------------------------------------------------------
// One proposal

/// The lane's moves, oldest first, from the event log.
async fn history<C: ?Sized + Host, S: Store>(
    inner: &Inner<C, S>,
    key: IdempotencyKey,
) -> Vec<AuditRecord> {
    let mut found = Vec::new();
    let mut after = 0;
    while let Ok(page) = inner.governor.audit_log(after, 1_000).await {
        let Some((last, _)) = page.last() else { break };
        after = *last;
        let full = page.len() == 1_000;
        found.extend(
            page.into_iter()
                .map(|(_, record)| record)
                .filter(|record| match record {
                    AuditRecord::Transition(event) => event.key == key,
                    AuditRecord::Decision(event) => event.idempotency_key == Some(key),
                    AuditRecord::Notice(event) => event.key == key,
                    AuditRecord::Refusal(event) => event.key == Some(key),
                }),
        );
        if !full {
            break;
        }
    }
    found
}

async fn proposal<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Signed,
    Path(key): Path<String>,
) -> Response {
    let Some(lane) = inner.visible_lane(&key, &signed.operator).await else {
        return not_found(&signed.operator);
    };
    let entry = inner.governor.registry().get(lane.proposal().tool());
    let custom = entry.and_then(|entry| entry.custom_ui());
    let view = custom.and_then(|name| inner.renderers.get(name).map(|render| render(&lane)));
    let schema = entry.and_then(|entry| entry.input_schema());
    let history = history(&inner, lane.key()).await;
    let tokens = [
        signed.token(&inner),
        signed.token(&inner),
        signed.token(&inner),
        signed.token(&inner),
    ];
    let decidable = decidable(&inner, &signed.operator, &lane);
    signed.with_cookie(pages::proposal(&pages::ProposalView {
        operator: signed.operator.id(),
        decidable,
        lane: &lane,
        schema: schema.as_ref(),
        custom,
        view: view.as_ref(),
        history: &history,
        tokens: &tokens,
        now: inner.governor.now().ok(),
        edits: inner.edits.is_some(),
    }))
}

/// Why the operator may not move this lane, if they may not: deciding a call and
/// settling what became of it are one authority, the tier right.
fn not_their_tier(operator: &Operator, lane: &ApprovalLane) -> Option<String> {
    let tier = lane.proposal().risk_tier();
    (!operator.may_decide(tier)).then(|| {
        format!(
            "You may not decide or settle {} calls; another operator does.",
            tier.as_str()
        )
    })
}

/// What the signed-in operator may do with a pending lane: the page shows only the
/// decisions that would be accepted, and says why the others are not there.
fn decidable<C: ?Sized + Sync + 'static, S: ApprovalStore>(
    inner: &Inner<C, S>,
    operator: &Operator,
    lane: &ApprovalLane,
) -> pages::Decidable {
    let proposal = lane.proposal();
    if let Some(why) = not_their_tier(operator, lane) {
        return pages::Decidable::Nothing(why);
    }
    if !inner.governor.config().allows_self_approval()
        && crate::approvals::same_person(operator.id(), proposal.actor_id())
    {
        return pages::Decidable::AllButApproval(
            "You proposed this call, so someone else must approve it; you may reject or \
             defer it."
                .to_string(),
        );
    }
    if lane
        .approvals()
        .iter()
        .any(|given| crate::approvals::same_person(given.by(), operator.id()))
    {
        return pages::Decidable::AllButApproval(format!(
            "You have approved this call; it needs {} different people to approve it. You may \
             still reject or defer it.",
            lane.quorum()
        ));
    }
    pages::Decidable::Everything
}

async fn proposal_input<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Signed,
    Path(key): Path<String>,
) -> Response {
    let Some(lane) = inner.visible_lane(&key, &signed.operator).await else {
        return not_found(&signed.operator);
    };
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"input.json\"",
            ),
        ],
        lane.proposal().input().to_string(),
    )
        .into_response()
}

/// What every form that moves a lane passes first: a genuine single-use token, a lane
/// the operator may see, the tier right to move it, and a page made from the lane as it
/// is now.
async fn checked_form<C: ?Sized + Host, S: Store>(
    inner: &Inner<C, S>,
    signed: Signed,
    key: &str,
    csrf: &str,
    version: &str,
) -> Result<(Signed, ApprovalLane), Response> {
    if !inner.sessions.use_token(&signed.session, csrf) {
        return Err(pages::bad_token(Some(signed.operator.id())));
    }
    let Some(lane) = inner.visible_lane(key, &signed.operator).await else {
        return Err(not_found(&signed.operator));
    };
    if let Some(why) = not_their_tier(&signed.operator, &lane) {
        return Err(pages::refusal_with_link(
            StatusCode::FORBIDDEN,
            "Not your tier",
            &format!("{why} Nothing was changed."),
            Some(signed.operator.id()),
            key,
        ));
    }
    if version != lane.version().to_string() {
        return Err(pages::stale(signed.operator.id(), &lane));
    }
    Ok((signed, lane))
}

#[derive(Deserialize)]
struct DecisionForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    decision: String,
    #[serde(default)]
    reason: String,
    /// The changed arguments, as JSON, of an approval with changes.
    #[serde(default)]
    arguments: String,
}

/// A form that asked for something the console does not do, or left out what it needs.
fn unprocessable(title: &str, message: &str, operator: &str, key: &str) -> Response {
    pages::refusal_with_link(
        StatusCode::UNPROCESSABLE_ENTITY,
        title,
        message,
        Some(operator),
        key,
    )
}

/// What an error of the governor means to the person who asked.
fn refused_decision(error: &ApprovalError, operator: &str, key: &str) -> Response {
    let (status, title) = match error {
        ApprovalError::SelfApproval => (StatusCode::FORBIDDEN, "Four eyes"),
        ApprovalError::ApprovedAlready { .. } => (StatusCode::CONFLICT, "Approved already"),
        ApprovalError::EditRefused(_) | ApprovalError::EditUnchanged => {
            (StatusCode::UNPROCESSABLE_ENTITY, "Change refused")
        }
        ApprovalError::EditOutsideRights(_) => (StatusCode::FORBIDDEN, "Not your tier"),
        ApprovalError::ReasonRequired(_) | ApprovalError::MissingDecider => {
            (StatusCode::UNPROCESSABLE_ENTITY, "Reason required")
        }
        ApprovalError::Expired => (StatusCode::CONFLICT, "Expired"),
        ApprovalError::Transition(_) => (StatusCode::CONFLICT, "Already decided"),
        _ => (StatusCode::SERVICE_UNAVAILABLE, "Not applied"),
    };
    let message = match error {
        ApprovalError::SelfApproval => {
            "You proposed this call, so someone else must approve it. Nothing was changed."
                .to_string()
        }
        ApprovalError::ApprovedAlready { of } => format!(
            "You have approved this call already; it needs {of} different people. Nothing was changed."
        ),
        other => format!("Nothing was changed: {other}."),
    };
    pages::refusal_with_link(status, title, &message, Some(operator), key)
}

async fn decide<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Signed,
    Path(key): Path<String>,
    Form(form): Form<DecisionForm>,
) -> Response {
    let (signed, lane) = match checked_form(&inner, signed, &key, &form.csrf, &form.version).await {
        Ok(checked) => checked,
        Err(refused) => return refused,
    };
    let operator = signed.operator.id();
    let reason = form.reason.trim();
    let decided = match form.decision.as_str() {
        "approve" => inner.governor.approve(&lane.key(), operator).await,
        "reject" | "defer" if reason.is_empty() => {
            return unprocessable(
                "Reason required",
                "A rejection or a deferral needs a reason. Nothing was changed.",
                operator,
                &key,
            );
        }
        "reject" => inner.governor.reject(&lane.key(), operator, reason).await,
        "defer" => inner.governor.defer(&lane.key(), operator, reason).await,
        "approve_with_changes" if inner.edits.is_some() => {
            let context = inner.edits.as_deref().expect("checked just above");
            let rights = &signed.operator;
            (inner.governor)
                .approve_with_changes(&lane.key(), operator, &form.arguments, context, |tier| {
                    rights.may_decide(tier)
                })
                .await
        }
        _ => {
            return unprocessable(
                "Unknown decision",
                "Choose approve, reject or defer. Nothing was changed.",
                operator,
                &key,
            );
        }
    };
    match decided {
        // Approved with changes: the changed call's page.
        Ok(decided) => Redirect::to(&format!("/proposals/{}", decided.key())).into_response(),
        Err(error) => refused_decision(&error, operator, &key),
    }
}

// ---------------------------------------------------------------------------------------
// Reconciliation

async fn reconcile_page<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Signed,
) -> Response {
    let mut lanes = Vec::new();
    for state in [LaneState::Interrupted, LaneState::OutcomeUnknown] {
        let mut query = LaneQuery::new(state);
        if let Accounts::Only(accounts) = signed.operator.accounts() {
            query = query.accounts(accounts.iter().map(String::as_str));
        }
        match inner.governor.query_lanes(&query, RECONCILE_PAGE).await {
            Ok(found) => lanes.extend(found),
            Err(error) => return store_failure(&error),
        }
    }
    // A lane of a tier the operator may not settle is listed with the reason, no form.
    let settle: Vec<Result<String, String>> = lanes
        .iter()
        .map(|lane| match not_their_tier(&signed.operator, lane) {
            Some(why) => Err(why),
            None => Ok(signed.token(&inner)),
        })
        .collect();
    signed.with_cookie(pages::reconcile(signed.operator.id(), &lanes, &settle))
}

#[derive(Deserialize)]
struct ReconcileForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    resolution: String,
    #[serde(default)]
    note: String,
}

async fn reconcile<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Signed,
    Path(key): Path<String>,
    Form(form): Form<ReconcileForm>,
) -> Response {
    let (signed, lane) = match checked_form(&inner, signed, &key, &form.csrf, &form.version).await {
        Ok(checked) => checked,
        Err(refused) => return refused,
    };
    let operator = signed.operator.id();
    let resolution = match form.resolution.as_str() {
        "executed" => Reconciliation::Executed,
        "failed" => Reconciliation::Failed,
        "closed" => Reconciliation::Closed,
        _ => {
            return unprocessable(
                "Unknown resolution",
                "Mark it executed, failed or closed. Nothing was changed.",
                operator,
                &key,
            );
        }
    };
    match inner
        .governor
        .reconcile(&lane.key(), operator, resolution, form.note.trim())
        .await
    {
        Ok(_) => Redirect::to("/reconcile").into_response(),
        Err(error) => refused_decision(&error, operator, &key),
    }
}

// ---------------------------------------------------------------------------------------
// Audit

/// Records shown on one audit page.
const AUDIT_PAGE: usize = 50;

/// Up to `limit` records after `after` that the filter and the operator's accounts admit;
/// and whether more may follow.
async fn audit_records<C: ?Sized + Host, S: Store>(
    inner: &Inner<C, S>,
    operator: &Operator,
    filter: &AuditFilter,
    limit: usize,
) -> Result<(Vec<(u64, AuditRecord)>, bool), ApprovalError> {
    let mut found = Vec::new();
    let mut after = filter.after.unwrap_or(0);
    loop {
        let page = inner.governor.audit_log(after, 1_000).await?;
        let Some((last, _)) = page.last() else {
            return Ok((found, false));
        };
        after = *last;
        let full = page.len() == 1_000;
        for (seq, record) in page {
            let account = match &record {
                AuditRecord::Decision(event) => event.account_id.as_deref(),
                AuditRecord::Transition(event) => event.account_id.as_deref(),
                AuditRecord::Notice(event) => event.account_id.as_deref(),
                AuditRecord::Refusal(event) => event.account_id.as_deref(),
            };
            if operator.accounts().includes(account) && filter.admits(&record) {
                if found.len() == limit {
                    return Ok((found, true));
                }
                found.push((seq, record));
            }
        }
        if !full {
            return Ok((found, false));
        }
    }
}

async fn audit<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Signed,
    Query(filter): Query<AuditFilter>,
) -> Response {
    match audit_records(&inner, &signed.operator, &filter, AUDIT_PAGE).await {
        Ok((records, more)) => {
            signed.with_cookie(pages::audit(signed.operator.id(), &filter, &records, more))
        }
        Err(error) => store_failure(&error),
    }
}

async fn audit_export<C: ?Sized + Host, S: Store>(
    State(inner): State<Shared<C, S>>,
    signed: Signed,
    Query(filter): Query<AuditFilter>,
) -> Response {
    match audit_records(&inner, &signed.operator, &filter, usize::MAX).await {
        Ok((records, _)) => {
            let mut body = String::new();
            for (seq, record) in &records {
                let line = serde_json::json!({ "seq": seq, "record": record });
                body.push_str(&line.to_string());
                body.push('\n');
            }
            (
                [
                    (header::CONTENT_TYPE, "application/x-ndjson"),
                    (
                        header::CONTENT_DISPOSITION,
                        "attachment; filename=\"audit.jsonl\"",
                    ),
                ],
                body,
            )
                .into_response()
        }
        Err(error) => store_failure(&error),
    }
}

// ---------------------------------------------------------------------------------------
// Assets

async fn stylesheet() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("assets/console.css"),
    )
        .into_response()
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("assets/console.js"),
    )
        .into_response()
}
