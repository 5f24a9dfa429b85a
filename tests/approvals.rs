//! The approval lifecycle (DESIGN.md §6): transitions, binding, expiry, four eyes,
//! re-validation, single execution under a race, retries with a stable run key, and the
//! audit trail; plus random operation sequences checked against a reference model.
#![cfg(all(feature = "serde", feature = "std"))]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use cairnloop::{
    Actor, ApprovalConfig, ApprovalError, ApprovalMode, ApprovalStore, Approvals, Blocked,
    BoundField, CallDecision, Governance, IdempotencyKey, InputErrors, Invalidation, Invocation,
    LaneAction, LaneState, MemoryStore, ModePolicy, PolicyDenial, Proposal, Registry, RiskTier,
    Scope, StoreError, Timestamp, Tool, ToolCall, ToolEntry, ToolSpec, Ttl,
};
use serde::Deserialize;

/// Counts runs, remembers run keys, and fails the first `fail_first` runs.
#[derive(Default)]
struct Lab {
    runs: AtomicUsize,
    fail_first: AtomicUsize,
    run_keys: Mutex<Vec<Option<IdempotencyKey>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Transfer {
    to: String,
    cents: u64,
}

struct SendMoney;

impl Tool for SendMoney {
    const SPEC: ToolSpec = ToolSpec::new(
        "send_money",
        "Send money",
        "Sends money to an account.",
        RiskTier::HighWrite,
    )
    .with_result_states(&["sent"]);
    const SCOPES: &'static [Scope] = &[Scope::new("payments:write")];
    type Input = Transfer;
    type Output = String;
    type Error = String;
    type Context = Lab;

    fn validate(_: &Transfer) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &Lab) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(call: Invocation<'_, Self>) -> Result<String, String> {
        let lab = call.context();
        let run = lab.runs.fetch_add(1, Ordering::SeqCst);
        lab.run_keys.lock().unwrap().push(call.run_key());
        std::thread::sleep(std::time::Duration::from_millis(5)); // widen the race window
        if run < lab.fail_first.load(Ordering::SeqCst) {
            return Err("bank timeout".into());
        }
        Ok(format!(
            "sent {} to {}",
            call.input().cents,
            call.input().to
        ))
    }
}

struct TagTicket;

impl Tool for TagTicket {
    const SPEC: ToolSpec = ToolSpec::new(
        "tag_ticket",
        "Tag ticket",
        "Tags a ticket.",
        RiskTier::LowWrite,
    )
    .loosen_approval(ApprovalMode::Auto, "tags are cosmetic");
    const SCOPES: &'static [Scope] = &[];
    type Input = Transfer;
    type Output = ();
    type Error = String;
    type Context = Lab;

    fn validate(_: &Transfer) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &Lab) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), String> {
        Ok(())
    }
}

static LAB: Registry<Lab> = Registry::new(&[
    ToolEntry::json::<SendMoney>(),
    ToolEntry::json::<TagTicket>(),
]);
/// The same tool, gone from a later deploy.
static EMPTY: Registry<Lab> = Registry::new(&[]);

const ARGS: &str = r#"{"to": "DE02 1203", "cents": 5000}"#;
const T0: Timestamp = Timestamp::from_unix_millis(1_700_000_000_000);
const HOUR: u64 = 3_600_000;

fn at(millis_after_t0: u64) -> Timestamp {
    Timestamp::from_unix_millis(T0.unix_millis() + millis_after_t0)
}

fn agent() -> Actor<'static> {
    Actor::new("agent-7", &["payments:write"]).with_account("acme")
}

fn propose(
    approvals: &Approvals<MemoryStore>,
    lab: &Lab,
    args: &str,
    now: Timestamp,
) -> IdempotencyKey {
    let actor = agent();
    let outcome = LAB.call(
        &ToolCall::new("send_money", args),
        &actor,
        lab,
        &Governance::new(),
    );
    let CallDecision::AwaitApproval(proposal) = outcome.decision else {
        panic!("expected a proposal, got {}", outcome.decision.code())
    };
    approvals.propose(proposal, now).unwrap().key()
}

