//! A load test of the remote MCP server: 64 clients on loopback for 30 seconds, a mix of
//! calls that run at once (80%), calls that need approval (10%) and blocked calls (10%),
//! each over Streamable HTTP with a bearer token. It stops by itself, then checks the
//! store: every proposal answered as waiting is there, pending, and nothing ran twice.
//!
//! ```sh
//! cargo bench -p cairnloop-benches --bench load_remote -- --store memory
//! cargo bench -p cairnloop-benches --bench load_remote -- --store sqlite
//! ```
//!
//! Options: `--store memory|sqlite` (the sink is the store's own event log in both),
//! `--clients N` (64), `--seconds S` (30, at most 120). The transport mode is Streamable
//! HTTP with sessions (protocol 2025-06-18): each client opens one session, then calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cairnloop::approvals::ApprovalStore;
use cairnloop::gate::LaneState;
use cairnloop::remote::{HttpLimits, RemoteMcp, TokenVerifier};
use cairnloop::stores::SqliteStore;
use cairnloop::{Governor, Registry, ToolEntry};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[macro_use]
#[path = "../tests/fixtures/plain_tool.rs"]
mod plain_tool;

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct Order {
    order: u64,
}

plain_tool!(
    Lookup,
    "lookup",
    ReadOnly,
    ["orders:read"],
    |input: Order| -> u64 { input.order }
);
plain_tool!(
    Refund,
    "refund",
    HighWrite,
    ["refunds:write"],
    |input: Order| -> u64 { input.order }
);
plain_tool!(
    Wipe,
    "wipe",
    Destructive,
    ["orders:read"],
    |input: Order| -> u64 { input.order }
);

static TOOLS: Registry<()> = Registry::new(&[
    ToolEntry::mcp::<Lookup>(),
    ToolEntry::mcp::<Refund>(),
    ToolEntry::mcp::<Wipe>(),
]);

const ISSUER: &str = "urn:load-test";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Auto,
    Approval,
    Blocked,
}

#[derive(Default)]
struct Tally {
    latencies: Vec<(Kind, Duration)>,
    errors: Vec<String>,
    proposals: u64,
}

fn keys() -> (EncodingKey, String) {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&seed);
    let signing = EncodingKey::from_ed_der(&der);
    let mut jwk = Jwk::from_encoding_key(&signing, Algorithm::EdDSA).unwrap();
    jwk.common.key_id = Some("load".into());
    let jwks = serde_json::to_string(&JwkSet { keys: vec![jwk] }).unwrap();
    (signing, jwks)
}

async fn serve<S: ApprovalStore + Send + Sync + 'static>(
    governor: Arc<Governor<(), S>>,
    jwks: &str,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let verifier = TokenVerifier::new(ISSUER, format!("{base}/mcp"), jwks).unwrap();
    let router = RemoteMcp::new(governor, (), verifier)
        .with_limits(HttpLimits::new().with_requests_per_minute(u32::MAX))
        .router();
    use axum::serve::ListenerExt as _;
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    base
}

async fn post(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    session: Option<&str>,
    body: String,
) -> Result<(u16, String), String> {
    let mut request = client
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("authorization", format!("Bearer {token}"))
        .body(body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = response.text().await.map_err(|e| e.to_string())?;
    Ok((status, session.unwrap_or(text)))
}

fn result_of(text: &str) -> Option<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some())
}

async fn client_loop(
    base: String,
    token: String,
    client_no: u64,
    deadline: Instant,
    counter: Arc<AtomicU64>,
) -> Tally {
    let http = reqwest::Client::new();
    let mut tally = Tally::default();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "load", "version": "1"}}});
    let session = match post(&http, &base, &token, None, init.to_string()).await {
        Ok((200, session)) => session,
        other => {
            tally.errors.push(format!("initialize: {other:?}"));
            return tally;
        }
    };
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let _ = post(&http, &base, &token, Some(&session), done).await;
    let mut i = 0u64;
    while Instant::now() < deadline {
        i += 1;
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let (kind, name, order) = match n % 10 {
            0 => (Kind::Approval, "refund", client_no * 1_000_000 + i),
            1 => (Kind::Blocked, "wipe", 1),
            _ => (Kind::Auto, "lookup", i),
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"{name}","arguments":{{"order":{order}}}}}}}"#
        );
        let started = Instant::now();
        let answer = post(&http, &base, &token, Some(&session), body).await;
        let took = started.elapsed();
        match answer.map(|(status, text)| (status, result_of(&text))) {
            Ok((200, Some(message))) => {
                let status = message["result"]["structuredContent"]["status"]
                    .as_str()
                    .unwrap_or("");
                let expected = match kind {
                    Kind::Auto => "executed",
                    Kind::Approval => "awaiting_approval",
                    Kind::Blocked => "blocked",
                };
                if status == expected {
                    tally.latencies.push((kind, took));
                    if kind == Kind::Approval {
                        tally.proposals += 1;
                    }
                } else {
                    tally.errors.push(format!("{name}: {message}"));
                }
            }
            other => tally.errors.push(format!("{name}: {other:?}")),
        }
    }
    tally
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

