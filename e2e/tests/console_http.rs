//! The approval console's security rules, over HTTP (no browser): sign-in, sessions,
//! single-use form tokens, escaping, accounts, four eyes, stale pages, expiry and
//! reconciliation. Each refused request is checked to leave the store as it was.

use std::sync::Arc;
use std::time::Duration;

#[macro_use]
#[path = "../../tests/fixtures/plain_tool.rs"]
mod plain_tool;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use cairnloop::approvals::{ApprovalConfig, ManualClock, MemoryStore};
use cairnloop::console::{Accounts, Console, ConsoleConfig, Credential, Operator, Rendered};
use cairnloop::declare::InputLimits;
use cairnloop::gate::{LaneState, Timestamp, Ttl};
use cairnloop::{
    Actor, Governance, Governor, IdempotencyKey, InputErrors, Invocation, Outcome, PolicyDenial,
    Registry, RiskTier, Scope, Tool, ToolCall, ToolEntry, ToolSpec,
};
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use tower::ServiceExt;

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Message {
    /// Who gets it.
    to: String,
    body: String,
    #[serde(default)]
    api_key: Option<String>,
}

plain_tool!(SendMessage(Message) -> Result<(), String>, (),
    ToolSpec::new("send_message", "Send a message", "Sends a message to a customer.", RiskTier::LowWrite),
    ["messages:write"],
    |call| { Ok(()) }
);

/// A tool with a view of its own, and a run that never finishes (to leave a lane
/// interrupted when its future is dropped).
struct Wire;

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Transfer {
    cents: u64,
}

impl Tool for Wire {
    const SPEC: ToolSpec = ToolSpec::new(
        "wire",
        "Wire money",
        "Sends a bank transfer.",
        RiskTier::HighWrite,
    );
    const SCOPES: &'static [Scope] = &[Scope::new("money:write")];
    type Input = Transfer;
    type Output = ();
    type Error = String;
    type Context = ();
    fn validate(_: &Transfer) -> Result<(), InputErrors> {
        Ok(())
    }
    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }
    fn custom_ui() -> Option<&'static str> {
        Some("wire-card")
    }
    async fn run(_: Invocation<'_, Self>) -> Result<(), String> {
        std::future::pending().await
    }
}

static TOOLS: Registry<()> =
    Registry::new(&[ToolEntry::mcp::<SendMessage>(), ToolEntry::mcp::<Wire>()]);

const SCOPES: &[&str] = &["messages:write", "money:write"];
const HOSTILE: &str = "<script>alert(1)</script>\"><img src=x onerror=alert(2)> javascript:alert(3) \u{202e}evil\u{200b}";

struct App {
    router: Router,
    governor: Arc<Governor<(), MemoryStore>>,
    clock: ManualClock,
}

#[path = "../../tests/fixtures/identities.rs"]
mod identities;

fn app(config: ConsoleConfig) -> App {
    let clock = ManualClock::new(Timestamp::now().expect("a clock"));
    let governor = Arc::new(
        Governor::new(&TOOLS)
            .with_clock(clock.clone())
            // Room for a 1 MiB argument, to see how a page shows it.
            .with_governance(
                Governance::new().with_limits(
                    InputLimits::new()
                        .with_max_bytes(2 << 20)
                        .with_max_string_bytes(2 << 20),
                ),
            )
            .with_config(ApprovalConfig::new().with_ttl(Ttl::from_secs(3_600))),
    );
    let router = Console::new(Arc::clone(&governor), config)
        .with_renderer("wire-card", |lane| {
            // A host's markup with a navigation in it: shown, the navigation gone.
            Rendered::Html(format!(
                "<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example\">\
                 <p class=\"card\" onclick=\"x()\">Transfer for <a href=\"https://evil.example\">{}</a></p>",
                lane.proposal().actor_id()
            ))
        })
        .router();
    App {
        router,
        governor,
        clock,
    }
}

fn operators() -> ConsoleConfig {
    ConsoleConfig::new()
        .with_operator(Operator::new(
            "ops-lead",
            Credential::token("lead-token"),
            Accounts::All,
        ))
        .with_operator(Operator::new(
            "agent-7",
            Credential::token("agent-token"),
            Accounts::All,
        ))
        .with_operator(Operator::new(
            "globex-ops",
            Credential::token("globex-token"),
            Accounts::only(["globex"]),
        ))
        .with_login_limit(3, Duration::from_secs(60))
}

struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: String,
}

async fn send(
    router: &Router,
    method: &str,
    uri: &str,
    cookie: Option<&str>,
    form: Option<&str>,
) -> Answer {
    send_with(router, method, uri, cookie, form, &[]).await
}

async fn send_with(
    router: &Router,
    method: &str,
    uri: &str,
    cookie: Option<&str>,
    form: Option<&str>,
    extra: &[(&str, &str)],
) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    if form.is_some() {
        request = request.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Body::from(form.unwrap_or("").to_string()))
        .expect("a request");
    let response = router.clone().oneshot(request).await.expect("an answer");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The session cookie a response sets, as a request sends it back.
