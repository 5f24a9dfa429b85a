//! The approval wait as an MCP task (the Tasks extension, protocol 2026-07-28), on the
//! wire: a call that needs a person answers with a durable task the client polls; the
//! approval runs the call once and the task completes with its result; a rejection
//! completes it as a tool error; only its caller can read it; a restart keeps it.

#[path = "../../tests/fixtures/desk.rs"]
mod desk;
#[path = "../../tests/fixtures/scratch.rs"]
mod scratch;
#[path = "fixtures/wire.rs"]
mod wire;

use std::sync::Arc;
use std::time::Duration;

use cairnloop::approvals::ApprovalStore;
use cairnloop::gate::LaneState;
use cairnloop::mcp::{FrameLimits, McpServer};
use cairnloop::stores::SqliteStore;
use cairnloop::{Governor, IdempotencyKey};
use desk::{DESK, Desk};
use serde_json::{Value, json};
use wire::{Wire, request_meta as meta, serve};

const NOTE: &str = r#"{"ticket": 42, "body": "Called twice."}"#;

fn call(id: u32, tasks: bool) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "internal_note",
            "arguments": serde_json::from_str::<Value>(NOTE).unwrap(),
            "_meta": meta(tasks),
        },
    })
}

fn task_request(id: u32, method: &str, task_id: &str) -> Value {
    let mut request = json!({
        "jsonrpc": "2.0", "id": id, "method": method,
        "params": { "taskId": task_id, "_meta": meta(true) },
    });
    if method == "tasks/update" {
        // An answer to a question never asked.
        request["params"]["inputResponses"] =
            json!({ "approval-9": { "action": "accept", "content": { "decision": "approve" } } });
    }
    request
}

async fn ask(wire: &mut Wire, request: Value) -> Value {
    wire.send_json(request).await;
    wire.next().await
}

fn agent<S: ApprovalStore + Send + Sync + 'static>(
    governor: &Arc<Governor<Desk, S>>,
    desk: &Desk,
    id: &str,
) -> McpServer<Desk, S> {
    McpServer::new(Arc::clone(governor), desk.clone(), id)
        .with_account("acme")
        .with_scopes(["tickets:write"])
        .with_decision_place("https://approvals.example.com")
}

