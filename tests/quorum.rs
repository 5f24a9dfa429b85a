//! Quorum approvals: a call that needs n approvers stays pending, with each approval and
//! its time, until the n-th; the proposer, and anyone who approved already (by the
//! identity rule), gives none; a rejection by anyone rejects; expiry counts from the
//! proposal; the host's quorum per tier reaches calls a rule raised to that tier; a quorum
//! changed since the proposal voids the approval; and approvers and executors racing
//! through one SQLite file end in one run.
#![cfg(all(feature = "serde", feature = "std", feature = "sqlite"))]

use std::sync::{Barrier, Mutex};

use cairnloop::approvals::{
    AuditRecord, BoundField, Invalidation, ManualClock, check_id, same_person,
};
use cairnloop::gate::{LaneAction, LaneState, Timestamp, Ttl};
use cairnloop::stores::SqliteStore;
use cairnloop::{
    Actor, ApprovalError, Governance, Governor, InputErrors, Invocation, ModePolicy, Outcome,
    PolicyDenial, Registry, RiskTier, Scope, Tool, ToolCall, ToolEntry, ToolSpec,
};

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;
#[path = "fixtures/scratch.rs"]
mod scratch;

/// The services deployed, one entry per run.
static DEPLOYED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn runs_of(service: &str) -> usize {
    DEPLOYED
        .lock()
        .unwrap()
        .iter()
        .filter(|s| *s == service)
        .count()
}

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Deploy {
    service: String,
    cents: u64,
}

plain_tool!(
    /// A production deploy: high_write, two approvers.
    DeployService(Deploy) -> Result<String, String>,
    (),
    ToolSpec::new("deploy", "Deploy", "Deploys a service to production.", RiskTier::HighWrite)
        .with_quorum(2),
    [],
    |call| {
        DEPLOYED.lock().unwrap().push(call.input().service.clone());
        Ok(format!("deployed {}", call.input().service))
    }
);

/// A payment: low_write, one approver, raised to high_write above $1,000.
struct Pay;
impl Tool for Pay {
    const SPEC: ToolSpec = ToolSpec::new("pay", "Pay", "Pays an invoice.", RiskTier::LowWrite);
    const SCOPES: &'static [Scope] = &[];
    type Input = Deploy;
    type Output = u64;
    type Error = String;
    type Context = ();
    fn validate(_: &Deploy) -> Result<(), InputErrors> {
        Ok(())
    }
    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }
    fn risk_tier_for(input: &Deploy) -> RiskTier {
        if input.cents > 100_000 {
            RiskTier::HighWrite
        } else {
            RiskTier::LowWrite
        }
    }
    async fn run(call: Invocation<'_, Self>) -> Result<u64, String> {
        Ok(call.input().cents)
    }
}

static TOOLS: Registry<()> =
    Registry::new(&[ToolEntry::json::<DeployService>(), ToolEntry::json::<Pay>()]);

const AGENT: Actor<'static> = Actor::new("release-bot", &[]);
const T0: u64 = 1_700_000_000_000;

fn governor_at(clock: &ManualClock) -> Governor<()> {
    Governor::new(&TOOLS).with_clock(clock.clone())
}

fn propose<S: cairnloop::approvals::ApprovalStore>(
    governor: &Governor<(), S>,
    tool: &str,
    arguments: &str,
) -> cairnloop::IdempotencyKey {
    let call = ToolCall::new(tool, arguments);
    match pollster::block_on(governor.call(&call, &AGENT, &())).unwrap() {
        Outcome::AwaitingApproval(lane) => lane.key(),
        other => panic!("{tool} waits for people: {other:?}"),
    }
}

