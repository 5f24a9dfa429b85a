//! Hostile input, grouped by gate: each case asserts the exact typed outcome, a block or
//! an error; never a panic, never *execute*, never a run.
#![cfg(all(feature = "serde", feature = "std"))]

#[path = "fixtures/calls.rs"]
mod calls;
#[path = "fixtures/desk.rs"]
mod desk;

use cairnloop::approvals::{ApprovalStore, BoundField, Invalidation, ManualClock, MemoryStore};
use cairnloop::gate::{LaneState, ModeSource, Timestamp, Ttl};
use cairnloop::{
    Actor, ApprovalError, ApprovalLane, Blocked, Governance, Governor, IdempotencyKey, Outcome,
    ToolCall,
};
use calls::{Called, call_with};
use desk::{DESK, Desk, EVERY_SCOPE};

fn admin() -> Actor<'static> {
    Actor::new("admin-1", EVERY_SCOPE).with_account("acme")
}

/// The block's code; panics (failing the test) on anything that is not a block.
fn code_of(called: Called) -> &'static str {
    match called.outcome {
        Outcome::Blocked(blocked) => blocked.code(),
        other => panic!("expected a block, got {}", other.code()),
    }
}

fn called(actor: &Actor<'_>, name: &str, arguments: &str) -> Called {
    call_with(
        &DESK,
        Governance::new(),
        actor,
        &Desk::default(),
        &ToolCall::new(name, arguments),
    )
}

