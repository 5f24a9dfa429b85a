//! Operating-system processes sharing one PostgreSQL store: four racing to execute one
//! approved lane (one run), two whose clocks are two seconds apart racing for twenty
//! (one run each, every loser told why, expiry decided by the server's clock), and one
//! SIGKILLed while it holds a claim (the lane becomes an unknown outcome after the lease,
//! in another process, and is never run again).
//!
//! The processes are this test binary started again with `CAIRNLOOP_CHILD` set: the test
//! `child` then plays one process and the others do nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cairnloop::approvals::{ApprovalConfig, ApprovalStore, Clock, SystemClock};
use cairnloop::gate::{LaneState, Timestamp, Ttl};
use cairnloop::stores::PostgresStore;
use cairnloop::{Actor, Governor, IdempotencyKey, Outcome, Registry, ToolCall, ToolEntry};

#[macro_use]
#[path = "fixtures/postgres.rs"]
mod pg;
use pg::{fresh_database, server};

// Every run, in any process, leaves a line in the runs file; with `CAIRNLOOP_HANG` set it
// then never returns (the process is killed holding its claim).
job_tool!(Ship, "ship", |id| {
    let runs = std::env::var("CAIRNLOOP_RUNS").map_err(|error| error.to_string())?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(runs)
        .map_err(|error| error.to_string())?;
    let line = format!("{} {id}\n", std::process::id());
    file.write_all(line.as_bytes())
        .map_err(|error| error.to_string())?;
    if std::env::var_os("CAIRNLOOP_HANG").is_some() {
        std::thread::sleep(Duration::from_secs(120));
    }
    Ok(())
});

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<Ship>()]);

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cairnloop-proc-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn unix_millis() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// An approved lane for order `id`, and the governor that proposed it.
fn approved(database: &str, id: u32) -> IdempotencyKey {
    approved_within(database, id, ApprovalConfig::new())
}