#[test]
fn a_quorum_of_two_stays_pending_until_two_different_people_approve() {
    let clock = ManualClock::new(Timestamp::from_unix_millis(T0));
    let governor = governor_at(&clock);
    let arguments = r#"{"service": "billing", "cents": 0}"#;
    let key = propose(&governor, "deploy", arguments);
    let approve = |by: &str| pollster::block_on(governor.approve(&key, by));

    // The proposer gives no approval, under their id or another the identity rule calls
    // theirs.
    assert_eq!(approve("release-bot"), Err(ApprovalError::SelfApproval));
    assert_eq!(approve("RELEASE-BOT"), Err(ApprovalError::SelfApproval));

    clock.set(Timestamp::from_unix_millis(T0 + 1_000));
    let first = approve("ops-lead").unwrap();
    assert_eq!(
        first.state(),
        LaneState::Pending,
        "one of two is not enough"
    );
    assert_eq!(first.quorum(), 2);
    let given: Vec<(&str, u64)> = first
        .approvals()
        .iter()
        .map(|a| (a.by(), a.at().unix_millis()))
        .collect();
    assert_eq!(given, [("ops-lead", T0 + 1_000)]);
    assert_eq!(
        first.quorum_progress().as_deref(),
        Some("1 of 2 approvals (ops-lead)")
    );
    assert_eq!(first.decided_by(), None, "nobody has decided it yet");

    // Still pending: a re-issued call waits, nothing runs.
    let call = ToolCall::new("deploy", arguments);
    assert!(matches!(
        pollster::block_on(governor.call(&call, &AGENT, &())).unwrap(),
        Outcome::AwaitingApproval(_)
    ));
    assert_eq!(runs_of("billing"), 0);

    // The same person again, under an id the identity rule calls the same: refused.
    assert!(same_person("ops-lead", "OPS-LEAD") && check_id("OPS-LEAD").is_ok());
    assert_eq!(
        approve("OPS-LEAD"),
        Err(ApprovalError::ApprovedAlready { of: 2 })
    );
    assert_eq!(
        pollster::block_on(governor.lane(&key))
            .unwrap()
            .approvals()
            .len(),
        1
    );

    clock.set(Timestamp::from_unix_millis(T0 + 2_000));
    let second = approve("sre-on-call").unwrap();
    assert_eq!(second.state(), LaneState::Approved);
    assert_eq!(second.decided_by(), Some("sre-on-call"));
    assert_eq!(
        second.quorum_progress().as_deref(),
        Some("2 of 2 approvals (ops-lead, sre-on-call)")
    );
    // A third finds it decided.
    assert!(matches!(
        approve("cto"),
        Err(ApprovalError::Transition(error)) if error.from() == LaneState::Approved
    ));

    let ran = pollster::block_on(governor.call(&call, &AGENT, &())).unwrap();
    assert!(matches!(ran, Outcome::Executed(_)), "{ran:?}");
    assert_eq!(runs_of("billing"), 1);

    // The trail keeps each approval, by whom: an endorse, then the approve.
    let moves: Vec<(LaneAction, Option<String>)> = pollster::block_on(governor.events())
        .unwrap()
        .into_iter()
        .filter_map(|record| match record {
            AuditRecord::Transition(event) if event.key == key => Some((event.action?, event.by)),
            _ => None,
        })
        .collect();
    assert_eq!(
        moves[..2],
        [
            (LaneAction::Endorse, Some("ops-lead".to_owned())),
            (LaneAction::Approve, Some("sre-on-call".to_owned())),
        ]
    );
}

