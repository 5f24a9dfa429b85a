//! A PostgreSQL server restarted in the middle of a load: typed errors (with the server's
//! message) while it is down, the same governor serving again by itself once it is up,
//! no lane in a false state and nothing run twice. A test binary of its own, so that no
//! other test uses the server while it is stopped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use cairnloop::approvals::StoreError;
use cairnloop::gate::LaneState;
use cairnloop::stores::{PostgresOptions, PostgresStore};
use cairnloop::{Actor, ApprovalError, Governor, Outcome, Registry, ToolCall, ToolEntry};

#[macro_use]
#[path = "fixtures/postgres.rs"]
mod pg;

/// How many times each order was shipped, by id.
static SHIPPED: Mutex<BTreeMap<u32, u32>> = Mutex::new(BTreeMap::new());

job_tool!(Ship, "ship", |id| {
    *SHIPPED.lock().unwrap().entry(id).or_default() += 1;
    Ok(())
});

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<Ship>()]);

/// An error a store may give while its server is away: typed, and saying why.
fn is_typed_outage(error: &ApprovalError) -> bool {
    match error {
        ApprovalError::Store(StoreError::Backend(text) | StoreError::OutcomeUnknown(text)) => {
            !text.is_empty()
        }
        ApprovalError::OutcomeNotRecorded { store, .. } => is_typed_outage(store),
        _ => false,
    }
}

#[test]
fn a_server_restarted_mid_load_recovers_by_itself_and_runs_nothing_twice() {
    let (Ok(config), Ok(stop), Ok(start)) = (
        std::env::var("CAIRNLOOP_POSTGRES"),
        std::env::var("CAIRNLOOP_POSTGRES_STOP"),
        std::env::var("CAIRNLOOP_POSTGRES_START"),
    ) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test under scripts/with_postgres.sh"
        );
        eprintln!("no server to stop: run under scripts/with_postgres.sh");
        return;
    };
    let options = PostgresOptions::new()
        .pool_size(8)
        .connect_timeout(Duration::from_secs(2));
    let governor = Arc::new(
        Governor::new(&TOOLS).with_store(PostgresStore::connect_with(&config, options).unwrap()),
    );
    let agent = Actor::new("agent-7", &[]);
    // Orders 0..200 proposed and approved before the load.
    let mut keys = Vec::new();
    for id in 0..200 {
        let arguments = format!(r#"{{"id": {id}}}"#);
        let Ok(Outcome::AwaitingApproval(lane)) =
            pollster::block_on(governor.call(&ToolCall::new("ship", &arguments), &agent, &()))
        else {
            panic!("a proposal")
        };
        pollster::block_on(governor.approve(&lane.key(), "ops-lead")).unwrap();
        keys.push((id, lane.key()));
    }
    let queue = Arc::new(Mutex::new(keys.clone()));
    let outages = Arc::new(Mutex::new(Vec::<String>::new()));
    let stopping = Arc::new(AtomicBool::new(false));
    let go = Arc::new(Barrier::new(5));
    // Four workers execute approved orders and propose new ones, through the restart.
    let workers: Vec<_> = (0..4)
        .map(|worker| {
            let (governor, queue, outages, stopping, go) = (
                Arc::clone(&governor),
                Arc::clone(&queue),
                Arc::clone(&outages),
                Arc::clone(&stopping),
                Arc::clone(&go),
            );
            std::thread::spawn(move || {
                let agent = Actor::new("agent-7", &[]);
                go.wait();
                let mut n = 0;
                while !stopping.load(Ordering::SeqCst) {
                    let next = queue.lock().unwrap().pop();
                    let result = match next {
                        Some((_, key)) => {
                            pollster::block_on(governor.execute(&key, &agent, &())).map(|_| ())
                        }
                        None => {
                            n += 1;
                            let arguments = format!(r#"{{"id": {}}}"#, 10_000 + worker * 1000 + n);
                            let call = ToolCall::new("ship", &arguments);
                            pollster::block_on(governor.call(&call, &agent, &())).map(|_| ())
                        }
                    };
                    match result {
                        Ok(()) => {}
                        Err(error) if is_typed_outage(&error) => {
                            outages.lock().unwrap().push(error.to_string());
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        // A lane another worker's error left claimed, or a re-run refused.
                        Err(
                            ApprovalError::Transition(_)
                            | ApprovalError::AlreadyRun(_)
                            | ApprovalError::RunningElsewhere { .. },
                        ) => {}
                        Err(error) => panic!("an untyped failure under restart: {error:?}"),
                    }
                }
            })
        })
        .collect();
    go.wait();
    std::thread::sleep(Duration::from_millis(150));
    pg::shell(&stop);
    std::thread::sleep(Duration::from_millis(500));
    pg::shell(&start);
    // The same governor serves again by itself, within seconds.
    let back = Instant::now();
    let recovered = loop {
        let probe = ToolCall::new("ship", r#"{"id": 99999}"#);
        match pollster::block_on(governor.call(&probe, &agent, &())) {
            Ok(_) => break back.elapsed(),
            Err(error) if back.elapsed() < Duration::from_secs(10) => {
                assert!(is_typed_outage(&error), "{error:?}");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(error) => panic!("still failing 10 s after the restart: {error}"),
        }
    };
    std::thread::sleep(Duration::from_millis(300));
    stopping.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.join().unwrap();
    }
    let outages = outages.lock().unwrap().clone();
    assert!(!outages.is_empty(), "the restart was not seen by the load");
    // While it was down the errors said why (the server's words or the client's).
    assert!(
        outages
            .iter()
            .any(|text| text.contains("SQLSTATE") || text.contains("connect")),
        "{outages:?}"
    );
    eprintln!(
        "served again {recovered:?} after the start; {} typed errors while down",
        outages.len()
    );

    // Afterwards, from the store: nothing ran twice; a lane whose order shipped is never
    // left where it could run again; what is still approved runs now, once.
    let agent = Actor::new("agent-7", &[]);
    for (id, key) in &keys {
        let lane = pollster::block_on(governor.lane(key)).unwrap();
        let shipped = SHIPPED.lock().unwrap().get(id).copied().unwrap_or(0);
        assert!(shipped <= 1, "order {id} shipped {shipped} times");
        match lane.state() {
            LaneState::Executed => assert_eq!(shipped, 1, "order {id}"),
            LaneState::Approved => {
                assert_eq!(shipped, 0, "order {id} shipped but its lane is approved");
                pollster::block_on(governor.execute(key, &agent, &())).unwrap();
            }
            // Claimed, outcome not recorded: a person reconciles it; never re-run.
            LaneState::ExecutionPending | LaneState::OutcomeUnknown => {}
            other => panic!("order {id}'s lane is {other:?}"),
        }
        assert!(SHIPPED.lock().unwrap().get(id).copied().unwrap_or(0) <= 1);
    }
    let re_run = keys.iter().filter(|(_, key)| {
        matches!(
            pollster::block_on(governor.execute(key, &agent, &())),
            Ok(_)
                | Err(ApprovalError::Transition(_)
                    | ApprovalError::AlreadyRun(_)
                    | ApprovalError::RunningElsewhere { .. })
        )
    });
    assert_eq!(re_run.count(), keys.len());
    for (id, _) in &keys {
        assert!(SHIPPED.lock().unwrap().get(id).copied().unwrap_or(0) <= 1);
    }
}
