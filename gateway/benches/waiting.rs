//! Calls that wait for a person, a thousand at a time: 1,000 held calls and 1,000 tasks
//! open at once on one server, the memory they take above the idle process, and how soon
//! an approval made through another connection to the store (another replica, as far as
//! the store can tell) reaches a held call's answer and a task's `tasks/get`.
//!
//! ```text
//! cargo bench -p cairnloop-gateway --bench waiting                          # SQLite
//! scripts/with_postgres.sh cargo bench -p cairnloop-gateway --bench waiting # and PostgreSQL
//! ```
//!
//! The server is the crate's MCP server, as the gateway serves it, on its line transport
//! over an in-process pipe; the tool answers at once, so what is timed is the wait's own
//! cost. A task is polled every 5 ms after the approval (the first poll starts the run,
//! a later one finds it done). Prints the figures and the goals (< 64 MiB above idle,
//! p99 ≤ 100 ms); it asserts nothing about time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairnloop::approvals::ApprovalStore;
use cairnloop::gate::LaneState;
use cairnloop::mcp::{LineTransport, McpServer};
use cairnloop::stores::{PostgresStore, SqliteStore};
use cairnloop::{Governor, IdempotencyKey, Registry, ToolEntry};
use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, WriteHalf};
use tokio::sync::oneshot;

#[macro_use]
#[path = "../../tests/fixtures/plain_tool.rs"]
mod plain_tool;

#[derive(serde::Deserialize, serde::Serialize)]
struct Job {
    n: u32,
}

plain_tool!(Ship, "ship", HighWrite, [], |input: Job| -> u32 { input.n });

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<Ship>()]);

const WAITING: u32 = 1_000;
const TIMED: u32 = 200;

/// A client on a pipe to the server: requests written as lines, answers routed by id.
struct Client {
    write: tokio::sync::Mutex<WriteHalf<tokio::io::DuplexStream>>,
    answers: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>,
}

impl Client {
    fn serve<S: ApprovalStore + Send + Sync + 'static>(server: McpServer<(), S>) -> Self {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(theirs);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(LineTransport::new(read, write)).await {
                let _ = running.waiting().await;
            }
        });
        let (read, write) = tokio::io::split(ours);
        let answers: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>> = Arc::default();
        let routed = Arc::clone(&answers);
        tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let answer: Value = serde_json::from_str(&line).expect("JSON");
                if let Some(id) = answer["id"].as_u64()
                    && let Some(waiting) = routed.lock().unwrap().remove(&id)
                {
                    let _ = waiting.send(answer);
                }
            }
        });
        Self {
            write: tokio::sync::Mutex::new(write),
            answers,
        }
    }

    /// Sends a notification.
    async fn send_notification(&self, notification: Value) {
        let mut write = self.write.lock().await;
        write
            .write_all(format!("{notification}\n").as_bytes())
            .await
            .expect("send");
    }

    /// Sends a request; its answer arrives on the receiver.
    async fn send(&self, request: Value) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        let id = request["id"].as_u64().expect("an id");
        self.answers.lock().unwrap().insert(id, tx);
        let mut write = self.write.lock().await;
        write
            .write_all(format!("{request}\n").as_bytes())
            .await
            .expect("send");
        rx
    }
}

fn call(id: u64, n: u32, task: bool) -> Value {
    let mut params = json!({ "name": "ship", "arguments": { "n": n } });
    if task {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "bench", "version": "1" },
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } },
        });
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
}

fn get_task(id: u64, task: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": {
        "taskId": task,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } },
        },
    } })
}

/// The resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let (p50, p99) = (percentile(&times, 0.5), percentile(&times, 0.99));
    let met = if p99 <= Duration::from_millis(100) {
        "met"
    } else {
        "NOT met"
    };
    println!(
        "  {what}: p50 {:.1} ms, p99 {:.1} ms over {} approvals (goal p99 ≤ 100 ms: {met})",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        times.len()
    );
}

