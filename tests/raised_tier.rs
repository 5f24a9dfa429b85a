//! A call's risk tier raised by its input (`Tool::risk_tier_for`), through the governor
//! by name: a small refund runs at once, a large one waits at `high_write`, a huge one is
//! blocked as destructive, a lower tier is ignored and recorded, a rule that panics blocks
//! the call; the proposal, its preview and the record carry the call's tier, the listing
//! the tool's; and an approved call whose rule now gives another tier does not run.
#![cfg(all(feature = "serde", feature = "std"))]

use std::sync::atomic::{AtomicU64, Ordering};

use cairnloop::approvals::{AuditRecord, BoundField, Invalidation};
use cairnloop::gate::{ModeSource, Verdict, verdict_for};
use cairnloop::{
    Actor, ApprovalError, ApprovalMode, Blocked, Governor, InputErrors, Invocation, ModePolicy,
    Outcome, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolCall, ToolEntry, ToolSpec,
};

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Money {
    cents: u64,
}

/// Above it a refund is `high_write`; above a million dollars, destructive.
static LARGE_ABOVE: AtomicU64 = AtomicU64::new(100_000);
static RUNS: AtomicU64 = AtomicU64::new(0);

fn tier_of(cents: u64) -> RiskTier {
    match cents {
        13 => RiskTier::ReadOnly, // asks for less than the tool: ignored
        666 => panic!("a bug in the host's rule"),
        c if c > 100_000_000 => RiskTier::Destructive,
        c if c > LARGE_ABOVE.load(Ordering::SeqCst) => RiskTier::HighWrite,
        _ => RiskTier::LowWrite,
    }
}