fn execute(
    approvals: &Approvals<MemoryStore>,
    lab: &Lab,
    key: &IdempotencyKey,
    call: ToolCall<'_>,
    actor: &Actor<'_>,
    now: Timestamp,
) -> Result<serde_json::Value, ApprovalError> {
    pollster::block_on(approvals.execute(&LAB, key, &call, actor, lab, &Governance::new(), now))
}

fn new_approvals() -> Approvals<MemoryStore> {
    Approvals::new(MemoryStore::new(), ApprovalConfig::new())
}

#[test]
fn every_allowed_and_every_refused_move() {
    use LaneAction as A;
    use LaneState as S;
    // Written out independently of the implementation's table.
    let allowed = [
        (S::Pending, A::Approve, S::Approved),
        (S::Pending, A::Reject, S::Rejected),
        (S::Pending, A::Defer, S::Deferred),
        (S::Pending, A::Expire, S::Expired),
        (S::Approved, A::StartExecution, S::ExecutionPending),
        (S::Approved, A::Expire, S::Expired),
        (S::Approved, A::Invalidate, S::Invalidated),
        (S::ExecutionPending, A::Succeed, S::Executed),
        (S::ExecutionPending, A::Fail, S::ExecutionFailed),
        (S::ExecutionPending, A::Invalidate, S::Invalidated),
    ];
    let mut refused = 0;
    for state in S::ALL {
        for action in A::ALL {
            let expected = allowed.iter().find(|(s, a, _)| *s == state && *a == action);
            match (state.apply(action), expected) {
                (Ok(next), Some((_, _, to))) => assert_eq!(next, *to),
                (Err(err), None) => {
                    assert_eq!((err.from(), err.action()), (state, action));
                    refused += 1;
                }
                (got, want) => panic!("{state} {action}: got {got:?}, want {want:?}"),
            }
        }
    }
    assert_eq!(refused, 9 * 8 - allowed.len());
    for state in S::ALL {
        let has_exit = A::ALL.iter().any(|a| state.apply(*a).is_ok());
        assert_eq!(state.is_terminal(), !has_exit, "{state}");
    }
}