/// The lane of each waiting call, by its `n`.
async fn pending<S: ApprovalStore>(approver: &Governor<(), S>) -> HashMap<u32, IdempotencyKey> {
    let mut keys = HashMap::new();
    let mut after = None;
    loop {
        let page = approver
            .lanes(LaneState::Pending, after.as_ref(), 500)
            .await
            .expect("the store answers");
        let Some(last) = page.last() else { break };
        after = Some(last.key());
        for lane in &page {
            let input: Value = serde_json::from_str(lane.proposal().input()).expect("JSON");
            keys.insert(input["n"].as_u64().expect("n") as u32, lane.key());
        }
    }
    keys
}

async fn measure<S: ApprovalStore + Send + Sync + 'static>(name: &str, serving: S, deciding: S) {
    println!("{name}:");
    let governor = Arc::new(Governor::new(&TOOLS).with_store(serving));
    let approver = Governor::new(&TOOLS).with_store(deciding);
    let server =
        || McpServer::new(Arc::clone(&governor), (), "agent-7").with_hold(Duration::from_secs(600));
    let (held, tasked) = (Client::serve(server()), Client::serve(server()));
    // The held calls' client speaks 2025-11-25: it opens a session first.
    let opened = held
        .send(
            json!({ "jsonrpc": "2.0", "id": 1_000_000, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "bench", "version": "1" },
        } }),
        )
        .await;
    opened.await.expect("initialized");
    held.send_notification(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = rss_kib();
    eprintln!("  idle at {idle} KiB; opening {WAITING} held calls");

    // A thousand held calls and a thousand tasks, all waiting at once.
    let mut answers = Vec::new();
    for n in 0..WAITING {
        answers.push(held.send(call(u64::from(n), n, false)).await);
    }
    eprintln!("  held calls sent; opening {WAITING} tasks");
    let mut tasks = Vec::new();
    for n in 0..WAITING {
        let created = tasked
            .send(call(u64::from(n), WAITING + n, true))
            .await
            .await
            .expect("an answer");
        tasks.push(
            created["result"]["taskId"]
                .as_str()
                .expect("a task")
                .to_owned(),
        );
    }
    eprintln!("  tasks open; reading the lanes");
    let mut keys = pending(&approver).await;
    while keys.len() < (2 * WAITING) as usize {
        tokio::time::sleep(Duration::from_millis(20)).await;
        keys = pending(&approver).await;
    }
    let used = rss_kib().saturating_sub(idle);
    let goal = if used < 64 * 1024 { "met" } else { "NOT met" };
    println!(
        "  {WAITING} held calls and {WAITING} tasks waiting: {:.1} MiB above idle (goal < 64 MiB: {goal})",
        used as f64 / 1024.0
    );

    // Approvals through the other connection; each held call's answer timed.
    let mut answers = answers.into_iter();
    let mut times = Vec::new();
    for n in 0..TIMED {
        let answer = answers.next().expect("an answer");
        let started = Instant::now();
        approver
            .approve(&keys[&n], "ops-lead")
            .await
            .expect("approved");
        let answered = answer.await.expect("answered");
        times.push(started.elapsed());
        assert_eq!(
            answered["result"]["structuredContent"]["status"], "executed",
            "{answered}"
        );
    }
    report("approval to the held call's answer", times);

    let mut times = Vec::new();
    let mut id = 10_000u64;
    for (n, task) in tasks.iter().enumerate().take(TIMED as usize) {
        let started = Instant::now();
        approver
            .approve(&keys[&(WAITING + n as u32)], "ops-lead")
            .await
            .expect("approved");
        loop {
            id += 1;
            let polled = tasked.send(get_task(id, task)).await.await.expect("polled");
            if polled["result"]["status"] == "completed" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        times.push(started.elapsed());
    }
    report("approval to a tasks/get with the result", times);
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = std::env::temp_dir().join(format!("cairnloop-bench-waiting-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a directory");
    let file = dir.join("lanes.db");
    runtime.block_on(measure(
        "SQLite",
        SqliteStore::open(&file).expect("the store"),
        SqliteStore::open(&file).expect("another connection"),
    ));
    match std::env::var("CAIRNLOOP_POSTGRES") {
        Ok(server) => {
            let connect = || PostgresStore::connect(&server).expect("the store");
            let (serving, deciding) = (connect(), connect());
            runtime.block_on(measure("PostgreSQL", serving, deciding));
        }
        Err(_) => println!("PostgreSQL: no CAIRNLOOP_POSTGRES, not measured"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
