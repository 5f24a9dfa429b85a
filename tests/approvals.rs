//! The approval lifecycle through the governor: transitions, binding, expiry, four eyes,
//! re-validation, single execution under a race, retries with a stable run key, and the
//! audit trail; plus random operation sequences checked against a reference model.
#![cfg(all(feature = "serde", feature = "std"))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use cairnloop::approvals::{
    ApprovalConfig, ApprovalStore, AuditRecord, BoundField, ChainBreak, Invalidation, ManualClock,
    MemoryStore, StoreError, TransitionEvent, TypedOutcome,
};
use cairnloop::gate::{LaneAction, LaneState, Timestamp, Ttl};
use cairnloop::json::Proposal;
use cairnloop::{
    Actor, ApprovalError, ApprovalMode, Blocked, Governance, Governor, IdempotencyKey, InputErrors,
    Invocation, ModePolicy, Outcome, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolCall,
    ToolEntry, ToolSpec,
};
use serde::{Deserialize, Serialize};

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;
#[path = "fixtures/identities.rs"]
mod identities;

/// Counts runs, remembers run keys, and fails the first `fail_first` runs.
#[derive(Default)]
struct Lab {
    runs: AtomicUsize,

    fail_first: AtomicUsize,
    run_keys: Mutex<Vec<Option<IdempotencyKey>>>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Transfer {
    to: String,
    cents: u64,
}

plain_tool!(SendMoney(Transfer) -> Result<String, String>, Lab,
    ToolSpec::new("send_money", "Send money", "Sends money to an account.", RiskTier::HighWrite)
        .with_result_states(&["sent"]),
    ["payments:write"],
    |call| {
        // Widen the race window.
        std::thread::sleep(std::time::Duration::from_millis(5));
        let transfer = call.input();
        bank_run(
            call.context(),
            call.run_key(),
            format!("sent {} to {}", transfer.cents, transfer.to),
        )
    }
);

/// A run at the lab's bank: counted, its run key kept, failing the first `fail_first`.
fn bank_run(lab: &Lab, run_key: Option<IdempotencyKey>, done: String) -> Result<String, String> {
    let run = lab.runs.fetch_add(1, Ordering::SeqCst);
    lab.run_keys.lock().unwrap().push(run_key);
    if run < lab.fail_first.load(Ordering::SeqCst) {
        return Err("bank timeout".into());
    }
    Ok(done)
}

plain_tool!(TagTicket(Transfer) -> Result<(), String>, Lab,
    ToolSpec::new("tag_ticket", "Tag ticket", "Tags a ticket.", RiskTier::LowWrite)
        .loosen_approval(ApprovalMode::Auto, "tags are cosmetic"),
    [],
    |call| { Ok(()) }
);

plain_tool!(
    /// Like `send_money`, but declared idempotent: setting a limit twice sets it once.
    SetLimit(Transfer) -> Result<String, String>, Lab,
    ToolSpec::new("set_limit", "Set limit", "Sets an account's transfer limit.", RiskTier::HighWrite)
        .idempotent(),
    ["payments:write"],
    |call| {
        let limit = call.input();
        bank_run(
            call.context(),
            call.run_key(),
            format!("limit {} for {}", limit.cents, limit.to),
        )
    }
);

plain_tool!(
    /// A tool whose run panics, or never finishes, as the input says.
    Flaky(Transfer) -> Result<String, String>, Lab,
    ToolSpec::new("flaky", "Flaky", "Panics on `panic`, hangs on `hang`.", RiskTier::HighWrite),
    ["payments:write"],
    |call| {
        call.context().runs.fetch_add(1, Ordering::SeqCst);
        match call.input().to.as_str() {
            "panic" => panic!("the ledger is on fire"),
            "hang" => std::future::pending().await,
            _ => Ok("done".into()),
        }
    }
);

plain_tool!(
    /// A tool that counts the previews it writes: a preview is the dear part of a proposal.
    WriteNote(Transfer) -> Result<(), String>, Lab,
    ToolSpec::new("write_note", "Write note", "Writes a note to an account.", RiskTier::LowWrite),
    [],
    |call| { Ok(()) },
    preview |note, out| {
        PREVIEWS.fetch_add(1, Ordering::SeqCst);
        Some(write!(out, "Note to {}", note.to))
    }
);

/// Previews written by `write_note` (a tool's preview sees only its input).
static PREVIEWS: AtomicUsize = AtomicUsize::new(0);

static LAB: Registry<Lab> = Registry::new(&[
    ToolEntry::json::<WriteNote>(),
    ToolEntry::json::<SendMoney>(),
    ToolEntry::json::<TagTicket>(),
    ToolEntry::json::<SetLimit>(),
    ToolEntry::json::<Flaky>(),
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

/// A governor over a registry, with a clock the test moves and the lab it runs in.
struct Bench {
    governor: Governor<Lab, Arc<MemoryStore>>,
    clock: ManualClock,
    lab: Lab,
}

impl Bench {
    fn new() -> Self {
        Self::with(&LAB, Governance::new(), ApprovalConfig::new())
    }

    fn with(
        registry: &'static Registry<Lab>,
        governance: Governance<Lab>,
        config: ApprovalConfig,
    ) -> Self {
        Self::over(Arc::new(MemoryStore::new()), registry, governance, config)
    }

    /// The lab with defaults, over `store`, which the test keeps to look into.
    fn on(store: &Arc<MemoryStore>) -> Self {
        Self::over(
            Arc::clone(store),
            &LAB,
            Governance::new(),
            ApprovalConfig::new(),
        )
    }

    /// A governor over `store`, which another bench may share (a later deploy, say).
    fn over(
        store: Arc<MemoryStore>,
        registry: &'static Registry<Lab>,
        governance: Governance<Lab>,
        config: ApprovalConfig,
    ) -> Self {
        let clock = ManualClock::new(T0);
        let governor = Governor::new(registry)
            .with_store(store)
            .with_governance(governance)
            .with_config(config)
            .with_clock(clock.clone());
        Self {
            governor,
            clock,
            lab: Lab::default(),
        }
    }

    fn at(&self, now: Timestamp) -> &Governor<Lab, Arc<MemoryStore>> {
        self.clock.set(now);
        &self.governor
    }

    /// Proposes `tool` with `args` by the agent at `now`: the lane's key.
    fn propose_tool(&self, tool: &str, args: &str, now: Timestamp) -> IdempotencyKey {
        let call = ToolCall::new(tool, args);
        match pollster::block_on(self.at(now).call(&call, &agent(), &self.lab)) {
            Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
            other => panic!("expected a proposal, got {other:?}"),
        }
    }

    fn propose(&self, args: &str, now: Timestamp) -> IdempotencyKey {
        self.propose_tool("send_money", args, now)
    }

    fn execute_as(
        &self,
        key: &IdempotencyKey,
        actor: &Actor<'_>,
        now: Timestamp,
    ) -> Result<serde_json::Value, ApprovalError> {
        pollster::block_on(self.at(now).execute(key, actor, &self.lab))
    }

    fn execute(
        &self,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<serde_json::Value, ApprovalError> {
        self.execute_as(key, &agent(), now)
    }

    fn state(&self, key: &IdempotencyKey) -> LaneState {
        pollster::block_on(self.governor.lane(key)).unwrap().state()
    }

    fn runs(&self) -> usize {
        self.lab.runs.load(Ordering::SeqCst)
    }

    fn transitions(&self) -> Vec<TransitionEvent> {
        pollster::block_on(self.governor.events())
            .unwrap()
            .into_iter()
            .filter_map(|record| match record {
                AuditRecord::Transition(event) => Some(event),
                _ => None,
            })
            .collect()
    }
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
        (S::Pending, A::Withdraw, S::Withdrawn),
        (S::Pending, A::Expire, S::Expired),
        (S::Approved, A::StartExecution, S::ExecutionPending),
        (S::Approved, A::Expire, S::Expired),
        (S::Approved, A::Invalidate, S::Invalidated),
        (S::ExecutionPending, A::Succeed, S::Executed),
        (S::ExecutionPending, A::Fail, S::ExecutionFailed),
        (S::ExecutionPending, A::Invalidate, S::Invalidated),
        (S::ExecutionPending, A::Interrupt, S::Interrupted),
        (S::ExecutionPending, A::LoseLease, S::OutcomeUnknown),
        (S::Interrupted, A::MarkExecuted, S::Executed),
        (S::Interrupted, A::MarkFailed, S::ExecutionFailed),
        (S::Interrupted, A::Close, S::Closed),
        (S::OutcomeUnknown, A::MarkExecuted, S::Executed),
        (S::OutcomeUnknown, A::MarkFailed, S::ExecutionFailed),
        (S::OutcomeUnknown, A::Close, S::Closed),
        (S::Closed, A::Reopen, S::Pending),
        (S::Pending, A::Endorse, S::Pending),
        (S::Pending, A::Supersede, S::Superseded),
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
    assert_eq!(refused, 14 * 17 - allowed.len());
    for state in S::ALL {
        let has_exit = A::ALL.iter().any(|a| state.apply(*a).is_ok());
        assert_eq!(state.is_terminal(), !has_exit, "{state}");
    }
}

#[test]
fn approve_then_execute_runs_once_with_the_lane_key() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    let output = bench.execute(&key, at(2));
    assert_eq!(output, Ok(serde_json::json!("sent 5000 to DE02 1203")));
    assert_eq!(bench.runs(), 1);
    assert_eq!(*bench.lab.run_keys.lock().unwrap(), [Some(key)]);
    let lane = pollster::block_on(bench.governor.lane(&key)).unwrap();
    assert_eq!((lane.state(), lane.attempts()), (LaneState::Executed, 1));

    // Replaying the approval runs nothing.
    let replay = bench.execute(&key, at(3));
    assert!(
        matches!(replay, Err(ApprovalError::AlreadyRun(LaneState::Executed))),
        "{replay:?}"
    );
    assert_eq!(bench.runs(), 1);
}

#[test]
fn a_pending_rejected_or_deferred_lane_never_executes() {
    let bench = Bench::new();
    let pending = bench.propose(ARGS, T0);
    let rejected = bench.propose(r#"{"to": "X", "cents": 1}"#, T0);
    let deferred = bench.propose(r#"{"to": "Y", "cents": 1}"#, T0);
    let governor = bench.at(at(1));
    pollster::block_on(governor.reject(&rejected, "supervisor", "unknown payee")).unwrap();
    pollster::block_on(governor.defer(&deferred, "supervisor", "ask the customer first")).unwrap();
    for key in [pending, rejected, deferred] {
        let result = bench.execute(&key, at(2));
        assert!(
            matches!(result, Err(ApprovalError::Transition(_))),
            "{result:?}"
        );
    }
    assert_eq!(bench.runs(), 0);
    assert_eq!(
        pollster::block_on(bench.governor.lane(&rejected))
            .unwrap()
            .reason(),
        Some("unknown payee")
    );
}

#[test]
fn reject_and_defer_need_a_reason_and_a_decider() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, T0);
    let governor = bench.at(at(1));
    for reason in ["", "   ", "two\nlines"] {
        assert_eq!(
            pollster::block_on(governor.reject(&key, "supervisor", reason)),
            Err(ApprovalError::ReasonRequired(LaneAction::Reject))
        );
        assert_eq!(
            pollster::block_on(governor.defer(&key, "supervisor", reason)),
            Err(ApprovalError::ReasonRequired(LaneAction::Defer))
        );
    }
    for decider in ["", "  "] {
        assert_eq!(
            pollster::block_on(governor.approve(&key, decider)),
            Err(ApprovalError::MissingDecider),
            "{decider:?}"
        );
    }
    for (decider, control) in [("ops\u{7}", 7), ("ops\nlead", 10)] {
        assert_eq!(
            pollster::block_on(governor.approve(&key, decider)),
            Err(ApprovalError::InvalidDecider(
                cairnloop::approvals::IdentityError::Control(control)
            )),
            "{decider:?}"
        );
    }
    assert_eq!(bench.state(&key), LaneState::Pending);
}

#[test]
fn the_same_call_again_finds_its_lane_runs_once_and_then_gives_back_the_outcome() {
    let bench = Bench::new();
    let first = bench.propose(ARGS, T0);
    // Pending: the same proposal, in any key order.
    let reordered = r#"{ "cents": 5000, "to": "DE02 1203" }"#;
    assert_eq!(bench.propose(reordered, at(1)), first);
    pollster::block_on(bench.at(at(1)).approve(&first, "supervisor")).unwrap();
    let call = |args: &str, now| {
        pollster::block_on(bench.at(now).call(
            &ToolCall::new("send_money", args),
            &agent(),
            &bench.lab,
        ))
        .unwrap()
    };
    // Approved: the re-issued call runs, once.
    let sent = serde_json::json!("sent 5000 to DE02 1203");
    assert_eq!(call(reordered, at(2)), Outcome::Executed(sent.clone()));
    assert_eq!(bench.runs(), 1);
    // Executed: the recorded outcome comes back and nothing runs.
    assert_eq!(call(ARGS, at(3)), Outcome::Executed(sent));
    assert_eq!(bench.runs(), 1);
    assert_eq!(bench.state(&first), LaneState::Executed);
    // Opened once, approved once, claimed once, executed once.
    assert_eq!(bench.transitions().len(), 4);
}

#[test]
fn four_eyes_unless_the_host_opts_in() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, T0);
    assert!(!bench.governor.config().allows_self_approval());
    // The proposer is `agent-7`: every spelling of it that differs only in ASCII case is
    // the same person.
    for proposer in ["agent-7", "Agent-7", "AGENT-7", "aGeNt-7"] {
        assert_eq!(
            pollster::block_on(bench.at(at(1)).approve(&key, proposer)),
            Err(ApprovalError::SelfApproval),
            "{proposer}"
        );
    }
    assert_eq!(bench.state(&key), LaneState::Pending);
    assert_eq!(
        pollster::block_on(bench.governor.lane(&key))
            .unwrap()
            .decided_by(),
        None
    );
    // Another person may approve.
    assert!(pollster::block_on(bench.at(at(2)).approve(&key, "agent-8")).is_ok());

    let lenient = Bench::with(
        &LAB,
        Governance::new(),
        ApprovalConfig::new().allowing_self_approval(),
    );
    assert!(lenient.governor.config().allows_self_approval());
    let key = lenient.propose(ARGS, T0);
    let approved = pollster::block_on(lenient.at(at(1)).approve(&key, "Agent-7")).unwrap();
    assert_eq!(approved.decided_by(), Some("Agent-7"));
    assert_eq!(approved.state(), LaneState::Approved);
}

#[test]
fn a_caller_without_a_usable_id_proposes_nothing() {
    for proposer in ["", " ", "agent\u{0}7", "agent-7\u{200B}"] {
        let bench = Bench::new();
        let actor = Actor::new(proposer, &["payments:write"]);
        let call = ToolCall::new("send_money", ARGS);
        let outcome = pollster::block_on(bench.at(T0).call(&call, &actor, &bench.lab));
        assert!(
            matches!(outcome, Err(ApprovalError::InvalidActor(_))),
            "{proposer:?}: {outcome:?}"
        );
        assert!(bench.transitions().is_empty(), "{proposer:?}");
        assert!(
            pollster::block_on(bench.governor.lanes(LaneState::Pending, None, 10))
                .unwrap()
                .is_empty()
        );
    }
}

#[test]
fn only_the_proposer_in_its_account_can_execute() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    let other_actor = Actor::new("agent-8", &["payments:write"]).with_account("acme");
    let other_case = Actor::new("Agent-7", &["payments:write"]).with_account("acme");
    let other_account = Actor::new("agent-7", &["payments:write"]).with_account("globex");
    let no_account = Actor::new("agent-7", &["payments:write"]);
    let cases: [(&Actor<'_>, BoundField); 4] = [
        (&other_actor, BoundField::Actor),
        (&other_case, BoundField::Actor),
        (&other_account, BoundField::Account),
        (&no_account, BoundField::Account),
    ];
    for (actor, field) in cases {
        assert_eq!(
            bench.execute_as(&key, actor, at(2)),
            Err(ApprovalError::Mismatch(field)),
            "{actor:?}"
        );
    }
    assert_eq!(bench.runs(), 0);
    assert_eq!(bench.state(&key), LaneState::Approved);
    assert!(bench.execute(&key, at(3)).is_ok());
}

#[test]
fn bound_fields_and_defaults_read_plainly() {
    let names = [
        BoundField::Tool,
        BoundField::Arguments,
        BoundField::Actor,
        BoundField::Account,
        BoundField::RiskTier,
        BoundField::Scopes,
        BoundField::Mode,
        BoundField::HostPolicy,
    ]
    .map(|f| f.to_string());
    assert_eq!(
        names,
        [
            "tool",
            "arguments",
            "actor",
            "account",
            "risk tier",
            "required scopes",
            "approval mode",
            "host policy"
        ]
    );
    assert_eq!(ApprovalConfig::new().max_attempts(), 1);
    assert_eq!(ApprovalConfig::new().lease(), Ttl::from_secs(300));
    assert_eq!(ApprovalConfig::new().with_max_attempts(0).max_attempts(), 1);
}

#[test]
fn expiry_at_just_before_and_just_after_the_ttl() {
    let ttl = 2 * HOUR;
    let config = ApprovalConfig::new().with_ttl(Ttl::from_millis(ttl));
    // Approving.
    for (offset, expired) in [(ttl - 1, false), (ttl, true), (ttl + 1, true)] {
        let bench = Bench::with(&LAB, Governance::new(), config);
        let key = bench.propose(ARGS, T0);
        let result = pollster::block_on(bench.at(at(offset)).approve(&key, "supervisor"));
        assert_eq!(result.is_err(), expired, "approve at ttl{offset:+}");
        if expired {
            assert_eq!(result, Err(ApprovalError::Expired));
            assert_eq!(bench.state(&key), LaneState::Expired);
        }
    }
    // Executing.
    for (offset, expired) in [(ttl - 1, false), (ttl, true), (ttl + 1, true)] {
        let bench = Bench::with(&LAB, Governance::new(), config);
        let key = bench.propose(ARGS, T0);
        pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
        let result = bench.execute(&key, at(offset));
        assert_eq!(result.is_err(), expired, "execute at ttl{offset:+}");
        let expected = if expired {
            LaneState::Expired
        } else {
            LaneState::Executed
        };
        assert_eq!(bench.state(&key), expected);
    }
    assert_eq!(ApprovalConfig::new().ttl(), Ttl::from_secs(48 * 3600));
}

#[test]
fn a_repeat_after_the_window_is_told_expired_not_awaiting() {
    let ttl = 2 * HOUR;
    let config = ApprovalConfig::new().with_ttl(Ttl::from_millis(ttl));
    for (offset, expected) in [(ttl - 1, "awaiting_approval"), (ttl, "expired")] {
        let bench = Bench::with(&LAB, Governance::new(), config);
        let key = bench.propose(ARGS, T0);
        // No sweep ran: the repeat itself finds that the time is up.
        let call = ToolCall::new("send_money", ARGS);
        let outcome =
            pollster::block_on(bench.at(at(offset)).call(&call, &agent(), &bench.lab)).unwrap();
        assert_eq!(outcome.code(), expected, "repeat at ttl{offset:+}");
        assert_eq!(
            outcome.is_awaiting_approval(),
            expected == "awaiting_approval"
        );
        let reply = outcome.into_reply();
        assert_eq!(reply.status(), expected);
        if expected == "expired" {
            assert_eq!(bench.state(&key), LaneState::Expired);
            assert!(reply.is_error());
            assert!(
                reply.text().contains("approval window closed"),
                "{}",
                reply.text()
            );
        }
    }
}

#[test]
fn a_sweep_expires_only_what_is_due() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, T0);
    let due = Timestamp::from_unix_millis(T0.unix_millis() + Ttl::DEFAULT.as_millis());
    assert_eq!(
        pollster::block_on(bench.at(at(1)).expire_if_due(&key))
            .unwrap()
            .state(),
        LaneState::Pending
    );
    assert_eq!(
        pollster::block_on(bench.at(due).expire_if_due(&key))
            .unwrap()
            .state(),
        LaneState::Expired
    );
}