#[test]
fn approve_then_execute_runs_once_with_the_lane_key() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let key = propose(&approvals, &lab, ARGS, T0);
    approvals.approve(&key, "supervisor", at(1)).unwrap();
    let output = execute(
        &approvals,
        &lab,
        &key,
        ToolCall::new("send_money", ARGS),
        &agent(),
        at(2),
    );
    assert_eq!(output, Ok(serde_json::json!("sent 5000 to DE02 1203")));
    assert_eq!(lab.runs.load(Ordering::SeqCst), 1);
    assert_eq!(*lab.run_keys.lock().unwrap(), [Some(key)]);
    let lane = approvals.lane(&key).unwrap();
    assert_eq!((lane.state(), lane.attempts()), (LaneState::Executed, 1));

    // Replaying the approval runs nothing.
    let replay = execute(
        &approvals,
        &lab,
        &key,
        ToolCall::new("send_money", ARGS),
        &agent(),
        at(3),
    );
    assert!(
        matches!(replay, Err(ApprovalError::Transition(_))),
        "{replay:?}"
    );
    assert_eq!(lab.runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_pending_rejected_or_deferred_lane_never_executes() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let pending = propose(&approvals, &lab, ARGS, T0);
    let rejected = propose(&approvals, &lab, r#"{"to": "X", "cents": 1}"#, T0);
    let deferred = propose(&approvals, &lab, r#"{"to": "Y", "cents": 1}"#, T0);
    approvals
        .reject(&rejected, "supervisor", "unknown payee", at(1))
        .unwrap();
    approvals
        .defer(&deferred, "supervisor", "ask the customer first", at(1))
        .unwrap();
    for (key, args) in [
        (pending, ARGS),
        (rejected, r#"{"to": "X", "cents": 1}"#),
        (deferred, r#"{"to": "Y", "cents": 1}"#),
    ] {
        let result = execute(
            &approvals,
            &lab,
            &key,
            ToolCall::new("send_money", args),
            &agent(),
            at(2),
        );
        assert!(
            matches!(result, Err(ApprovalError::Transition(_))),
            "{result:?}"
        );
    }
    assert_eq!(lab.runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        approvals.lane(&rejected).unwrap().reason(),
        Some("unknown payee")
    );
}

#[test]
fn reject_and_defer_need_a_reason_and_a_decider() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let key = propose(&approvals, &lab, ARGS, T0);
    for reason in ["", "   ", "two\nlines"] {
        assert_eq!(
            approvals.reject(&key, "supervisor", reason, at(1)),
            Err(ApprovalError::ReasonRequired(LaneAction::Reject))
        );
        assert_eq!(
            approvals.defer(&key, "supervisor", reason, at(1)),
            Err(ApprovalError::ReasonRequired(LaneAction::Defer))
        );
    }
    assert_eq!(
        approvals.approve(&key, "", at(1)),
        Err(ApprovalError::MissingDecider)
    );
    assert_eq!(approvals.lane(&key).unwrap().state(), LaneState::Pending);
}

#[test]
fn a_duplicate_proposal_returns_the_existing_lane() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let first = propose(&approvals, &lab, ARGS, T0);
    approvals.approve(&first, "supervisor", at(1)).unwrap();
    let reordered = r#"{ "cents": 5000, "to": "DE02 1203" }"#;
    let second = propose(&approvals, &lab, reordered, at(2));
    assert_eq!(first, second);
    assert_eq!(
        approvals.lane(&second).unwrap().state(),
        LaneState::Approved
    );
    assert_eq!(
        approvals.store().events().unwrap().len(),
        2,
        "opened once, approved once"
    );
}

#[test]
fn four_eyes_unless_the_host_opts_in() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let key = propose(&approvals, &lab, ARGS, T0);
    assert!(!approvals.config().allows_self_approval());
    assert_eq!(
        approvals.approve(&key, "agent-7", at(1)),
        Err(ApprovalError::SelfApproval)
    );
    assert_eq!(approvals.lane(&key).unwrap().state(), LaneState::Pending);
    assert_eq!(approvals.lane(&key).unwrap().decided_by(), None);

    let lenient = Approvals::new(
        MemoryStore::new(),
        ApprovalConfig::new().allowing_self_approval(),
    );
    assert!(lenient.config().allows_self_approval());
    let key = propose(&lenient, &lab, ARGS, T0);
    let approved = lenient.approve(&key, "agent-7", at(1)).unwrap();
    assert_eq!(approved.decided_by(), Some("agent-7"));
    assert_eq!(approved.state(), LaneState::Approved);
}

#[test]
fn binding_mismatch_for_each_bound_field() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let key = propose(&approvals, &lab, ARGS, T0);
    approvals.approve(&key, "supervisor", at(1)).unwrap();
    let other_actor = Actor::new("agent-8", &["payments:write"]).with_account("acme");
    let other_account = Actor::new("agent-7", &["payments:write"]).with_account("globex");
    let no_account = Actor::new("agent-7", &["payments:write"]);
    let cases: [(ToolCall<'_>, &Actor<'_>, BoundField); 8] = [
        (
            ToolCall::new("tag_ticket", ARGS),
            &agent(),
            BoundField::Tool,
        ),
        (
            ToolCall::new("send_money", r#"{"to": "DE02 1203", "cents": 50000}"#),
            &agent(),
            BoundField::Arguments,
        ),
        (
            ToolCall::new("send_money", r#"{"to": "DE02 1204", "cents": 5000}"#),
            &agent(),
            BoundField::Arguments,
        ),
        (
            ToolCall::new("send_money", "{"),
            &agent(),
            BoundField::Arguments,
        ),
        (
            ToolCall::new("send_money", ARGS).with_dedupe_token("again"),
            &agent(),
            BoundField::Arguments,
        ),
        (
            ToolCall::new("send_money", ARGS),
            &other_actor,
            BoundField::Actor,
        ),
        (
            ToolCall::new("send_money", ARGS),
            &other_account,
            BoundField::Account,
        ),
        (
            ToolCall::new("send_money", ARGS),
            &no_account,
            BoundField::Account,
        ),
    ];
    for (call, actor, field) in cases {
        assert_eq!(
            execute(&approvals, &lab, &key, call, actor, at(2)),
            Err(ApprovalError::Mismatch(field)),
            "{call:?}"
        );
    }
    assert_eq!(lab.runs.load(Ordering::SeqCst), 0);
    // The approval still holds for the approved call, with its keys in any order.
    let same = ToolCall::new("send_money", r#"{"cents":5000,"to":"DE02 1203"}"#);
    assert!(execute(&approvals, &lab, &key, same, &agent(), at(3)).is_ok());
}

#[test]
fn bound_fields_and_defaults_read_plainly() {
    let names = [
        BoundField::Tool,
        BoundField::Arguments,
        BoundField::Actor,
        BoundField::Account,
    ]
    .map(|f| f.to_string());
    assert_eq!(names, ["tool", "arguments", "actor", "account"]);
    assert_eq!(ApprovalConfig::new().max_attempts(), 3);
    assert_eq!(ApprovalConfig::new().with_max_attempts(0).max_attempts(), 1);
}

#[test]
fn expiry_at_just_before_and_just_after_the_ttl() {
    let lab = Lab::default();
    let ttl = 2 * HOUR;
    let config = ApprovalConfig::new().with_ttl(Ttl::from_millis(ttl));
    // Approving.
    for (offset, expired) in [(ttl - 1, false), (ttl, true), (ttl + 1, true)] {
        let approvals = Approvals::new(MemoryStore::new(), config);
        let key = propose(&approvals, &lab, ARGS, T0);
        let result = approvals.approve(&key, "supervisor", at(offset));
        assert_eq!(result.is_err(), expired, "approve at ttl{offset:+}");
        if expired {
            assert_eq!(result, Err(ApprovalError::Expired));
            assert_eq!(approvals.lane(&key).unwrap().state(), LaneState::Expired);
        }
    }
    // Executing.
    for (offset, expired) in [(ttl - 1, false), (ttl, true), (ttl + 1, true)] {
        let approvals = Approvals::new(MemoryStore::new(), config);
        let key = propose(&approvals, &lab, ARGS, T0);
        approvals.approve(&key, "supervisor", at(1)).unwrap();
        let result = execute(
            &approvals,
            &lab,
            &key,
            ToolCall::new("send_money", ARGS),
            &agent(),
            at(offset),
        );
        assert_eq!(result.is_err(), expired, "execute at ttl{offset:+}");
        let state = approvals.lane(&key).unwrap().state();
        assert_eq!(
            state,
            if expired {
                LaneState::Expired
            } else {
                LaneState::Executed
            }
        );
    }
    assert_eq!(ApprovalConfig::new().ttl(), Ttl::from_secs(48 * 3600));
}

#[test]
fn a_sweep_expires_only_what_is_due() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let key = propose(&approvals, &lab, ARGS, T0);
    let due = Timestamp::from_unix_millis(T0.unix_millis() + Ttl::DEFAULT.as_millis());
    assert_eq!(
        approvals.expire_if_due(&key, at(1)).unwrap().state(),
        LaneState::Pending
    );
    assert_eq!(
        approvals.expire_if_due(&key, due).unwrap().state(),
        LaneState::Expired
    );
}

#[test]
fn a_backward_clock_and_overflowing_time_fail_closed() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let key = propose(&approvals, &lab, ARGS, at(10));
    assert_eq!(
        approvals.approve(&key, "supervisor", at(9)),
        Err(ApprovalError::ClockWentBackwards)
    );
    approvals.approve(&key, "supervisor", at(20)).unwrap();
    let result = execute(
        &approvals,
        &lab,
        &key,
        ToolCall::new("send_money", ARGS),
        &agent(),
        at(19),
    );
    assert_eq!(result, Err(ApprovalError::ClockWentBackwards));
    assert_eq!(lab.runs.load(Ordering::SeqCst), 0);

    let actor = agent();
    let outcome = LAB.call(
        &ToolCall::new("send_money", ARGS),
        &actor,
        &lab,
        &Governance::new(),
    );
    let CallDecision::AwaitApproval(proposal) = outcome.decision else {
        panic!()
    };
    let fresh = new_approvals();
    assert_eq!(
        fresh.propose(proposal, Timestamp::from_unix_millis(u64::MAX - 1)),
        Err(ApprovalError::TimeOverflow)
    );
}

#[test]
fn revalidation_invalidates_after_a_scope_is_revoked() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let key = propose(&approvals, &lab, ARGS, T0);
    approvals.approve(&key, "supervisor", at(1)).unwrap();
    let revoked = Actor::new("agent-7", &[]).with_account("acme");
    let result = execute(
        &approvals,
        &lab,
        &key,
        ToolCall::new("send_money", ARGS),
        &revoked,
        at(2),
    );
    assert!(
        matches!(
            result,
            Err(ApprovalError::Invalidated(Invalidation::Blocked(
                Blocked::ScopeMissing { .. }
            )))
        ),
        "{result:?}"
    );
    assert_eq!(
        approvals.lane(&key).unwrap().state(),
        LaneState::Invalidated
    );
    assert_eq!(lab.runs.load(Ordering::SeqCst), 0);
}