/// An approved lane for order `id`, proposed under `config` (its time to live).
fn approved_within(database: &str, id: u32, config: ApprovalConfig) -> IdempotencyKey {
    let governor = Governor::new(&TOOLS)
        .with_store(PostgresStore::connect(database).unwrap())
        .with_config(config);
    let agent = Actor::new("agent-7", &[]);
    let arguments = format!(r#"{{"id": {id}}}"#);
    let Ok(Outcome::AwaitingApproval(lane)) =
        pollster::block_on(governor.call(&ToolCall::new("ship", &arguments), &agent, &()))
    else {
        panic!("a proposal")
    };
    pollster::block_on(governor.approve(&lane.key(), "ops-lead")).unwrap();
    lane.key()
}

/// This binary again, as a process that plays `role`.
fn spawn(role: &str, envs: &[(&str, String)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env("CAIRNLOOP_CHILD", role)
        .stdout(std::process::Stdio::null());
    for (name, value) in envs {
        command.env(name, value);
    }
    command.spawn().unwrap()
}

/// This binary again, as a process that executes `keys` (comma-separated) on `database`
/// in `role`, writing its runs and what it was told to `dir`'s `runs` and `outcomes`,
/// with `more` in its environment.
fn contender(role: &str, database: &str, keys: &str, dir: &Path, more: &[(&str, String)]) -> Child {
    let mut envs = vec![
        ("CAIRNLOOP_DATABASE", database.to_owned()),
        ("CAIRNLOOP_KEYS", keys.to_owned()),
        ("CAIRNLOOP_RUNS", dir.join("runs").display().to_string()),
        (
            "CAIRNLOOP_OUTCOMES",
            dir.join("outcomes").display().to_string(),
        ),
    ];
    envs.extend(more.iter().cloned());
    spawn(role, &envs)
}

/// One process: `race` executes each lane of `CAIRNLOOP_KEYS` at its agreed instant
/// (`CAIRNLOOP_START_AT`, then one every `CAIRNLOOP_ROUND_MS`) and writes what happened,
/// on a clock `CAIRNLOOP_SKEW_MS` off the host's; `hang` executes one with a tool that
/// never returns.
#[test]
fn child() {
    let Ok(role) = std::env::var("CAIRNLOOP_CHILD") else {
        return;
    };
    let database = std::env::var("CAIRNLOOP_DATABASE").unwrap();
    if role == "approve" {
        return approve_each(&database);
    }
    let skew: i64 = std::env::var("CAIRNLOOP_SKEW_MS").map_or(0, |skew| skew.parse().unwrap());
    // This host's clock, as far off as the test says.
    let skewed = move || {
        SystemClock
            .now()
            .map(|now| Timestamp::from_unix_millis(now.unix_millis().saturating_add_signed(skew)))
    };
    let governor = Governor::new(&TOOLS)
        .with_store(PostgresStore::connect(&database).unwrap())
        .with_config(ApprovalConfig::new().with_lease(Ttl::from_secs(1)))
        .with_clock(skewed)
        .with_holder(format!("process-{}", std::process::id()));
    let agent = Actor::new("agent-7", &[]);
    let keys = std::env::var("CAIRNLOOP_KEYS").unwrap();
    let round: u64 = std::env::var("CAIRNLOOP_ROUND_MS").map_or(0, |ms| ms.parse().unwrap());
    let start: u64 = std::env::var("CAIRNLOOP_START_AT").map_or(0, |at| at.parse().unwrap());
    let outcomes = std::env::var("CAIRNLOOP_OUTCOMES").unwrap();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(outcomes)
        .unwrap();
    for (index, key) in keys.split(',').enumerate() {
        let key: IdempotencyKey = key.parse().unwrap();
        // A barrier across processes: every contender starts each round at one instant.
        let at = start + round * index as u64;
        while unix_millis() < at {
            std::hint::spin_loop();
        }
        let result = pollster::block_on(governor.execute(&key, &agent, &()));
        // One write per line: the processes append to one file at once.
        let told = match result {
            Ok(_) => format!("{index} ran\n"),
            Err(error) => format!("{index} refused: {error}\n"),
        };
        file.write_all(told.as_bytes()).unwrap();
    }
}

/// The console's process: approves each key of `CAIRNLOOP_KEYS` in turn, a little apart,
/// and writes when each approval was asked for and when it had committed.
fn approve_each(database: &str) {
    let governor = Governor::new(&TOOLS).with_store(PostgresStore::connect(database).unwrap());
    let outcomes = std::env::var("CAIRNLOOP_OUTCOMES").unwrap();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(outcomes)
        .unwrap();
    for key in std::env::var("CAIRNLOOP_KEYS").unwrap().split(',') {
        std::thread::sleep(Duration::from_millis(30));
        let key: IdempotencyKey = key.parse().unwrap();
        let asked = unix_micros();
        pollster::block_on(governor.approve(&key, "ops-lead")).unwrap();
        writeln!(file, "{asked} {}", unix_micros()).unwrap();
    }
}

fn unix_micros() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros(),
    )
    .unwrap()
}