fn cookie_of(answer: &Answer) -> String {
    let set = answer
        .headers
        .get(header::SET_COOKIE)
        .expect("a cookie")
        .to_str()
        .unwrap();
    set.split(';').next().unwrap().to_string()
}

/// The form tokens on a page, in order.
fn tokens(html: &str) -> Vec<String> {
    html.split("name=\"csrf\" value=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

async fn sign_in(router: &Router, operator: &str, secret: &str) -> String {
    let page = send(router, "GET", "/login", None, None).await;
    let cookie = cookie_of(&page);
    let token = &tokens(&page.body)[0];
    let form = format!("csrf={token}&operator={operator}&password={secret}");
    let answer = send(router, "POST", "/login", Some(&cookie), Some(&form)).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    cookie_of(&answer)
}

/// A proposal's page, as the operator signed in with `cookie` sees it.
async fn proposal_page(router: &Router, key: &IdempotencyKey, cookie: &str) -> Answer {
    send(
        router,
        "GET",
        &format!("/proposals/{key}"),
        Some(cookie),
        None,
    )
    .await
}

async fn propose(
    app: &App,
    tool: &str,
    arguments: &str,
    account: Option<&'static str>,
) -> IdempotencyKey {
    let mut actor = Actor::new("agent-7", SCOPES);
    if let Some(account) = account {
        actor = actor.with_account(account);
    }
    match app
        .governor
        .call(&ToolCall::new(tool, arguments), &actor, &())
        .await
        .expect("a call")
    {
        Outcome::AwaitingApproval(lane) => lane.key(),
        other => panic!("expected a proposal, got {other:?}"),
    }
}

async fn state(app: &App, key: &IdempotencyKey) -> (LaneState, u64) {
    let lane = app.governor.lane(key).await.expect("the lane");
    (lane.state(), lane.version())
}

fn message(body: &str) -> String {
    serde_json::json!({"to": "customer@example.com", "body": body}).to_string()
}

#[tokio::test]
async fn every_answer_carries_the_strict_headers_and_the_cookie_is_locked_down() {
    let app = app(operators());
    let login = send(&app.router, "GET", "/login", None, None).await;
    let csp = login.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert!(csp.contains("frame-ancestors 'none'"));
    assert_eq!(login.headers["x-frame-options"], "DENY");
    let cookie = login.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(ConsoleConfig::new().address().ip().is_loopback());
    // Not signed in: pages send to the sign-in form, posts are refused.
    let queue = send(&app.router, "GET", "/queue", None, None).await;
    assert_eq!(queue.status, StatusCode::SEE_OTHER);
    assert_eq!(queue.headers[header::LOCATION], "/login");
}

#[tokio::test]
async fn sign_in_needs_the_right_secret_a_genuine_form_and_is_rate_limited() {
    let app = app(operators());
    let page = send(&app.router, "GET", "/login", None, None).await;
    let cookie = cookie_of(&page);
    // A forged form token, and none at all.
    for form in [
        "csrf=forged&operator=ops-lead&password=lead-token",
        "operator=ops-lead&password=lead-token",
    ] {
        let answer = send(&app.router, "POST", "/login", Some(&cookie), Some(form)).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{form}");
    }
    // Wrong secrets, up to the limit, then 429 even with the right one.
    let mut token = tokens(&page.body)[0].clone();
    for _ in 0..3 {
        let form = format!("csrf={token}&operator=ops-lead&password=wrong");
        let answer = send(&app.router, "POST", "/login", Some(&cookie), Some(&form)).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        token = tokens(&answer.body)[0].clone();
    }
    let form = format!("csrf={token}&operator=ops-lead&password=lead-token");
    let limited = send(&app.router, "POST", "/login", Some(&cookie), Some(&form)).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers.contains_key(header::RETRY_AFTER));
    // Another operator is not limited by ops-lead's failures.
    sign_in(&app.router, "agent-7", "agent-token").await;
}

#[tokio::test]
async fn a_password_hash_signs_in_and_sign_in_gives_a_new_session() {
    let hash = Credential::hash_password("correct horse").unwrap();
    let config = ConsoleConfig::new().with_operator(Operator::new(
        "bea",
        Credential::PasswordHash(hash),
        Accounts::All,
    ));
    let app = app(config);
    let page = send(&app.router, "GET", "/login", None, None).await;
    let before = cookie_of(&page);
    let form = format!(
        "csrf={}&operator=bea&password=correct%20horse",
        tokens(&page.body)[0]
    );
    let answer = send(&app.router, "POST", "/login", Some(&before), Some(&form)).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let after = cookie_of(&answer);
    assert_ne!(before, after, "the session id changes at sign-in");
    // The session from before sign-in is worth nothing now.
    assert_eq!(
        send(&app.router, "GET", "/queue", Some(&before), None)
            .await
            .status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        send(&app.router, "GET", "/queue", Some(&after), None)
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn hostile_text_from_the_model_renders_inert() {
    let app = app(operators());
    let long = "A".repeat(1 << 20);
    let key = propose(&app, "send_message", &message(HOSTILE), None).await;
    let big = propose(&app, "send_message", &message(&long), None).await;
    let cookie = sign_in(&app.router, "ops-lead", "lead-token").await;
    let queue = send(&app.router, "GET", "/queue", Some(&cookie), None).await;
    let page = proposal_page(&app.router, &key, &cookie).await;
    for html in [&queue.body, &page.body] {
        assert!(!html.contains("<script>alert"), "a script tag got through");
        assert!(!html.contains("<img src=x"), "an image tag got through");
        assert!(!html.contains('\u{202e}') && !html.contains('\u{200b}'));
    }
    assert!(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.body.contains("U+202E") && page.body.contains("U+200B"));
    assert!(!page.body.contains("href=\"javascript:"));
    // A 1 MiB argument is cut on the page, with the whole input one link away.
    let big_page = proposal_page(&app.router, &big, &cookie).await;
    assert!(
        big_page.body.len() < 64 * 1024,
        "{} bytes",
        big_page.body.len()
    );
    assert!(big_page.body.contains("more characters"));
    let input = send(
        &app.router,
        "GET",
        &format!("/proposals/{big}/input.json"),
        Some(&cookie),
        None,
    )
    .await;
    let whole: serde_json::Value = serde_json::from_str(&input.body).expect("JSON");
    assert_eq!(whole["body"].as_str().map(str::len), Some(1 << 20));
}

#[tokio::test]
async fn the_form_comes_from_the_schema_and_a_custom_view_replaces_it() {
    let app = app(operators());
    let note = propose(
        &app,
        "send_message",
        r#"{"to": "customer@example.com", "body": "hello", "api_key": "sk-live-123"}"#,
        None,
    )
    .await;
    let wire = propose(&app, "wire", r#"{"cents": 500}"#, None).await;
    let cookie = sign_in(&app.router, "ops-lead", "lead-token").await;
    let page = proposal_page(&app.router, &note, &cookie).await;
    assert!(
        page.body.contains("<small>Who gets it.</small>"),
        "the field's doc comment"
    );
    assert!(
        page.body
            .contains("readonly value=\"customer@example.com\"")
    );
    let page = proposal_page(&app.router, &wire, &cookie).await;
    assert!(
        page.body
            .contains("<div class=\"custom\"><p class=\"card\">Transfer for agent-7</p></div>"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("class=\"arguments\""));
    for gone in ["http-equiv", "evil.example", "onclick"] {
        assert!(!page.body.contains(gone), "{gone}");
    }
}

#[tokio::test]
async fn approving_works_once_through_the_governor() {
    let app = app(operators());
    let key = propose(&app, "send_message", &message("hi"), None).await;
    let cookie = sign_in(&app.router, "ops-lead", "lead-token").await;
    let page = proposal_page(&app.router, &key, &cookie).await;
    let (_, version) = state(&app, &key).await;
    let approve = &tokens(&page.body)[0];
    let form = format!("csrf={approve}&version={version}&decision=approve");
    let uri = format!("/proposals/{key}/decide");
    let done = send(&app.router, "POST", &uri, Some(&cookie), Some(&form)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let lane = app.governor.lane(&key).await.unwrap();
    assert_eq!(
        (lane.state(), lane.decided_by()),
        (LaneState::Approved, Some("ops-lead"))
    );
    // The same form again: its token is used up.
    let replay = send(&app.router, "POST", &uri, Some(&cookie), Some(&form)).await;
    assert_eq!(replay.status, StatusCode::FORBIDDEN);
    // The page as it was (its other tokens, the old version): stale, not applied twice.
    let reject = &tokens(&page.body)[1];
    let form = format!("csrf={reject}&version={version}&decision=reject&reason=no");
    let stale = send(&app.router, "POST", &uri, Some(&cookie), Some(&form)).await;
    assert_eq!(stale.status, StatusCode::CONFLICT);
    assert!(
        stale.body.contains("changed since you opened it"),
        "{}",
        stale.body
    );
    // A hand-made post with the current version: the governor refuses the move.
    let queue = send(&app.router, "GET", "/queue", Some(&cookie), None).await;
    let (_, now) = state(&app, &key).await;
    let form = format!(
        "csrf={}&version={now}&decision=approve",
        tokens(&queue.body)[0]
    );
    let twice = send(&app.router, "POST", &uri, Some(&cookie), Some(&form)).await;
    assert_eq!(twice.status, StatusCode::CONFLICT);
    assert!(twice.body.contains("Already decided"), "{}", twice.body);
    let lane = app.governor.lane(&key).await.unwrap();
    assert_eq!((lane.state(), lane.version()), (LaneState::Approved, now));
}

#[tokio::test]
async fn bad_tokens_the_proposer_expiry_and_missing_reasons_change_nothing() {
    let app = app(operators());
    let key = propose(&app, "send_message", &message("hi"), None).await;
    let uri = format!("/proposals/{key}/decide");
    let before = state(&app, &key).await;
    let lead = sign_in(&app.router, "ops-lead", "lead-token").await;
    let version = before.1;
    // Missing and forged tokens; no session at all.
    for form in [
        format!("version={version}&decision=approve"),
        format!("csrf=forged&version={version}&decision=approve"),
    ] {
        let answer = send(&app.router, "POST", &uri, Some(&lead), Some(&form)).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{form}");
    }
    let anonymous = send(&app.router, "POST", &uri, None, Some("decision=approve")).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    // Another session's token is not this session's.
    let other = sign_in(&app.router, "ops-lead", "lead-token").await;
    let page = proposal_page(&app.router, &key, &other).await;
    let foreign = format!(
        "csrf={}&version={version}&decision=approve",
        tokens(&page.body)[0]
    );
    assert_eq!(
        send(&app.router, "POST", &uri, Some(&lead), Some(&foreign))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    // A reject without a reason.
    let page = proposal_page(&app.router, &key, &lead).await;
    let form = format!(
        "csrf={}&version={version}&decision=reject&reason=%20",
        tokens(&page.body)[1]
    );
    assert_eq!(
        send(&app.router, "POST", &uri, Some(&lead), Some(&form))
            .await
            .status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    // The proposer, signed in as an operator, may not approve their own call.
    let agent = sign_in(&app.router, "agent-7", "agent-token").await;
    let page = proposal_page(&app.router, &key, &agent).await;
    let form = format!(
        "csrf={}&version={version}&decision=approve",
        tokens(&page.body)[0]
    );
    let own = send(&app.router, "POST", &uri, Some(&agent), Some(&form)).await;
    assert_eq!(own.status, StatusCode::FORBIDDEN);
    assert!(
        own.body.contains("someone else must approve it"),
        "{}",
        own.body
    );
    assert_eq!(state(&app, &key).await, before);
    // Past the proposal's time: refused as expired.
    let page = proposal_page(&app.router, &key, &lead).await;
    app.clock.advance(Ttl::from_secs(3_601));
    let form = format!(
        "csrf={}&version={version}&decision=approve",
        tokens(&page.body)[0]
    );
    let late = send(&app.router, "POST", &uri, Some(&lead), Some(&form)).await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.body);
    assert_ne!(state(&app, &key).await.0, LaneState::Approved);
}

#[tokio::test]
async fn an_expired_session_is_refused_and_changes_nothing() {
    let app = app(operators().with_session_ttl(Duration::from_millis(200)));
    let key = propose(&app, "send_message", &message("hi"), None).await;
    let before = state(&app, &key).await;
    let cookie = sign_in(&app.router, "ops-lead", "lead-token").await;
    let page = proposal_page(&app.router, &key, &cookie).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let form = format!(
        "csrf={}&version={}&decision=approve",
        tokens(&page.body)[0],
        before.1
    );
    let answer = send(
        &app.router,
        "POST",
        &format!("/proposals/{key}/decide"),
        Some(&cookie),
        Some(&form),
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert!(answer.body.contains("expired"));
    assert_eq!(state(&app, &key).await, before);
    let again = send(&app.router, "GET", "/queue", Some(&cookie), None).await;
    assert_eq!(again.headers[header::LOCATION], "/login?expired=1");
}

#[tokio::test]
async fn an_operator_sees_and_decides_only_their_accounts() {
    let app = app(operators());
    let acme = propose(&app, "send_message", &message("acme"), Some("acme")).await;
    let globex = propose(&app, "send_message", &message("globex"), Some("globex")).await;
    let cookie = sign_in(&app.router, "globex-ops", "globex-token").await;
    let queue = send(&app.router, "GET", "/queue", Some(&cookie), None).await;
    assert!(queue.body.contains(&globex.to_string()) && !queue.body.contains(&acme.to_string()));
    let hidden = proposal_page(&app.router, &acme, &cookie).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    let audit = send(&app.router, "GET", "/audit.jsonl", Some(&cookie), None).await;
    assert!(
        audit.body.contains("globex") && !audit.body.contains("\"acme\""),
        "{}",
        audit.body
    );
    for line in audit.body.lines() {
        let record: serde_json::Value =
            serde_json::from_str(line).expect("one JSON record per line");
        assert!(record["seq"].is_u64());
    }
}

#[tokio::test]
async fn the_queue_filters_and_pages_newest_first() {
    let app = app(operators());
    let mut keys = Vec::new();
    for i in 0..30 {
        keys.push(propose(&app, "send_message", &message(&format!("n{i}")), None).await);
        app.clock.advance(Ttl::from_secs(1));
    }
    let wire = propose(&app, "wire", r#"{"cents": 1}"#, None).await;
    let cookie = sign_in(&app.router, "ops-lead", "lead-token").await;
    let first = send(&app.router, "GET", "/queue", Some(&cookie), None).await;
    let position = |html: &str, key: &IdempotencyKey| html.find(&key.to_string());
    assert!(position(&first.body, &wire) < position(&first.body, &keys[29]));
    assert!(
        position(&first.body, &keys[0]).is_none(),
        "the oldest is on page 2"
    );
    assert!(
        first.body.contains(r#"<span class="count">31</span>"#),
        "{}",
        first.body
    );
    // The "Older" link carries the last row's position: the next page starts after it.
    let older = first
        .body
        .split("href=\"/queue?")
        .filter_map(|rest| rest.split('"').next())
        .find(|link| link.contains("after=") && !link.ends_with("after="))
        .expect("an Older link")
        .replace("&amp;", "&");
    let second = send(
        &app.router,
        "GET",
        &format!("/queue?{older}"),
        Some(&cookie),
        None,
    )
    .await;
    assert_eq!(second.status, StatusCode::OK);
    assert!(position(&second.body, &keys[0]).is_some());
    assert!(
        position(&second.body, &wire).is_none(),
        "no row on two pages"
    );
    // A proposal made meanwhile shifts nothing: the second page is the same.
    propose(&app, "send_message", &message("late"), None).await;
    let again = send(
        &app.router,
        "GET",
        &format!("/queue?{older}"),
        Some(&cookie),
        None,
    )
    .await;
    assert_eq!(
        again.body.matches("/proposals/").count(),
        second.body.matches("/proposals/").count()
    );
    let high = send(
        &app.router,
        "GET",
        "/queue?tier=high_write",
        Some(&cookie),
        None,
    )
    .await;
    assert!(position(&high.body, &wire).is_some() && position(&high.body, &keys[29]).is_none());
    let rows = send(
        &app.router,
        "GET",
        "/queue/rows?tool=wire",
        Some(&cookie),
        None,
    )
    .await;
    assert!(rows.body.starts_with("<tr>") && position(&rows.body, &wire).is_some());
    // A position or filter that is not one: a clear 400, never a panic or another page.
    let key = "ab".repeat(32);
    for uri in [
        "/queue?after=minus-one".to_string(),
        format!("/queue?after=18446744073709551615-{key}"),
        format!("/queue/rows?after=18446744073709551616-{key}"),
        format!("/queue?after=9223372036854775808-{key}"),
        format!("/queue?after=-1-{key}"),
        format!("/queue?after=+1-{key}"),
        "/queue?after=1-AB".to_string(),
        "/queue?tier=all".to_string(),
        "/queue?mine=yes".to_string(),
    ] {
        let uri = uri.as_str();
        let answer = send(&app.router, "GET", uri, Some(&cookie), None).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(position(&answer.body, &wire).is_none(), "{uri}");
    }
    // The oldest possible position is a valid, empty page.
    let last = send(
        &app.router,
        "GET",
        &format!("/queue?after=0-{}", "0".repeat(64)),
        Some(&cookie),
        None,
    )
    .await;
    assert_eq!(last.status, StatusCode::OK);
    assert!(position(&last.body, &wire).is_none());
    // Each navigation landmark has a label of its own (screen readers list them by it).
    for uri in ["/queue", "/audit"] {
        let page = send(&app.router, "GET", uri, Some(&cookie), None).await;
        let navs: Vec<&str> = page.body.split("<nav").skip(1).collect();
        let labels: std::collections::BTreeSet<&str> = navs
            .iter()
            .filter_map(|nav| nav.split("aria-label=\"").nth(1)?.split('"').next())
            .collect();
        assert_eq!(labels.len(), navs.len(), "{uri}: {navs:?}");
    }
}

/// A wire of `cents` proposed, approved, and interrupted: its run never finishes, and
/// dropping its future leaves the lane interrupted.
async fn interrupted_wire(app: &App, cents: u64) -> IdempotencyKey {
    let key = propose(app, "wire", &format!(r#"{{"cents": {cents}}}"#), None).await;
    app.governor.approve(&key, "ops-lead").await.unwrap();
    let actor = Actor::new("agent-7", SCOPES);
    let run = app.governor.execute(&key, &actor, &());
    assert!(
        tokio::time::timeout(Duration::from_millis(50), run)
            .await
            .is_err()
    );
    assert_eq!(state(app, &key).await.0, LaneState::Interrupted);
    key
}

#[tokio::test]
async fn an_interrupted_run_is_settled_with_a_note() {
    let app = app(operators());
    let key = interrupted_wire(&app, 7).await;
    let cookie = sign_in(&app.router, "ops-lead", "lead-token").await;
    let page = send(&app.router, "GET", "/reconcile", Some(&cookie), None).await;
    assert!(page.body.contains(&key.to_string()));
    let version = state(&app, &key).await.1;
    let uri = format!("/proposals/{key}/reconcile");
    let token = tokens(&page.body)[0].clone();
    let no_note = format!("csrf={token}&version={version}&resolution=failed&note=");
    let refused = send(&app.router, "POST", &uri, Some(&cookie), Some(&no_note)).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.body
    );
    assert_eq!(state(&app, &key).await.0, LaneState::Interrupted);
    let page = send(&app.router, "GET", "/reconcile", Some(&cookie), None).await;
    let form = format!(
        "csrf={}&version={version}&resolution=failed&note={}",
        tokens(&page.body)[0],
        encode("bank says no transfer")
    );
    let done = send(&app.router, "POST", &uri, Some(&cookie), Some(&form)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(state(&app, &key).await.0, LaneState::ExecutionFailed);
}

#[tokio::test]
async fn settling_a_run_takes_the_same_tier_right_as_deciding_it() {
    let config = operators().with_operator(
        Operator::new("junior", Credential::token("junior-token"), Accounts::All)
            .deciding_only([cairnloop::RiskTier::ReadOnly, cairnloop::RiskTier::LowWrite]),
    );
    let app = app(config);
    let key = interrupted_wire(&app, 9).await;
    // Listed for the junior, with the reason and no form.
    let junior = sign_in(&app.router, "junior", "junior-token").await;
    let page = send(&app.router, "GET", "/reconcile", Some(&junior), None).await;
    assert!(page.body.contains(&key.to_string()), "{}", page.body);
    assert!(
        page.body
            .contains("may not decide or settle high_write calls"),
        "{}",
        page.body
    );
    assert!(
        !page.body.contains(r#"action="/proposals/"#),
        "{}",
        page.body
    );
    // Posted anyway, with a genuine token and the current version: refused, unchanged.
    let version = state(&app, &key).await.1;
    let uri = format!("/proposals/{key}/reconcile");
    for resolution in ["executed", "failed", "closed"] {
        let queue = send(&app.router, "GET", "/queue", Some(&junior), None).await;
        let form = format!(
            "csrf={}&version={version}&resolution={resolution}&note=looked",
            tokens(&queue.body)[0]
        );
        let refused = send(&app.router, "POST", &uri, Some(&junior), Some(&form)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
        assert!(refused.body.contains("Not your tier"));
        assert_eq!(state(&app, &key).await, (LaneState::Interrupted, version));
    }
    // The lead, who may decide it, settles it.
    let lead = sign_in(&app.router, "ops-lead", "lead-token").await;
    let page = send(&app.router, "GET", "/reconcile", Some(&lead), None).await;
    let form = format!(
        "csrf={}&version={version}&resolution=closed&note=checked",
        tokens(&page.body)[0]
    );
    let done = send(&app.router, "POST", &uri, Some(&lead), Some(&form)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_ne!(state(&app, &key).await.0, LaneState::Interrupted);
}

#[tokio::test]
async fn a_trusted_header_signs_in_only_when_configured() {
    let plain = app(operators());
    let ignored = send_with(
        &plain.router,
        "GET",
        "/queue",
        None,
        None,
        &[("x-forwarded-user", "ops-lead")],
    )
    .await;
    assert_eq!(
        ignored.status,
        StatusCode::SEE_OTHER,
        "no header is trusted by default"
    );
    let proxied = app(operators().with_trusted_header("x-forwarded-user"));
    let known = send_with(
        &proxied.router,
        "GET",
        "/queue",
        None,
        None,
        &[("x-forwarded-user", "ops-lead")],
    )
    .await;
    assert_eq!(known.status, StatusCode::OK);
    assert!(known.headers.contains_key(header::SET_COOKIE));
    let unknown = send_with(
        &proxied.router,
        "GET",
        "/queue",
        None,
        None,
        &[("x-forwarded-user", "mallory")],
    )
    .await;
    assert_eq!(unknown.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn nested_in_a_host_router_every_link_and_redirect_keeps_the_mount() {
    let app = app(operators());
    let key = propose(&app, "send_message", &message("nested"), None).await;
    let host = Router::new().nest("/approvals", app.router.clone());
    let login = send(&host, "GET", "/approvals/login", None, None).await;
    assert!(
        login
            .body
            .contains("href=\"/approvals/assets/console.css\""),
        "{}",
        login.body
    );
    assert!(login.body.contains("action=\"/approvals/login\""));
    let cookie = cookie_of(&login);
    let form = format!(
        "csrf={}&operator=ops-lead&password=lead-token",
        tokens(&login.body)[0]
    );
    let signed = send(
        &host,
        "POST",
        "/approvals/login",
        Some(&cookie),
        Some(&form),
    )
    .await;
    assert_eq!(signed.headers[header::LOCATION], "/approvals/queue");
    let cookie = cookie_of(&signed);
    let queue = send(&host, "GET", "/approvals/queue", Some(&cookie), None).await;
    assert!(
        queue
            .body
            .contains(&format!("href=\"/approvals/proposals/{key}\""))
    );
    assert!(queue.body.contains("data-refresh=\"/approvals/queue/rows?"));
    assert!(queue.body.contains("data-events=\"/approvals/events\""));
    assert!(
        !queue.body.contains("href=\"/queue\""),
        "a link escaped the mount"
    );
    // The console alone is unchanged.
    let alone = send(&app.router, "GET", "/login", None, None).await;
    assert!(alone.body.contains("href=\"/assets/console.css\""));
}

#[tokio::test]
async fn the_time_left_is_read_on_the_governors_clock() {
    // The governor decides expiry on its own clock (here a manual one, moved by hand);
    // the console must show the time left on that clock, not on the machine's.
    let app = app(operators());
    let key = propose(&app, "send_message", &message("hello"), None).await;
    let cookie = sign_in(&app.router, "ops-lead", "lead-token").await;
    app.clock.advance(Ttl::from_secs(50 * 60));

    let queue = send(&app.router, "GET", "/queue", Some(&cookie), None).await;
    assert!(queue.body.contains("<td>10 min</td>"), "{}", queue.body);
    let rows = send(&app.router, "GET", "/queue/rows", Some(&cookie), None).await;
    assert!(rows.body.contains("<td>10 min</td>"), "{}", rows.body);
    let page = proposal_page(&app.router, &key, &cookie).await;
    assert!(page.body.contains("(10 min)"), "{}", page.body);

    app.clock.advance(Ttl::from_secs(11 * 60));
    let page = proposal_page(&app.router, &key, &cookie).await;
    assert!(page.body.contains("(expired)"), "{}", page.body);
}

#[tokio::test]
async fn a_write_from_another_site_is_refused_even_with_a_valid_token() {
    let app = app(operators());
    let key = propose(&app, "send_message", &message("hi"), None).await;
    let cookie = sign_in(&app.router, "ops-lead", "lead-token").await;
    let uri = format!("/proposals/{key}/decide");
    let foreign: [&[(&str, &str)]; 4] = [
        &[("sec-fetch-site", "cross-site")],
        &[("sec-fetch-site", "same-site")],
        &[
            ("host", "console.example"),
            ("origin", "https://evil.example"),
        ],
        &[("host", "console.example"), ("origin", "null")],
    ];
    for headers in foreign {
        let page = proposal_page(&app.router, &key, &cookie).await;
        let (_, version) = state(&app, &key).await;
        let form = format!(
            "csrf={}&version={version}&decision=approve",
            tokens(&page.body)[0]
        );
        let answer = send_with(
            &app.router,
            "POST",
            &uri,
            Some(&cookie),
            Some(&form),
            headers,
        )
        .await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{headers:?}");
        assert!(
            answer.body.contains("Nothing was changed"),
            "{}",
            answer.body
        );
        assert_eq!(state(&app, &key).await.0, LaneState::Pending, "{headers:?}");
    }
    // The console's own page, as a browser sends it: let in.
    let page = proposal_page(&app.router, &key, &cookie).await;
    let (_, version) = state(&app, &key).await;
    let form = format!(
        "csrf={}&version={version}&decision=approve",
        tokens(&page.body)[0]
    );
    let own = [
        ("sec-fetch-site", "same-origin"),
        ("host", "127.0.0.1:8377"),
        ("origin", "http://127.0.0.1:8377"),
    ];
    let answer = send_with(&app.router, "POST", &uri, Some(&cookie), Some(&form), &own).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert_eq!(state(&app, &key).await.0, LaneState::Approved);
}

#[tokio::test]
async fn the_identity_table_through_the_console() {
    // The hand-written table: every generated whitespace variant is refused by the same
    // `check_id` as through the governor, and each sign-in here costs an Argon2 hash.
    use identities::{PROPOSER, VARIANTS, Verdict};
    let variants: Vec<_> = VARIANTS
        .iter()
        .map(|(id, what, verdict)| (id.to_string(), *what, *verdict))
        .collect();
    let mut config = ConsoleConfig::new().with_login_limit(1_000, Duration::from_secs(60));
    for (index, (variant, _, _)) in variants.iter().enumerate() {
        config = config.with_operator(Operator::new(
            variant,
            Credential::token(&format!("token-{index}")),
            Accounts::All,
        ));
    }
    let app = app(config);
    for (index, (variant, what, verdict)) in variants.iter().enumerate() {
        let key = propose(&app, "send_message", &message(&format!("v{index}")), None).await;
        let page = send(&app.router, "GET", "/login", None, None).await;
        let form = format!(
            "csrf={}&operator={}&password=token-{index}",
            tokens(&page.body)[0],
            encode(variant)
        );
        let signed = send(
            &app.router,
            "POST",
            "/login",
            Some(&cookie_of(&page)),
            Some(&form),
        )
        .await;
        if *verdict == Verdict::Refused {
            assert_eq!(signed.status, StatusCode::UNAUTHORIZED, "{what}");
            continue;
        }
        assert_eq!(
            signed.status,
            StatusCode::SEE_OTHER,
            "{what}: {}",
            signed.body
        );
        let cookie = cookie_of(&signed);
        let page = proposal_page(&app.router, &key, &cookie).await;
        assert!(page.body.contains(PROPOSER), "{what}");
        let (_, version) = state(&app, &key).await;
        let form = format!(
            "csrf={}&version={version}&decision=approve",
            tokens(&page.body)[0]
        );
        let uri = format!("/proposals/{key}/decide");
        let decided = send(&app.router, "POST", &uri, Some(&cookie), Some(&form)).await;
        let (expected, state_after) = match verdict {
            Verdict::SamePerson => (StatusCode::FORBIDDEN, LaneState::Pending),
            _ => (StatusCode::SEE_OTHER, LaneState::Approved),
        };
        assert_eq!(decided.status, expected, "{what}: {}", decided.body);
        assert_eq!(state(&app, &key).await.0, state_after, "{what}");
    }
}

#[tokio::test]
async fn an_operator_limited_to_some_tiers_sees_but_cannot_decide_the_others() {
    let config = operators().with_operator(
        Operator::new("junior", Credential::token("junior-token"), Accounts::All)
            .deciding_only([cairnloop::RiskTier::ReadOnly, cairnloop::RiskTier::LowWrite]),
    );
    let app = app(config);
    let wire = propose(&app, "wire", r#"{"cents": 1}"#, None).await;
    let junior = sign_in(&app.router, "junior", "junior-token").await;
    // The queue shows it; filtered to what the junior may decide, it is gone.
    let all = send(&app.router, "GET", "/queue", Some(&junior), None).await;
    assert!(all.body.contains(&wire.to_string()));
    let mine = send(&app.router, "GET", "/queue?mine=1", Some(&junior), None).await;
    assert_eq!(mine.status, StatusCode::OK);
    assert!(!mine.body.contains(&wire.to_string()), "{}", mine.body);
    assert!(mine.body.contains(r#"<span class="count">0</span>"#));
    let page = proposal_page(&app.router, &wire, &junior).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body
            .contains("may not decide or settle high_write calls"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("button class=\"approve\""));
    // A decision posted anyway, with a genuine token and the current version: refused.
    let queue = send(&app.router, "GET", "/queue", Some(&junior), None).await;
    let (_, version) = state(&app, &wire).await;
    let form = format!(
        "csrf={}&version={version}&decision=approve",
        tokens(&queue.body)[0]
    );
    let uri = format!("/proposals/{wire}/decide");
    let refused = send(&app.router, "POST", &uri, Some(&junior), Some(&form)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(refused.body.contains("Not your tier"));
    assert_eq!(state(&app, &wire).await.0, LaneState::Pending);
    // The proposer sees no approve button, and why; the lead decides it.
    let proposer = sign_in(&app.router, "agent-7", "agent-token").await;
    let page = proposal_page(&app.router, &wire, &proposer).await;
    assert!(page.body.contains("someone else must approve it"));
    assert!(!page.body.contains("button class=\"approve\""));
    assert!(page.body.contains("Why reject it") && page.body.contains("Why defer it"));
    let lead = sign_in(&app.router, "ops-lead", "lead-token").await;
    let page = proposal_page(&app.router, &wire, &lead).await;
    assert!(page.body.contains("button class=\"approve\""));
    assert!(!page.body.contains("why-not"));
}

/// Reads the event stream until its text so far contains `wanted` (at most 10 s).
async fn read_until(body: &mut Body, seen: &mut String, wanted: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !seen.contains(wanted) {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .unwrap_or_else(|_| panic!("no {wanted:?} in the stream; it said {seen:?}"))
            .expect("the stream goes on")
            .expect("a frame");
        if let Ok(data) = frame.into_data() {
            seen.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

#[tokio::test]
async fn an_open_queue_hears_of_each_proposal_and_decision_as_it_happens() {
    let app = app(operators());
    // Without a session: refused, as the rows are.
    let anonymous = send(&app.router, "GET", "/events", None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let cookie = sign_in(&app.router, "ops-lead", "lead-token").await;
    let queue = send(&app.router, "GET", "/queue", Some(&cookie), None).await;
    assert!(
        queue.body.contains("data-events=\"/events\""),
        "{}",
        queue.body
    );
    let request = Request::builder()
        .uri("/events")
        .header(header::COOKIE, &cookie)
        .body(Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
    let mut body = response.into_body();
    let mut seen = String::new();
    read_until(&mut body, &mut seen, "retry: 1000").await;
    assert!(
        !seen.contains("event: lanes"),
        "nothing changed yet: {seen:?}"
    );
    // A proposal, then a decision: each is told (the text is a number, no lane's data).
    let key = propose(&app, "send_message", &message("live"), None).await;
    read_until(&mut body, &mut seen, "event: lanes").await;
    assert!(!seen.contains("live"));
    seen.clear();
    app.governor.approve(&key, "ops-lead").await.unwrap();
    read_until(&mut body, &mut seen, "event: lanes").await;
    // Signed out (in another tab, say): the stream ends, and a new one is refused.
    let token = &tokens(&queue.body)[0];
    let out = send(
        &app.router,
        "POST",
        "/logout",
        Some(&cookie),
        Some(&format!("csrf={token}")),
    )
    .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(frame) = body.frame().await {
            frame.expect("a frame");
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream outlived its session");
    let again = send(&app.router, "GET", "/events", Some(&cookie), None).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED);
}