/// Polls `tasks/get` until the task leaves `working`, at most five seconds.
async fn settled(wire: &mut Wire, task_id: &str) -> Value {
    for n in 0..100 {
        let answer = ask(wire, task_request(1_000 + n, "tasks/get", task_id)).await;
        if answer["result"]["status"] != "working" {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the task was still working after five seconds");
}

/// Waits until the desk has run a call, at most five seconds, with no `tasks/get`: the
/// task's runner ran it. It ran `call`, once.
async fn ran_with_no_poll(desk: &Desk, call: &str) {
    for _ in 0..100 {
        if !desk.ran().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(desk.ran(), [call], "run with no poll");
}

/// A server over a memory store, and a call of `agent-7` that waits as a task: the
/// governor, the desk, the client's wire, the task's id and the lane's key.
async fn opened() -> (Arc<Governor<Desk>>, Desk, Wire, String, IdempotencyKey) {
    let governor = Arc::new(Governor::new(&DESK));
    let desk = Desk::default();
    let mut wire = serve(agent(&governor, &desk, "agent-7"), FrameLimits::new());
    let created = ask(&mut wire, call(1, true)).await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let key = governor.lanes(LaneState::Pending, None, 10).await.unwrap()[0].key();
    (governor, desk, wire, task_id, key)
}

#[tokio::test]
async fn a_waiting_call_is_a_task_that_completes_with_the_result_once_approved() {
    let scratch = scratch::Scratch::new("tasks-approved");
    let governor = Arc::new(
        Governor::new(&DESK).with_store(SqliteStore::open(scratch.file("store.db")).unwrap()),
    );
    let desk = Desk::default();
    let mut wire = serve(agent(&governor, &desk, "agent-7"), FrameLimits::new());

    let created = ask(&mut wire, call(1, true)).await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working");
    let task_id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(task_id.len(), 32);
    assert!(task_id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(task["pollIntervalMs"], 2_000);
    let message = task["statusMessage"].as_str().unwrap();
    assert!(
        message.contains("low_write") && message.contains("https://approvals.example.com"),
        "{message}"
    );
    // The lane waits 48 hours from its proposal; the task is kept a day past that.
    let ttl = task["ttlMs"].as_u64().unwrap();
    assert!(
        (72 * 3_600_000 - 5_000..=72 * 3_600_000).contains(&ttl),
        "{ttl}"
    );

    // The same call again by the same caller follows the same task.
    let again = ask(&mut wire, call(2, true)).await;
    assert_eq!(again["result"]["taskId"], task_id.as_str(), "{again}");

    // Durable before it was answered, and waiting.
    let polled = ask(&mut wire, task_request(3, "tasks/get", &task_id)).await;
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    assert_eq!(polled["result"]["resultType"], "complete");

    // An operator approves out of band; the task's runner, woken by the store, runs the
    // call before any poll, and the task completes with the tool's result. It ran once.
    let key: IdempotencyKey = governor.lanes(LaneState::Pending, None, 10).await.unwrap()[0].key();
    governor.approve(&key, "ops-lead").await.unwrap();
    ran_with_no_poll(&desk, "internal_note(42)").await;
    let done = settled(&mut wire, &task_id).await;
    let result = &done["result"]["result"];
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(result["isError"], false, "{done}");
    assert_eq!(result["structuredContent"]["status"], "executed");
    assert_eq!(desk.ran(), ["internal_note(42)"]);

    // Polled again, and after the store is opened afresh by another server: the same.
    let later = ask(&mut wire, task_request(4, "tasks/get", &task_id)).await;
    assert_eq!(later["result"]["result"], *result);
    drop(wire);
    let reopened = Arc::new(
        Governor::new(&DESK).with_store(SqliteStore::open(scratch.file("store.db")).unwrap()),
    );
    let mut wire = serve(agent(&reopened, &desk, "agent-7"), FrameLimits::new());
    let read = ask(&mut wire, task_request(5, "tasks/get", &task_id)).await;
    assert_eq!(read["result"]["status"], "completed", "{read}");
    assert_eq!(desk.ran(), ["internal_note(42)"], "ran once");
}

#[tokio::test]
async fn a_rejected_call_completes_its_task_as_a_tool_error_and_nothing_runs() {
    let (governor, desk, mut wire, task_id, key) = opened().await;
    governor
        .reject(&key, "ops-lead", "not for this ticket")
        .await
        .unwrap();
    let done = settled(&mut wire, &task_id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let result = &done["result"]["result"];
    assert_eq!(result["isError"], true, "{done}");
    assert_eq!(result["structuredContent"]["status"], "rejected");
    assert!(desk.ran().is_empty());
}

/// A task a person approves with changes, where the change still needs a second approval:
/// its runner waits on for the changed call and runs that, with no poll, once it is
/// decided; the task completes saying so.
#[tokio::test]
async fn a_task_approved_with_changes_runs_the_changed_call_once_it_is_decided() {
    use cairnloop::{Governance, ModePolicy, RiskTier};
    let policy = ModePolicy::new().with_quorum(RiskTier::LowWrite, 2);
    let governor =
        Arc::new(Governor::new(&DESK).with_governance(Governance::new().with_mode_policy(policy)));
    let desk = Desk::default();
    let mut wire = serve(agent(&governor, &desk, "agent-7"), FrameLimits::new());
    let created = ask(&mut wire, call(1, true)).await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let key = governor.lanes(LaneState::Pending, None, 10).await.unwrap()[0].key();

    let changed = r#"{"ticket": 43, "body": "Called twice."}"#;
    let changed = governor
        .approve_with_changes(&key, "ops-lead", changed, &desk, |_| true)
        .await
        .unwrap();
    assert_eq!(changed.state(), LaneState::Pending, "one approval of two");
    // The runner wakes to the change and finds the changed call still waiting.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(desk.ran().is_empty());
    governor
        .approve(&changed.key(), "ops-second")
        .await
        .unwrap();
    ran_with_no_poll(&desk, "internal_note(43)").await;
    let done = settled(&mut wire, &task_id).await;
    let body = &done["result"]["result"]["structuredContent"];
    assert_eq!(body["status"], "superseded", "{done}");
    assert_eq!(body["edited_status"], "executed", "{done}");
    assert_eq!(desk.ran(), ["internal_note(43)"], "ran once");
}

#[tokio::test]
async fn only_its_caller_reads_a_task_and_every_bad_id_is_an_unknown_task() {
    let (governor, desk, mut owner, task_id, key) = opened().await;

    let mut stranger = serve(agent(&governor, &desk, "agent-8"), FrameLimits::new());
    let unknown = ask(
        &mut stranger,
        task_request(2, "tasks/get", "0123456789abcdef0123456789abcdef"),
    )
    .await;
    let expected = &unknown["error"];
    assert_eq!(expected["code"], -32602, "{unknown}");
    let oversized = "a".repeat(100_000);
    let long = format!("{task_id}0");
    let key_text = key.to_string();
    for (n, id) in [
        task_id.as_str(),
        task_id.to_uppercase().as_str(),
        long.as_str(),
        "",
        oversized.as_str(),
        key_text.as_str(),
    ]
    .into_iter()
    .enumerate()
    {
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let id_n = 10 + u32::try_from(n).unwrap();
            let answer = ask(&mut stranger, task_request(id_n, method, id)).await;
            assert_eq!(answer["error"], *expected, "{method} {id:.40}: {answer}");
        }
    }
    // The owner still follows it, and nothing was decided.
    let polled = ask(&mut owner, task_request(3, "tasks/get", &task_id)).await;
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    assert_eq!(
        governor.lane(&key).await.unwrap().state(),
        LaneState::Pending
    );
}

#[tokio::test]
async fn a_request_that_does_not_declare_the_extension_gets_no_task() {
    let governor = Arc::new(Governor::new(&DESK));
    let desk = Desk::default();
    let mut wire = serve(agent(&governor, &desk, "agent-7"), FrameLimits::new());
    // `initialize` declared the extension; this request does not: no task.
    wire.initialize(
        "2026-07-28",
        json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }),
    )
    .await;
    let answer = ask(&mut wire, call(1, false)).await;
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["status"],
        "awaiting_approval"
    );
    // And one that declares it, with a progress token too, gets a task.
    let mut with_token = call(2, true);
    with_token["params"]["_meta"]["progressToken"] = json!("p-1");
    let answer = ask(&mut wire, with_token).await;
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
}

#[tokio::test]
async fn a_cancelled_task_withdraws_its_pending_call_and_a_late_cancel_changes_nothing() {
    let (governor, desk, mut wire, task_id, key) = opened().await;

    let ack = ask(&mut wire, task_request(2, "tasks/cancel", &task_id)).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let lane = governor.lane(&key).await.unwrap();
    assert_eq!(lane.state(), LaneState::Withdrawn);
    assert_eq!(lane.decided_by(), Some("agent-7"));
    let polled = ask(&mut wire, task_request(3, "tasks/get", &task_id)).await;
    assert_eq!(polled["result"]["status"], "cancelled", "{polled}");
    // Withdrawn: no approval brings it back, and nothing runs.
    assert!(governor.approve(&key, "ops-lead").await.is_err());
    let again = ask(&mut wire, task_request(4, "tasks/get", &task_id)).await;
    assert_eq!(again["result"]["status"], "cancelled", "{again}");
    assert!(desk.ran().is_empty());

    // Another call, approved before its cancel arrives: the cancel is acknowledged and the
    // approved call runs when polled.
    let other = json!({
        "jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {
            "name": "internal_note",
            "arguments": { "ticket": 7, "body": "Another." },
            "_meta": meta(true),
        },
    });
    let created = ask(&mut wire, other).await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let key = governor.lanes(LaneState::Pending, None, 10).await.unwrap()[0].key();
    governor.approve(&key, "ops-lead").await.unwrap();
    let ack = ask(&mut wire, task_request(6, "tasks/cancel", &task_id)).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = settled(&mut wire, &task_id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(desk.ran(), ["internal_note(7)"]);
}

#[tokio::test]
async fn an_expired_call_completes_its_task_and_past_its_retention_the_task_is_unknown() {
    use cairnloop::approvals::ManualClock;
    use cairnloop::gate::{Timestamp, Ttl};
    let clock = ManualClock::new(Timestamp::now().unwrap());
    let governor = Arc::new(Governor::new(&DESK).with_clock(clock.clone()));
    let desk = Desk::default();
    let mut wire = serve(agent(&governor, &desk, "agent-7"), FrameLimits::new());
    let created = ask(&mut wire, call(1, true)).await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();

    // Past the lane's 48 hours: completed, as the expired call a repeat would get.
    clock.advance(Ttl::from_secs(48 * 3_600 + 1));
    let expired = ask(&mut wire, task_request(2, "tasks/get", &task_id)).await;
    assert_eq!(expired["result"]["status"], "completed", "{expired}");
    let result = &expired["result"]["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["status"], "expired");

    // A day later still readable; past that, unknown.
    clock.advance(Ttl::from_secs(24 * 3_600 - 60));
    let late = ask(&mut wire, task_request(3, "tasks/get", &task_id)).await;
    assert_eq!(late["result"]["status"], "completed", "{late}");
    clock.advance(Ttl::from_secs(120));
    let gone = ask(&mut wire, task_request(4, "tasks/get", &task_id)).await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert!(desk.ran().is_empty());
}

/// `request` from a client that can show prompts too.
fn prompting(mut request: Value) -> Value {
    request["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"] =
        json!({ "form": {} });
    request
}

fn answering(id: u32, task_id: &str, key: &str, answer: Value) -> Value {
    let mut request = prompting(task_request(id, "tasks/update", task_id));
    request["params"]["inputResponses"] = json!({ key: answer });
    request
}

#[tokio::test]
async fn the_clients_person_answers_in_the_task_under_keys_never_reused() {
    use cairnloop::RiskTier;
    use cairnloop::mcp::ClientApprover;
    let governor = Arc::new(Governor::new(&DESK));
    let desk = Desk::default();
    let server = agent(&governor, &desk, "agent-7")
        .with_client_approver(ClientApprover::new("user:alice").may_approve(RiskTier::LowWrite));
    let mut wire = serve(server, FrameLimits::new());
    let created = ask(&mut wire, prompting(call(1, true))).await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let key = governor.lanes(LaneState::Pending, None, 10).await.unwrap()[0].key();
    let asked = |polled: &Value| -> Vec<String> {
        polled["result"]["inputRequests"]
            .as_object()
            .map(|requests| requests.keys().cloned().collect())
            .unwrap_or_default()
    };
    let poll = |id| prompting(task_request(id, "tasks/get", &task_id));

    let first = ask(&mut wire, poll(2)).await;
    assert_eq!(first["result"]["status"], "input_required", "{first}");
    assert_eq!(asked(&first), ["approval-1"]);
    assert_eq!(
        first["result"]["inputRequests"]["approval-1"]["method"],
        "elicitation/create"
    );
    let approve = json!({ "action": "accept", "content": { "decision": "approve" } });

    // An answer to a key never issued is ignored.
    ask(
        &mut wire,
        answering(3, &task_id, "approval-9", approve.clone()),
    )
    .await;
    assert_eq!(asked(&ask(&mut wire, poll(4)).await), ["approval-1"]);
    // No decision: the next poll asks again, under a new key; the old one is answered.
    ask(
        &mut wire,
        answering(5, &task_id, "approval-1", json!({ "action": "cancel" })),
    )
    .await;
    assert_eq!(asked(&ask(&mut wire, poll(6)).await), ["approval-2"]);
    ask(
        &mut wire,
        answering(7, &task_id, "approval-1", approve.clone()),
    )
    .await;
    assert_eq!(
        governor.lane(&key).await.unwrap().state(),
        LaneState::Pending
    );

    // The open question's approval decides it as the client's person, and the call runs.
    ask(&mut wire, answering(8, &task_id, "approval-2", approve)).await;
    let lane = governor.lane(&key).await.unwrap();
    assert_eq!(lane.decided_by(), Some("user:alice"));
    let done = settled(&mut wire, &task_id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(desk.ran(), ["internal_note(42)"]);
}
