//! A held call, on the wire, for a client that gets no task: a call that needs a person
//! stays open until someone decides or the hold ends; approved, it runs once and answers
//! the same request; the client is told who must decide while it waits; a hold that ends
//! gives the awaiting answer; a client that cancels leaves the call pending.

#[path = "../../tests/fixtures/desk.rs"]
mod desk;
#[path = "fixtures/wire.rs"]
mod wire;

use std::sync::Arc;
use std::time::Duration;

use cairnloop::Governor;
use cairnloop::approvals::{
    ApprovalStore, AuditRecord, MemoryStore, StoreError, StoreWatch, TransitionEvent,
};
use cairnloop::gate::LaneState;
use cairnloop::mcp::{FrameLimits, McpServer};
use desk::{DESK, Desk};
use serde_json::{Value, json};
use wire::{Wire, serve};

type Shared = Arc<Governor<Desk, MemoryStore>>;

fn held(governor: &Shared, desk: &Desk, hold: Duration) -> McpServer<Desk, MemoryStore> {
    McpServer::new(Arc::clone(governor), desk.clone(), "agent-7")
        .with_account("acme")
        .with_scopes(["tickets:write"])
        .with_hold(hold)
        .with_decision_place("https://approvals.example.com")
}

fn note(id: u32, ticket: u32, token: Option<&str>) -> Value {
    let mut request = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "internal_note", "arguments": { "ticket": ticket, "body": "Held." } },
    });
    if let Some(token) = token {
        request["params"]["_meta"] = json!({ "progressToken": token });
    }
    request
}

async fn started(governor: &Shared, desk: &Desk, hold: Duration) -> Wire {
    let mut wire = serve(held(governor, desk, hold), FrameLimits::new());
    wire.initialize("2025-11-25", json!({})).await;
    wire
}

/// The pending lane, once the held call has proposed it.
async fn pending<S: ApprovalStore>(governor: &Governor<Desk, S>) -> cairnloop::IdempotencyKey {
    for _ in 0..100 {
        if let Some(lane) = governor
            .lanes(LaneState::Pending, None, 1)
            .await
            .unwrap()
            .first()
        {
            return lane.key();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no proposal after two seconds");
}

/// A server holding calls 30 s, and one call of ticket 42 held on it: the governor, the
/// desk, the client's wire and the lane's key.
async fn holding() -> (Shared, Desk, Wire, cairnloop::IdempotencyKey) {
    let governor: Shared = Arc::new(Governor::new(&DESK));
    let desk = Desk::default();
    let mut wire = started(&governor, &desk, Duration::from_secs(30)).await;
    wire.send_json(note(1, 42, None)).await;
    let key = pending(&governor).await;
    (governor, desk, wire, key)
}

/// The held request's answer: the call ran, once.
async fn answered_once(wire: &mut Wire, desk: &Desk) {
    let answer = wire.next().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["status"], "executed",
        "{answer}"
    );
    assert_eq!(desk.ran(), ["internal_note(42)"]);
}

#[tokio::test]
async fn an_approval_during_the_hold_runs_the_call_once_and_answers_the_same_request() {
    let governor: Shared = Arc::new(Governor::new(&DESK));
    let desk = Desk::default();
    let mut wire = started(&governor, &desk, Duration::from_secs(30)).await;
    wire.send_json(note(1, 42, Some("p-1"))).await;

    // Told at once who must decide, and where.
    let progress = wire.next().await;
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    assert_eq!(progress["params"]["progressToken"], "p-1");
    let message = progress["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("low_write") && message.contains("https://approvals.example.com"),
        "{message}"
    );

    let key = pending(&governor).await;
    governor.approve(&key, "ops-lead").await.unwrap();
    answered_once(&mut wire, &desk).await;
    assert_eq!(
        governor.lane(&key).await.unwrap().state(),
        LaneState::Executed
    );
}

#[tokio::test]
async fn a_rejection_during_the_hold_answers_with_the_reason_and_nothing_runs() {
    let (governor, desk, mut wire, key) = holding().await;
    governor
        .reject(&key, "ops-lead", "wrong ticket")
        .await
        .unwrap();
    let answer = wire.next().await;
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    assert_eq!(result["structuredContent"]["status"], "rejected");
    assert!(answer.to_string().contains("wrong ticket"), "{answer}");
    assert!(desk.ran().is_empty());
}

#[tokio::test]
async fn a_hold_that_ends_gives_the_awaiting_answer_and_the_call_made_again_runs_once() {
    let governor: Shared = Arc::new(Governor::new(&DESK));
    let desk = Desk::default();
    let mut wire = started(&governor, &desk, Duration::from_millis(300)).await;
    wire.send_json(note(1, 42, None)).await;
    let answer = wire.next().await;
    assert_eq!(
        answer["result"]["structuredContent"]["status"], "awaiting_approval",
        "{answer}"
    );
    let key = pending(&governor).await;
    governor.approve(&key, "ops-lead").await.unwrap();
    wire.send_json(note(2, 42, None)).await;
    let again = wire.next().await;
    assert_eq!(
        again["result"]["structuredContent"]["status"], "executed",
        "{again}"
    );
    wire.send_json(note(3, 42, None)).await;
    let third = wire.next().await;
    assert_eq!(third["result"]["structuredContent"]["status"], "executed");
    assert_eq!(desk.ran(), ["internal_note(42)"], "ran once");
}

#[tokio::test]
async fn a_client_that_cancels_a_held_call_leaves_it_pending_and_unrun() {
    let (governor, desk, mut wire, key) = holding().await;
    wire.send_json(json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 1, "reason": "the user gave up" },
    }))
    .await;
    // The approval after the cancel runs nothing: nobody holds the call any more.
    tokio::time::sleep(Duration::from_millis(200)).await;
    governor.approve(&key, "ops-lead").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(desk.ran().is_empty());
    assert_eq!(
        governor.lane(&key).await.unwrap().state(),
        LaneState::Approved
    );
    // The server still serves: a lookup answers.
    wire.send_json(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/list",
    }))
    .await;
    let listed = wire.next().await;
    assert_eq!(listed["id"], 2, "{listed}");
}

