//! Crashes and races across processes on one SQLite file. The test binary runs itself as
//! the child processes (the `child` test, ignored unless asked for by the parent).
#![cfg(all(feature = "sqlite", unix))]

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;
#[path = "fixtures/scratch.rs"]
mod scratch;

use scratch::Scratch;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use cairnloop::approvals::{ApprovalConfig, AuditRecord, Reconciliation};
use cairnloop::gate::{LaneAction, LaneState, Ttl};
use cairnloop::stores::SqliteStore;
use cairnloop::{
    Actor, Governor, IdempotencyKey, Outcome, Registry, RiskTier, ToolCall, ToolEntry, ToolSpec,
};
use serde::{Deserialize, Serialize};

/// Where the tools leave their marks: one line per run.
struct Marks {
    file: PathBuf,
}

impl Marks {
    fn mark(&self, what: &str) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)
            .unwrap();
        writeln!(file, "{what}").unwrap();
        file.sync_all().unwrap();
    }

    fn count(&self) -> usize {
        std::fs::read_to_string(&self.file)
            .map(|text| text.lines().count())
            .unwrap_or(0)
    }
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Job {
    id: u32,
}

macro_rules! marking_tool {
    ($tool:ident, $name:literal, hang: $hang:literal) => {
        plain_tool!($tool(Job) -> Result<u32, String>, Marks,
            ToolSpec::new($name, "Mark", "Leaves a mark.", RiskTier::HighWrite),
            ["marks:write"],
            |call| {
                call.context()
                    .mark(&format!("{} {}", $name, std::process::id()));
                if $hang {
                    // Stuck mid-run, as a process is when it is killed.
                    loop {
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
                Ok(call.input().id)
            }
        );
    };
}

marking_tool!(MarkAndHang, "mark_and_hang", hang: true);
marking_tool!(Mark, "mark", hang: false);

static TOOLS: Registry<Marks> =
    Registry::new(&[ToolEntry::json::<MarkAndHang>(), ToolEntry::json::<Mark>()]);

const LEASE: Ttl = Ttl::from_secs(2);

fn agent() -> Actor<'static> {
    Actor::new("agent-7", &["marks:write"])
}

fn governor(db: &Path) -> Governor<Marks, SqliteStore> {
    Governor::new(&TOOLS)
        .with_store(SqliteStore::open(db).unwrap())
        .with_config(ApprovalConfig::new().with_lease(LEASE))
        .with_holder(format!("process-{}", std::process::id()))
}

fn propose(
    governor: &Governor<Marks, SqliteStore>,
    marks: &Marks,
    tool: &str,
    id: u32,
) -> IdempotencyKey {
    let arguments = format!(r#"{{"id": {id}}}"#);
    match pollster::block_on(governor.call(&ToolCall::new(tool, &arguments), &agent(), marks)) {
        Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
        other => panic!("expected a proposal, got {other:?}"),
    }
}

/// Starts this test binary as a child running `mode`.
fn spawn_child(mode: &str, db: &Path, marks: &Path, key: &IdempotencyKey, dir: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("CAIRNLOOP_CHILD", mode)
        .env("CAIRNLOOP_DB", db)
        .env("CAIRNLOOP_MARKS", marks)
        .env("CAIRNLOOP_KEY", key.to_string())
        .env("CAIRNLOOP_DIR", dir)
        .spawn()
        .unwrap()
}

fn wait_for(what: &str, deadline: Duration, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The child processes' side; does nothing unless the parent set `CAIRNLOOP_CHILD`.
#[test]
#[ignore = "run by the other tests of this file, as a child process"]
fn child() {
    let Ok(mode) = std::env::var("CAIRNLOOP_CHILD") else {
        return;
    };
    let env = |name: &str| PathBuf::from(std::env::var(name).unwrap());
    let (db, dir) = (env("CAIRNLOOP_DB"), env("CAIRNLOOP_DIR"));
    let marks = Marks {
        file: env("CAIRNLOOP_MARKS"),
    };
    let key: IdempotencyKey = std::env::var("CAIRNLOOP_KEY").unwrap().parse().unwrap();
    match mode.as_str() {
        // Claims the approved lane and enters a tool that never returns: the parent
        // kills this process inside `run`.
        "crash" => {
            let governor = governor(&db);
            let _ = pollster::block_on(governor.execute(&key, &agent(), &marks));
            unreachable!("the tool never returns");
        }
        // Eight threads, each with its own connection, wait for the parent's signal and
        // race to execute the approved lane.
        "race" => {
            let marks = Arc::new(marks);
            let ready = Arc::new(Barrier::new(8));
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    let (db, dir, marks, ready) = (
                        db.clone(),
                        dir.clone(),
                        Arc::clone(&marks),
                        Arc::clone(&ready),
                    );
                    std::thread::spawn(move || {
                        let governor = governor(&db);
                        ready.wait();
                        wait_for("the go signal", Duration::from_secs(30), || {
                            dir.join("go").exists()
                        });
                        pollster::block_on(governor.execute(&key, &agent(), &marks)).is_ok()
                    })
                })
                .collect();
            let _ = std::fs::write(dir.join(format!("ready-{}", std::process::id())), b"");
            let wins = threads
                .into_iter()
                .map(|t| t.join().unwrap_or(false))
                .filter(|won| *won)
                .count();
            std::fs::write(
                dir.join(format!("wins-{}", std::process::id())),
                wins.to_string(),
            )
            .unwrap();
        }
        other => panic!("unknown child mode {other}"),
    }
}

#[test]
fn a_process_killed_inside_run_leaves_an_unknown_outcome_that_is_never_rerun() {
    let scratch = Scratch::new("crash");
    let (db, marks_file) = (scratch.file("approvals.db"), scratch.file("marks.txt"));
    let marks = Marks {
        file: marks_file.clone(),
    };
    let before = governor(&db);
    let doomed = propose(&before, &marks, "mark_and_hang", 1);
    let waiting = propose(&before, &marks, "mark", 2);
    pollster::block_on(before.approve(&doomed, "ops-lead")).unwrap();
    drop(before);

    // The child claims the lane, enters the tool (which marks), and is killed there.
    let mut child = spawn_child("crash", &db, &marks_file, &doomed, scratch.path());
    wait_for("the tool's mark", Duration::from_secs(30), || {
        marks.count() == 1
    });
    child.kill().unwrap(); // SIGKILL: no destructor, no guard, nothing recorded
    child.wait().unwrap();

    // A new process opens the file. Within the lease the claim stands; after it (real
    // seconds, the clock is not moved by hand), a sweep marks the outcome unknown.
    let after = governor(&db);
    assert_eq!(
        pollster::block_on(after.lane(&doomed)).unwrap().state(),
        LaneState::ExecutionPending
    );
    let lease_end = pollster::block_on(after.lane(&doomed))
        .unwrap()
        .claim()
        .unwrap()
        .until();
    wait_for("the lease to run out", Duration::from_secs(30), || {
        cairnloop::gate::Timestamp::now().is_some_and(|now| now > lease_end)
    });
    assert_eq!(pollster::block_on(after.sweep()), Ok(1));
    let lane = pollster::block_on(after.lane(&doomed)).unwrap();
    assert_eq!(lane.state(), LaneState::OutcomeUnknown);
    assert!(lane.claim().unwrap().holder().starts_with("process-"));
    // The mark was written once, and the lane is not run again, however it is asked.
    assert_eq!(marks.count(), 1);
    let again = pollster::block_on(after.call(
        &ToolCall::new("mark_and_hang", r#"{"id": 1}"#),
        &agent(),
        &marks,
    ));
    assert!(
        matches!(again, Ok(Outcome::AwaitingApproval(ref lane)) if lane.state() == LaneState::OutcomeUnknown)
    );
    assert!(pollster::block_on(after.execute(&doomed, &agent(), &marks)).is_err());
    assert_eq!(marks.count(), 1);
    // The audit trail is whole: opened, approved, claimed, lease lost.
    let actions: Vec<Option<LaneAction>> = pollster::block_on(after.events())
        .unwrap()
        .into_iter()
        .filter_map(|record| match record {
            AuditRecord::Transition(event) if event.key == doomed => Some(event.action),
            _ => None,
        })
        .collect();
    assert_eq!(
        actions,
        [
            None,
            Some(LaneAction::Approve),
            Some(LaneAction::StartExecution),
            Some(LaneAction::LoseLease)
        ]
    );
    // A person resolves it.
    pollster::block_on(after.reconcile(
        &doomed,
        "ops-lead",
        Reconciliation::Executed,
        "the mark is there",
    ))
    .unwrap();

    // The proposal that was pending before the kill is approved and runs after it, once.
    pollster::block_on(after.approve(&waiting, "ops-lead")).unwrap();
    assert_eq!(
        pollster::block_on(after.execute(&waiting, &agent(), &marks)),
        Ok(serde_json::json!(2))
    );
    assert!(pollster::block_on(after.execute(&waiting, &agent(), &marks)).is_err());
    assert_eq!(marks.count(), 2);
}

#[test]
fn two_processes_of_eight_threads_racing_for_one_approval_run_it_once() {
    let scratch = Scratch::new("race");
    let (db, marks_file) = (scratch.file("approvals.db"), scratch.file("marks.txt"));
    let marks = Marks {
        file: marks_file.clone(),
    };
    let parent = governor(&db);
    let key = propose(&parent, &marks, "mark", 7);
    pollster::block_on(parent.approve(&key, "ops-lead")).unwrap();
    let children: Vec<Child> = (0..2)
        .map(|_| spawn_child("race", &db, &marks_file, &key, scratch.path()))
        .collect();
    // Release all sixteen contenders together, once both processes are ready.
    wait_for("both children", Duration::from_secs(60), || {
        children
            .iter()
            .all(|child| scratch.file(&format!("ready-{}", child.id())).exists())
    });
    std::fs::write(scratch.file("go"), b"").unwrap();
    let mut wins = 0;
    for mut child in children {
        let id = child.id();
        assert!(child.wait().unwrap().success(), "child {id} failed");
        wins += std::fs::read_to_string(scratch.file(&format!("wins-{id}")))
            .unwrap()
            .parse::<usize>()
            .unwrap();
    }
    assert_eq!(wins, 1, "exactly one of sixteen contenders ran the lane");
    assert_eq!(marks.count(), 1, "the tool ran once");
    let lane = pollster::block_on(parent.lane(&key)).unwrap();
    assert_eq!((lane.state(), lane.attempts()), (LaneState::Executed, 1));
}
