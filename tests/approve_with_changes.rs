//! Approve with changes: an operator fixes a pending call instead of rejecting it. The
//! change goes through the gates as the proposer's call (decoder, validation, scopes,
//! mode) and the operator's tier right for the changed call's tier; the changed call is a
//! proposal of its own, approved by the operator (never the proposer), and runs once; the
//! original is superseded, linked to it, never runs, and a re-issued original is told what
//! ran. The audit trail keeps both.
#![cfg(all(feature = "serde", feature = "std"))]

use std::sync::Mutex;

use cairnloop::approvals::AuditRecord;
use cairnloop::gate::{LaneAction, LaneState};
use cairnloop::{
    Actor, ApprovalError, Blocked, FieldError, Governor, InputErrors, Invocation, Outcome,
    PolicyDenial, Registry, RiskTier, Scope, Tool, ToolCall, ToolEntry, ToolSpec,
};

/// The transfers made, one entry per run: (to, cents).
static SENT: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

fn sent_to(to: &str) -> Vec<u64> {
    SENT.lock()
        .unwrap()
        .iter()
        .filter(|(who, _)| who == to)
        .map(|(_, cents)| *cents)
        .collect()
}

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
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
        "Sends money.",
        RiskTier::LowWrite,
    );
    const SCOPES: &'static [Scope] = &[Scope::new("payments:write")];
    type Input = Transfer;
    type Output = String;
    type Error = String;
    type Context = ();
    fn validate(input: &Transfer) -> Result<(), InputErrors> {
        if input.cents == 0 {
            let mut errors = InputErrors::new();
            errors.push(FieldError::new("/cents", "zero", "nothing to send"));
            return Err(errors);
        }
        Ok(())
    }
    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }
    // Above $1,000 a transfer is high_write.
    fn risk_tier_for(input: &Transfer) -> RiskTier {
        if input.cents > 100_000 {
            RiskTier::HighWrite
        } else {
            RiskTier::LowWrite
        }
    }
    async fn run(call: Invocation<'_, Self>) -> Result<String, String> {
        let input = call.input();
        SENT.lock().unwrap().push((input.to.clone(), input.cents));
        Ok(format!("sent {} to {}", input.cents, input.to))
    }
}

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<SendMoney>()]);
const AGENT: Actor<'static> = Actor::new("pay-bot", &["payments:write"]);

fn governor() -> Governor<()> {
    Governor::new(&TOOLS)
}

fn call(governor: &Governor<()>, arguments: &str) -> Outcome {
    pollster::block_on(governor.call(&ToolCall::new("send_money", arguments), &AGENT, &())).unwrap()
}

fn propose(governor: &Governor<()>, arguments: &str) -> cairnloop::IdempotencyKey {
    match call(governor, arguments) {
        Outcome::AwaitingApproval(lane) => lane.key(),
        other => panic!("a transfer waits: {other:?}"),
    }
}

fn change(
    governor: &Governor<()>,
    key: &cairnloop::IdempotencyKey,
    by: &str,
    arguments: &str,
) -> Result<cairnloop::ApprovalLane, ApprovalError> {
    pollster::block_on(governor.approve_with_changes(key, by, arguments, &(), |_| true))
}

