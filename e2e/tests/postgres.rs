//! The PostgreSQL store against a real server: the conformance kit, sixteen connections
//! racing for one approval, a refused database, and an unreachable server.
//!
//! The server comes from `scripts/with_postgres.sh` (which `.ci/run` uses), through
//! `CAIRNLOOP_POSTGRES`. Without it these tests say so and pass, except in CI, where a
//! missing server is a failure.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use cairnloop::approvals::{ApprovalConfig, ApprovalStore, LaneQuery, StoreError, conformance};
use cairnloop::gate::LaneState;
use cairnloop::stores::{POSTGRES_SCHEMA_VERSION, PostgresStore};
use cairnloop::{Actor, Governor, Outcome, Registry, RiskTier, ToolCall, ToolEntry};

/// The server's connection string, or `None` (outside CI) when no server was started.
#[macro_use]
#[path = "fixtures/postgres.rs"]
mod pg;
use pg::{fresh_database, server};

#[test]
fn the_postgres_store_keeps_the_contract() {
    let Some(server) = server() else { return };
    conformance::check(
        || PostgresStore::connect(&fresh_database(&server)).unwrap(),
        16,
    )
    .unwrap();
}

static RUNS: AtomicU64 = AtomicU64::new(0);

job_tool!(Count, "count", |_| {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(())
});

static DEPLOYS: AtomicU64 = AtomicU64::new(0);

job_tool!(Deploy, "deploy", |_| {
    DEPLOYS.fetch_add(1, Ordering::SeqCst);
    Ok(())
});

static TOOLS: Registry<()> =
    Registry::new(&[ToolEntry::json::<Count>(), ToolEntry::json::<Deploy>()]);

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

/// A quorum of two on PostgreSQL: three approvers on connections of their own, released
/// at once, give two approvals by different people (the third finds it decided), and two
/// executors released at once run it once.
#[test]
fn three_approvers_of_a_quorum_of_two_and_two_executors_run_it_once() {
    use cairnloop::{Governance, ModePolicy};
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let governor = |database: &str| {
        let policy = ModePolicy::new().with_quorum(RiskTier::HighWrite, 2);
        Governor::new(&TOOLS)
            .with_store(PostgresStore::connect(database).unwrap())
            .with_governance(Governance::new().with_mode_policy(policy))
    };
    let first = governor(&database);
    let agent = Actor::new("agent-7", &[]);
    let call = ToolCall::new("deploy", r#"{"id": 9}"#);
    let Ok(Outcome::AwaitingApproval(lane)) = pollster::block_on(first.call(&call, &agent, &()))
    else {
        panic!("a proposal")
    };
    assert_eq!(lane.quorum(), 2);
    let key = lane.key();
    let start = Arc::new(Barrier::new(3));
    let approvers: Vec<_> = ["ops-lead", "sre-on-call", "cto"]
        .into_iter()
        .map(|by| {
            let (database, start) = (database.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let governor = governor(&database);
                start.wait();
                pollster::block_on(governor.approve(&key, by)).map(|lane| lane.state())
            })
        })
        .collect();
    let approved: Vec<_> = approvers.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(
        approved.iter().filter(|r| r.is_ok()).count(),
        2,
        "{approved:?}"
    );
    let lane = pollster::block_on(first.lane(&key)).unwrap();
    assert_eq!(lane.state(), LaneState::Approved);
    let by: Vec<&str> = lane.approvals().iter().map(|a| a.by()).collect();
    assert_eq!(by.len(), 2);
    assert_ne!(by[0], by[1]);

    let start = Arc::new(Barrier::new(2));
    let executors: Vec<_> = (0..2)
        .map(|n| {
            let (database, start) = (database.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let governor = governor(&database).with_holder(format!("worker-{n}"));
                let agent = Actor::new("agent-7", &[]);
                start.wait();
                pollster::block_on(governor.execute(&key, &agent, &())).is_ok()
            })
        })
        .collect();
    let wins = executors
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(|won| *won)
        .count();
    assert_eq!(wins, 1);
    assert_eq!(DEPLOYS.load(Ordering::SeqCst), 1);
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
            supported: POSTGRES_SCHEMA_VERSION
        }
    );
}

