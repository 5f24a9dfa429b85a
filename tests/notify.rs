//! People told when a call waits: once per proposal however many callers race to propose
//! it, with what became of each notice in the audit trail, and a failing notifier never
//! failing the call.
#![cfg(all(feature = "serde", feature = "std"))]

use std::sync::{Arc, Barrier, Mutex};

use cairnloop::approvals::{AuditRecord, MemoryStore, Notice, NoticeReport, Notifier};
use cairnloop::gate::LaneState;
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