#[test]
fn a_changed_call_is_approved_runs_once_and_the_original_is_told_what_ran() {
    let governor = governor();
    let typo = r#"{"to": "bob-typo", "cents": 500}"#;
    let key = propose(&governor, typo);

    let changed = change(&governor, &key, "ops", r#"{"to": "bob", "cents": 500}"#).unwrap();
    assert_eq!(changed.state(), LaneState::Approved);
    assert_eq!(changed.decided_by(), Some("ops"));
    assert_eq!(changed.replaces(), Some(key));
    assert_eq!(
        changed.proposal().actor_id(),
        "pay-bot",
        "still the agent's call"
    );
    assert_eq!(changed.proposal().input(), r#"{"cents":500,"to":"bob"}"#);

    let original = pollster::block_on(governor.lane(&key)).unwrap();
    assert_eq!(original.state(), LaneState::Superseded);
    assert_eq!(original.replaced_by(), Some(changed.key()));
    assert_eq!(original.decided_by(), Some("ops"));
    // It can no longer be approved.
    assert!(matches!(
        pollster::block_on(governor.approve(&key, "ops-2")),
        Err(ApprovalError::Transition(error)) if error.from() == LaneState::Superseded
    ));

    // The agent asks again with its own arguments: what ran instead, run once.
    let Outcome::Superseded {
        original,
        replacement,
        edited,
    } = call(&governor, typo)
    else {
        panic!("the original is superseded");
    };
    assert_eq!(original.key(), key);
    assert_eq!(replacement.key(), changed.key());
    assert_eq!(
        *edited,
        Outcome::Executed(serde_json::json!("sent 500 to bob"))
    );
    let reply = call(&governor, typo).into_reply();
    assert_eq!(reply.status(), "superseded");
    assert_eq!(reply.body()["edited_status"], "executed");
    assert_eq!(reply.body()["output"], "sent 500 to bob");
    assert_eq!(reply.body()["edited_arguments"]["to"], "bob");
    assert_eq!(reply.body()["proposal_id"], key.to_string());
    assert!(
        reply
            .text()
            .starts_with("ops approved this call with changed arguments"),
        "{}",
        reply.text()
    );
    assert!(!reply.is_error());
    // The changed call made directly: the same lane, no second run.
    assert!(matches!(
        call(&governor, r#"{"to": "bob", "cents": 500}"#),
        Outcome::Executed(_)
    ));
    assert_eq!(sent_to("bob"), [500], "the changed call ran once");
    assert!(sent_to("bob-typo").is_empty(), "the original never ran");

    // The trail keeps both: the original superseded by ops, the changed call opened and
    // approved by ops, then run.
    let moves: Vec<(String, Option<LaneAction>, LaneState)> = pollster::block_on(governor.events())
        .unwrap()
        .into_iter()
        .filter_map(|record| match record {
            AuditRecord::Transition(event) => {
                let which = if event.key == key {
                    "original"
                } else {
                    "changed"
                };
                Some((which.to_owned(), event.action, event.to))
            }
            _ => None,
        })
        .collect();
    let expected = [
        ("original", None, LaneState::Pending),
        (
            "original",
            Some(LaneAction::Supersede),
            LaneState::Superseded,
        ),
        ("changed", None, LaneState::Pending),
        ("changed", Some(LaneAction::Approve), LaneState::Approved),
        (
            "changed",
            Some(LaneAction::StartExecution),
            LaneState::ExecutionPending,
        ),
        ("changed", Some(LaneAction::Succeed), LaneState::Executed),
    ];
    let expected: Vec<(String, Option<LaneAction>, LaneState)> = expected
        .into_iter()
        .map(|(which, action, to)| (which.to_owned(), action, to))
        .collect();
    assert_eq!(moves, expected);
}

#[test]
fn a_change_the_gates_refuse_changes_nothing() {
    let governor = governor();
    let key = propose(&governor, r#"{"to": "carol", "cents": 700}"#);
    let before = pollster::block_on(governor.lane(&key)).unwrap();

    // A field the tool does not take, a value its validation refuses, not JSON at all.
    for (arguments, code) in [
        (
            r#"{"to": "carol", "cents": 700, "memo": "x"}"#,
            "unknown_field",
        ),
        (r#"{"to": "carol", "cents": 0}"#, "zero"),
        (r#"{"to": "carol", "cents": "700"}"#, "invalid_type"),
        ("[1, 2", "invalid_json"),
    ] {
        let Err(ApprovalError::EditRefused(Blocked::NeedsInput { errors })) =
            change(&governor, &key, "ops", arguments)
        else {
            panic!("{arguments} is refused");
        };
        assert!(
            errors.iter().any(|error| error.code() == code),
            "{arguments}: {errors:?}"
        );
    }
    // The proposer fixes nothing in their own call's name.
    assert_eq!(
        change(
            &governor,
            &key,
            "PAY-BOT",
            r#"{"to": "carol", "cents": 70}"#
        )
        .unwrap_err(),
        ApprovalError::SelfApproval
    );
    // A change that changes nothing: approve it instead.
    assert_eq!(
        change(&governor, &key, "ops", r#"{"cents": 700, "to": "carol"}"#).unwrap_err(),
        ApprovalError::EditUnchanged
    );
    // A change that makes it high_write, by an approver who may decide low_write only.
    let large = r#"{"to": "carol", "cents": 7000000}"#;
    let refused =
        pollster::block_on(
            governor.approve_with_changes(&key, "junior", large, &(), |tier| {
                tier == RiskTier::LowWrite
            }),
        );
    assert_eq!(
        refused.unwrap_err(),
        ApprovalError::EditOutsideRights(RiskTier::HighWrite)
    );

    let after = pollster::block_on(governor.lane(&key)).unwrap();
    assert_eq!(after, before, "the call still waits as it was");
    assert!(sent_to("carol").is_empty());

    // A lead who may decide high_write calls: the raised call is approved as high_write.
    let changed = change(&governor, &key, "lead", large).unwrap();
    assert_eq!(changed.proposal().risk_tier(), RiskTier::HighWrite);
    assert_eq!(changed.state(), LaneState::Approved);
}

#[test]
fn a_scope_the_proposer_no_longer_holds_is_checked_at_the_run() {
    // The change is gated with the scopes the proposal recorded; the run checks the caller
    // who makes it: without the scope now, nothing runs.
    let governor = governor();
    let key = propose(&governor, r#"{"to": "dan", "cents": 900}"#);
    change(&governor, &key, "ops", r#"{"to": "dan", "cents": 90}"#).unwrap();
    let without = Actor::new("pay-bot", &[]);
    let outcome = pollster::block_on(governor.call(
        &ToolCall::new("send_money", r#"{"to": "dan", "cents": 900}"#),
        &without,
        &(),
    ))
    .unwrap();
    assert!(
        matches!(outcome, Outcome::Blocked(Blocked::ScopeMissing { .. })),
        "{outcome:?}"
    );
    assert!(sent_to("dan").is_empty());
}

/// A tool declared from data whose schema lets any field through (as many MCP servers'
/// do): a change still adds no field the call did not have and the schema does not name.
#[cfg(feature = "declared")]
#[test]
fn a_change_adds_no_field_an_open_schema_does_not_name() {
    use cairnloop::declare::{RunFuture, ToolSpecOf};
    use cairnloop::declared::{DeclaredTool, Forward};

    struct Upstream;
    impl Forward<()> for Upstream {
        fn forward<'a>(
            &'a self,
            arguments: &'a serde_json::Value,
            _: &'a Actor<'a>,
            _: &'a (),
        ) -> RunFuture<'a> {
            let sent = arguments.clone();
            Box::pin(async move { Ok(sent) })
        }
    }
    fn anyone(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }
    let spec = ToolSpecOf::try_new("write", "Write", "Writes.", RiskTier::LowWrite).unwrap();
    let open = serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "string"}}});
    let tool: &'static DeclaredTool<()> = Box::leak(Box::new(
        DeclaredTool::new(&spec, &[], open, Upstream).unwrap(),
    ));
    let entries: &'static [ToolEntry<()>] =
        Box::leak(Box::new([ToolEntry::declared(tool, anyone).unwrap()]));
    let registry: &'static Registry<()> = Box::leak(Box::new(Registry::try_new(entries).unwrap()));
    let governor = Governor::new(registry);
    let agent = Actor::new("agent", &[]);
    let call = ToolCall::new("write", r#"{"path": "/tmp/a", "content": "x"}"#);
    let Outcome::AwaitingApproval(lane) =
        pollster::block_on(governor.call(&call, &agent, &())).unwrap()
    else {
        panic!("a write waits");
    };
    let change = |arguments: &str| {
        pollster::block_on(governor.approve_with_changes(
            &lane.key(),
            "ops",
            arguments,
            &(),
            |_| true,
        ))
    };
    let Err(ApprovalError::EditRefused(Blocked::NeedsInput { errors })) =
        change(r#"{"path": "/tmp/a", "content": "x", "owner": "root"}"#)
    else {
        panic!("a field nobody named is refused");
    };
    let refused: Vec<(&str, &str)> = errors.iter().map(|e| (e.path(), e.code())).collect();
    assert_eq!(refused, [("/owner", "unknown_field")]);
    // A field the schema names may be added.
    let changed = change(r#"{"path": "/tmp/a", "content": "x", "mode": "0644"}"#).unwrap();
    assert_eq!(changed.state(), LaneState::Approved);
}
