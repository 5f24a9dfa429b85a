//! A thousand calls waiting for a person, and one decision: the waiter of the decided
//! lane wakes with it, the others go back to sleep, and the store is read a handful of
//! times, not once per waiter.
#![cfg(all(feature = "serde", feature = "std"))]

use std::sync::Arc;
use std::time::Duration;

use cairnloop::approvals::MemoryStore;
use cairnloop::gate::LaneState;
use cairnloop::{Actor, Governor, Outcome, Registry, ToolCall, ToolEntry};

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;
#[path = "fixtures/counted_store.rs"]
mod counted_store;

use counted_store::Counted;

#[derive(serde::Deserialize, serde::Serialize)]
struct Job {
    n: u32,
}

plain_tool!(Approve, "approve_me", HighWrite, [], |input: Job| -> u32 {
    input.n
});

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<Approve>()]);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_decision_among_a_thousand_waiters_wakes_its_own_with_a_few_reads() {
    let governor = Arc::new(Governor::new(&TOOLS).with_store(Counted::new(MemoryStore::new())));
    let agent = Actor::new("agent-7", &[]);
    let mut keys = Vec::new();
    for n in 0..1_000 {
        let arguments = format!(r#"{{"n": {n}}}"#);
        match governor
            .call(&ToolCall::new("approve_me", &arguments), &agent, &())
            .await
        {
            Ok(Outcome::AwaitingApproval(lane)) => keys.push(lane.key()),
            other => panic!("a proposal, got {other:?}"),
        }
    }
    let waiters: Vec<_> = keys
        .iter()
        .map(|key| {
            let (governor, key) = (Arc::clone(&governor), *key);
            tokio::spawn(
                async move { governor.await_decision(&key, Duration::from_secs(60)).await },
            )
        })
        .collect();
    // Every waiter has read its lane once and parked.
    let store = governor.store();
    while store.gets() < 1_000 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (gets, batches) = (store.gets(), store.batches());

    governor.approve(&keys[500], "ops-lead").await.unwrap();
    let mut waiters = waiters;
    let decided = waiters.remove(500).await.unwrap().unwrap();
    assert_eq!(decided.state(), LaneState::Approved);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let read_one = store.gets() - gets;
    let read_many = store.batches() - batches;
    // The approval's own read, and the decided waiter's; one batch for all the rest.
    assert!(read_one <= 4, "{read_one} single reads for one decision");
    assert!(read_many <= 3, "{read_many} batch reads for one decision");
    assert!(
        waiters.iter().all(|waiter| !waiter.is_finished()),
        "only the decided call woke"
    );
    for waiter in waiters {
        waiter.abort();
    }
}