/// Processes that share a store each count its clock from their own reading, and a
/// process may read its clock just before another moves the lane: a clock up to 250 ms
/// behind the lane's last move moves it at that move's time, never earlier.
#[test]
fn a_clock_a_little_behind_the_lanes_last_move_moves_it_at_that_time() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, at(1_000));
    let approved = pollster::block_on(bench.at(at(750)).approve(&key, "supervisor")).unwrap();
    assert_eq!(approved.state(), LaneState::Approved);
    assert_eq!(approved.updated_at(), at(1_000));
    assert_eq!(
        bench.execute(&key, at(900)),
        Ok(serde_json::json!("sent 5000 to DE02 1203"))
    );
    assert_eq!(bench.runs(), 1);
    let times: Vec<Timestamp> = bench.transitions().iter().map(|e| e.at).collect();
    assert_eq!(times, [at(1_000), at(1_000), at(1_000), at(1_000)]);

    // A rejection too, at the edge.
    let other = Bench::new();
    let key = other.propose(ARGS, at(1_000));
    let rejected = pollster::block_on(other.at(at(750)).reject(&key, "supervisor", "no")).unwrap();
    assert_eq!(rejected.updated_at(), at(1_000));
}

#[test]
fn a_backward_clock_an_unavailable_one_and_overflowing_time_fail_closed() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, at(1_000));
    assert_eq!(
        pollster::block_on(bench.at(at(749)).approve(&key, "supervisor")),
        Err(ApprovalError::ClockWentBackwards)
    );
    pollster::block_on(bench.at(at(2_000)).approve(&key, "supervisor")).unwrap();
    assert_eq!(
        bench.execute(&key, at(1_749)),
        Err(ApprovalError::ClockWentBackwards)
    );
    assert_eq!(bench.runs(), 0);

    let late = Bench::new();
    let call = ToolCall::new("send_money", ARGS);
    let result = pollster::block_on(late.at(Timestamp::from_unix_millis(u64::MAX - 1)).call(
        &call,
        &agent(),
        &late.lab,
    ));
    assert_eq!(result, Err(ApprovalError::TimeOverflow));
    // The trail says the proposal failed, and why, after the decision to await approval;
    // no lane was opened.
    let trail: Vec<(String, Option<String>)> = pollster::block_on(late.governor.events())
        .unwrap()
        .into_iter()
        .map(|record| match record {
            AuditRecord::Decision(event) => (event.decision.into_owned(), event.reason),
            AuditRecord::Transition(event) => (event.to.as_str().to_owned(), None),
            other => panic!("no notifier here: {other:?}"),
        })
        .collect();
    assert_eq!(
        trail,
        [
            ("await_approval".to_owned(), None),
            (
                "proposal_failed".to_owned(),
                Some("time arithmetic would overflow".to_owned())
            ),
        ]
    );

    let stopped = Governor::new(&LAB).with_clock(|| None::<Timestamp>);
    let result = pollster::block_on(stopped.call(&call, &agent(), &late.lab));
    assert_eq!(result, Err(ApprovalError::ClockUnavailable));
    assert!(
        pollster::block_on(stopped.events())
            .unwrap()
            .iter()
            .all(|record| matches!(record, AuditRecord::Decision(_)))
    );
}