#[test]
fn a_rejection_by_anyone_rejects_and_expiry_counts_from_the_proposal() {
    let clock = ManualClock::new(Timestamp::from_unix_millis(T0));
    let governor = governor_at(&clock);
    let rejected = propose(&governor, "deploy", r#"{"service": "search", "cents": 1}"#);
    pollster::block_on(governor.approve(&rejected, "ops-lead")).unwrap();
    let lane = pollster::block_on(governor.reject(&rejected, "sre-on-call", "not today")).unwrap();
    assert_eq!(lane.state(), LaneState::Rejected);
    assert!(pollster::block_on(governor.approve(&rejected, "cto")).is_err());

    let governor = governor_at(&clock)
        .with_config(cairnloop::approvals::ApprovalConfig::new().with_ttl(Ttl::from_secs(60)));
    let late = propose(&governor, "deploy", r#"{"service": "search", "cents": 2}"#);
    clock.set(Timestamp::from_unix_millis(T0 + 50_000));
    pollster::block_on(governor.approve(&late, "ops-lead")).unwrap();
    // The first approval does not restart the clock: 60 s from the proposal, not from it.
    clock.set(Timestamp::from_unix_millis(T0 + 61_000));
    assert_eq!(
        pollster::block_on(governor.approve(&late, "sre-on-call")),
        Err(ApprovalError::Expired)
    );
}

#[test]
fn the_hosts_quorum_for_a_tier_reaches_a_call_its_input_raised_there() {
    let policy = ModePolicy::new().with_quorum(RiskTier::HighWrite, 3);
    let governor =
        Governor::new(&TOOLS).with_governance(Governance::new().with_mode_policy(policy));
    let small = propose(&governor, "pay", r#"{"service": "acme", "cents": 500}"#);
    let large = propose(&governor, "pay", r#"{"service": "acme", "cents": 500000}"#);
    let quorum = |key| pollster::block_on(governor.lane(key)).unwrap().quorum();
    assert_eq!((quorum(&small), quorum(&large)), (1, 3));
    // The tool's own quorum and the host's: the higher.
    let deploy = propose(&governor, "deploy", r#"{"service": "a", "cents": 0}"#);
    assert_eq!(quorum(&deploy), 3);
    let plain = Governor::new(&TOOLS);
    let deploy = propose(&plain, "deploy", r#"{"service": "a", "cents": 0}"#);
    assert_eq!(pollster::block_on(plain.lane(&deploy)).unwrap().quorum(), 2);
}

#[test]
fn a_quorum_raised_since_the_approval_voids_it() {
    let scratch = scratch::Scratch::new("quorum-binding");
    let db = scratch.file("lanes.db");
    let arguments = r#"{"service": "acme", "cents": 500000}"#;
    let one = Governor::new(&TOOLS).with_store(SqliteStore::open(&db).unwrap());
    let key = propose(&one, "pay", arguments);
    pollster::block_on(one.approve(&key, "ops-lead")).unwrap();
    // The host now asks two approvers of every high_write call.
    let policy = ModePolicy::new().with_quorum(RiskTier::HighWrite, 2);
    let two = Governor::new(&TOOLS)
        .with_store(SqliteStore::open(&db).unwrap())
        .with_governance(Governance::new().with_mode_policy(policy));
    let ran = pollster::block_on(two.execute(&key, &AGENT, &()));
    assert_eq!(
        ran,
        Err(ApprovalError::Invalidated(Invalidation::Changed {
            field: BoundField::Quorum,
            was: "1".into(),
            now: "2".into(),
        }))
    );
}

#[test]
fn three_approvers_of_a_quorum_of_two_and_two_executors_make_one_run() {
    let scratch = scratch::Scratch::new("quorum-race");
    let db = scratch.file("lanes.db");
    // Each contender its own governor on the one file, as separate processes would be.
    let governors: Vec<Governor<(), SqliteStore>> = (0..5)
        .map(|_| Governor::new(&TOOLS).with_store(SqliteStore::open(&db).unwrap()))
        .collect();
    for round in 0..10 {
        let arguments = format!(r#"{{"service": "race-{round}", "cents": 0}}"#);
        let key = propose(&governors[0], "deploy", &arguments);

        let approvers = ["ops-lead", "sre-on-call", "cto"];
        let start = Barrier::new(approvers.len());
        let approved: Vec<Result<LaneState, ApprovalError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = approvers
                .iter()
                .zip(&governors)
                .map(|(by, governor)| {
                    let (start, key) = (&start, &key);
                    scope.spawn(move || {
                        start.wait();
                        pollster::block_on(governor.approve(key, by)).map(|lane| lane.state())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let lane = pollster::block_on(governors[0].lane(&key)).unwrap();
        assert_eq!(lane.state(), LaneState::Approved, "{approved:?}");
        assert_eq!(lane.approvals().len(), 2, "each approval counted once");
        let (first, second) = (lane.approvals()[0].by(), lane.approvals()[1].by());
        assert!(!same_person(first, second));
        assert_eq!(lane.decided_by(), Some(second));
        // Two approvals were applied (one left it pending, one approved it); the third
        // found it decided.
        let applied = approved.iter().filter(|r| r.is_ok()).count();
        assert_eq!(applied, 2, "{approved:?}");
        assert!(approved.iter().any(|r| matches!(r, Ok(LaneState::Pending))));
        assert!(
            approved
                .iter()
                .any(|r| matches!(r, Ok(LaneState::Approved)))
        );
        assert!(
            approved
                .iter()
                .any(|r| matches!(r, Err(ApprovalError::Transition(_)))),
            "{approved:?}"
        );

        let start = Barrier::new(2);
        let executed: Vec<bool> = std::thread::scope(|scope| {
            let handles: Vec<_> = governors[3..]
                .iter()
                .map(|governor| {
                    let (start, key) = (&start, &key);
                    scope.spawn(move || {
                        start.wait();
                        pollster::block_on(governor.execute(key, &AGENT, &())).is_ok()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(runs_of(&format!("race-{round}")), 1, "one run");
        assert!(executed.contains(&true));
    }
}