#[test]
fn revalidation_invalidates_a_tool_tightened_or_removed_or_a_changed_policy() {
    let lab = Lab::default();
    let blocking = Governance::new().with_mode_policy(
        ModePolicy::new().with_tier(RiskTier::HighWrite, ApprovalMode::AlwaysBlock),
    );
    let gone: (&Registry<Lab>, Governance<Lab>) = (&EMPTY, Governance::new());
    let cases = [((&LAB, blocking), "always_blocked"), (gone, "unknown_tool")];
    for ((registry, governance), expected) in cases {
        let approvals = new_approvals();
        let key = propose(&approvals, &lab, ARGS, T0);
        approvals.approve(&key, "supervisor", at(1)).unwrap();
        let call = ToolCall::new("send_money", ARGS);
        let result = pollster::block_on(approvals.execute(
            registry,
            &key,
            &call,
            &agent(),
            &lab,
            &governance,
            at(2),
        ));
        let code = match result {
            Err(ApprovalError::Invalidated(Invalidation::Blocked(blocked))) => blocked.code(),
            other => panic!("expected an invalidation, got {other:?}"),
        };
        assert_eq!(code, expected);
        assert_eq!(
            approvals.lane(&key).unwrap().state(),
            LaneState::Invalidated
        );
    }
    assert_eq!(lab.runs.load(Ordering::SeqCst), 0);
}