#[test]
fn revalidation_invalidates_after_a_scope_is_revoked() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    let revoked = Actor::new("agent-7", &[]).with_account("acme");
    let result = bench.execute_as(&key, &revoked, at(2));
    assert!(
        matches!(
            result,
            Err(ApprovalError::Invalidated(Invalidation::Blocked(
                Blocked::ScopeMissing { .. }
            )))
        ),
        "{result:?}"
    );
    assert_eq!(bench.state(&key), LaneState::Invalidated);
    assert_eq!(bench.runs(), 0);
}

#[test]
fn revalidation_invalidates_a_tool_tightened_or_removed() {
    let blocking = Governance::new().with_mode_policy(
        ModePolicy::new().with_tier(RiskTier::HighWrite, ApprovalMode::AlwaysBlock),
    );
    let cases: [(&'static Registry<Lab>, Governance<Lab>, &str); 2] = [
        (&LAB, blocking, "always_blocked"),
        (&EMPTY, Governance::new(), "unknown_tool"),
    ];
    for (registry, governance, expected) in cases {
        let store = Arc::new(MemoryStore::new());
        let before = Bench::over(
            Arc::clone(&store),
            &LAB,
            Governance::new(),
            ApprovalConfig::new(),
        );
        let key = before.propose(ARGS, T0);
        pollster::block_on(before.at(at(1)).approve(&key, "supervisor")).unwrap();
        let after = Bench::over(store, registry, governance, ApprovalConfig::new());
        let code = match after.execute(&key, at(2)) {
            Err(ApprovalError::Invalidated(Invalidation::Blocked(blocked))) => blocked.code(),
            other => panic!("expected an invalidation, got {other:?}"),
        };
        assert_eq!(code, expected);
        assert_eq!(after.state(&key), LaneState::Invalidated);
        assert_eq!(before.runs() + after.runs(), 0);
    }
}

/// The changed-deploy twins of the lab's tools, for the binding tests: the same names,
/// with a higher tier or one more required scope.
mod redeployed {
    use super::*;

    /// `post_note` as first deployed: a low-write tool.
    pub(super) struct PostNote;
    /// `post_note` after a deploy raised it to high-write.
    pub(super) struct PostNoteRaised;
    /// `post_note` after a deploy made it require a second scope.
    pub(super) struct PostNoteScoped;

    macro_rules! post_note {
        ($tool:ident, $tier:expr, $scopes:expr) => {
            impl Tool for $tool {
                const SPEC: ToolSpec =
                    ToolSpec::new("post_note", "Post note", "Posts a note.", $tier);
                const SCOPES: &'static [Scope] = $scopes;
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

                async fn run(call: Invocation<'_, Self>) -> Result<(), String> {
                    call.context().runs.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }
            }
        };
    }

    post_note!(
        PostNote,
        RiskTier::LowWrite,
        &[Scope::new("payments:write")]
    );
    post_note!(
        PostNoteRaised,
        RiskTier::HighWrite,
        &[Scope::new("payments:write")]
    );
    post_note!(
        PostNoteScoped,
        RiskTier::LowWrite,
        &[Scope::new("payments:write"), Scope::new("notes:write")]
    );

    pub(super) static FIRST: Registry<Lab> = Registry::new(&[ToolEntry::json::<PostNote>()]);
    pub(super) static RAISED: Registry<Lab> = Registry::new(&[ToolEntry::json::<PostNoteRaised>()]);
    pub(super) static SCOPED: Registry<Lab> = Registry::new(&[ToolEntry::json::<PostNoteScoped>()]);
}

/// Approves `post_note` under the first deploy, then executes it under `later`: the
/// result, and the runs seen by either deploy.
fn approve_then_redeploy(
    later: &'static Registry<Lab>,
    actor: &Actor<'_>,
) -> (Result<serde_json::Value, ApprovalError>, LaneState, usize) {
    let store = Arc::new(MemoryStore::new());
    let first = Bench::over(
        Arc::clone(&store),
        &redeployed::FIRST,
        Governance::new(),
        ApprovalConfig::new(),
    );
    let key = first.propose_tool("post_note", ARGS, T0);
    pollster::block_on(first.at(at(1)).approve(&key, "supervisor")).unwrap();
    let second = Bench::over(store, later, Governance::new(), ApprovalConfig::new());
    let result = second.execute_as(&key, actor, at(2));
    (result, second.state(&key), first.runs() + second.runs())
}

#[test]
fn a_tool_raised_to_high_write_after_approval_is_invalidated_not_run() {
    let (result, state, runs) = approve_then_redeploy(&redeployed::RAISED, &agent());
    assert_eq!(
        result,
        Err(ApprovalError::Invalidated(Invalidation::Changed {
            field: BoundField::RiskTier,
            was: "low_write".into(),
            now: "high_write".into(),
        }))
    );
    assert_eq!((state, runs), (LaneState::Invalidated, 0));
    // Control: the same deploy runs it.
    let (result, state, runs) = approve_then_redeploy(&redeployed::FIRST, &agent());
    assert!(result.is_ok(), "{result:?}");
    assert_eq!((state, runs), (LaneState::Executed, 1));
}

#[test]
fn a_tool_that_gains_a_scope_the_actor_holds_is_invalidated_not_run() {
    // The actor could pass the new scope check; the approval was still given for less.
    let holder = Actor::new("agent-7", &["payments:write", "notes:write"]).with_account("acme");
    let (result, state, runs) = approve_then_redeploy(&redeployed::SCOPED, &holder);
    assert_eq!(
        result,
        Err(ApprovalError::Invalidated(Invalidation::Changed {
            field: BoundField::Scopes,
            was: "payments:write".into(),
            now: "payments:write notes:write".into(),
        }))
    );
    assert_eq!((state, runs), (LaneState::Invalidated, 0));
    let reason = match result {
        Err(error) => error.to_string(),
        Ok(_) => unreachable!(),
    };
    assert_eq!(
        reason,
        "invalidated: the required scopes changed since the approval: was payments:write, now payments:write notes:write"
    );
}

#[test]
fn revalidation_invalidates_when_the_policy_in_force_changed() {
    // Proposed while the host demanded approval for low-risk writes; executed after the
    // host lifted that: the policy bound to the approval is no longer the one in force.
    let strict = Governance::new().with_mode_policy(
        ModePolicy::new().with_tier(RiskTier::LowWrite, ApprovalMode::RequiresApproval),
    );
    let store = Arc::new(MemoryStore::new());
    let before = Bench::over(Arc::clone(&store), &LAB, strict, ApprovalConfig::new());
    let key = before.propose_tool("tag_ticket", ARGS, T0);
    pollster::block_on(before.at(at(1)).approve(&key, "supervisor")).unwrap();
    let after = Bench::over(
        Arc::clone(&store),
        &LAB,
        Governance::new(),
        ApprovalConfig::new(),
    );
    let result = after.execute(&key, at(2));
    assert_eq!(
        result,
        Err(ApprovalError::Invalidated(Invalidation::Changed {
            field: BoundField::HostPolicy,
            was: "requires_approval".into(),
            now: "auto".into(),
        }))
    );
    assert_eq!(after.state(&key), LaneState::Invalidated);
    // Under the policy it was approved in, it runs.
    let key2 = {
        let call = ToolCall::new("tag_ticket", ARGS).with_dedupe_token("2");
        match pollster::block_on(before.at(T0).call(&call, &agent(), &before.lab)) {
            Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
            other => panic!("{other:?}"),
        }
    };
    pollster::block_on(before.at(at(1)).approve(&key2, "supervisor")).unwrap();
    assert_eq!(before.execute(&key2, at(2)), Ok(serde_json::Value::Null));
}

#[test]
fn a_typed_call_that_awaits_approval_is_approved_and_executed_through_the_governor() {
    let bench = Bench::new();
    let transfer = Transfer {
        to: "DE02 1203".into(),
        cents: 5000,
    };
    let outcome = pollster::block_on(bench.at(T0).call_typed::<SendMoney>(
        transfer,
        &agent(),
        &bench.lab,
    ));
    let Ok(TypedOutcome::AwaitingApproval(lane)) = outcome else {
        panic!("expected a proposal, got {outcome:?}")
    };
    // The same call by name finds the same lane: one key for one input, at either door.
    assert_eq!(bench.propose(ARGS, T0), lane.key());
    pollster::block_on(bench.at(at(1)).approve(&lane.key(), "supervisor")).unwrap();
    assert_eq!(
        bench.execute(&lane.key(), at(2)),
        Ok(serde_json::json!("sent 5000 to DE02 1203"))
    );
    assert_eq!(bench.runs(), 1);
    assert_eq!(bench.state(&lane.key()), LaneState::Executed);

    // A typed tool that the registry cannot call by name is never proposed.
    static TYPED: Registry<Lab> = Registry::new(&[ToolEntry::of::<SendMoney>()]);
    let typed_only = Bench::with(&TYPED, Governance::new(), ApprovalConfig::new());
    let transfer = Transfer {
        to: "X".into(),
        cents: 1,
    };
    let outcome = pollster::block_on(typed_only.at(T0).call_typed::<SendMoney>(
        transfer,
        &agent(),
        &typed_only.lab,
    ));
    assert!(
        matches!(
            outcome,
            Ok(TypedOutcome::Blocked(Blocked::NotCallableByName))
        ),
        "{outcome:?}"
    );
    assert!(typed_only.transitions().is_empty());
}

#[test]
fn a_move_from_a_stale_version_is_a_conflict_and_changes_nothing() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, T0);
    let opened = pollster::block_on(bench.governor.lane(&key)).unwrap();
    assert_eq!(opened.version(), 0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    let approved = pollster::block_on(bench.governor.lane(&key)).unwrap();
    assert_eq!(approved.version(), 1);
    // A second writer read the lane before the approval and now writes it back.
    let events = pollster::block_on(bench.governor.events()).unwrap();
    let stale = pollster::block_on(bench.governor.store().transition(
        opened.version(),
        opened,
        bench.transitions()[0].clone(),
    ));
    assert_eq!(stale, Err(StoreError::Conflict));
    assert_eq!(
        pollster::block_on(bench.governor.lane(&key)).unwrap(),
        approved
    );
    assert_eq!(pollster::block_on(bench.governor.events()).unwrap(), events);
}