async fn run<S: ApprovalStore + Send + Sync + 'static>(
    governor: Governor<(), S>,
    store_name: &str,
    clients: u64,
    seconds: u64,
) {
    let governor = Arc::new(governor);
    let (signing, jwks) = keys();
    let base = serve(Arc::clone(&governor), &jwks).await;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({"iss": ISSUER, "aud": format!("{base}/mcp"), "sub": "load", "azp": "bench",
        "scope": "orders:read refunds:write", "exp": now + 3_600});
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("load".into());
    let token = jsonwebtoken::encode(&header, &claims, &signing).unwrap();
    println!(
        "store: {store_name}; sink: the store's event log; transport: Streamable HTTP, sessions (2025-06-18), SSE answers"
    );
    println!("clients: {clients}; duration: {seconds} s; mix: 80% auto, 10% approval, 10% blocked");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let counter = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|no| {
            tokio::spawn(client_loop(
                base.clone(),
                token.clone(),
                no,
                deadline,
                Arc::clone(&counter),
            ))
        })
        .collect();
    let mut all = Tally::default();
    for task in tasks {
        let tally = task.await.unwrap();
        all.latencies.extend(tally.latencies);
        all.errors.extend(tally.errors);
        all.proposals += tally.proposals;
    }
    let elapsed = started.elapsed().as_secs_f64();
    for kind in [Kind::Auto, Kind::Approval, Kind::Blocked] {
        let mut times: Vec<Duration> = all
            .latencies
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| *t)
            .collect();
        times.sort_unstable();
        println!(
            "{kind:?}: {} calls, {:.0}/s, p50 {:.2} ms, p99 {:.2} ms",
            times.len(),
            times.len() as f64 / elapsed,
            percentile(&times, 0.50).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
        );
    }
    println!(
        "all: {:.0} calls/s; errors: {}",
        all.latencies.len() as f64 / elapsed,
        all.errors.len()
    );
    for error in all.errors.iter().take(5) {
        println!("  error: {error}");
    }
    // The store afterwards: every proposal answered as waiting is there and pending; no
    // lane ran (none was approved), so none ran twice.
    let mut pending = 0usize;
    let mut after = None;
    loop {
        let page = governor
            .lanes(LaneState::Pending, after.as_ref(), 1_000)
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        after = Some(last.key());
        pending += page.len();
        assert!(page.iter().all(|lane| lane.attempts() == 0));
    }
    let executed = governor
        .lanes(LaneState::Executed, None, 10)
        .await
        .unwrap()
        .len();
    println!(
        "store: {pending} pending lanes for {} proposals answered; {executed} executed",
        all.proposals
    );
    assert_eq!(
        pending as u64, all.proposals,
        "a proposal was lost or doubled"
    );
    assert_eq!(executed, 0);
    assert!(all.errors.is_empty(), "errors other than the limits");
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut store, mut clients, mut seconds) = ("memory".to_string(), 64u64, 30u64);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--store" => store = args.next().unwrap_or_default(),
            "--clients" => clients = args.next().and_then(|n| n.parse().ok()).unwrap_or(64),
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(30)
                    .min(120)
            }
            "--bench" => {}
            other => panic!("unknown option {other}"),
        }
    }
    match store.as_str() {
        "memory" => run(Governor::new(&TOOLS), "memory", clients, seconds).await,
        "sqlite" => {
            let dir = std::env::temp_dir().join(format!("cairnloop-load-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let store = SqliteStore::open(dir.join("load.db")).unwrap();
            run(
                Governor::new(&TOOLS).with_store(store),
                "sqlite",
                clients,
                seconds,
            )
            .await;
            std::fs::remove_dir_all(&dir).unwrap();
        }
        other => panic!("unknown store {other}: memory or sqlite"),
    }
}
