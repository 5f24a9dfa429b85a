//! People told when a call waits: once per proposal however many callers race to propose
//! it, with what became of each notice in the audit trail, and a failing notifier never
//! failing the call. Through the outbox: a notice owed for each call that waits,
//! delivered by whichever process claims it, retried after a failure by the policy's
//! waits, given up when refused or at its last attempt, claimed again when its notifier
//! says nothing within the claim, and delivered once however many processes deliver at
//! the same moment.
#![cfg(all(feature = "serde", feature = "std"))]

use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use cairnloop::approvals::{
    AuditRecord, ManualClock, MemoryStore, Notice, NoticeReport, Notifier, OutboxPass, OutboxPolicy,
};
use cairnloop::gate::{LaneState, Timestamp, Ttl};
use cairnloop::{Actor, Governor, Outcome, Registry, RiskTier, ToolCall, ToolEntry};

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;

#[derive(serde::Deserialize, serde::Serialize)]
struct Refund {
    cents: u64,
    password: String,
}

plain_tool!(
    RefundTool,
    "refund",
    HighWrite,
    [],
    |input: Refund| -> u64 { input.cents }
);

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<RefundTool>()]);

/// Keeps every notice and reports each as `delivered` says.
#[derive(Clone, Default)]
struct Outbox {
    notices: Arc<Mutex<Vec<Notice>>>,
    fail: bool,
}

impl Notifier for Outbox {
    fn proposed(&self, notice: Notice, report: NoticeReport) {
        self.notices.lock().unwrap().push(notice);
        if self.fail {
            report.failed("outbox", 3, "the endpoint answered 500");
        } else {
            report.delivered("outbox", 1);
        }
    }
}

struct Panics;
impl Notifier for Panics {
    fn proposed(&self, _: Notice, _: NoticeReport) {
        panic!("a notifier's bug");
    }
}