#[test]
fn revalidation_invalidates_when_the_policy_in_force_changed() {
    // Proposed while the host demanded approval for low-risk writes; executed after the
    // host lifted that: the policy bound to the approval is no longer the one in force.
    let lab = Lab::default();
    let actor = agent();
    let strict = Governance::new().with_mode_policy(
        ModePolicy::new().with_tier(RiskTier::LowWrite, ApprovalMode::RequiresApproval),
    );
    let call = ToolCall::new("tag_ticket", ARGS);
    let CallDecision::AwaitApproval(proposal) = LAB.call(&call, &actor, &lab, &strict).decision
    else {
        panic!("expected a proposal")
    };
    let approvals = new_approvals();
    let key = approvals.propose(proposal, T0).unwrap().key();
    approvals.approve(&key, "supervisor", at(1)).unwrap();
    let relaxed = Governance::new();
    let result =
        pollster::block_on(approvals.execute(&LAB, &key, &call, &actor, &lab, &relaxed, at(2)));
    assert_eq!(
        result,
        Err(ApprovalError::Invalidated(Invalidation::PolicyChanged))
    );
    assert_eq!(
        approvals.lane(&key).unwrap().state(),
        LaneState::Invalidated
    );
    // Under the policy it was approved in, it runs.
    let key2 = {
        let call = call.with_dedupe_token("2");
        let CallDecision::AwaitApproval(p) = LAB.call(&call, &actor, &lab, &strict).decision else {
            panic!()
        };
        approvals.propose(p, T0).unwrap().key()
    };
    approvals.approve(&key2, "supervisor", at(1)).unwrap();
    let call2 = call.with_dedupe_token("2");
    let ok =
        pollster::block_on(approvals.execute(&LAB, &key2, &call2, &actor, &lab, &strict, at(2)));
    assert_eq!(ok, Ok(serde_json::Value::Null));
}

