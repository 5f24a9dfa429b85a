//! Properties of the governance core, checked on generated input (proptest).

#[path = "../../tests/fixtures/calls.rs"]
mod calls;
#[path = "../../tests/fixtures/desk.rs"]
mod desk;

use cairnloop::gate::{LaneAction, LaneState, check_scopes};
use cairnloop::{
    Actor, ApprovalMode, Decision, Governance, Governor, InputErrors, Invocation, ModePolicy,
    Outcome, PolicyDenial, RiskTier, Scope, Tool, ToolCall, ToolSpec, decide, derive_approval_mode,
};
use calls::call_with;
use desk::{DESK, Desk};
use proptest::prelude::*;
use serde_json::{Map, Value};
use sha2::Digest;

const TIERS: [&str; 4] = ["read_only", "low_write", "high_write", "destructive"];

proptest! {
    #[test]
    fn a_higher_tier_never_yields_a_less_strict_mode(a in 0usize..4, b in 0usize..4) {
        let (low, high) = (RiskTier::ALL[a.min(b)], RiskTier::ALL[a.max(b)]);
        prop_assert!(derive_approval_mode(Some(low)) <= derive_approval_mode(Some(high)));
        // And a spec can only tighten what its tier derives.
        for mode in ApprovalMode::ALL {
            let spec = ToolSpec::try_new("t", "T", "D", high).unwrap().try_with_approval(mode);
            prop_assert_eq!(spec.is_ok(), mode >= high.derived_approval_mode());
        }
    }

    #[test]
    fn any_other_string_derives_always_block(name in ".{0,24}") {
        prop_assume!(!TIERS.contains(&name.as_str()));
        prop_assert_eq!(derive_approval_mode(RiskTier::parse(&name)), ApprovalMode::AlwaysBlock);
    }

    #[test]
    fn case_and_padding_variants_of_tier_names_derive_always_block(
        tier in 0usize..4, upper in proptest::collection::vec(any::<bool>(), 0..12), pad in "[ \t\n\u{200b}]{0,2}",
    ) {
        let name: String = TIERS[tier].chars().zip(upper.iter().chain(std::iter::repeat(&false)))
            .map(|(c, up)| if *up { c.to_ascii_uppercase() } else { c }).collect();
        let name = format!("{pad}{name}{pad}");
        prop_assume!(name != TIERS[tier]);
        prop_assert_eq!(derive_approval_mode(RiskTier::parse(&name)), ApprovalMode::AlwaysBlock);
    }
}

/// Names a model might send: the real ones, near misses, and noise.
fn tool_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "lookup_order",
            "internal_note",
            "refund_order",
            "delete_customer",
            "forgotten",
            "tag_ticket",
            "typed_only",
            "Lookup_Order",
            "refund_order ",
            "lookup\u{200b}_order",
        ])
        .prop_map(String::from),
        ".{0,20}",
    ]
}

/// JSON values of every shape, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-2_000i64..2_000).prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        "[a-z]{0,6}".prop_map(Value::from),
        prop::sample::select(vec!["damaged", "late", "Late", ""]).prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Values whose canonical text an independent writer can give: no fractions.
fn canonical_value() -> impl Strategy<Value = Value> {
    let text = prop_oneof![
        "[a-z]{0,4}",
        // Control characters, quotes, backslashes, the BMP's top and beyond it.
        prop::collection::vec(
            prop::sample::select(vec![
                'a',
                '\u{0}',
                '\t',
                '\u{8}',
                '\u{c}',
                '\r',
                '\u{1f}',
                '"',
                '\\',
                '\n',
                '\u{7f}',
                'é',
                '\u{ff61}',
                '\u{1f600}',
                '\u{10ffff}'
            ]),
            0..5
        )
        .prop_map(|chars| chars.into_iter().collect::<String>()),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(Value::from),
        (0u64..=(1u64 << 53)).prop_map(Value::from),
        text.clone().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text.clone(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn reference_canonical(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(reference_canonical).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(object) => {
            let mut entries: Vec<(&String, &Value)> = object.iter().collect();
            entries.sort_by_key(|(key, _)| key.encode_utf16().collect::<Vec<u16>>());
            let entries: Vec<String> = entries
                .into_iter()
                .map(|(key, item)| {
                    format!(
                        "{}:{}",
                        Value::from(key.as_str()),
                        reference_canonical(item)
                    )
                })
                .collect();
            format!("{{{}}}", entries.join(","))
        }
        // Integers print as digits; serde_json's scalars are already canonical here.
        other => other.to_string(),
    }
}

/// Arguments one of the desk's tools accepts.
fn valid_arguments() -> impl Strategy<Value = String> {
    let reason = prop::sample::select(vec!["damaged", "late"]);
    prop_oneof![
        (1u32..5000).prop_map(|order| serde_json::json!({ "order": order }).to_string()),
        (1u32..99, "[a-z ]{1,12}").prop_map(|(ticket, body)| {
            serde_json::json!({ "ticket": ticket, "body": body }).to_string()
        }),
        (1u32..99, 0u64..100_000, reason).prop_map(|(order, cents, reason)| {
            serde_json::json!({ "order": order, "cents": cents, "reason": reason }).to_string()
        }),
        (0u64..1000).prop_map(|customer| serde_json::json!({ "customer": customer }).to_string()),
    ]
}

/// Arguments: valid ones, objects with the desk's field names, and anything.
fn arguments() -> impl Strategy<Value = String> {
    let fields = prop::sample::select(vec![
        "order", "cents", "reason", "ticket", "body", "customer", "x",
    ]);
    prop_oneof![
        3 => valid_arguments(),
        3 => prop::collection::btree_map(fields, json_value(), 0..5)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()).to_string()),
        1 => json_value().prop_map(|v| v.to_string()),
        1 => ".{0,30}",
    ]
}