fn call(actor: &Actor<'_>, name: &str, arguments: &str) -> &'static str {
    code_of(called(actor, name, arguments))
}

mod names {
    use super::*;

    #[test]
    fn every_near_miss_of_a_real_name_is_unknown() {
        let megabyte = "lookup_order".repeat(90_000);
        let names = [
            "",
            " ",
            "\0",
            "lookup_order\0",
            "\0lookup_order",
            "Lookup_order",
            "LOOKUP_ORDER",
            "lookup_Order",
            " lookup_order",
            "lookup_order ",
            "\tlookup_order",
            "lookup_order\n",
            "lookup_order\r\n",
            "lookup\u{200b}_order",
            "\u{feff}lookup_order",
            "lookup_order\u{200d}",
            "lookup\u{00ad}_order",
            "lооkup_order",
            "lookup_оrder",
            "ｌｏｏｋｕｐ_order",
            "lookup-order",
            "lookup.order",
            "lookup_orders",
            "lookup_orde",
            "lookup_order/",
            "../lookup_order",
            "lookup_order; drop",
            "l\u{0307}ookup_order",
            megabyte.as_str(),
        ];
        for name in names {
            assert_eq!(
                call(&admin(), name, r#"{"order": 1001}"#),
                "unknown_tool",
                "{name:?}"
            );
        }
    }

    #[test]
    fn a_recorded_name_is_cut_and_escaped() {
        let name = "\u{202e}x".repeat(1000);
        let outcome = called(&admin(), &name, "{}");
        assert!(outcome.audit.tool.starts_with("\\u{202e}x"));
        assert!(outcome.audit.tool.chars().count() < 1000);
    }
}

mod arguments {
    use super::*;

    fn field_codes(name: &str, arguments: &str) -> Vec<String> {
        match called(&admin(), name, arguments).outcome {
            Outcome::Blocked(Blocked::NeedsInput { errors }) => {
                errors.iter().map(|e| e.code().to_owned()).collect()
            }
            other => panic!(
                "expected NeedsInput for {arguments:.60}, got {}",
                other.code()
            ),
        }
    }

    #[test]
    fn the_pipeline_issues_list_of_bad_arguments() {
        let huge_string = format!(r#"{{"order": 1, "x": "{}"}}"#, "a".repeat(16 << 20));
        let cases: Vec<(&str, String, &str)> = vec![
            ("lookup_order", "5".into(), "not_an_object"),
            ("lookup_order", "null".into(), "not_an_object"),
            ("lookup_order", "[]".into(), "not_an_object"),
            ("lookup_order", r#""x""#.into(), "not_an_object"),
            ("lookup_order", r#"{"order": 1001"#.into(), "invalid_json"),
            (
                "lookup_order",
                r#"{"order": 1001} trailing"#.into(),
                "invalid_json",
            ),
            (
                "lookup_order",
                r#"{"order": 1001, "x": "\ud800"}"#.into(),
                "invalid_json",
            ),
            (
                "lookup_order",
                r#"{"order": 1, "order": 1001}"#.into(),
                "duplicate_key",
            ),
            (
                "lookup_order",
                r#"{"order": 1001, "admin": true}"#.into(),
                "unknown_field",
            ),
            ("lookup_order", huge_string, "too_large"),
            (
                "refund_order",
                r#"{"order": 1, "cents": 9007199254740993, "reason": "late"}"#.into(),
                "number_out_of_range",
            ),
            (
                "refund_order",
                r#"{"order": 1, "cents": 18446744073709551616, "reason": "late"}"#.into(),
                "number_out_of_range",
            ),
            ("lookup_order", r#"{"order": true}"#.into(), "invalid_type"),
            (
                "refund_order",
                r#"{"order": 1, "cents": 1, "reason": "LATE"}"#.into(),
                "invalid_value",
            ),
        ];
        for (tool, arguments, code) in cases {
            assert_eq!(field_codes(tool, &arguments), [code], "{arguments:.80}");
        }
    }

    #[test]
    fn deep_nesting_of_every_shape_is_refused_without_recursion() {
        for depth in [33, 100, 127, 128, 129, 10_000] {
            let arrays = format!(r#"{{"order": {}{}}}"#, "[".repeat(depth), "]".repeat(depth));
            assert_eq!(
                field_codes("lookup_order", &arrays),
                ["too_deep"],
                "arrays {depth}"
            );
            let objects = format!(
                r#"{{"order": {}1{}}}"#,
                r#"{"a":"#.repeat(depth),
                "}".repeat(depth)
            );
            assert_eq!(
                field_codes("lookup_order", &objects),
                ["too_deep"],
                "objects {depth}"
            );
            let unclosed = format!(r#"{{"order": {}"#, "[{".repeat(depth));
            assert_eq!(
                field_codes("lookup_order", &unclosed).len(),
                1,
                "unclosed {depth}"
            );
        }
        // Past the size limit, the size is refused before any parsing.
        let huge = format!(
            r#"{{"order": {}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(field_codes("lookup_order", &huge), ["too_large"]);
    }

    #[test]
    fn odd_but_valid_json_still_meets_the_type() {
        for arguments in [
            "\u{feff}{\"order\": 1001}",
            r#"{"order": 1001.5}"#,
            r#"{"order": -0}"#,
            r#"{"order": 1e3}"#,
            r#"{"\u006frder": 1001, "order": 1}"#,
        ] {
            let codes = field_codes("lookup_order", arguments);
            assert_eq!(codes.len(), 1, "{arguments}: {codes:?}");
        }
    }
}

mod scopes {
    use super::*;

    #[test]
    fn wildcards_prefixes_case_and_padding_never_grant() {
        let fakes: [&[&str]; 8] = [
            &[],
            &["*"],
            &["all", "ALL", "any"],
            &["refunds:*", "orders:*"],
            &["refunds", "orders", "refunds:", "orders:"],
            &["REFUNDS:WRITE", "Orders:Read"],
            &[" refunds:write", "orders:read ", "orders:read\0"],
            &["refunds:write\u{200b}", "оrders:read"],
        ];
        for granted in fakes {
            let actor = Actor::new("agent", granted).with_account("acme");
            assert_eq!(
                call(
                    &actor,
                    "refund_order",
                    r#"{"order": 1, "cents": 5, "reason": "late"}"#
                ),
                "scope_missing",
                "{granted:?}"
            );
        }
    }
}

mod approvals {
    use super::*;

    const ARGS: &str = r#"{"order": 1001, "cents": 1250, "reason": "damaged"}"#;
    const T0: Timestamp = Timestamp::from_unix_millis(1_000_000);

    fn at(millis: u64) -> Timestamp {
        Timestamp::from_unix_millis(T0.unix_millis() + millis)
    }

    /// A governor whose clock the test moves.
    fn governor() -> (Governor<Desk>, ManualClock) {
        let clock = ManualClock::new(T0);
        (Governor::new(&DESK).with_clock(clock.clone()), clock)
    }

    fn proposed() -> (Governor<Desk>, ManualClock, IdempotencyKey) {
        let (governor, clock) = governor();
        let outcome = pollster::block_on(governor.call(
            &ToolCall::new("refund_order", ARGS),
            &admin(),
            &Desk::default(),
        ));
        let Ok(Outcome::AwaitingApproval(lane)) = outcome else {
            panic!("{outcome:?}")
        };
        (governor, clock, lane.key())
    }

    fn execute(
        governor: &Governor<Desk>,
        clock: &ManualClock,
        key: &IdempotencyKey,
        actor: &Actor<'_>,
        now: Timestamp,
    ) -> Result<serde_json::Value, ApprovalError> {
        clock.set(now);
        pollster::block_on(governor.execute(key, actor, &Desk::default()))
    }

    #[test]
    fn replay_another_actor_and_self_approval() {
        let (governor, clock, key) = proposed();
        clock.set(at(1));
        assert_eq!(
            pollster::block_on(governor.approve(&key, "admin-1")),
            Err(ApprovalError::SelfApproval)
        );
        assert_eq!(
            pollster::block_on(governor.approve(&key, "ADMIN-1")),
            Err(ApprovalError::SelfApproval)
        );
        clock.set(at(2));
        pollster::block_on(governor.approve(&key, "lead")).unwrap();
        let intruder = Actor::new("intruder", EVERY_SCOPE).with_account("acme");
        assert_eq!(
            execute(&governor, &clock, &key, &intruder, at(3)),
            Err(ApprovalError::Mismatch(BoundField::Actor))
        );
        let elsewhere = Actor::new("admin-1", EVERY_SCOPE).with_account("globex");
        assert_eq!(
            execute(&governor, &clock, &key, &elsewhere, at(3)),
            Err(ApprovalError::Mismatch(BoundField::Account))
        );
        assert!(execute(&governor, &clock, &key, &admin(), at(4)).is_ok());
        let replay = execute(&governor, &clock, &key, &admin(), at(5));
        assert_eq!(replay, Err(ApprovalError::AlreadyRun(LaneState::Executed)));
    }

    #[test]
    fn expired_and_backward_clocks() {
        let (governor, clock, key) = proposed();
        // A clock behind the pending lane's last move decides nothing.
        clock.set(Timestamp::from_unix_millis(T0.unix_millis() - 1_000));
        assert_eq!(
            pollster::block_on(governor.approve(&key, "lead")),
            Err(ApprovalError::ClockWentBackwards)
        );
        let late = Timestamp::from_unix_millis(T0.unix_millis() + Ttl::DEFAULT.as_millis());
        clock.set(late);
        assert_eq!(
            pollster::block_on(governor.approve(&key, "lead")),
            Err(ApprovalError::Expired)
        );
        // A lane decided already is refused for what it is, whatever the clock says.
        clock.set(at(1));
        let again = pollster::block_on(governor.approve(&key, "lead"));
        assert!(
            matches!(&again, Err(ApprovalError::Transition(e)) if e.from() == LaneState::Expired),
            "{again:?}"
        );
        let executed = execute(&governor, &clock, &key, &admin(), late);
        assert!(
            matches!(executed, Err(ApprovalError::Transition(e)) if e.from() == LaneState::Expired)
        );
    }

    #[test]
    fn rejected_and_deferred_lanes_never_run() {
        for reject in [true, false] {
            let (governor, clock, key) = proposed();
            clock.set(at(1));
            if reject {
                pollster::block_on(governor.reject(&key, "lead", "no")).unwrap();
            } else {
                pollster::block_on(governor.defer(&key, "lead", "later")).unwrap();
            }
            clock.set(at(2));
            assert!(pollster::block_on(governor.approve(&key, "lead")).is_err());
            let executed = execute(&governor, &clock, &key, &admin(), at(3));
            assert!(
                matches!(executed, Err(ApprovalError::Transition(_))),
                "{executed:?}"
            );
        }
    }

    #[test]
    fn an_unknown_lane_cannot_be_approved_or_executed() {
        let (governor, clock, _) = proposed();
        let ghost = IdempotencyKey::from_bytes([0; 32]);
        clock.set(at(1));
        assert_eq!(
            pollster::block_on(governor.approve(&ghost, "lead")),
            Err(ApprovalError::UnknownLane)
        );
        assert_eq!(
            execute(&governor, &clock, &ghost, &admin(), at(1)),
            Err(ApprovalError::UnknownLane)
        );
    }

    #[test]
    fn a_forged_proposal_for_an_always_blocked_tool_is_invalidated_at_execution() {
        // The pipeline never proposes delete_customer; a lane forged into the store (say,
        // edited in the host's database) still cannot make it run.
        let (governor, _, key) = proposed();
        let lane = pollster::block_on(governor.lane(&key)).unwrap();
        let mut forged = serde_json::to_value(&lane).unwrap();
        forged["proposal"]["tool"] = "delete_customer".into();
        forged["proposal"]["input"] = r#"{"customer":9}"#.into();
        let forged: ApprovalLane = serde_json::from_value(forged).unwrap();
        let opened = pollster::block_on(governor.events())
            .unwrap()
            .into_iter()
            .find_map(|record| match record {
                cairnloop::approvals::AuditRecord::Transition(event) => Some(event),
                _ => None,
            });
        let store = std::sync::Arc::new(MemoryStore::new());
        pollster::block_on(store.insert(forged, opened.unwrap())).unwrap();
        let clock = ManualClock::new(at(1));
        let tampered = Governor::new(&DESK)
            .with_store(std::sync::Arc::clone(&store))
            .with_clock(clock.clone());
        pollster::block_on(tampered.approve(&key, "lead")).unwrap();
        clock.set(at(2));
        let result = pollster::block_on(tampered.execute(&key, &admin(), &Desk::default()));
        assert_eq!(
            result,
            Err(ApprovalError::Invalidated(Invalidation::Blocked(
                Blocked::AlwaysBlocked {
                    decided_by: ModeSource::Spec
                }
            )))
        );
        assert_eq!(
            pollster::block_on(tampered.lane(&key)).unwrap().state(),
            LaneState::Invalidated
        );
    }
}
