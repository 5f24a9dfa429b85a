//! Two remote MCP server processes (examples/remote_mcp) on one PostgreSQL store: a call
//! proposed through one is approved by an operator, then made again through both at once,
//! and runs once. Runs under scripts/with_postgres.sh (CI does); skipped without a server.

#[path = "../../tests/fixtures/desk.rs"]
mod desk;
#[path = "fixtures/mcp_http.rs"]
mod mcp_http;
#[path = "fixtures/postgres.rs"]
mod pg;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use cairnloop::Governor;
use cairnloop::gate::LaneState;
use cairnloop::stores::PostgresStore;
use desk::DESK;
use pg::fresh_database;
use serde_json::Value;

/// The example binary: `cargo test` builds the examples next to the test binaries.
fn remote_mcp() -> PathBuf {
    if let Some(path) = std::env::var_os("CAIRNLOOP_REMOTE_MCP") {
        return path.into();
    }
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/remote_mcp")
}

struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server process on `config`, once it says it serves: its base URL.
fn start(config: &str, keys: &str) -> (Process, String) {
    let address = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(remote_mcp())
        .args([
            "serve",
            "--address",
            &address,
            "--keys",
            keys,
            "--postgres",
            config,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("the remote_mcp example (built by cargo test)");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("the server says something").unwrap();
        if line.contains("serving") {
            break;
        }
    }
    (Process(child), format!("http://{address}"))
}

fn mint(keys: &str, base: &str) -> String {
    let address = base.trim_start_matches("http://");
    let out = Command::new(remote_mcp())
        .args([
            "mint",
            "--keys",
            keys,
            "--address",
            address,
            "--sub",
            "alice",
        ])
        .args(["--scope", "orders:read refunds:write", "--account", "acme"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_approval_and_the_call_runs_once() {
    let Ok(server) = std::env::var("CAIRNLOOP_POSTGRES") else {
        eprintln!("no CAIRNLOOP_POSTGRES: run under scripts/with_postgres.sh");
        return;
    };
    let config = fresh_database(&server);
    let keys = tempdir();
    let (_a, base_a) = start(&config, &keys);
    let (_b, base_b) = start(&config, &keys);
    let (token_a, token_b) = (mint(&keys, &base_a), mint(&keys, &base_b));
    let refund = r#"{"order": 1001, "cents": 1250, "reason": "late"}"#;
    let first = mcp_http::call_once(&base_a, &token_a, "refund_order", refund).await;
    assert_eq!(first["status"], "awaiting_approval", "{first}");
    let key = first["proposal_id"].as_str().unwrap().parse().unwrap();
    // An operator approves it, from a third connection to the same store.
    let operator = Governor::new(&DESK).with_store(PostgresStore::connect(&config).unwrap());
    operator.approve(&key, "ops-lead").await.unwrap();
    // The agent's call made again through both processes at once: both sessions open
    // first, then the two calls leave together.
    let session_a = mcp_http::session(&base_a, &token_a, serde_json::json!({})).await;
    let session_b = mcp_http::session(&base_b, &token_b, serde_json::json!({})).await;
    let body = mcp_http::call(1, "refund_order", refund);
    let sid_a = [("mcp-session-id", session_a.as_str())];
    let sid_b = [("mcp-session-id", session_b.as_str())];
    let (one, two) = tokio::join!(
        mcp_http::post(&base_a, Some(&token_a), &body, &sid_a),
        mcp_http::post(&base_b, Some(&token_b), &body, &sid_b),
    );
    let result = |messages: Vec<Value>| messages[0]["result"]["structuredContent"].clone();
    let (one, two) = (
        result(mcp_http::messages(one).await),
        result(mcp_http::messages(two).await),
    );
    let statuses: Vec<&Value> = vec![&one["status"], &two["status"]];
    assert!(statuses.contains(&&Value::from("executed")), "{one} {two}");
    let again = mcp_http::call_once(&base_b, &token_b, "refund_order", refund).await;
    assert_eq!(again["status"], "executed", "{again}");
    let lane = operator.lane(&key).await.unwrap();
    assert_eq!((lane.state(), lane.attempts()), (LaneState::Executed, 1));
}

fn tempdir() -> String {
    let dir = std::env::temp_dir().join(format!("cairnloop-remote-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.to_string_lossy().into_owned()
}