fn notices(records: &[AuditRecord]) -> Vec<(bool, u32, Option<String>)> {
    records
        .iter()
        .filter_map(|record| match record {
            AuditRecord::Notice(event) => {
                Some((event.delivered, event.attempts, event.reason.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn sixteen_callers_racing_to_propose_one_call_tell_people_once() {
    let store = Arc::new(MemoryStore::new());
    let outbox = Outbox::default();
    // Two governors on one store, as two processes on one database.
    let governors: Vec<_> = (0..2)
        .map(|_| {
            Arc::new(
                Governor::new(&TOOLS)
                    .with_store(Arc::clone(&store))
                    .with_notifier(outbox.clone()),
            )
        })
        .collect();
    let barrier = Arc::new(Barrier::new(16));
    let racers: Vec<_> = (0..16)
        .map(|n| {
            let (governor, barrier) = (Arc::clone(&governors[n % 2]), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let agent = Actor::new("agent-7", &[]);
                let call = ToolCall::new("refund", r#"{"cents": 500, "password": "hunter2"}"#);
                barrier.wait();
                pollster::block_on(governor.call(&call, &agent, &()))
            })
        })
        .collect();
    for racer in racers {
        assert!(matches!(
            racer.join().unwrap(),
            Ok(Outcome::AwaitingApproval(_))
        ));
    }
    let told = outbox.notices.lock().unwrap().clone();
    assert_eq!(told.len(), 1, "one proposal, one notice");
    let notice = &told[0];
    assert_eq!(
        (notice.tool.as_str(), notice.tier),
        ("refund", RiskTier::HighWrite)
    );
    assert_eq!(notice.proposer, "agent-7");
    // The preview people see masks what looks secret.
    assert!(!notice.preview.contains("hunter2"), "{}", notice.preview);
    let records = pollster::block_on(governors[0].events()).unwrap();
    assert_eq!(notices(&records), [(true, 1, None)]);
}

#[test]
fn a_failing_notifier_leaves_the_proposal_and_says_so_in_the_audit_trail() {
    let outbox = Outbox {
        fail: true,
        ..Outbox::default()
    };
    let governor = Governor::new(&TOOLS).with_notifier(outbox);
    let agent = Actor::new("agent-7", &[]);
    let call = ToolCall::new("refund", r#"{"cents": 700, "password": "x"}"#);
    let Ok(Outcome::AwaitingApproval(lane)) = pollster::block_on(governor.call(&call, &agent, &()))
    else {
        panic!("a proposal")
    };
    assert_eq!(
        pollster::block_on(governor.lane(&lane.key()))
            .unwrap()
            .state(),
        LaneState::Pending
    );
    let records = pollster::block_on(governor.events()).unwrap();
    assert_eq!(
        notices(&records),
        [(false, 3, Some("the endpoint answered 500".to_owned()))]
    );
}

#[test]
fn a_panicking_notifier_fails_nothing_but_its_notice() {
    let governor = Governor::new(&TOOLS).with_notifier(Panics);
    let agent = Actor::new("agent-7", &[]);
    let call = ToolCall::new("refund", r#"{"cents": 900, "password": "x"}"#);
    let outcome = pollster::block_on(governor.call(&call, &agent, &()));
    assert!(
        matches!(outcome, Ok(Outcome::AwaitingApproval(_))),
        "{outcome:?}"
    );
    let records = pollster::block_on(governor.events()).unwrap();
    assert_eq!(
        notices(&records),
        [(false, 0, Some("the notifier panicked".to_owned()))]
    );
}

/// How the notifier answers each notice, in turn (past the list: delivered).
#[derive(Clone, Copy, Debug)]
enum Say {
    Delivered,
    Failed,
    Refused,
    Nothing,
}

/// Keeps every notice it is handed and answers as its script says.
#[derive(Clone, Default)]
struct Scripted {
    seen: Arc<Mutex<Vec<Notice>>>,
    script: Arc<Mutex<Vec<Say>>>,
}

impl Scripted {
    fn saying(script: &[Say]) -> Self {
        let scripted = Self::default();
        scripted.script.lock().unwrap().extend(script.iter().rev());
        scripted
    }

    fn cents_seen(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.iter().map(|notice| notice.preview.clone()).collect()
    }
}

impl Notifier for Scripted {
    fn proposed(&self, notice: Notice, report: NoticeReport) {
        self.seen.lock().unwrap().push(notice);
        let say = self.script.lock().unwrap().pop().unwrap_or(Say::Delivered);
        match say {
            Say::Delivered => report.delivered("pager", 1),
            Say::Failed => report.failed("pager", 1, "the pager answered 503"),
            Say::Refused => report.refused("pager", 1, "the pager refused it with 403"),
            Say::Nothing => drop(report),
        }
    }
}

const T0: u64 = 1_800_000_000_000;

/// A store, a clock at `T0`, a notifier answering as `script` says, and a governor over
/// them telling the notifier through the outbox under `policy`.
fn outbox_of(
    script: &[Say],
    policy: OutboxPolicy,
) -> (
    Arc<MemoryStore>,
    ManualClock,
    Scripted,
    Governor<(), Arc<MemoryStore>>,
) {
    let store = Arc::new(MemoryStore::new());
    let clock = ManualClock::new(Timestamp::from_unix_millis(T0));
    let pager = Scripted::saying(script);
    let governor = governor(&store, &pager, &clock, policy);
    (store, clock, pager, governor)
}

/// A governor over `store` telling `notifier` through the outbox, on `clock`.
fn governor(
    store: &Arc<MemoryStore>,
    notifier: &Scripted,
    clock: &ManualClock,
    policy: OutboxPolicy,
) -> Governor<(), Arc<MemoryStore>> {
    Governor::new(&TOOLS)
        .with_store(Arc::clone(store))
        .with_clock(clock.clone())
        .with_outbox("pager", notifier.clone())
        .with_outbox_policy(policy)
}

fn propose(governor: &Governor<(), Arc<MemoryStore>>, cents: u64) -> cairnloop::IdempotencyKey {
    let agent = Actor::new("agent-7", &[]);
    let arguments = format!(r#"{{"cents": {cents}, "password": "tok-hunter2"}}"#);
    match pollster::block_on(governor.call(&ToolCall::new("refund", &arguments), &agent, &())) {
        Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
        other => panic!("a proposal, got {other:?}"),
    }
}

fn pass(governor: &Governor<(), Arc<MemoryStore>>, holder: &str) -> OutboxPass {
    pollster::block_on(governor.deliver_notices(holder)).unwrap()
}

fn passed(delivered: usize, retried: usize, given_up: usize, unanswered: usize) -> OutboxPass {
    let mut pass = OutboxPass::default();
    (pass.delivered, pass.retried, pass.given_up) = (delivered, retried, given_up);
    pass.unanswered = unanswered;
    pass
}

/// The notice records, as (delivered, attempt).
fn notice_records(governor: &Governor<(), Arc<MemoryStore>>) -> Vec<(bool, u32)> {
    let records = pollster::block_on(governor.events()).unwrap();
    let records = notices(&records);
    records
        .into_iter()
        .map(|(delivered, attempts, _)| (delivered, attempts))
        .collect()
}

#[test]
fn each_waiting_call_is_told_once_with_its_preview_and_never_its_secrets() {
    let (_, _, pager, governor) = outbox_of(&[], OutboxPolicy::new());
    propose(&governor, 500);
    propose(&governor, 700);
    // Owed from the proposal; nothing was sent on the call's path.
    assert!(pager.cents_seen().is_empty());
    assert_eq!(pass(&governor, "replica-1"), passed(2, 0, 0, 0));
    assert_eq!(
        pass(&governor, "replica-1"),
        passed(0, 0, 0, 0),
        "delivered once"
    );
    let seen = pager.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for notice in &seen {
        assert_eq!(
            (notice.tool.as_str(), notice.proposer.as_str()),
            ("refund", "agent-7")
        );
        assert_eq!(notice.tier, cairnloop::RiskTier::HighWrite);
        assert!(notice.expires_at > notice.proposed_at);
        assert!(
            !notice.preview.contains("tok-hunter2"),
            "{}",
            notice.preview
        );
    }
    assert_eq!(notice_records(&governor), [(true, 1), (true, 1)]);
}

#[test]
fn a_failure_is_tried_again_after_the_policys_wait_and_a_refusal_never() {
    let policy = OutboxPolicy::new().first_retry(Duration::from_secs(10));
    let (_, clock, _, governor) = outbox_of(&[Say::Failed, Say::Refused], policy);
    propose(&governor, 500);
    assert_eq!(pass(&governor, "a"), passed(0, 1, 0, 0));
    // Not due again before its wait.
    clock.advance(Ttl::from_millis(9_999));
    assert_eq!(pass(&governor, "a"), passed(0, 0, 0, 0));
    clock.advance(Ttl::from_millis(1));
    // The second attempt is refused: given up, never tried again.
    assert_eq!(pass(&governor, "a"), passed(0, 0, 1, 0));
    clock.advance(Ttl::from_secs(3_600));
    assert_eq!(pass(&governor, "a"), passed(0, 0, 0, 0));
    assert_eq!(notice_records(&governor), [(false, 1), (false, 2)]);
}

#[test]
fn a_notice_fails_at_its_last_attempt_and_a_decided_call_is_not_told() {
    let policy = OutboxPolicy::new()
        .attempts(2)
        .first_retry(Duration::from_secs(1));
    let (_, clock, pager, governor) = outbox_of(&[Say::Failed, Say::Failed], policy);
    propose(&governor, 500);
    assert_eq!(pass(&governor, "a"), passed(0, 1, 0, 0));
    clock.advance(Ttl::from_secs(1));
    assert_eq!(
        pass(&governor, "a"),
        passed(0, 0, 1, 0),
        "the second failure is the last"
    );
    // A call decided before anyone was told is not told of.
    let key = propose(&governor, 900);
    pollster::block_on(governor.approve(&key, "ops-lead")).unwrap();
    clock.advance(Ttl::from_secs(60));
    assert_eq!(pass(&governor, "a"), passed(0, 0, 0, 0));
    assert_eq!(pager.seen.lock().unwrap().len(), 2);
}

#[test]
fn a_notice_nobody_answers_is_claimed_again_once_its_lease_runs_out() {
    let policy = OutboxPolicy::new().lease(Duration::from_millis(200));
    let (_, clock, _, governor) = outbox_of(&[Say::Nothing], policy);
    propose(&governor, 500);
    assert_eq!(pass(&governor, "a"), passed(0, 0, 0, 1));
    // Another holder, within the lease: nothing to claim.
    assert_eq!(pass(&governor, "b"), passed(0, 0, 0, 0));
    clock.advance(Ttl::from_millis(200));
    assert_eq!(pass(&governor, "b"), passed(1, 0, 0, 0));
    assert_eq!(notice_records(&governor), [(true, 2)]);
}

#[test]
fn processes_delivering_at_the_same_moment_deliver_each_notice_once() {
    let (store, clock, pager, proposer) = outbox_of(&[], OutboxPolicy::new());
    for cents in 1..=20 {
        propose(&proposer, cents);
    }
    let start = Arc::new(Barrier::new(4));
    let replicas: Vec<_> = (0..4)
        .map(|n| {
            let replica = governor(&store, &pager, &clock, OutboxPolicy::new());
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                pass(&replica, &format!("replica-{n}")).delivered
            })
        })
        .collect();
    let delivered: usize = replicas
        .into_iter()
        .map(|replica| replica.join().unwrap())
        .sum();
    assert_eq!(delivered, 20);
    let mut seen = pager.cents_seen();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 20, "each notice handed over once");
    assert_eq!(pager.seen.lock().unwrap().len(), 20);
}