/// A server holding calls 60 s where a call needs two people's approval, and one call of
/// ticket 42 held on it with progress token `p-1`: the governor, the desk, the client's
/// wire and the first progress notification.
async fn held_for_two() -> (Shared, Desk, Wire, Value) {
    use cairnloop::{Governance, ModePolicy, RiskTier};
    let policy = ModePolicy::new().with_quorum(RiskTier::LowWrite, 2);
    let governor: Shared =
        Arc::new(Governor::new(&DESK).with_governance(Governance::new().with_mode_policy(policy)));
    let desk = Desk::default();
    let mut wire = started(&governor, &desk, Duration::from_secs(60)).await;
    wire.send_json(note(1, 42, Some("p-1"))).await;
    let first = wire.next().await;
    (governor, desk, wire, first)
}

/// With a quorum of two, a held call's client is told of each approval as it is given,
/// not only when the call is decided, and the call runs once, after the second.
#[tokio::test]
async fn with_a_quorum_each_approval_is_told_at_once_and_the_second_runs_the_call() {
    let (governor, desk, mut wire, first) = held_for_two().await;
    let message = first["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("It needs 2 different people: 0 of 2 approvals."),
        "{message}"
    );

    let key = pending(&governor).await;
    governor.approve(&key, "ops-lead").await.unwrap();
    // Told well before the next "still waiting" (15 s), and by name.
    let told = tokio::time::timeout(Duration::from_secs(5), wire.next())
        .await
        .expect("the approval is told at once");
    assert_eq!(told["method"], "notifications/progress", "{told}");
    assert_eq!(told["params"]["progress"], 2.0, "{told}");
    let message = told["params"]["message"].as_str().unwrap();
    assert!(message.contains("1 of 2 approvals (ops-lead)"), "{message}");
    assert!(desk.ran().is_empty());

    governor.approve(&key, "ops-second").await.unwrap();
    answered_once(&mut wire, &desk).await;
}

/// The held request's answer for a call a person approved with changes: superseded, the
/// changed call run once (ticket 43 for 42), and nothing of the original.
async fn answered_as_changed(wire: &mut Wire, desk: &Desk) {
    let answer = wire.next().await;
    assert_eq!(answer["id"], 1, "{answer}");
    let body = &answer["result"]["structuredContent"];
    assert_eq!(body["status"], "superseded", "{answer}");
    assert_eq!(body["edited_status"], "executed", "{answer}");
    assert_eq!(body["edited_arguments"]["ticket"], 43, "{answer}");
    assert_eq!(desk.ran(), ["internal_note(43)"]);
}

const CHANGED: &str = r#"{"ticket": 43, "body": "Held."}"#;