#[test]
fn threads_racing_to_execute_one_approval_run_it_once() {
    const CONTENDERS: usize = 8;
    for _ in 0..20 {
        let bench = Bench::new();
        let key = bench.propose(ARGS, T0);
        pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
        bench.clock.set(at(2));
        // Every contender is released at once, so a store without an atomic claim loses.
        let start = Barrier::new(CONTENDERS);
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..CONTENDERS)
                .map(|_| {
                    scope.spawn(|| {
                        let actor = agent();
                        start.wait();
                        pollster::block_on(bench.governor.execute(&key, &actor, &bench.lab))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(bench.runs(), 1);
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
        for loser in results.iter().filter(|r| r.is_err()) {
            assert!(
                // Told what happened: the winner is running it, or has run it.
                matches!(
                    loser,
                    Err(ApprovalError::RunningElsewhere { .. }
                        | ApprovalError::AlreadyRun(LaneState::Executed))
                ),
                "{loser:?}"
            );
        }
    }
}

#[test]
fn only_an_idempotent_tool_is_retried_with_one_run_key_and_bounded() {
    let config = ApprovalConfig::new().with_max_attempts(4);
    assert_eq!(config.max_attempts(), 4);
    // Idempotent: retried, every attempt with the lane's key, until it succeeds.
    let bench = Bench::with(&LAB, Governance::new(), config);
    bench.lab.fail_first.store(2, Ordering::SeqCst);
    let key = bench.propose_tool("set_limit", ARGS, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    assert!(bench.execute(&key, at(2)).is_ok());
    assert_eq!(*bench.lab.run_keys.lock().unwrap(), [Some(key); 3]);
    assert_eq!(
        pollster::block_on(bench.governor.lane(&key))
            .unwrap()
            .attempts(),
        3
    );

    // Idempotent and failing every time: the configured bound.
    let bench = Bench::with(&LAB, Governance::new(), config);
    bench.lab.fail_first.store(usize::MAX, Ordering::SeqCst);
    let key = bench.propose_tool("set_limit", r#"{"to": "Z", "cents": 9}"#, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    let result = bench.execute(&key, at(2));
    assert!(
        matches!(
            result,
            Err(ApprovalError::ExecutionFailed { attempts: 4, .. })
        ),
        "{result:?}"
    );
    assert_eq!(bench.runs(), 4);
    let lane = pollster::block_on(bench.governor.lane(&key)).unwrap();
    assert_eq!(
        (lane.state(), lane.reason()),
        (
            LaneState::ExecutionFailed,
            Some("tool failed: bank timeout")
        )
    );

    // Not idempotent: one run, whatever the configuration says.
    let bench = Bench::with(&LAB, Governance::new(), config);
    bench.lab.fail_first.store(1, Ordering::SeqCst);
    let key = bench.propose(ARGS, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    let result = bench.execute(&key, at(2));
    assert!(
        matches!(
            result,
            Err(ApprovalError::ExecutionFailed { attempts: 1, .. })
        ),
        "{result:?}"
    );
    assert_eq!(bench.runs(), 1);
}

#[test]
fn a_tool_that_panics_is_recorded_as_failed_and_the_governor_keeps_serving() {
    let bench = Bench::new();
    let key = bench.propose_tool("flaky", r#"{"to": "panic", "cents": 1}"#, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    let result = bench.execute(&key, at(2));
    let Err(ApprovalError::ExecutionFailed { attempts: 1, error }) = result else {
        panic!("expected a failed run, got {result:?}")
    };
    assert_eq!(
        error.to_string(),
        "tool failed: the tool panicked: the ledger is on fire"
    );
    let lane = pollster::block_on(bench.governor.lane(&key)).unwrap();
    assert_eq!(lane.state(), LaneState::ExecutionFailed);
    assert_eq!(
        lane.reason(),
        Some("tool failed: the tool panicked: the ledger is on fire")
    );
    // The same governor serves the next call.
    let next = bench.propose_tool("flaky", r#"{"to": "fine", "cents": 1}"#, at(3));
    pollster::block_on(bench.at(at(4)).approve(&next, "supervisor")).unwrap();
    assert_eq!(bench.execute(&next, at(5)), Ok(serde_json::json!("done")));
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    future.poll(&mut context)
}

#[test]
fn a_run_whose_future_is_dropped_is_interrupted_and_a_person_resolves_it() {
    let bench = Bench::new();
    let key = bench.propose_tool("flaky", r#"{"to": "hang", "cents": 1}"#, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    bench.clock.set(at(2));
    {
        let actor = agent();
        let mut run = std::pin::pin!(bench.governor.execute(&key, &actor, &bench.lab));
        assert!(poll_once(run.as_mut()).is_pending());
        assert_eq!(bench.state(&key), LaneState::ExecutionPending);
        // A timeout or a cancelled request drops the future here.
    }
    let lane = pollster::block_on(bench.governor.lane(&key)).unwrap();
    assert_eq!(lane.state(), LaneState::Interrupted);
    assert_eq!(
        lane.reason(),
        Some("the run's future was dropped before it finished")
    );
    assert_eq!(bench.runs(), 1);
    // Never run again on its own: a re-issued call and an execution both refuse.
    assert!(matches!(
        bench.execute(&key, at(3)),
        Err(ApprovalError::AlreadyRun(LaneState::Interrupted))
    ));
    assert_eq!(bench.runs(), 1);
    // A person resolves it, with a note.
    use cairnloop::approvals::Reconciliation;
    assert_eq!(
        pollster::block_on(bench.at(at(4)).reconcile(
            &key,
            "ops-lead",
            Reconciliation::Executed,
            ""
        )),
        Err(ApprovalError::ReasonRequired(LaneAction::MarkExecuted))
    );
    let resolved = pollster::block_on(bench.at(at(4)).reconcile(
        &key,
        "ops-lead",
        Reconciliation::Executed,
        "the ledger shows the transfer",
    ))
    .unwrap();
    assert_eq!(resolved.state(), LaneState::Executed);
    assert_eq!(resolved.decided_by(), Some("ops-lead"));
}

#[test]
fn a_claim_whose_lease_ran_out_is_an_unknown_outcome_never_rerun_until_a_person_closes_it() {
    let config = ApprovalConfig::new().with_lease(Ttl::from_secs(30));
    let bench = Bench::with(&LAB, Governance::new(), config);
    let args = r#"{"to": "hang", "cents": 1}"#;
    let key = bench.propose_tool("flaky", args, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    bench.clock.set(at(2));
    // The holder dies mid-run: its future is never polled again nor dropped.
    let actor = agent();
    let mut run = Box::pin(bench.governor.execute(&key, &actor, &bench.lab));
    assert!(poll_once(run.as_mut()).is_pending());
    std::mem::forget(run);
    let claim = pollster::block_on(bench.governor.lane(&key))
        .unwrap()
        .claim()
        .cloned()
        .unwrap();
    assert_eq!(claim.until(), at(2 + 30_000));
    assert!(claim.holder().starts_with("process-"));
    // Within the lease, a sweep leaves it; after it, the outcome is unknown.
    assert_eq!(pollster::block_on(bench.at(at(30_001)).sweep()), Ok(0));
    assert_eq!(bench.state(&key), LaneState::ExecutionPending);
    assert_eq!(pollster::block_on(bench.at(at(30_002)).sweep()), Ok(1));
    assert_eq!(bench.state(&key), LaneState::OutcomeUnknown);
    // Listed for a person; the re-issued call does not run it.
    let unknown =
        pollster::block_on(bench.governor.lanes(LaneState::OutcomeUnknown, None, 10)).unwrap();
    assert_eq!(
        unknown.iter().map(|lane| lane.key()).collect::<Vec<_>>(),
        [key]
    );
    let again = pollster::block_on(bench.at(at(30_003)).call(
        &ToolCall::new("flaky", args),
        &agent(),
        &bench.lab,
    ));
    assert!(
        matches!(again, Ok(Outcome::AwaitingApproval(ref lane)) if lane.state() == LaneState::OutcomeUnknown)
    );
    assert_eq!(bench.runs(), 1);
    // Closed by a person, the same call is proposed afresh: pending again.
    use cairnloop::approvals::Reconciliation;
    pollster::block_on(bench.at(at(30_004)).reconcile(
        &key,
        "ops-lead",
        Reconciliation::Closed,
        "no trace downstream; retry",
    ))
    .unwrap();
    assert_eq!(bench.propose_tool("flaky", args, at(30_005)), key);
    let lane = pollster::block_on(bench.governor.lane(&key)).unwrap();
    assert_eq!(
        (lane.state(), lane.claim(), lane.attempts()),
        (LaneState::Pending, None, 0)
    );
}

#[test]
fn a_full_memory_store_refuses_new_proposals_and_evicts_nothing_until_compacted() {
    let store = Arc::new(MemoryStore::with_capacity(2));
    let bench = Bench::on(&store);
    let first = bench.propose(r#"{"to": "A", "cents": 1}"#, T0);
    let second = bench.propose(r#"{"to": "B", "cents": 1}"#, T0);
    let call = ToolCall::new("send_money", r#"{"to": "C", "cents": 1}"#);
    let full = pollster::block_on(bench.at(T0).call(&call, &agent(), &bench.lab));
    assert_eq!(
        full,
        Err(ApprovalError::Store(StoreError::Full { capacity: 2 }))
    );
    assert_eq!(bench.state(&first), LaneState::Pending);
    assert_eq!(bench.state(&second), LaneState::Pending);
    // Compaction is the host's explicit call, and takes only terminal lanes.
    pollster::block_on(bench.at(at(1)).reject(&first, "supervisor", "no")).unwrap();
    assert_eq!(store.compact(), Ok(1));
    assert!(pollster::block_on(bench.governor.lane(&first)).is_err());
    assert_eq!(bench.state(&second), LaneState::Pending);
    assert!(pollster::block_on(bench.at(at(2)).call(&call, &agent(), &bench.lab)).is_ok());
}

/// A chained memory store that is compacted: the chain keeps the events that stay, and
/// its check names the first gap the compaction left, or says the newest are gone.
#[test]
fn a_compacted_chain_names_the_first_gap() {
    let store = Arc::new(MemoryStore::new().with_audit_chain());
    let bench = Bench::on(&store);
    let first = bench.propose(r#"{"to": "A", "cents": 1}"#, T0);
    let second = bench.propose(r#"{"to": "B", "cents": 1}"#, T0);
    pollster::block_on(bench.at(at(1)).reject(&first, "supervisor", "no")).unwrap();
    let whole = store.verify_audit().unwrap().unwrap().unwrap();
    let before = store.chained_since(0, 100).unwrap().unwrap();
    assert_eq!(whole.records, u64::try_from(before.len()).unwrap());
    assert_eq!(store.compact(), Ok(1));
    let after = store.chained_since(0, 100).unwrap().unwrap();
    // What stays is the second call's: its decision and its opening, unchanged.
    let events = pollster::block_on(store.events_since(0, 100)).unwrap();
    assert_eq!(after.len(), events.len());
    assert!(after.iter().all(|kept| before.contains(kept)));
    // The first call's decision and opening came first: a gap before the second's.
    assert_eq!(
        store.verify_audit().unwrap().unwrap(),
        Err(ChainBreak::Removed {
            after: None,
            before: after[0].seq
        })
    );
    assert_eq!(bench.state(&second), LaneState::Pending);

    // The newest events compacted away leave no gap: the store's own head is no longer
    // among the kept links, and the report says so.
    let store = Arc::new(MemoryStore::new().with_audit_chain());
    let bench = Bench::on(&store);
    bench.propose(r#"{"to": "B", "cents": 1}"#, T0);
    let newest = bench.propose(r#"{"to": "A", "cents": 1}"#, T0);
    pollster::block_on(bench.at(at(1)).reject(&newest, "supervisor", "no")).unwrap();
    let whole = store.verify_audit().unwrap().unwrap().unwrap();
    assert_eq!(whole.watched_found, Some(true));
    assert_eq!(store.compact(), Ok(1));
    let cut = store.verify_audit().unwrap().unwrap().unwrap();
    assert_eq!((cut.records, cut.watched_found), (2, Some(false)));
}

#[test]
fn every_decision_and_transition_is_an_audit_record() {
    let bench = Bench::new();
    let key = bench.propose(ARGS, T0);
    pollster::block_on(bench.at(at(1)).approve(&key, "supervisor")).unwrap();
    bench.execute(&key, at(2)).unwrap();
    let records = pollster::block_on(bench.governor.events()).unwrap();
    let AuditRecord::Decision(decision) = &records[0] else {
        panic!("the decision comes first: {records:?}")
    };
    assert_eq!(
        (decision.decision.as_ref(), decision.idempotency_key),
        ("await_approval", Some(key))
    );
    let events = bench.transitions();
    assert_eq!(records.len(), 1 + events.len());
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
    let json = serde_json::to_string(&records).unwrap();
    let back: Vec<AuditRecord> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, records);
}

#[test]
fn a_hosts_sink_receives_every_record_and_the_store_keeps_the_lanes() {
    #[derive(Default)]
    struct Collect(Mutex<Vec<AuditRecord>>);
    impl cairnloop::approvals::AuditSink for Collect {
        fn record(&self, record: &AuditRecord) {
            self.0.lock().unwrap().push(record.clone());
        }
    }
    let sink = Arc::new(Collect::default());
    let clock = ManualClock::new(T0);
    let store = Arc::new(MemoryStore::new());
    let governor = Governor::new(&LAB)
        .with_store(Arc::clone(&store))
        .with_clock(clock.clone())
        .with_audit_sink(Arc::clone(&sink));
    let lab = Lab::default();
    let call = ToolCall::new("send_money", ARGS);
    let Ok(Outcome::AwaitingApproval(lane)) =
        pollster::block_on(governor.call(&call, &agent(), &lab))
    else {
        panic!()
    };
    clock.set(at(1));
    pollster::block_on(governor.approve(&lane.key(), "supervisor")).unwrap();
    let blocked = ToolCall::new("send_money", "{}");
    let _ = pollster::block_on(governor.call(&blocked, &agent(), &lab));
    let kinds: Vec<&str> = sink
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|record| match record {
            AuditRecord::Decision(event) => match event.decision.as_ref() {
                "blocked" => "blocked",
                _ => "decision",
            },
            AuditRecord::Transition(_) => "transition",
            _ => "notice",
        })
        .collect();
    assert_eq!(kinds, ["decision", "transition", "transition", "blocked"]);
    // The store keeps the lane's own history; decisions went to the host's sink.
    assert_eq!(
        pollster::block_on(store.events_since(0, 10)).unwrap().len(),
        2
    );
}

#[test]
fn a_loosened_specs_justification_travels_with_its_events() {
    // Force approval for a loosened tool, so it enters the lifecycle.
    let strict = Governance::new().with_mode_policy(
        ModePolicy::new().with_tier(RiskTier::LowWrite, ApprovalMode::RequiresApproval),
    );
    let bench = Bench::with(&LAB, strict, ApprovalConfig::new());
    let key = bench.propose_tool("tag_ticket", ARGS, T0);
    pollster::block_on(bench.at(at(1)).reject(&key, "supervisor", "not today")).unwrap();
    let events = bench.transitions();
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
        Execute { same_actor: bool },
        Advance(u64),
        Rewind,
        Sweep,
    }

    /// How far behind a lane's last move a clock may read and still move it.
    const SKEW: u64 = 250;

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
            // An execution of a lane that was claimed or ran, and a decision on a lane no
            // longer pending, are told so whatever the clock says (and before any other
            // rule); every other move checks the clock first.
            let ran = matches!(
                self.state,
                "execution_pending"
                    | "executed"
                    | "execution_failed"
                    | "interrupted"
                    | "outcome_unknown"
            );
            let deciding = matches!(
                op,
                Op::Approve { .. } | Op::Reject { .. } | Op::Defer { .. }
            );
            if (matches!(op, Op::Execute { .. }) && ran) || (deciding && self.state != "pending") {
                return "transition";
            }
            if !matches!(op, Op::Advance(_) | Op::Rewind) && now + SKEW < self.last {
                return "clock";
            }
            // A clock at most `SKEW` behind the lane's last move moves it at that time.
            let now = now.max(self.last);
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
                Op::Execute { same_actor: false } => "mismatch",
                Op::Execute { same_actor: true } => {
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
            // A move the lane's state refuses; for an execution, said as what happened.
            Err(
                ApprovalError::Transition(_)
                | ApprovalError::AlreadyRun(_)
                | ApprovalError::RunningElsewhere { .. },
            ) => "transition",
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
            let bench = Bench::with(
                &LAB,
                Governance::new(),
                ApprovalConfig::new().with_ttl(Ttl::from_millis(ttl)),
            );
            let key = bench.propose(ARGS, T0);
            let mut model = Model {
                state: "pending",
                expires: ttl,
                last: 0,
                runs: 0,
            };
            let mut now = 0u64;
            for _ in 0..12 {
                let coin = rng.next().is_multiple_of(2);
                let op = match rng.next() % 8 {
                    0 | 1 => Op::Approve {
                        by_proposer: rng.next().is_multiple_of(4),
                    },
                    2 => Op::Reject { with_reason: coin },
                    3 => Op::Defer { with_reason: coin },
                    4 => Op::Execute {
                        same_actor: !rng.next().is_multiple_of(4),
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
                let governor = bench.at(at(now));
                let actual = match op {
                    Op::Approve { by_proposer } => {
                        let by = if by_proposer { "Agent-7" } else { "supervisor" };
                        pollster::block_on(governor.approve(&key, by)).map(drop)
                    }
                    Op::Reject { with_reason } => pollster::block_on(governor.reject(
                        &key,
                        "supervisor",
                        if with_reason { "no" } else { "" },
                    ))
                    .map(drop),
                    Op::Defer { with_reason } => pollster::block_on(governor.defer(
                        &key,
                        "supervisor",
                        if with_reason { "later" } else { "" },
                    ))
                    .map(drop),
                    Op::Execute { same_actor } => {
                        let intruder =
                            Actor::new("agent-8", &["payments:write"]).with_account("acme");
                        let actor = if same_actor { agent() } else { intruder };
                        bench.execute_as(&key, &actor, at(now)).map(drop)
                    }
                    Op::Sweep => pollster::block_on(governor.expire_if_due(&key)).map(drop),
                    Op::Advance(_) | Op::Rewind => Ok(()),
                };
                let expected = model.step(op, now);
                assert_eq!(
                    kind(actual),
                    expected,
                    "{op:?} at +{now}ms in state {}",
                    model.state
                );
                assert_eq!(bench.state(&key).as_str(), model.state, "{op:?}");
                assert_eq!(bench.runs(), model.runs);
                steps += 1;
            }
        }
        assert_eq!(steps, 3600);
    }
}

#[test]
fn a_proposal_from_the_store_is_the_one_proposed() {
    let bench = Bench::new();
    let call = ToolCall::new("send_money", ARGS);
    let Ok(Outcome::AwaitingApproval(lane)) =
        pollster::block_on(bench.at(T0).call(&call, &agent(), &bench.lab))
    else {
        panic!()
    };
    let stored = pollster::block_on(bench.governor.lane(&lane.key())).unwrap();
    assert_eq!(stored.proposal(), lane.proposal());
    let _: &Proposal = stored.proposal();
}

#[test]
fn the_identity_table_through_the_governor() {
    use identities::{PROPOSER, Verdict, variants};
    assert_eq!(agent().id(), PROPOSER);
    let variants = variants();
    for (variant, what, verdict) in &variants {
        let bench = Bench::new();
        let key = bench.propose(ARGS, T0);
        let approved = pollster::block_on(bench.at(at(1)).approve(&key, variant));
        match verdict {
            Verdict::Refused => assert!(
                matches!(
                    approved,
                    Err(ApprovalError::InvalidDecider(_) | ApprovalError::MissingDecider)
                ),
                "{what}: {approved:?}"
            ),
            Verdict::SamePerson => {
                assert_eq!(approved, Err(ApprovalError::SelfApproval), "{what}");
            }
            Verdict::Other => assert!(approved.is_ok(), "{what}: {approved:?}"),
        }
        let state = if *verdict == Verdict::Other {
            LaneState::Approved
        } else {
            LaneState::Pending
        };
        assert_eq!(bench.state(&key), state, "{what}");
        // The other direction: the variant proposes and the proposer's id approves. A
        // refused id is refused before anything is decided or recorded.
        let caller = Actor::new(variant, &["payments:write"]).with_account("acme");
        let call = ToolCall::new("send_money", ARGS);
        let outcome = pollster::block_on(bench.governor.call(&call, &caller, &bench.lab));
        if *verdict == Verdict::Refused {
            assert!(outcome.is_err(), "{what}: {outcome:?}");
            continue;
        }
        let Ok(Outcome::AwaitingApproval(lane)) = outcome else {
            panic!("{what}: {outcome:?}")
        };
        let approved = pollster::block_on(bench.at(at(2)).approve(&lane.key(), PROPOSER));
        assert_eq!(
            approved.is_ok(),
            *verdict == Verdict::Other,
            "{what}, the other way: {approved:?}"
        );
    }
    assert!(variants.len() >= 130, "{}", variants.len());
}

#[test]
fn pairs_of_ids_are_one_person_or_two_in_both_directions() {
    use identities::{PAIRS, Verdict};
    for (one, other, what, verdict) in PAIRS {
        for (proposer, approver) in [(one, other), (other, one)] {
            let bench = Bench::new();
            let actor = Actor::new(proposer, &["payments:write"]).with_account("acme");
            let call = ToolCall::new("send_money", ARGS);
            let Ok(Outcome::AwaitingApproval(lane)) =
                pollster::block_on(bench.at(T0).call(&call, &actor, &bench.lab))
            else {
                panic!("{what}: {proposer} could not propose")
            };
            let approved = pollster::block_on(bench.at(at(1)).approve(&lane.key(), approver));
            match verdict {
                Verdict::SamePerson => assert_eq!(
                    approved,
                    Err(ApprovalError::SelfApproval),
                    "{what}: {approver} approved {proposer}'s call"
                ),
                Verdict::Other => assert!(approved.is_ok(), "{what}: {approved:?}"),
                Verdict::Refused => unreachable!("the pairs are valid ids"),
            }
            assert_eq!(
                cairnloop::approvals::same_person(proposer, approver),
                *verdict == Verdict::SamePerson,
                "{what}"
            );
        }
    }
}

#[test]
fn a_repeated_call_finds_its_lane_without_a_preview_or_an_event() {
    let bench = Bench::new();
    let before = PREVIEWS.load(Ordering::SeqCst);
    let key = bench.propose_tool("write_note", ARGS, at(0));
    assert_eq!(PREVIEWS.load(Ordering::SeqCst), before + 1);
    let opened = bench.transitions().len();
    for minute in 1..=3 {
        // The same call, its keys in another order: the same lane, nothing new made.
        let again = bench.propose_tool(
            "write_note",
            r#"{"cents": 5000, "to": "DE02 1203"}"#,
            at(minute * 60_000),
        );
        assert_eq!(again, key);
    }
    assert_eq!(
        PREVIEWS.load(Ordering::SeqCst),
        before + 1,
        "a repeat wrote a preview"
    );
    assert_eq!(bench.transitions().len(), opened, "a repeat opened a lane");
    // Each repeat's decision is still on the trail, under the lane's key.
    let decisions = pollster::block_on(bench.governor.events())
        .unwrap()
        .into_iter()
        .filter(|record| matches!(record, AuditRecord::Decision(event) if event.idempotency_key == Some(key)))
        .count();
    assert_eq!(decisions, 4);
}

#[test]
fn the_same_text_is_the_same_call_only_for_the_same_actor_account_and_dedupe_token() {
    let bench = Bench::new();
    let propose = |call: &ToolCall<'_>, actor: &Actor<'_>| match pollster::block_on(
        bench.at(at(0)).call(call, actor, &bench.lab),
    ) {
        Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
        other => panic!("expected a proposal, got {other:?}"),
    };
    let call = ToolCall::new("write_note", ARGS);
    let first = propose(&call, &agent());
    // Asked again, the same text: the same lane (its key remembered, not recomputed).
    assert_eq!(propose(&call, &agent()), first);
    let others = [
        propose(
            &call,
            &Actor::new("agent-8", &["payments:write"]).with_account("acme"),
        ),
        propose(
            &call,
            &Actor::new("agent-7", &["payments:write"]).with_account("other"),
        ),
        propose(&call, &Actor::new("agent-7", &["payments:write"])),
        propose(
            &ToolCall::new("write_note", ARGS).with_dedupe_token("2"),
            &agent(),
        ),
        propose(&ToolCall::new("send_money", ARGS), &agent()),
    ];
    for (i, key) in others.iter().enumerate() {
        assert_ne!(*key, first, "call {i} found another call's lane");
        for later in &others[i + 1..] {
            assert_ne!(key, later);
        }
    }
    // Each key is the one computed from the call itself.
    let expected = IdempotencyKey::for_call(
        "write_note",
        &serde_json::json!({"to": "DE02 1203", "cents": 5000}),
        Some("agent-7"),
        Some("acme"),
        None,
    );
    assert_eq!(first, expected);
}

/// A store shared with other governors, standing for a store that keeps copies of its
/// lanes in this process: it offers the copy of each lane as it was first inserted, so
/// every copy it offers after a move is stale.
struct StaleCopies {
    shared: Arc<MemoryStore>,
    first: Mutex<std::collections::HashMap<IdempotencyKey, cairnloop::approvals::ApprovalLane>>,
}

impl StaleCopies {
    fn over(shared: &Arc<MemoryStore>) -> Self {
        Self {
            shared: Arc::clone(shared),
            first: Mutex::default(),
        }
    }
}

impl ApprovalStore for StaleCopies {
    async fn insert(
        &self,
        lane: cairnloop::approvals::ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(cairnloop::approvals::ApprovalLane, bool), StoreError> {
        let (lane, inserted) = self.shared.insert(lane, event).await?;
        self.first
            .lock()
            .unwrap()
            .entry(lane.key())
            .or_insert_with(|| lane.clone());
        Ok((lane, inserted))
    }

    async fn get(
        &self,
        key: &IdempotencyKey,
    ) -> Result<Option<cairnloop::approvals::ApprovalLane>, StoreError> {
        self.shared.get(key).await
    }

    async fn transition(
        &self,
        expected_version: u64,
        lane: cairnloop::approvals::ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(), StoreError> {
        self.shared.transition(expected_version, lane, event).await
    }

    fn transition_detached(
        &self,
        expected_version: u64,
        lane: cairnloop::approvals::ApprovalLane,
        event: TransitionEvent,
    ) {
        self.shared
            .transition_detached(expected_version, lane, event);
    }

    async fn append(&self, record: AuditRecord) -> Result<(), StoreError> {
        self.shared.append(record).await
    }

    async fn events_since(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, AuditRecord)>, StoreError> {
        self.shared.events_since(after, limit).await
    }

    async fn list(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> Result<Vec<cairnloop::approvals::ApprovalLane>, StoreError> {
        self.shared.list(state, after, limit).await
    }

    fn last_known(&self, key: &IdempotencyKey) -> Option<cairnloop::approvals::ApprovalLane> {
        self.first.lock().unwrap().get(key).cloned()
    }
}

#[test]
fn a_stale_copy_of_a_lane_never_refuses_what_the_stored_lane_allows_nor_runs_twice() {
    let shared = Arc::new(MemoryStore::new());
    let clock = ManualClock::new(T0);
    let here = Governor::new(&LAB)
        .with_store(StaleCopies::over(&shared))
        .with_clock(clock.clone());
    let elsewhere = Governor::new(&LAB)
        .with_store(Arc::clone(&shared))
        .with_clock(clock.clone());
    let lab = Lab::default();
    let propose = |args: &str| match pollster::block_on(here.call(
        &ToolCall::new("send_money", args),
        &agent(),
        &lab,
    )) {
        Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
        other => panic!("expected a proposal, got {other:?}"),
    };
    let state = |key| pollster::block_on(elsewhere.lane(key)).unwrap().state();

    // Approved elsewhere: the copy here says pending, the stored lane allows the run.
    let approved = propose(ARGS);
    pollster::block_on(elsewhere.approve(&approved, "supervisor")).unwrap();
    assert_eq!(
        pollster::block_on(here.execute(&approved, &agent(), &lab)),
        Ok(serde_json::json!("sent 5000 to DE02 1203"))
    );
    assert_eq!(lab.runs.load(Ordering::SeqCst), 1);
    // Run elsewhere too late: the stored lane refuses, nothing runs again.
    assert!(matches!(
        pollster::block_on(elsewhere.execute(&approved, &agent(), &lab)),
        Err(ApprovalError::AlreadyRun(LaneState::Executed))
    ));
    assert!(matches!(
        pollster::block_on(here.execute(&approved, &agent(), &lab)),
        Err(ApprovalError::AlreadyRun(LaneState::Executed))
    ));
    assert_eq!(lab.runs.load(Ordering::SeqCst), 1);

    // Rejected elsewhere: approving here from the pending copy is refused for what the
    // stored lane is (not for the lost compare-and-set), and the lane stays rejected.
    let rejected = propose(r#"{"to": "DE02 1203", "cents": 7}"#);
    pollster::block_on(elsewhere.reject(&rejected, "supervisor", "not today")).unwrap();
    match pollster::block_on(here.approve(&rejected, "supervisor")) {
        Err(ApprovalError::Transition(refused)) => {
            assert_eq!(refused.from(), LaneState::Rejected);
        }
        other => panic!("expected a refusal from the stored state, got {other:?}"),
    }
    assert_eq!(state(&rejected), LaneState::Rejected);
}