#[test]
fn decisions_made_in_another_process_wake_the_waiting_one() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let store = PostgresStore::connect(&database).unwrap();
    let watch = store.watch().unwrap();
    let governor = Governor::new(&TOOLS).with_store(store);
    let agent = Actor::new("agent-7", &[]);
    let keys: Vec<IdempotencyKey> = (0..40)
        .map(|id| {
            let arguments = format!(r#"{{"id": {id}}}"#);
            match pollster::block_on(governor.call(&ToolCall::new("ship", &arguments), &agent, &()))
            {
                Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
                other => panic!("a proposal, got {other:?}"),
            }
        })
        .collect();
    // The signal moves on once when the store starts listening and once for each of its
    // own proposals; from here on only another process can move it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while watch.generation() < 41 {
        assert!(
            Instant::now() < deadline,
            "the store never started listening"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let seen = watch.generation();
    let dir = scratch("watch");
    let outcomes = dir.join("outcomes");
    let list: Vec<String> = keys.iter().map(ToString::to_string).collect();
    let mut console = spawn(
        "approve",
        &[
            ("CAIRNLOOP_DATABASE", database.clone()),
            ("CAIRNLOOP_KEYS", list.join(",")),
            ("CAIRNLOOP_OUTCOMES", outcomes.display().to_string()),
        ],
    );
    // Only a notification from the other process ends this (a wait that ran out says
    // `false`).
    assert!(pollster::block_on(
        watch.changed(seen, Duration::from_secs(60))
    ));
    let first = pollster::block_on(governor.await_decision(&keys[0], Duration::from_secs(60)));
    assert_eq!(first.unwrap().state(), LaneState::Approved);
    let mut woken = vec![unix_micros()];
    // Each later decision wakes this process: no wait runs out (that would say `false`).
    for key in &keys[1..] {
        loop {
            let seen = watch.generation();
            if pollster::block_on(governor.lane(key)).unwrap().state() == LaneState::Approved {
                break;
            }
            assert!(
                pollster::block_on(watch.changed(seen, Duration::from_secs(60))),
                "a decision in the other process did not wake this one"
            );
        }
        woken.push(unix_micros());
    }
    assert!(console.wait().unwrap().success());
    // From each commit to the waiter's wake-up, for the record (not a pass mark: timings
    // depend on the machine; the benchmark measures them under load).
    let mut delays: Vec<u64> = lines(&outcomes)
        .iter()
        .zip(&woken)
        .map(|(line, woke)| {
            let committed: u64 = line.split(' ').nth(1).unwrap().parse().unwrap();
            woke.saturating_sub(committed)
        })
        .collect();
    delays.sort_unstable();
    eprintln!(
        "commit to wake-up in another process: median {} us, max {} us over {}",
        delays[delays.len() / 2],
        delays[delays.len() - 1],
        delays.len()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn four_processes_racing_for_one_approved_lane_run_it_once() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let key = approved(&database, 1);
    let dir = scratch("race");
    let (runs, outcomes) = (dir.join("runs"), dir.join("outcomes"));
    let start_at = unix_millis() + 2_000;
    let children: Vec<_> = (0..4)
        .map(|_| {
            let start = [("CAIRNLOOP_START_AT", start_at.to_string())];
            contender("race", &database, &key.to_string(), &dir, &start)
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    assert_eq!(lines(&runs).len(), 1, "runs: {:?}", lines(&runs));
    let told = lines(&outcomes);
    assert_eq!(told.iter().filter(|line| line.ends_with(" ran")).count(), 1);
    for loser in told.iter().filter(|line| !line.ends_with(" ran")) {
        assert!(names_what_happened(loser), "{loser}");
    }
    assert_eq!(told.len(), 4);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Whether a loser's refusal names what happened: running elsewhere, or already run.
fn names_what_happened(refusal: &str) -> bool {
    refusal.contains("refused: another execution is running it: claimed by process-")
        || refusal.contains("refused: it has already run: the lane is executed")
}

/// Two processes whose clocks are two seconds apart (one ahead, one behind) race for
/// twenty approved lanes, one round at a time: each lane runs once, and each loser is
/// told that the other is running it or has run it, never that a clock went backwards.
#[test]
fn two_processes_with_skewed_clocks_race_twenty_rounds_and_each_loser_is_told_why() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let keys: Vec<String> = (100..120)
        .map(|id| approved(&database, id).to_string())
        .collect();
    let dir = scratch("skewed-race");
    let (runs, outcomes) = (dir.join("runs"), dir.join("outcomes"));
    let start_at = unix_millis() + 1_500;
    let children: Vec<_> = ["2000", "-2000"]
        .into_iter()
        .map(|skew| {
            let rounds = [
                ("CAIRNLOOP_START_AT", start_at.to_string()),
                ("CAIRNLOOP_ROUND_MS", "150".to_owned()),
                ("CAIRNLOOP_SKEW_MS", skew.to_owned()),
            ];
            contender("race", &database, &keys.join(","), &dir, &rounds)
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let ran = lines(&runs);
    let told = lines(&outcomes);
    for round in 0..20 {
        let id = 100 + round;
        let runs_of = ran
            .iter()
            .filter(|line| line.ends_with(&format!(" {id}")))
            .count();
        assert_eq!(runs_of, 1, "round {round} ran {runs_of} times: {ran:?}");
        let said: Vec<&String> = told
            .iter()
            .filter(|line| line.starts_with(&format!("{round} ")))
            .collect();
        assert_eq!(said.len(), 2, "round {round}: {said:?}");
        let winners = said.iter().filter(|line| line.ends_with(" ran")).count();
        assert_eq!(winners, 1, "round {round}: {said:?}");
        for loser in said.iter().filter(|line| !line.ends_with(" ran")) {
            assert!(names_what_happened(loser), "round {round}: {loser}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Expiry by the server's clock: a process whose clock is two seconds behind does not run
/// a lane that expired a second ago, and one whose clock is two seconds ahead runs a lane
/// that has a second and a half left.
#[test]
fn a_skewed_clock_neither_runs_an_expired_approval_nor_expires_a_live_one() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let config = ApprovalConfig::new().with_ttl(Ttl::from_secs(4));
    let proposed_at = unix_millis();
    let expired = approved_within(&database, 200, config);
    let live = approved_within(&database, 201, config);
    let dir = scratch("skewed-expiry");
    let (runs, outcomes) = (dir.join("runs"), dir.join("outcomes"));
    let run_at = |key: &IdempotencyKey, skew: &str, at: u64| {
        let when = [
            ("CAIRNLOOP_START_AT", at.to_string()),
            ("CAIRNLOOP_SKEW_MS", skew.to_owned()),
        ];
        contender("race", &database, &key.to_string(), &dir, &when)
    };
    let ahead = run_at(&live, "2000", proposed_at + 2_500);
    let behind = run_at(&expired, "-2000", proposed_at + 5_000);
    for mut child in [ahead, behind] {
        assert!(child.wait().unwrap().success());
    }
    let told = lines(&outcomes);
    assert_eq!(told.len(), 2, "{told:?}");
    assert_eq!(
        told[0], "0 ran",
        "the live lane, on a clock ahead: {told:?}"
    );
    assert_eq!(
        told[1], "0 refused: the approval expired",
        "the expired lane, on a clock behind: {told:?}"
    );
    let ran = lines(&runs);
    assert!(ran.len() == 1 && ran[0].ends_with(" 201"), "{ran:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_process_killed_holding_a_claim_leaves_an_unknown_outcome_never_run_again() {
    let Some(server) = server() else { return };
    let database = fresh_database(&server);
    let key = approved(&database, 2);
    let dir = scratch("kill");
    let (runs, outcomes) = (dir.join("runs"), dir.join("outcomes"));
    let hang = [("CAIRNLOOP_HANG", "1".to_owned())];
    let mut holder = contender("hang", &database, &key.to_string(), &dir, &hang);
    // Wait until the other process holds the claim and its tool has started.
    let governor = Governor::new(&TOOLS)
        .with_store(PostgresStore::connect(&database).unwrap())
        .with_holder("survivor");
    let deadline = Instant::now() + Duration::from_secs(30);
    while lines(&runs).is_empty()
        || pollster::block_on(governor.lane(&key)).unwrap().state() != LaneState::ExecutionPending
    {
        assert!(
            Instant::now() < deadline,
            "the child never claimed the lane"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    holder.kill().unwrap(); // SIGKILL: no guard, no drop, nothing recorded
    holder.wait().unwrap();

    // Before the lease runs out, the claim stands; after it, a sweep here marks the
    // outcome unknown.
    let agent = Actor::new("agent-7", &[]);
    assert!(pollster::block_on(governor.execute(&key, &agent, &())).is_err());
    std::thread::sleep(Duration::from_millis(1_200));
    assert_eq!(pollster::block_on(governor.sweep()), Ok(1));
    assert_eq!(
        pollster::block_on(governor.lane(&key)).unwrap().state(),
        LaneState::OutcomeUnknown
    );
    // Never run again on its own, from any process.
    assert!(pollster::block_on(governor.execute(&key, &agent, &())).is_err());
    assert_eq!(pollster::block_on(governor.sweep()), Ok(0));
    assert_eq!(lines(&runs).len(), 1);
    assert!(
        lines(&outcomes).is_empty(),
        "the killed process wrote an outcome"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