/// With a quorum of two, a change by one person opens the changed call with one approval
/// of two: the hold goes on (the client is told the changed call's count) until the
/// second, and answers with what that ran.
#[tokio::test]
async fn a_change_that_still_needs_an_approval_keeps_the_call_held_until_it_is_decided() {
    let (governor, desk, mut wire, first) = held_for_two().await;
    assert_eq!(first["method"], "notifications/progress", "{first}");
    let key = pending(&governor).await;

    let changed = governor
        .approve_with_changes(&key, "ops-lead", CHANGED, &desk, |_| true)
        .await
        .unwrap();
    assert_eq!(changed.state(), LaneState::Pending, "one approval of two");
    let told = wire.next().await;
    assert_eq!(told["method"], "notifications/progress", "{told}");
    let message = told["params"]["message"].as_str().unwrap();
    assert!(message.contains("1 of 2 approvals (ops-lead)"), "{message}");
    assert!(desk.ran().is_empty());
    governor
        .approve(&changed.key(), "ops-second")
        .await
        .unwrap();
    answered_as_changed(&mut wire, &desk).await;
}

/// A change closes the original before it opens the changed call: a held call woken
/// between the two waits for the changed call rather than answering without it. The
/// store here opens a changed call only once someone has looked for it, so the held call
/// always wakes in that gap.
#[tokio::test]
async fn a_held_call_woken_before_its_changed_call_is_opened_answers_with_what_that_ran() {
    let governor = Arc::new(Governor::new(&DESK).with_store(OpenedLate::default()));
    let desk = Desk::default();
    let server = McpServer::new(Arc::clone(&governor), desk.clone(), "agent-7")
        .with_account("acme")
        .with_scopes(["tickets:write"])
        .with_hold(Duration::from_secs(30));
    let mut wire = serve(server, FrameLimits::new());
    wire.initialize("2025-11-25", json!({})).await;
    wire.send_json(note(1, 42, None)).await;
    let key = pending(&governor).await;

    let changing = Arc::clone(&governor);
    let person = desk.clone();
    let changed = tokio::spawn(async move {
        changing
            .approve_with_changes(&key, "ops-lead", CHANGED, &person, |_| true)
            .await
    });
    answered_as_changed(&mut wire, &desk).await;
    let changed = changed.await.unwrap().unwrap();
    assert!(
        governor.store().sought(&changed.key()),
        "looked for before it was opened"
    );
}

/// A memory store that opens a changed call's lane only once someone has looked for it
/// (or after five seconds).
#[derive(Default)]
struct OpenedLate {
    inner: MemoryStore,
    sought: std::sync::Mutex<Vec<cairnloop::IdempotencyKey>>,
}

impl OpenedLate {
    fn sought(&self, key: &cairnloop::IdempotencyKey) -> bool {
        self.sought.lock().unwrap().contains(key)
    }
}

impl ApprovalStore for OpenedLate {
    async fn insert(
        &self,
        lane: cairnloop::ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(cairnloop::ApprovalLane, bool), StoreError> {
        if lane.replaces().is_some() {
            for _ in 0..500 {
                if self.sought(&lane.key()) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        self.inner.insert(lane, event).await
    }
    async fn get(
        &self,
        key: &cairnloop::IdempotencyKey,
    ) -> Result<Option<cairnloop::ApprovalLane>, StoreError> {
        self.sought.lock().unwrap().push(*key);
        self.inner.get(key).await
    }
    async fn transition(
        &self,
        expected_version: u64,
        lane: cairnloop::ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(), StoreError> {
        self.inner.transition(expected_version, lane, event).await
    }
    fn transition_detached(
        &self,
        expected_version: u64,
        lane: cairnloop::ApprovalLane,
        event: TransitionEvent,
    ) {
        self.inner
            .transition_detached(expected_version, lane, event);
    }
    async fn append(&self, record: AuditRecord) -> Result<(), StoreError> {
        self.inner.append(record).await
    }
    async fn events_since(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, AuditRecord)>, StoreError> {
        self.inner.events_since(after, limit).await
    }
    async fn list(
        &self,
        state: LaneState,
        after: Option<&cairnloop::IdempotencyKey>,
        limit: usize,
    ) -> Result<Vec<cairnloop::ApprovalLane>, StoreError> {
        self.inner.list(state, after, limit).await
    }
    fn watch(&self) -> Option<StoreWatch> {
        self.inner.watch()
    }
}
