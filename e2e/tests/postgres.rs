//! The PostgreSQL store against a real server: the conformance kit, sixteen connections
//! racing for one approval, a refused database, and an unreachable server.
//!
//! The server comes from `scripts/with_postgres.sh` (which `.ci/run` uses), through
//! `CAIRNLOOP_POSTGRES`. Without it these tests say so and pass, except in CI, where a
//! missing server is a failure.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use cairnloop::approvals::{ApprovalConfig, StoreError, conformance};
use cairnloop::gate::LaneState;
use cairnloop::stores::PostgresStore;
use cairnloop::{
    Actor, Governor, InputErrors, Invocation, Outcome, PolicyDenial, Registry, RiskTier, Scope,
    Tool, ToolCall, ToolEntry, ToolSpec,
};
use serde::{Deserialize, Serialize};

/// The server's connection string, or `None` (outside CI) when no server was started.
fn server() -> Option<String> {
    match std::env::var("CAIRNLOOP_POSTGRES") {
        Ok(config) => Some(config),
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("CI must run these tests against a real server (scripts/with_postgres.sh)")
        }
        Err(_) => {
            eprintln!(
                "no CAIRNLOOP_POSTGRES: run under scripts/with_postgres.sh to test the PostgreSQL store"
            );
            None
        }
    }
}

/// A fresh database on the server, for one store: its connection string.
fn fresh_database(server: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "cairnloop_test_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    );
    let mut admin = postgres::Client::connect(server, postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    let base: String = server
        .split_whitespace()
        .filter(|part| !part.starts_with("dbname="))
        .collect::<Vec<_>>()
        .join(" ");
    format!("{base} dbname={name}")
}

#[test]
fn the_postgres_store_keeps_the_contract() {
    let Some(server) = server() else { return };
    conformance::check(
        || PostgresStore::connect(&fresh_database(&server)).unwrap(),
        16,
    )
    .unwrap();
}

#[derive(Deserialize, Serialize)]
struct Job {
    id: u32,
}

struct Count;

static RUNS: AtomicU64 = AtomicU64::new(0);

impl Tool for Count {
    const SPEC: ToolSpec = ToolSpec::new("count", "Count", "Counts its runs.", RiskTier::HighWrite);
    const SCOPES: &'static [Scope] = &[];
    type Input = Job;
    type Output = u32;
    type Error = String;
    type Context = ();
    fn validate(_: &Job) -> Result<(), InputErrors> {
        Ok(())
    }
    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }
    async fn run(call: Invocation<'_, Self>) -> Result<u32, String> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        Ok(call.input().id)
    }
}

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<Count>()]);

#[test]
fn sixteen_connections_racing_for_one_approval_run_it_once() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let agent = Actor::new("agent-7", &[]);
    let first = Governor::new(&TOOLS).with_store(PostgresStore::connect(&database).unwrap());
    let call = ToolCall::new("count", r#"{"id": 7}"#);
    let Ok(Outcome::AwaitingApproval(lane)) = pollster::block_on(first.call(&call, &agent, &()))
    else {
        panic!("a proposal")
    };
    pollster::block_on(first.approve(&lane.key(), "ops-lead")).unwrap();
    let key = lane.key();
    let start = Arc::new(Barrier::new(16));
    let contenders: Vec<_> = (0..16)
        .map(|n| {
            let (database, start) = (database.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                // Each contender is a process of its own as far as the server can tell:
                // its own connection.
                let governor = Governor::new(&TOOLS)
                    .with_store(PostgresStore::connect(&database).unwrap())
                    .with_config(ApprovalConfig::new())
                    .with_holder(format!("worker-{n}"));
                let agent = Actor::new("agent-7", &[]);
                start.wait();
                pollster::block_on(governor.execute(&key, &agent, &())).is_ok()
            })
        })
        .collect();
    let wins = contenders
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(|won| *won)
        .count();
    assert_eq!(wins, 1);
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
    let lane = pollster::block_on(first.lane(&key)).unwrap();
    assert_eq!((lane.state(), lane.attempts()), (LaneState::Executed, 1));
}

#[test]
fn a_database_with_tables_of_ours_that_we_did_not_make_is_refused() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let mut other = postgres::Client::connect(&database, postgres::NoTls).unwrap();
    other
        .batch_execute("CREATE TABLE cairnloop_lanes (note TEXT); INSERT INTO cairnloop_lanes VALUES ('theirs')")
        .unwrap();
    assert_eq!(
        PostgresStore::connect(&database).unwrap_err(),
        StoreError::Foreign
    );
    let kept: i64 = other
        .query_one("SELECT count(*) FROM cairnloop_lanes", &[])
        .unwrap()
        .get(0);
    assert_eq!(kept, 1);
    // A schema from a newer library is refused too.
    let newer = fresh_database(&server);
    drop(PostgresStore::connect(&newer).unwrap());
    let mut bump = postgres::Client::connect(&newer, postgres::NoTls).unwrap();
    bump.batch_execute("UPDATE cairnloop_schema SET version = 99")
        .unwrap();
    assert_eq!(
        PostgresStore::connect(&newer).unwrap_err(),
        StoreError::NewerSchema {
            found: 99,
            supported: 1
        }
    );
}

#[test]
fn an_unreachable_server_is_a_typed_error() {
    let nowhere =
        "host=/nonexistent-cairnloop-socket-dir user=postgres dbname=none connect_timeout=2";
    assert!(matches!(
        PostgresStore::connect(nowhere),
        Err(StoreError::Backend(_))
    ));
}
