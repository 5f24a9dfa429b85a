//! A PostgreSQL server restarted while calls wait for a person: tasks and held calls wait
//! through the outage (a poll meanwhile answers `working` or a typed error, never a
//! result), the decisions made once it is back reach them, and every approved call runs
//! once. A test binary of its own, so that no other test uses the server while it is
//! stopped.

#[path = "../../tests/fixtures/desk.rs"]
mod desk;
#[path = "fixtures/postgres.rs"]
mod pg;
#[path = "fixtures/wire.rs"]
mod wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairnloop::Governor;
use cairnloop::gate::LaneState;
use cairnloop::mcp::{FrameLimits, McpServer};
use cairnloop::stores::{PostgresOptions, PostgresStore};
use desk::{DESK, Desk};
use serde_json::{Value, json};
use wire::{Wire, request_meta, serve};

type Shared = Arc<Governor<Desk, PostgresStore>>;

fn server(governor: &Shared, desk: &Desk) -> McpServer<Desk, PostgresStore> {
    McpServer::new(Arc::clone(governor), desk.clone(), "agent-7")
        .with_account("acme")
        .with_scopes(["tickets:write"])
        .with_hold(Duration::from_secs(60))
}

/// A note on `ticket`, made as a task (a 2026-07-28 request declaring the extension) or
/// held (a request that declares nothing).
fn note(id: u32, ticket: u32, as_task: bool) -> Value {
    let mut request = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "internal_note", "arguments": { "ticket": ticket, "body": "Through a restart." } },
    });
    if as_task {
        request["params"]["_meta"] = request_meta(true);
    }
    request
}

async fn poll(wire: &mut Wire, id: u32, task: &str) -> Value {
    wire.send_json(json!({
        "jsonrpc": "2.0", "id": id, "method": "tasks/get",
        "params": { "taskId": task, "_meta": request_meta(true) },
    }))
    .await;
    wire.next_within(Duration::from_secs(30)).await
}

/// The key of the pending lane of the note on `ticket`, once it is proposed.
async fn lane_of(governor: &Shared, ticket: u32) -> cairnloop::IdempotencyKey {
    let names = |lane: &&cairnloop::approvals::ApprovalLane| {
        serde_json::from_str::<Value>(lane.proposal().input()).unwrap()["ticket"] == ticket
    };
    for _ in 0..200 {
        let lanes = governor.lanes(LaneState::Pending, None, 100).await.unwrap();
        if let Some(lane) = lanes.iter().find(names) {
            return lane.key();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no proposal for ticket {ticket}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_and_held_calls_wait_through_a_restart_and_each_approved_call_runs_once() {
    let (Some(config), Ok(stop), Ok(start)) = (
        pg::server(),
        std::env::var("CAIRNLOOP_POSTGRES_STOP"),
        std::env::var("CAIRNLOOP_POSTGRES_START"),
    ) else {
        return;
    };
    let database = pg::fresh_database(&config);
    let options = PostgresOptions::new()
        .pool_size(4)
        .connect_timeout(Duration::from_secs(2));
    let connect = || PostgresStore::connect_with(&database, options).unwrap();
    let governor: Shared = Arc::new(Governor::new(&DESK).with_store(connect()));
    let desk = Desk::default();
    // Tickets 1–3 wait as tasks, 11–13 as held calls.
    let mut tasks = serve(server(&governor, &desk), FrameLimits::new());
    let mut task_ids = Vec::new();
    for ticket in 1..=3 {
        tasks.send_json(note(ticket, ticket, true)).await;
        let created = tasks.next().await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        task_ids.push(created["result"]["taskId"].as_str().unwrap().to_owned());
    }
    let mut held = serve(server(&governor, &desk), FrameLimits::new());
    held.initialize("2025-11-25", json!({})).await;
    for ticket in 11..=13 {
        held.send_json(note(ticket, ticket, false)).await;
    }
    let mut keys = std::collections::BTreeMap::new();
    for ticket in [1, 2, 3, 11, 12, 13] {
        keys.insert(ticket, lane_of(&governor, ticket).await);
    }

    pg::shell(&stop);
    // While the server is down a poll is `working` or a typed error; nothing has run.
    let polled = poll(&mut tasks, 100, &task_ids[0]).await;
    let said = polled.to_string();
    assert!(
        polled["result"]["status"] == "working" || said.contains("could not be read"),
        "{said}"
    );
    assert!(
        polled["error"].is_null() || polled["error"]["code"] == -32603,
        "{said}"
    );
    // Down longer than a waiter goes without reading its lane, so that reads fail.
    tokio::time::sleep(Duration::from_secs(6)).await;
    pg::shell(&start);

    // Another process decides once the server is back: 1, 2, 11 and 12 approved, 3 and
    // 13 rejected.
    let operator = Governor::new(&DESK).with_store(connect());
    for (ticket, key) in &keys {
        if [3, 13].contains(ticket) {
            operator.reject(key, "ops-lead", "not now").await.unwrap();
        } else {
            operator.approve(key, "ops-lead").await.unwrap();
        }
    }
    // The held calls answer in their own requests.
    let mut answers = std::collections::BTreeMap::new();
    for _ in 0..3 {
        let answer = held.next_within(Duration::from_secs(30)).await;
        answers.insert(answer["id"].as_u64().unwrap(), answer);
    }
    for ticket in [11_u64, 12] {
        let status = &answers[&ticket]["result"]["structuredContent"]["status"];
        assert_eq!(status, "executed", "{:?}", answers[&ticket]);
    }
    assert_eq!(
        answers[&13]["result"]["isError"], true,
        "{:?}",
        answers[&13]
    );
    // The tasks complete: two with their results, one as a tool error.
    let deadline = Instant::now() + Duration::from_secs(30);
    for (n, task) in task_ids.iter().enumerate() {
        let done = loop {
            let polled = poll(&mut tasks, 200, task).await;
            if polled["result"]["status"] != "working" {
                break polled;
            }
            assert!(Instant::now() < deadline, "still working: {polled}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(done["result"]["status"], "completed", "{done}");
        assert_eq!(done["result"]["result"]["isError"], n == 2, "{done}");
    }
    let mut ran = desk.ran();
    ran.sort();
    assert_eq!(
        ran,
        [
            "internal_note(1)",
            "internal_note(11)",
            "internal_note(12)",
            "internal_note(2)"
        ],
        "each approved call ran once"
    );
}