/// A tool that moves `Money`, its tier raised by `tier_of` (or the rule given, with its
/// reason), counting its runs.
macro_rules! money_tool {
    ($(#[$doc:meta])* $tool:ident, $spec:expr) => {
        money_tool!($(#[$doc])* $tool, $spec, tier_of, |_| None);
    };
    ($(#[$doc:meta])* $tool:ident, $spec:expr, $tier:expr, $reason:expr) => {
        $(#[$doc])*
        struct $tool;
        impl Tool for $tool {
            const SPEC: ToolSpec = $spec;
            const SCOPES: &'static [Scope] = &[];
            type Input = Money;
            type Output = u64;
            type Error = String;
            type Context = ();
            fn validate(_: &Money) -> Result<(), InputErrors> {
                Ok(())
            }
            fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
                Ok(())
            }
            fn risk_tier_for(input: &Money) -> RiskTier {
                $tier(input.cents)
            }
            fn risk_reason_for(input: &Money) -> Option<&'static str> {
                $reason(input.cents)
            }
            async fn run(call: Invocation<'_, Self>) -> Result<u64, String> {
                RUNS.fetch_add(1, Ordering::SeqCst);
                Ok(call.input().cents)
            }
        }
    };
}

money_tool!(
    /// Small refunds run at once (the tool loosens its tier's mode on purpose).
    Refund,
    ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::LowWrite)
        .loosen_approval(ApprovalMode::Auto, "small refunds are routine")
);
money_tool!(
    /// Every transfer waits for a person; large ones at `high_write`.
    Transfer,
    ToolSpec::new("transfer", "Transfer", "Moves money.", RiskTier::LowWrite)
);

money_tool!(
    /// A payout that says why it raised a call: above ten dollars, `high_write` (never
    /// run here: the run count stays the other test's).
    Payout,
    ToolSpec::new("payout", "Payout", "Pays out.", RiskTier::LowWrite),
    |cents| if cents > 1_000 { RiskTier::HighWrite } else { RiskTier::LowWrite },
    // A reason for every call: only a raised one keeps it.
    |cents| Some(if cents > 1_000 { "over ten dollars" } else { "small" })
);

static TOOLS: Registry<()> = Registry::new(&[
    ToolEntry::json::<Refund>(),
    ToolEntry::json::<Transfer>(),
    ToolEntry::json::<Payout>(),
]);

fn call(governor: &Governor<()>, tool: &str, cents: u64) -> Result<Outcome, ApprovalError> {
    let arguments = format!(r#"{{"cents": {cents}}}"#);
    let agent = Actor::new("agent-7", &[]);
    pollster::block_on(governor.call(&ToolCall::new(tool, &arguments), &agent, &()))
}

fn last_decision(governor: &Governor<()>) -> cairnloop::json::AuditEvent {
    let events = pollster::block_on(governor.events()).unwrap();
    events
        .into_iter()
        .rev()
        .find_map(|record| match record {
            AuditRecord::Decision(event) => Some(event),
            _ => None,
        })
        .expect("a decision record")
}

// One test: the rule's threshold and the run count are shared.
#[test]
fn a_calls_input_raises_its_tier_and_the_whole_pipeline_sees_it() {
    let governor = Governor::new(&TOOLS);

    // Small: the tool's tier, its loosened mode: runs at once.
    let before = RUNS.load(Ordering::SeqCst);
    assert!(matches!(
        call(&governor, "refund", 2_500),
        Ok(Outcome::Executed(_))
    ));
    assert_eq!(RUNS.load(Ordering::SeqCst), before + 1);
    let small = last_decision(&governor);
    assert_eq!((small.risk_tier, small.ignored_tier), (None, None));

    // Large: high_write, which waits for a person whatever the tool loosened.
    let Ok(Outcome::AwaitingApproval(lane)) = call(&governor, "refund", 5_000_000) else {
        panic!("a large refund waits")
    };
    assert_eq!(lane.proposal().risk_tier(), RiskTier::HighWrite);
    assert_eq!(lane.proposal().policy().decided_by, ModeSource::CallTier);
    assert!(
        lane.proposal()
            .preview()
            .text()
            .contains("risk: high_write"),
        "{}",
        lane.proposal().preview().text()
    );
    let large = last_decision(&governor);
    assert_eq!(large.risk_tier, Some(RiskTier::HighWrite));
    assert_eq!(RUNS.load(Ordering::SeqCst), before + 1, "nothing more ran");

    // Huge: destructive, blocked.
    match call(&governor, "refund", 500_000_000) {
        Ok(Outcome::Blocked(blocked @ Blocked::AlwaysBlocked { decided_by })) => {
            assert_eq!(decided_by, ModeSource::CallTier);
            // The model is told it is this call, not the tool, that never runs.
            let reply = Outcome::Blocked(blocked).into_reply();
            assert!(
                reply
                    .text()
                    .starts_with("Nothing ran: this call's arguments make it destructive"),
                "{}",
                reply.text()
            );
            assert_eq!(
                reply.body()["reason"],
                "this call is destructive by its input, and never runs"
            );
        }
        other => panic!("a huge refund is blocked: {other:?}"),
    }

    // A lower tier is ignored, and said in the record.
    assert!(matches!(
        call(&governor, "refund", 13),
        Ok(Outcome::Executed(_))
    ));
    let lower = last_decision(&governor);
    assert_eq!(
        (lower.risk_tier, lower.ignored_tier),
        (None, Some(RiskTier::ReadOnly))
    );

    // A rule that panics blocks the call, which never runs; the process goes on.
    let runs = RUNS.load(Ordering::SeqCst);
    match call(&governor, "refund", 666) {
        Ok(Outcome::Blocked(blocked)) => assert_eq!(blocked.code(), "tier_rule_failed"),
        other => panic!("blocked: {other:?}"),
    }
    assert_eq!(RUNS.load(Ordering::SeqCst), runs);
    assert_eq!(
        last_decision(&governor).code.as_deref(),
        Some("tier_rule_failed")
    );

    // The listing shows the tool's declared tier.
    let entry = TOOLS.get("refund").unwrap();
    let listed = verdict_for(entry, &Actor::new("agent-7", &[]), &(), &ModePolicy::new());
    let Verdict::Execute { mode, .. } = listed else {
        panic!("listed as auto")
    };
    assert_eq!(mode.tier(), RiskTier::LowWrite);

    // The binding: an approved small transfer whose rule now calls it large does not run.
    let Ok(Outcome::AwaitingApproval(small)) = call(&governor, "transfer", 50_000) else {
        panic!("a transfer waits")
    };
    assert_eq!(small.proposal().risk_tier(), RiskTier::LowWrite);
    pollster::block_on(governor.approve(&small.key(), "ops-lead")).unwrap();
    LARGE_ABOVE.store(10_000, Ordering::SeqCst);
    let runs = RUNS.load(Ordering::SeqCst);
    let agent = Actor::new("agent-7", &[]);
    match pollster::block_on(governor.execute(&small.key(), &agent, &())) {
        Err(ApprovalError::Invalidated(Invalidation::Changed { field, was, now })) => {
            assert_eq!(field, BoundField::RiskTier);
            assert_eq!((was.as_str(), now.as_str()), ("low_write", "high_write"));
        }
        other => panic!("invalidated: {other:?}"),
    }
    assert_eq!(RUNS.load(Ordering::SeqCst), runs, "it did not run");
    LARGE_ABOVE.store(100_000, Ordering::SeqCst);
}

/// A typed tool's reason, by name and typed: kept with the proposal and in the decision's
/// record of a call its rule raised, and with no other.
#[test]
fn a_tools_reason_is_kept_for_the_calls_it_raised_only() {
    let governor = Governor::new(&TOOLS);
    let Ok(Outcome::AwaitingApproval(large)) = call(&governor, "payout", 5_000) else {
        panic!("a large payout waits");
    };
    assert_eq!(large.proposal().risk_tier(), RiskTier::HighWrite);
    assert_eq!(large.proposal().raised_because(), Some("over ten dollars"));
    assert_eq!(
        last_decision(&governor).raised_because.as_deref(),
        Some("over ten dollars")
    );
    let Ok(Outcome::AwaitingApproval(small)) = call(&governor, "payout", 500) else {
        panic!("a payout waits");
    };
    assert_eq!(small.proposal().raised_because(), None);
    assert_eq!(last_decision(&governor).raised_because, None);

    let agent = Actor::new("agent-7", &[]);
    let typed = |cents| match pollster::block_on(governor.call_typed::<Payout>(
        Money { cents },
        &agent,
        &(),
    )) {
        Ok(cairnloop::approvals::TypedOutcome::AwaitingApproval(lane)) => lane,
        _ => panic!("a payout waits"),
    };
    assert_eq!(
        typed(7_000).proposal().raised_because(),
        Some("over ten dollars")
    );
    assert_eq!(
        last_decision(&governor).raised_because.as_deref(),
        Some("over ten dollars")
    );
    assert_eq!(typed(700).proposal().raised_because(), None);
    assert_eq!(last_decision(&governor).raised_because, None);
}