fn granted() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::sample::select(vec![
            "orders:read",
            "tickets:write",
            "refunds:write",
            "customers:delete",
            "*",
            "all",
            "orders:*",
            "ORDERS:READ",
            "refunds",
        ]),
        0..6,
    )
    .prop_map(|v| v.into_iter().map(String::from).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// *Execute* implies: a known tool, valid input, scopes ⊆ granted, a permitting
    /// policy and mode `Auto`, each checked here independently of the pipeline.
    #[test]
    fn execute_implies_every_gate_passed(
        name in tool_name(), args in arguments(), scopes in granted(),
        account in prop::option::of("[a-z]{1,5}"), frozen in any::<bool>(),
    ) {
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let mut actor = Actor::new("admin-1", &scopes);
        if let Some(account) = &account {
            actor = actor.with_account(account);
        }
        let desk = Desk::default();
        desk.freeze_refunds(frozen);
        let called = call_with(&DESK, Governance::new(), &actor, &desk, &ToolCall::new(&name, &args));
        if called.audit.decision == "execute" {
            let entry = DESK.get(&name).expect("execute implies a known tool");
            prop_assert_eq!(entry.spec().name(), name.as_str());
            prop_assert!(serde_json::from_str::<Map<String, Value>>(&args).is_ok(), "valid input is an object");
            for scope in entry.scopes() {
                prop_assert!(scopes.contains(&scope.as_str()), "scope {} granted", scope);
            }
            prop_assert!(check_scopes(entry.scopes(), &actor).is_ok());
            // The only tools with a policy that admits anyone holding their scopes, and
            // with mode `Auto` (lookup_order also wants an account).
            prop_assert!(
                name == "tag_ticket" || (name == "lookup_order" && account.is_some()),
                "policy permits {}", name
            );
            prop_assert_eq!(called.audit.mode, Some(ApprovalMode::Auto));
            prop_assert!(matches!(called.outcome, Outcome::Executed(_) | Outcome::Failed(_)));
        }
    }

    /// The idempotency key ignores the order of the arguments' keys and whitespace, and
    /// changes with any change of the input. The argument text itself is reordered here:
    /// a `serde_json::Map` sorts its keys, so reordering a parsed value would prove
    /// nothing.
    #[test]
    fn the_key_is_invariant_under_order_and_whitespace(
        order in 1u32..100_000,
        cents in 1u64..1_000_000,
        late in any::<bool>(),
        permutation in Just(vec![0usize, 1, 2]).prop_shuffle(),
        spaces in prop::collection::vec(prop::sample::select(vec!["", " ", "\n", "\t", "  "]), 4),
    ) {
        let reason = if late { "late" } else { "damaged" };
        let fields = [
            format!(r#""order":{}{order}"#, spaces[0]),
            format!(r#""cents"{}:{cents}"#, spaces[1]),
            format!(r#""reason":{}"{reason}""#, spaces[2]),
        ];
        let reordered: Vec<&str> = permutation.iter().map(|&i| fields[i].as_str()).collect();
        let text = format!("{{{}{}}}", spaces[3], reordered.join(","));
        let plain = format!(r#"{{"order":{order},"cents":{cents},"reason":"{reason}"}}"#);
        let changed = format!(r#"{{"order":{order},"cents":{},"reason":"{reason}"}}"#, cents + 1);
        let actor = Actor::new("billing-2", &["orders:read", "refunds:write"]);
        let key = |arguments: &str| {
            let governor = Governor::new(&DESK);
            let call = ToolCall::new("refund_order", arguments);
            match pollster::block_on(governor.call(&call, &actor, &Desk::default())) {
                Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
                other => panic!("expected a proposal, got {other:?}"),
            }
        };
        prop_assert_eq!(key(&text), key(&plain));
        prop_assert_ne!(key(&changed), key(&plain));
        // And the key is the SHA-256 of the canonical envelope, spelled out here.
        let envelope = format!(
            r#"{{"account_id":null,"actor_id":"billing-2","dedupe_token":null,"input":{{"cents":{cents},"order":{order},"reason":"{reason}"}},"tool_ref":"refund_order"}}"#
        );
        let expected: String = sha2::Sha256::digest(envelope.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        prop_assert_eq!(key(&text).to_string(), expected);
    }

    /// The canonical text of any value of integers, strings and nesting is what an
    /// independent writer gives: keys sorted by UTF-16 code units, integers as their digits,
    /// strings as `serde_json` escapes them (its escapes are RFC 8785's minimal ones).
    #[test]
    fn canonical_text_matches_an_independent_writer(value in canonical_value()) {
        prop_assert_eq!(cairnloop::json::canonical_json(&value), reference_canonical(&value));
    }

    /// Approval lanes follow an independently written model for any action sequence.
    #[test]
    fn lane_moves_agree_with_a_reference_table(actions in prop::collection::vec(0usize..9, 0..20)) {
        let mut state = LaneState::Pending;
        let mut model = "pending";
        for index in actions {
            let action = LaneAction::ALL[index];
            let expected = match (model, action.as_str()) {
                ("pending", "approve") => Some("approved"),
                // One approval of several: still pending.
                ("pending", "endorse") => Some("pending"),
                ("pending", "reject") => Some("rejected"),
                ("pending", "defer") => Some("deferred"),
                ("pending" | "approved", "expire") => Some("expired"),
                ("approved", "start_execution") => Some("execution_pending"),
                ("approved" | "execution_pending", "invalidate") => Some("invalidated"),
                ("execution_pending", "succeed") => Some("executed"),
                ("execution_pending", "fail") => Some("execution_failed"),
                _ => None,
            };
            match (state.apply(action), expected) {
                (Ok(next), Some(want)) => {
                    prop_assert_eq!(next.as_str(), want);
                    state = next;
                    model = want;
                }
                (Err(_), None) => {}
                (got, want) => prop_assert!(false, "{} {}: {:?} vs {:?}", model, action, got, want),
            }
        }
    }
}

/// Two tools alike but for one more required scope, and a policy switched by context.
struct OneScope;
struct TwoScopes;

struct Switch {
    deny: bool,
}

macro_rules! typed_tool {
    ($ty:ident, [$($scope:literal),*]) => {
        impl Tool for $ty {
            const SPEC: ToolSpec = ToolSpec::new("t", "T", "D.", RiskTier::ReadOnly);
            const SCOPES: &'static [Scope] = &[$(Scope::new($scope)),*];
            type Input = u8;
            type Output = ();
            type Error = ();
            type Context = Switch;
            fn validate(input: &u8) -> Result<(), InputErrors> {
                if *input < 200 { Ok(()) } else {
                    Err(InputErrors::one(cairnloop::FieldError::new("", "out_of_range", "below 200")))
                }
            }
            fn authorize(_: &Actor<'_>, switch: &Switch) -> Result<(), PolicyDenial> {
                if switch.deny { Err(PolicyDenial::Denied("switched off")) } else { Ok(()) }
            }
            async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
                Ok(())
            }
        }
    };
}

typed_tool!(OneScope, ["a:b"]);
typed_tool!(TwoScopes, ["a:b", "c:d"]);

proptest! {
    /// Adding a required scope or a denying policy never turns a block into *execute*.
    #[test]
    fn more_requirements_never_unblock(
        input in any::<u8>(), scopes in prop::collection::vec(prop::sample::select(vec!["a:b", "c:d", "*", "a"]), 0..4),
        tighten in any::<bool>(),
    ) {
        let actor = Actor::new("x", &scopes);
        let policy = if tighten {
            ModePolicy::new().with_tier(RiskTier::ReadOnly, ApprovalMode::RequiresApproval)
        } else {
            ModePolicy::new()
        };
        let (allow, deny) = (Switch { deny: false }, Switch { deny: true });
        let base = matches!(decide::<OneScope>(input, &actor, &allow, &policy), Decision::Execute { .. });
        let more_scopes = matches!(decide::<TwoScopes>(input, &actor, &allow, &policy), Decision::Execute { .. });
        let denying = matches!(decide::<OneScope>(input, &actor, &deny, &policy), Decision::Execute { .. });
        prop_assert!(!more_scopes || base, "a second scope unblocked a call");
        prop_assert!(!denying, "a denying policy executed");
        prop_assert!(!(tighten && base), "a tightened mode executed");
    }
}

#[test]
fn the_generators_reach_execute_and_every_block() {
    // Guards the properties above against holding only because nothing ever executes.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let strategy = (
        tool_name(),
        arguments(),
        granted(),
        prop::option::of("[a-z]{1,5}"),
    );
    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..4000 {
        let (name, args, scopes, account) = strategy.new_tree(&mut runner).unwrap().current();
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let mut actor = Actor::new("admin-1", &scopes);
        if let Some(account) = &account {
            actor = actor.with_account(account);
        }
        let desk = Desk::default();
        let outcome = call_with(
            &DESK,
            Governance::new(),
            &actor,
            &desk,
            &ToolCall::new(&name, &args),
        );
        seen.insert(
            outcome
                .audit
                .code
                .clone()
                .unwrap_or(outcome.audit.decision.clone()),
        );
    }
    for expected in [
        "execute",
        "await_approval",
        "unknown_tool",
        "needs_input",
        "scope_missing",
        "policy_denied",
        "always_blocked",
        "not_callable_by_name",
    ] {
        assert!(seen.contains(expected), "never saw {expected}: {seen:?}");
    }
}