#[test]
fn a_move_from_a_stale_version_is_a_conflict_and_changes_nothing() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let key = propose(&approvals, &lab, ARGS, T0);
    let opened = approvals.lane(&key).unwrap();
    assert_eq!(opened.version(), 0);
    approvals.approve(&key, "supervisor", at(1)).unwrap();
    let approved = approvals.lane(&key).unwrap();
    assert_eq!(approved.version(), 1);
    // A second writer read the lane before the approval and now writes it back.
    let events = approvals.store().events().unwrap();
    let stale = approvals
        .store()
        .transition(opened.version(), opened, events[0].clone());
    assert_eq!(stale, Err(StoreError::Conflict));
    assert_eq!(approvals.lane(&key).unwrap(), approved);
    assert_eq!(approvals.store().events().unwrap(), events);
}

#[test]
fn two_threads_racing_to_execute_one_approval_run_it_once() {
    for _ in 0..20 {
        let (approvals, lab) = (new_approvals(), Lab::default());
        let key = propose(&approvals, &lab, ARGS, T0);
        approvals.approve(&key, "supervisor", at(1)).unwrap();
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let actor = agent();
                        execute(
                            &approvals,
                            &lab,
                            &key,
                            ToolCall::new("send_money", ARGS),
                            &actor,
                            at(2),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(lab.runs.load(Ordering::SeqCst), 1);
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
        for loser in results.iter().filter(|r| r.is_err()) {
            assert!(
                matches!(
                    loser,
                    Err(ApprovalError::Store(StoreError::Conflict) | ApprovalError::Transition(_))
                ),
                "{loser:?}"
            );
        }
    }
}

#[test]
fn retries_share_one_run_key_and_are_bounded() {
    let config = ApprovalConfig::new().with_max_attempts(4);
    assert_eq!(config.max_attempts(), 4);
    let approvals = Approvals::new(MemoryStore::new(), config);
    let lab = Lab::default();
    lab.fail_first.store(2, Ordering::SeqCst);
    let key = propose(&approvals, &lab, ARGS, T0);
    approvals.approve(&key, "supervisor", at(1)).unwrap();
    assert!(
        execute(
            &approvals,
            &lab,
            &key,
            ToolCall::new("send_money", ARGS),
            &agent(),
            at(2)
        )
        .is_ok()
    );
    assert_eq!(*lab.run_keys.lock().unwrap(), [Some(key); 3]);
    assert_eq!(approvals.lane(&key).unwrap().attempts(), 3);

    let lab = Lab::default();
    lab.fail_first.store(usize::MAX, Ordering::SeqCst);
    let key = propose(&approvals, &lab, r#"{"to": "Z", "cents": 9}"#, T0);
    approvals.approve(&key, "supervisor", at(1)).unwrap();
    let result = execute(
        &approvals,
        &lab,
        &key,
        ToolCall::new("send_money", r#"{"to": "Z", "cents": 9}"#),
        &agent(),
        at(2),
    );
    assert!(
        matches!(
            result,
            Err(ApprovalError::ExecutionFailed { attempts: 4, .. })
        ),
        "{result:?}"
    );
    assert_eq!(lab.runs.load(Ordering::SeqCst), 4);
    let lane = approvals.lane(&key).unwrap();
    assert_eq!(
        (lane.state(), lane.reason()),
        (
            LaneState::ExecutionFailed,
            Some("tool failed: bank timeout")
        )
    );
}

#[test]
fn every_transition_is_an_audit_event() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let key = propose(&approvals, &lab, ARGS, T0);
    approvals.approve(&key, "supervisor", at(1)).unwrap();
    execute(
        &approvals,
        &lab,
        &key,
        ToolCall::new("send_money", ARGS),
        &agent(),
        at(2),
    )
    .unwrap();
    let events = approvals.store().events().unwrap();
    let trail: Vec<_> = events
        .iter()
        .map(|e| (e.from, e.to, e.by.as_deref()))
        .collect();
    assert_eq!(
        trail,
        [
            (None, LaneState::Pending, None),
            (
                Some(LaneState::Pending),
                LaneState::Approved,
                Some("supervisor")
            ),
            (Some(LaneState::Approved), LaneState::ExecutionPending, None),
            (Some(LaneState::ExecutionPending), LaneState::Executed, None),
        ]
    );
    assert_eq!(events[3].attempts, Some(1));
    assert!(
        events
            .iter()
            .all(|e| e.key == key && e.proposer == "agent-7")
    );
    let json = serde_json::to_string(&events).unwrap();
    let back: Vec<cairnloop::TransitionEvent> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, events);
}

#[test]
fn a_loosened_specs_justification_travels_with_its_events() {
    let lab = Lab::default();
    let actor = agent();
    // Force approval for a loosened tool, so it enters the lifecycle.
    let strict = Governance::new().with_mode_policy(
        ModePolicy::new().with_tier(RiskTier::LowWrite, ApprovalMode::RequiresApproval),
    );
    let outcome = LAB.call(&ToolCall::new("tag_ticket", ARGS), &actor, &lab, &strict);
    let CallDecision::AwaitApproval(proposal) = outcome.decision else {
        panic!()
    };
    let approvals = new_approvals();
    let key = approvals.propose(proposal, T0).unwrap().key();
    approvals
        .reject(&key, "supervisor", "not today", at(1))
        .unwrap();
    let events = approvals.store().events().unwrap();
    assert!(
        events
            .iter()
            .all(|e| e.loosened_because.as_deref() == Some("tags are cosmetic"))
    );
    assert_eq!(events[1].reason.as_deref(), Some("not today"));
}

/// Random operation sequences against a reference model written here, independently.
mod model {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Op {
        Approve { by_proposer: bool },
        Reject { with_reason: bool },
        Defer { with_reason: bool },
        Execute { same_args: bool },
        Advance(u64),
        Rewind,
        Sweep,
    }

    /// The model: the state, and the expected result kind of each operation.
    struct Model {
        state: &'static str,
        expires: u64,
        last: u64,
        runs: usize,
    }

    impl Model {
        fn step(&mut self, op: Op, now: u64) -> &'static str {
            let before = self.state;
            let live = matches!(self.state, "pending" | "approved");
            if !matches!(op, Op::Advance(_) | Op::Rewind) && now < self.last {
                return "clock";
            }
            let expired_now = live && now >= self.expires;
            let result = match op {
                Op::Advance(_) | Op::Rewind => return "ok",
                Op::Sweep => {
                    if expired_now {
                        self.state = "expired";
                    }
                    "ok"
                }
                _ if expired_now => {
                    self.state = "expired";
                    "expired"
                }
                Op::Approve { by_proposer: true } => "self",
                Op::Reject { with_reason: false } | Op::Defer { with_reason: false } => "reason",
                Op::Approve { .. } if self.state == "pending" => {
                    self.state = "approved";
                    "ok"
                }
                Op::Reject { .. } if self.state == "pending" => {
                    self.state = "rejected";
                    "ok"
                }
                Op::Defer { .. } if self.state == "pending" => {
                    self.state = "deferred";
                    "ok"
                }
                Op::Execute { .. } if self.state != "approved" => "transition",
                Op::Execute { same_args: false } => "mismatch",
                Op::Execute { same_args: true } => {
                    self.state = "executed";
                    self.runs += 1;
                    "ok"
                }
                _ => "transition",
            };
            // A lane's clock moves with the lane, not with refused or idle operations.
            if self.state != before {
                self.last = now;
            }
            result
        }
    }

    fn kind(result: Result<(), ApprovalError>) -> &'static str {
        match result {
            Ok(()) => "ok",
            Err(ApprovalError::Expired) => "expired",
            Err(ApprovalError::SelfApproval) => "self",
            Err(ApprovalError::ReasonRequired(_)) => "reason",
            Err(ApprovalError::Transition(_)) => "transition",
            Err(ApprovalError::Mismatch(_)) => "mismatch",
            Err(ApprovalError::ClockWentBackwards) => "clock",
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    /// xorshift64*, so the sequences are random but the same on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    #[test]
    fn random_sequences_agree_with_the_reference_model() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let ttl = 10 * HOUR;
        let mut steps = 0;
        for _ in 0..300 {
            let approvals = Approvals::new(
                MemoryStore::new(),
                ApprovalConfig::new().with_ttl(Ttl::from_millis(ttl)),
            );
            let lab = Lab::default();
            let key = propose(&approvals, &lab, ARGS, T0);
            let mut model = Model {
                state: "pending",
                expires: ttl,
                last: 0,
                runs: 0,
            };
            let mut now = 0u64;
            for _ in 0..12 {
                let coin = rng.next() % 2 == 0;
                let op = match rng.next() % 8 {
                    0 | 1 => Op::Approve {
                        by_proposer: rng.next() % 4 == 0,
                    },
                    2 => Op::Reject { with_reason: coin },
                    3 => Op::Defer { with_reason: coin },
                    4 => Op::Execute {
                        same_args: rng.next() % 4 != 0,
                    },
                    5 => Op::Advance(rng.next() % (6 * HOUR)),
                    6 => Op::Rewind,
                    _ => Op::Sweep,
                };
                match op {
                    Op::Advance(by) => now += by,
                    Op::Rewind => now = now.saturating_sub(HOUR),
                    _ => {}
                }
                let when = at(now);
                let actual = match op {
                    Op::Approve { by_proposer } => {
                        let by = if by_proposer { "agent-7" } else { "supervisor" };
                        approvals.approve(&key, by, when).map(drop)
                    }
                    Op::Reject { with_reason } => approvals
                        .reject(
                            &key,
                            "supervisor",
                            if with_reason { "no" } else { "" },
                            when,
                        )
                        .map(drop),
                    Op::Defer { with_reason } => approvals
                        .defer(
                            &key,
                            "supervisor",
                            if with_reason { "later" } else { "" },
                            when,
                        )
                        .map(drop),
                    Op::Execute { same_args } => {
                        let args = if same_args {
                            ARGS
                        } else {
                            r#"{"to": "evil", "cents": 5000}"#
                        };
                        execute(
                            &approvals,
                            &lab,
                            &key,
                            ToolCall::new("send_money", args),
                            &agent(),
                            when,
                        )
                        .map(drop)
                    }
                    Op::Sweep => approvals.expire_if_due(&key, when).map(drop),
                    Op::Advance(_) | Op::Rewind => Ok(()),
                };
                let expected = model.step(op, now);
                assert_eq!(
                    kind(actual),
                    expected,
                    "{op:?} at +{now}ms in state {}",
                    model.state
                );
                assert_eq!(
                    approvals.lane(&key).unwrap().state().as_str(),
                    model.state,
                    "{op:?}"
                );
                assert_eq!(lab.runs.load(Ordering::SeqCst), model.runs);
                steps += 1;
            }
        }
        assert_eq!(steps, 3600);
    }
}

#[test]
fn a_proposal_from_the_store_is_the_one_proposed() {
    let (approvals, lab) = (new_approvals(), Lab::default());
    let actor = agent();
    let outcome = LAB.call(
        &ToolCall::new("send_money", ARGS),
        &actor,
        &lab,
        &Governance::new(),
    );
    let CallDecision::AwaitApproval(proposal) = outcome.decision else {
        panic!()
    };
    let lane = approvals.propose(proposal.clone(), T0).unwrap();
    assert_eq!(lane.proposal(), &proposal);
    let _: &Proposal = lane.proposal();
}