/// A database written by the version-1 schema (events numbered under one lock), as that
/// library left it.
const VERSION_1: &str = "
    CREATE TABLE cairnloop_schema (version INTEGER NOT NULL); INSERT INTO cairnloop_schema VALUES (1);
    CREATE TABLE cairnloop_lanes (key TEXT PRIMARY KEY, state TEXT NOT NULL, version BIGINT NOT NULL, lane TEXT NOT NULL);
    CREATE INDEX cairnloop_lanes_by_state ON cairnloop_lanes (state, key);
    CREATE TABLE cairnloop_events (seq BIGSERIAL PRIMARY KEY, record TEXT NOT NULL);
";

#[test]
fn a_version_1_database_migrates_and_its_cursors_stay_valid() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    // Written by today's store into a scratch database, then moved into a version-1
    // layout by hand: the lanes and records as the old library wrote them.
    let scratch = fresh_database(&server);
    let agent = Actor::new("agent-7", &[]);
    let first = Governor::new(&TOOLS).with_store(PostgresStore::connect(&scratch).unwrap());
    for id in 0..3 {
        let arguments = format!(r#"{{"id": {id}}}"#);
        let call = ToolCall::new("count", &arguments);
        pollster::block_on(first.call(&call, &agent, &())).unwrap();
    }
    let mut source = postgres::Client::connect(&scratch, postgres::NoTls).unwrap();
    let lanes = source
        .query("SELECT key, state, version, lane FROM cairnloop_lanes", &[])
        .unwrap();
    let records: Vec<String> = source
        .query("SELECT record FROM cairnloop_events ORDER BY position", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let mut old = postgres::Client::connect(&database, postgres::NoTls).unwrap();
    old.batch_execute(VERSION_1).unwrap();
    for row in &lanes {
        let (key, state, version, lane): (String, String, i64, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        old.execute(
            "INSERT INTO cairnloop_lanes VALUES ($1, $2, $3, $4)",
            &[&key, &state, &version, &lane],
        )
        .unwrap();
    }
    // Numbers with a gap, as a rolled-back insert leaves.
    old.batch_execute("SELECT setval('cairnloop_events_seq_seq', 40)")
        .unwrap();
    for record in &records {
        old.execute(
            "INSERT INTO cairnloop_events (record) VALUES ($1)",
            &[record],
        )
        .unwrap();
    }
    let migrated = PostgresStore::connect(&database).unwrap();
    let version: i32 = old
        .query_one("SELECT version FROM cairnloop_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, POSTGRES_SCHEMA_VERSION);
    // The old numbers are the old cursors, unchanged; a new event comes after them.
    let governor = Governor::new(&TOOLS).with_store(migrated);
    let before = pollster::block_on(governor.audit_log(0, 100)).unwrap();
    let cursors: Vec<u64> = before.iter().map(|(cursor, _)| *cursor).collect();
    let last = 40 + records.len() as u64;
    assert_eq!(cursors, (41..=last).collect::<Vec<_>>());
    // The records written before the chain existed are linked, in order, once final.
    let chained = pollster::block_on(governor.store().verify_audit())
        .unwrap()
        .unwrap();
    assert_eq!((chained.first, chained.last), (Some(41), Some(last)));
    // The blobs were spread into columns: every filter finds the old lanes, newest first.
    let waiting = LaneQuery::new(LaneState::Pending)
        .tool("count")
        .proposer("agent-7")
        .tiers([RiskTier::HighWrite]);
    let found = pollster::block_on(governor.query_lanes(&waiting, 10)).unwrap();
    assert_eq!(found.len(), 3);
    assert!(
        found
            .windows(2)
            .all(|pair| pair[0].proposed_at() >= pair[1].proposed_at())
    );
    assert_eq!(
        pollster::block_on(governor.count_lanes(&waiting, 100)).unwrap(),
        3
    );
    let elsewhere = LaneQuery::new(LaneState::Pending).proposer("agent-8");
    assert!(
        pollster::block_on(governor.query_lanes(&elsewhere, 10))
            .unwrap()
            .is_empty()
    );
    let key = pollster::block_on(governor.lanes(LaneState::Pending, None, 10)).unwrap()[0].key();
    pollster::block_on(governor.approve(&key, "ops-lead")).unwrap();
    // A cursor returns an event once every transaction that began before it has ended (in
    // the whole cluster: other tests run beside this one), so wait for it a little.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let after = loop {
        let after = pollster::block_on(governor.audit_log(last - 1, 100)).unwrap();
        if after.len() >= 2 || std::time::Instant::now() > deadline {
            break after;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(after.len() >= 2, "{after:?}");
    assert_eq!(after[0].0, last);
    assert!(after[1..].iter().all(|(cursor, _)| *cursor > last));
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

#[test]
fn an_event_that_commits_after_a_later_one_is_not_skipped() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let agent = Actor::new("agent-7", &[]);
    let governor = Governor::new(&TOOLS).with_store(PostgresStore::connect(&database).unwrap());
    let propose = |id: u32| {
        let arguments = format!(r#"{{"id": {id}}}"#);
        pollster::block_on(governor.call(&ToolCall::new("count", &arguments), &agent, &()))
            .unwrap();
    };
    propose(1);
    // The reader is another process's store: a store waits for its own writes, not for
    // another's.
    let reader = PostgresStore::connect(&database).unwrap();
    let read_all = |after: u64| {
        pollster::block_on(cairnloop::approvals::ApprovalStore::events_since(
            &reader, after, 100,
        ))
        .unwrap()
    };
    let wait_for = |after: u64, count: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let events = read_all(after);
            if events.len() >= count || std::time::Instant::now() > deadline {
                return events;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    // A proposal writes two records: the gates' decision and the lane's opening.
    let first = wait_for(0, 2);
    assert_eq!(first.len(), 2, "{first:?}");
    let cursor = first.last().unwrap().0;

    // Another process's writer takes its transaction id and is slow to commit.
    let mut slow = postgres::Client::connect(&database, postgres::NoTls).unwrap();
    let mut transaction = slow.transaction().unwrap();
    transaction
        .query_one("SELECT pg_current_xact_id()::text", &[])
        .unwrap();
    // Meanwhile a later writer commits.
    propose(2);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let early = read_all(cursor);
    assert!(
        early.is_empty(),
        "an event was given while an earlier writer is still open: {early:?}"
    );
    // The slow writer's event, written as the store writes one, commits last.
    transaction
        .execute(
            "INSERT INTO cairnloop_events (position, record)
             SELECT position_base + pg_current_xact_id()::text::bigint,
                    (SELECT record FROM cairnloop_events ORDER BY position LIMIT 1)
             FROM cairnloop_schema",
            &[],
        )
        .unwrap();
    transaction.commit().unwrap();
    let late = wait_for(cursor, 3);
    assert_eq!(late.len(), 3, "{late:?}");
    assert!(cursor < late[0].0 && late[0].0 < late[1].0 && late[1].0 < late[2].0);
    // The slow writer's event comes first: positions follow transaction ids.
    assert_eq!(late[0].1, first[0].1);
    assert_ne!(late[1].1, first[0].1);
}

#[test]
fn a_process_reads_its_own_writes_while_an_older_writer_is_open() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let governor = Governor::new(&TOOLS).with_store(PostgresStore::connect(&database).unwrap());
    // Another process's writer holds a transaction id older than every one to come.
    let mut slow = postgres::Client::connect(&database, postgres::NoTls).unwrap();
    slow.batch_execute("BEGIN; SELECT pg_current_xact_id();")
        .unwrap();
    let agent = Actor::new("agent-7", &[]);
    pollster::block_on(governor.call(&ToolCall::new("count", r#"{"id": 1}"#), &agent, &()))
        .unwrap();
    let ending = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        slow.batch_execute("COMMIT").unwrap();
    });
    // Read at once: the proposal's two records are there, though the older writer was
    // still open when the read began.
    let events = pollster::block_on(governor.audit_log(0, 100)).unwrap();
    ending.join().unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
}

// Gives back its input's id; counts nothing (the race above counts `count`'s runs).
job_tool!(Echo, "echo", |_| Ok(()));

static ECHO: Registry<()> = Registry::new(&[ToolEntry::json::<Echo>()]);

/// The stored state a move was refused from.
fn refused_from<T: std::fmt::Debug>(result: Result<T, cairnloop::ApprovalError>) -> LaneState {
    match result {
        Err(cairnloop::ApprovalError::Transition(refused)) => refused.from(),
        Err(cairnloop::ApprovalError::AlreadyRun(state)) => state,
        Err(cairnloop::ApprovalError::RunningElsewhere { .. }) => LaneState::ExecutionPending,
        other => panic!("a refusal, got {other:?}"),
    }
}

#[test]
fn a_store_moves_from_its_own_copies_and_never_trusts_a_stale_one() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    // Two processes as far as the server can tell: a store each.
    let here = Governor::new(&ECHO).with_store(PostgresStore::connect(&database).unwrap());
    let elsewhere = Governor::new(&ECHO).with_store(PostgresStore::connect(&database).unwrap());
    let agent = Actor::new("agent-7", &[]);
    let propose = |id: u32| {
        let arguments = format!(r#"{{"id": {id}}}"#);
        match pollster::block_on(here.call(&ToolCall::new("echo", &arguments), &agent, &())) {
            Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
            other => panic!("a proposal, got {other:?}"),
        }
    };

    // Approved elsewhere while this store keeps the pending lane it wrote: it runs here.
    let first = propose(1);
    assert_eq!(
        here.store().last_known(&first).map(|lane| lane.state()),
        Some(LaneState::Pending)
    );
    pollster::block_on(elsewhere.approve(&first, "ops-lead")).unwrap();
    assert_eq!(
        pollster::block_on(here.execute(&first, &agent, &())),
        Ok(serde_json::json!(1))
    );

    // Approved and kept here, run elsewhere: here the copy says approved, the stored lane
    // executed, and it does not run again.
    let second = propose(2);
    pollster::block_on(here.approve(&second, "ops-lead")).unwrap();
    pollster::block_on(elsewhere.execute(&second, &agent, &())).unwrap();
    assert_eq!(
        refused_from(pollster::block_on(here.execute(&second, &agent, &()))),
        LaneState::Executed
    );
    let lane = pollster::block_on(elsewhere.lane(&second)).unwrap();
    assert_eq!((lane.state(), lane.attempts()), (LaneState::Executed, 1));

    // Rejected elsewhere: approving from the pending copy is refused for what is stored.
    let third = propose(3);
    pollster::block_on(elsewhere.reject(&third, "ops-lead", "not today")).unwrap();
    assert_eq!(
        refused_from(pollster::block_on(here.approve(&third, "ops-lead"))),
        LaneState::Rejected
    );
    assert_eq!(
        pollster::block_on(elsewhere.lane(&third)).unwrap().state(),
        LaneState::Rejected
    );
}

/// The database over TLS, as `sslmode` and `sslrootcert` say: with the authority that
/// signed the server's certificate the store works; with a stranger's, the handshake is
/// refused (the certificate is checked, so TLS is in use); without TLS the server itself
/// refuses the role, which signs in over TLS only.
#[test]
fn tls_to_the_database_checks_the_servers_certificate() {
    let (Ok(url), Ok(stranger)) = (
        std::env::var("CAIRNLOOP_POSTGRES_PASSWORD"),
        std::env::var("CAIRNLOOP_POSTGRES_STRANGER_CA"),
    ) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this against scripts/with_postgres.sh"
        );
        return;
    };
    let store = PostgresStore::connect(&url).expect("verified TLS with the right authority");
    assert!(pollster::block_on(store.list(LaneState::Pending, None, 1)).is_ok());

    let (base, _) = url.split_once('?').unwrap();
    let with_stranger = format!("{base}?sslmode=verify-full&sslrootcert={stranger}");
    let refused = PostgresStore::connect(&with_stranger)
        .map(drop)
        .expect_err("refused");
    assert!(
        refused.to_string().to_lowercase().contains("certificate"),
        "{refused}"
    );
    let plain = format!("{base}?sslmode=disable");
    let refused = PostgresStore::connect(&plain)
        .map(drop)
        .expect_err("refused");
    assert!(refused.to_string().contains("no encryption"), "{refused}");
    // A public web root does not vouch for a throwaway authority either.
    let public = format!("{base}?sslmode=require");
    assert!(PostgresStore::connect(&public).is_err());
}
