//! The by-name pipeline: every gate, the precedence between them, host overrides, every
//! hostile input of the pipeline issue, previews and proposals.
#![cfg(feature = "serde")]

#[path = "fixtures/calls.rs"]
mod calls;
#[path = "fixtures/desk.rs"]
mod desk;

use cairnloop::declare::{InputLimits, RunError};
use cairnloop::gate::ModeSource;
use cairnloop::json::PreviewSource;
use cairnloop::{
    Actor, ApprovalMode, Blocked, Governance, ModePolicy, Outcome, PolicyDenial, RiskTier, Scope,
    ToolCall, ToolSpec,
};
use calls::{Called, call_with};
use desk::{DESK, Desk, EVERY_SCOPE};

fn call(actor: &Actor<'_>, desk: &Desk, name: &str, arguments: &str) -> Called {
    call_governed(
        actor,
        desk,
        &ToolCall::new(name, arguments),
        Governance::new(),
    )
}

fn call_governed(
    actor: &Actor<'_>,
    desk: &Desk,
    call: &ToolCall<'_>,
    governance: Governance<Desk>,
) -> Called {
    call_with(&DESK, governance, actor, desk, call)
}

fn admin() -> Actor<'static> {
    Actor::new("admin-1", EVERY_SCOPE).with_account("acme")
}

fn blocked(called: Called) -> Blocked {
    assert_eq!(called.audit.decision, "blocked");
    match called.outcome {
        Outcome::Blocked(reason) => {
            assert_eq!(called.audit.code.as_deref(), Some(reason.code()));
            reason
        }
        other => panic!("expected a block, got {}", other.code()),
    }
}

/// What a call that was decided *execute* gave back when it ran.
fn ran(called: Called) -> Result<serde_json::Value, RunError> {
    assert_eq!(called.audit.decision, "execute");
    match called.outcome {
        Outcome::Executed(output) => Ok(output),
        Outcome::Failed(error) => Err(error),
        other => panic!("expected execute, got {}", other.code()),
    }
}

/// The lane of a call that awaits approval.
fn awaiting(called: Called) -> cairnloop::ApprovalLane {
    assert_eq!(called.audit.decision, "await_approval");
    match called.outcome {
        Outcome::AwaitingApproval(lane) => *lane,
        other => panic!("expected await_approval, got {}", other.code()),
    }
}

/// The field errors of a `NeedsInput` block, as (path, code).
fn field_errors(outcome: Called) -> Vec<(String, String)> {
    match blocked(outcome) {
        Blocked::NeedsInput { errors } => errors
            .iter()
            .map(|e| (e.path().to_owned(), e.code().to_owned()))
            .collect(),
        other => panic!("expected NeedsInput, got {other:?}"),
    }
}

#[test]
fn a_read_only_call_executes_and_runs() {
    let (actor, desk) = (admin(), Desk::default());
    let outcome = call(&actor, &desk, "lookup_order", r#"{"order": 1001}"#);
    assert_eq!(outcome.audit.decision, "execute");
    assert_eq!(outcome.audit.mode, Some(ApprovalMode::Auto));
    assert_eq!(outcome.audit.tool, "lookup_order");
    assert_eq!(ran(outcome), Ok(serde_json::json!("shipped")));
}

#[test]
fn a_failing_run_reports_the_tools_error() {
    let (actor, desk) = (admin(), Desk::default());
    let error = ran(call(&actor, &desk, "lookup_order", r#"{"order": 7}"#)).unwrap_err();
    assert_eq!(error.to_string(), "tool failed: order 7 not found");
}

#[test]
fn gate_0_unknown_names_and_near_misses() {
    let (actor, desk) = (admin(), Desk::default());
    let long = "a".repeat(1 << 20);
    for name in [
        "",
        "Lookup_Order",
        "LOOKUP_ORDER",
        " lookup_order",
        "lookup_order ",
        "lookup_order\n",
        "lookup\u{200B}_order",
        "lookup_order\u{200d}",
        "lооkup_order",
        "lookup_order\0",
        "ｌookup_order",
        long.as_str(),
    ] {
        let outcome = call(&actor, &desk, name, r#"{"order": 1001}"#);
        assert!(
            outcome.audit.tool.chars().count() <= 129,
            "audit copies at most 128 characters"
        );
        assert_eq!(blocked(outcome), Blocked::UnknownTool, "{name:?}");
    }
    let outcome = call(&actor, &desk, "lookup\u{200B}_order", "{}");
    assert_eq!(
        outcome.audit.tool, "lookup\\u{200b}_order",
        "invisible characters are escaped"
    );
}

#[test]
fn gate_0_a_typed_only_tool_is_not_callable_by_name() {
    let (actor, desk) = (admin(), Desk::default());
    assert_eq!(
        blocked(call(&actor, &desk, "typed_only", "{}")),
        Blocked::NotCallableByName
    );
}

#[test]
fn gate_1_arguments_that_are_not_an_object() {
    let (actor, desk) = (admin(), Desk::default());
    for arguments in ["5", "null", "[]", r#""x""#, "true", "1.5"] {
        assert_eq!(
            field_errors(call(&actor, &desk, "lookup_order", arguments)),
            [(String::new(), "not_an_object".to_owned())],
            "{arguments}"
        );
    }
}

#[test]
fn gate_1_malformed_json() {
    let (actor, desk) = (admin(), Desk::default());
    for arguments in [
        "",
        "{",
        r#"{"order": 1001"#,
        r#"{"order": 1001}}"#,
        r#"{"order": 1001} x"#,
        r#"{"order": 1001}{}"#,
        r#"{'order': 1001}"#,
        r#"{"order": 01}"#,
        r#"{"order": NaN}"#,
        r#"{"a": "\ud800"}"#,
        r#"{"a": "\udc00x"}"#,
        "{\"a\": \"\u{1}\"}",
        r#"{"order": 1001,}"#,
    ] {
        // The path is where the parser stopped.
        let errors = field_errors(call(&actor, &desk, "lookup_order", arguments));
        assert_eq!(errors.len(), 1, "{arguments:?}");
        assert_eq!(errors[0].1, "invalid_json", "{arguments:?}");
    }
}

#[test]
fn gate_1_duplicate_keys() {
    let (actor, desk) = (admin(), Desk::default());
    assert_eq!(
        field_errors(call(
            &actor,
            &desk,
            "lookup_order",
            r#"{"order": 1, "order": 2}"#
        )),
        [("/order".to_owned(), "duplicate_key".to_owned())]
    );
}

#[test]
fn gate_1_unknown_fields_every_one_with_its_path() {
    let (actor, desk) = (admin(), Desk::default());
    // LookupOrder's input ignores unknown fields in serde; the pipeline still refuses them.
    assert_eq!(
        field_errors(call(
            &actor,
            &desk,
            "lookup_order",
            r#"{"order": 1001, "force": true, "admin": 1}"#
        )),
        [
            ("/admin".to_owned(), "unknown_field".to_owned()),
            ("/force".to_owned(), "unknown_field".to_owned())
        ]
    );
    // RefundOrder denies unknown fields in serde: the same code.
    let errors = field_errors(call(
        &actor,
        &desk,
        "refund_order",
        r#"{"order": 1, "cents": 5, "reason": "late", "override": true}"#,
    ));
    assert_eq!(
        errors,
        [("/override".to_owned(), "unknown_field".to_owned())]
    );
}

#[test]
fn gate_1_deep_nesting_built_in_code() {
    let (actor, desk) = (admin(), Desk::default());
    let deep = format!(
        r#"{{"order": {}1{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let errors = field_errors(call(&actor, &desk, "lookup_order", &deep));
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].1, "too_deep");
    assert_eq!(errors[0].0, format!("/order{}", "/0".repeat(31)));
    // Objects too.
    let deep = format!("{}{}", r#"{"a":"#.repeat(5_000), "}".repeat(5_000));
    assert_eq!(
        field_errors(call(&actor, &desk, "lookup_order", &format!("{deep}}}")))[0].1,
        "too_deep"
    );
}

#[test]
fn gate_1_size_and_string_limits() {
    let (actor, desk) = (admin(), Desk::default());
    let huge = format!(r#"{{"order": 1, "note": "{}"}}"#, "x".repeat(16 << 20));
    assert_eq!(
        field_errors(call(&actor, &desk, "lookup_order", &huge)),
        [(String::new(), "too_large".to_owned())]
    );
    let governance = Governance::new().with_limits(InputLimits::new().with_max_string_bytes(8));
    let outcome = call_governed(
        &actor,
        &desk,
        &ToolCall::new("internal_note", r#"{"ticket": 1, "body": "nine bytes"}"#),
        governance,
    );
    assert_eq!(
        field_errors(outcome),
        [("/body".to_owned(), "string_too_long".to_owned())]
    );
    let outcome = call_governed(
        &actor,
        &desk,
        &ToolCall::new("internal_note", r#"{"a_very_long_key": 1}"#),
        governance,
    );
    assert_eq!(field_errors(outcome)[0].1, "string_too_long");
}

#[test]
fn gate_1_numbers_past_2_pow_53_or_u64_are_refused_never_rounded() {
    let (actor, desk) = (admin(), Desk::default());
    for cents in [
        "9007199254740992",
        "9007199254740993",
        "18446744073709551615",
        "18446744073709551616",
        "1e400",
        "-9007199254740993",
    ] {
        let arguments = format!(r#"{{"order": 1, "cents": {cents}, "reason": "late"}}"#);
        assert_eq!(
            field_errors(call(&actor, &desk, "refund_order", &arguments)),
            [("/cents".to_owned(), "number_out_of_range".to_owned())],
            "{cents}"
        );
    }
    let ok = call(
        &actor,
        &desk,
        "refund_order",
        r#"{"order": 1, "cents": 9007199254740991, "reason": "late"}"#,
    );
    assert_eq!(ok.audit.decision, "await_approval");
}

#[test]
fn gate_1_type_errors_name_their_field() {
    let (actor, desk) = (admin(), Desk::default());
    let cases = [
        (r#"{"order": "1001"}"#, "/order", "invalid_type"),
        (r#"{"order": -1}"#, "/order", "invalid_value"),
        (r#"{"order": 4294967296}"#, "/order", "invalid_value"),
        (r#"{"order": 1.5}"#, "/order", "invalid_type"),
        (r#"{}"#, "/order", "required"),
    ];
    for (arguments, path, code) in cases {
        assert_eq!(
            field_errors(call(&actor, &desk, "lookup_order", arguments)),
            [(path.to_owned(), code.to_owned())],
            "{arguments}"
        );
    }
    let errors = field_errors(call(
        &actor,
        &desk,
        "refund_order",
        r#"{"order": 1, "cents": 5, "reason": "Late"}"#,
    ));
    assert_eq!(
        errors,
        [("/reason".to_owned(), "invalid_value".to_owned())],
        "enum values are case-sensitive"
    );
}

#[test]
fn gate_1_every_validation_error_is_reported() {
    let (actor, desk) = (admin(), Desk::default());
    assert_eq!(
        field_errors(call(
            &actor,
            &desk,
            "internal_note",
            r#"{"ticket": 0, "body": " "}"#
        )),
        [
            ("/ticket".to_owned(), "out_of_range".to_owned()),
            ("/body".to_owned(), "required".to_owned())
        ]
    );
}

#[test]
fn gate_2_missing_scopes_in_declared_order_matched_exactly() {
    let desk = Desk::default();
    for granted in [
        &[][..],
        &[
            "refunds:*",
            "all",
            "*",
            "orders",
            "ORDERS:READ",
            "orders:read ",
        ][..],
    ] {
        let actor = Actor::new("agent", granted).with_account("acme");
        match blocked(call(
            &actor,
            &desk,
            "refund_order",
            r#"{"order": 1, "cents": 5, "reason": "late"}"#,
        )) {
            Blocked::ScopeMissing { missing } => {
                assert_eq!(
                    missing.iter().map(Scope::as_str).collect::<Vec<_>>(),
                    ["orders:read", "refunds:write"]
                );
            }
            other => panic!("expected ScopeMissing, got {other:?}"),
        }
    }
    let actor = Actor::new("agent", &["refunds:write"]).with_account("acme");
    let outcome = call(
        &actor,
        &desk,
        "refund_order",
        r#"{"order": 1, "cents": 5, "reason": "late"}"#,
    );
    assert_eq!(
        outcome.audit.reason.as_deref(),
        Some("missing scope: orders:read")
    );
}

#[test]
fn gate_3_policy_and_deny_by_default() {
    let (actor, frozen) = (admin(), Desk::frozen());
    assert_eq!(
        blocked(call(
            &actor,
            &frozen,
            "refund_order",
            r#"{"order": 1, "cents": 5, "reason": "late"}"#
        )),
        Blocked::PolicyDenied {
            reason: PolicyDenial::Denied("refunds are frozen for the audit")
        }
    );
    assert_eq!(
        blocked(call(
            &actor,
            &Desk::default(),
            "forgotten",
            r#"{"order": 1}"#
        )),
        Blocked::PolicyDenied {
            reason: PolicyDenial::NoPolicyDefined
        }
    );
}

#[test]
fn gate_4_destructive_is_always_blocked() {
    let (actor, desk) = (admin(), Desk::default());
    let outcome = call(&actor, &desk, "delete_customer", r#"{"customer": 9}"#);
    assert_eq!(outcome.audit.mode, Some(ApprovalMode::AlwaysBlock));
    assert_eq!(
        blocked(outcome),
        Blocked::AlwaysBlocked {
            decided_by: ModeSource::Spec
        }
    );
}

#[test]
fn precedence_unknown_before_input_before_scope_before_policy_before_mode() {
    let desk = Desk::frozen();
    let nobody = Actor::new("agent-9", &[]);
    // Unknown name with bad arguments: the name wins.
    assert_eq!(
        blocked(call(&nobody, &desk, "refund", "[")),
        Blocked::UnknownTool
    );
    // Bad input and missing scopes: input wins.
    assert_eq!(
        blocked(call(&nobody, &desk, "refund_order", "[")).code(),
        "needs_input"
    );
    // Missing scopes and a denying policy: scopes win.
    let args = r#"{"order": 1, "cents": 5, "reason": "late"}"#;
    assert_eq!(
        blocked(call(&nobody, &desk, "refund_order", args)).code(),
        "scope_missing"
    );
    // Bad input and a denying policy (the scopes held): input wins.
    let agent = Actor::new("agent-9", EVERY_SCOPE);
    assert_eq!(
        blocked(call(&agent, &desk, "refund_order", "[")).code(),
        "needs_input"
    );
    assert_eq!(
        blocked(call(&agent, &desk, "refund_order", args)).code(),
        "policy_denied"
    );
    // A denying policy on an always-blocked tool: policy wins.
    assert_eq!(
        blocked(call(&agent, &desk, "delete_customer", r#"{"customer": 9}"#)).code(),
        "policy_denied"
    );
}

#[test]
fn host_overrides_tighten_and_never_loosen() {
    let (actor, desk) = (admin(), Desk::default());
    let lookup = ToolCall::new("lookup_order", r#"{"order": 1001}"#);
    let refund = ToolCall::new(
        "refund_order",
        r#"{"order": 1, "cents": 5, "reason": "late"}"#,
    );

    let tighter = Governance::new().with_mode_policy(
        ModePolicy::new().with_tier(RiskTier::ReadOnly, ApprovalMode::RequiresApproval),
    );
    let lane = awaiting(call_governed(&actor, &desk, &lookup, tighter));
    assert_eq!(
        lane.proposal().policy().decided_by,
        ModeSource::TierOverride
    );

    let looser = Governance::new().with_mode_policy(
        ModePolicy::new()
            .with_tier(RiskTier::HighWrite, ApprovalMode::Auto)
            .with_tier(RiskTier::Destructive, ApprovalMode::Auto)
            .with_hook(|_, _, _| ApprovalMode::Auto),
    );
    assert_eq!(
        call_governed(&actor, &desk, &refund, looser).audit.decision,
        "await_approval"
    );
    let delete = ToolCall::new("delete_customer", r#"{"customer": 9}"#);
    assert_eq!(
        call_governed(&actor, &desk, &delete, looser)
            .audit
            .code
            .as_deref(),
        Some("always_blocked")
    );

    fn lock_acme(_: &ToolSpec, actor: &Actor<'_>, _: &Desk) -> ApprovalMode {
        if actor.account() == Some("acme") {
            ApprovalMode::AlwaysBlock
        } else {
            ApprovalMode::Auto
        }
    }
    let hooked = Governance::new().with_mode_policy(ModePolicy::new().with_hook(lock_acme));
    assert_eq!(
        blocked(call_governed(&actor, &desk, &lookup, hooked)),
        Blocked::AlwaysBlocked {
            decided_by: ModeSource::Hook
        }
    );
}

#[test]
fn a_loosened_spec_says_so() {
    let (actor, desk) = (admin(), Desk::default());
    let outcome = call(&actor, &desk, "tag_ticket", r#"{"order": 3}"#);
    assert_eq!(outcome.audit.decision, "execute");
    assert_eq!(
        outcome.audit.loosened_because.as_deref(),
        Some("tags are cosmetic")
    );
    assert_eq!(outcome.audit.mode, Some(ApprovalMode::Auto));
    assert!(ran(outcome).is_ok());
}

#[test]
fn a_proposal_carries_preview_key_and_snapshots() {
    let (actor, desk) = (admin(), Desk::default());
    let outcome = call(
        &actor,
        &desk,
        "refund_order",
        r#"{ "reason": "damaged", "cents": 1250, "order": 7 }"#,
    );
    let key = outcome.audit.idempotency_key;
    let lane = awaiting(outcome);
    let proposal = lane.proposal().clone();
    assert_eq!(proposal.tool(), "refund_order");
    assert_eq!(proposal.title(), "Refund order");
    assert_eq!(proposal.risk_tier(), RiskTier::HighWrite);
    assert_eq!(proposal.dedupe_token(), None);
    assert_eq!(proposal.preview().source(), PreviewSource::Tool);
    assert_eq!(
        proposal.preview().text(),
        "Refund 12.50 EUR for order 7 (Damaged)"
    );
    assert_eq!(
        proposal.input(),
        r#"{"cents":1250,"order":7,"reason":"damaged"}"#
    );
    assert_eq!(proposal.required_scopes(), ["orders:read", "refunds:write"]);
    assert_eq!(proposal.granted_scopes(), EVERY_SCOPE);
    assert_eq!(proposal.policy().declared, ApprovalMode::RequiresApproval);
    assert_eq!(proposal.policy().resolved, ApprovalMode::RequiresApproval);
    assert_eq!(proposal.actor_id(), "admin-1");
    assert_eq!(proposal.account_id(), Some("acme"));
    assert_eq!(Some(proposal.idempotency_key()), key);
    // Computed independently: SHA-256 of the sorted, compact JSON envelope (Python's json).
    assert_eq!(
        proposal.idempotency_key().to_string(),
        "4748de2c5e5535b43e795a8c312d103f5b17a6eddd21173c55002400aabb53f1"
    );
    // A proposal round-trips through serde, for a host's store.
    let stored = serde_json::to_string(&proposal).unwrap();
    assert_eq!(
        serde_json::from_str::<cairnloop::json::Proposal>(&stored).unwrap(),
        proposal
    );
}

#[test]
fn the_fallback_preview_is_structured_and_masks_secrets() {
    let (actor, desk) = (admin(), Desk::default());
    let outcome = call(
        &actor,
        &desk,
        "internal_note",
        r#"{"ticket": 42, "body": "Called twice", "api_token": "tok-123"}"#,
    );
    let lane = awaiting(outcome);
    let proposal = lane.proposal();
    assert_eq!(proposal.preview().source(), PreviewSource::Fallback);
    assert_eq!(
        proposal.preview().text(),
        "Add internal note\nrisk: low_write, approval: requires_approval\nscopes: tickets:write\ninput:\n  api_token: ******\n  body: \"Called twice\"\n  ticket: 42"
    );
    assert!(!proposal.preview().text().contains("tok-123"));
}

#[test]
fn audit_events_serialise_with_actor_tool_decision_reason_and_key() {
    let (actor, desk) = (admin(), Desk::frozen());
    let outcome = call(
        &actor,
        &desk,
        "refund_order",
        r#"{"order": 7, "cents": 1250, "reason": "damaged"}"#,
    );
    let json = serde_json::to_value(&outcome.audit).unwrap();
    assert_eq!(json["actor_id"], "admin-1");
    assert_eq!(json["account_id"], "acme");
    assert_eq!(json["tool"], "refund_order");
    assert_eq!(json["decision"], "blocked");
    assert_eq!(json["code"], "policy_denied");
    assert_eq!(
        json["reason"],
        "policy denied: refunds are frozen for the audit"
    );
    // A blocked call is never keyed: the key is computed only for a proposal.
    assert_eq!(json["idempotency_key"], serde_json::Value::Null);
    let back: cairnloop::json::AuditEvent = serde_json::from_value(json).unwrap();
    assert_eq!(back, outcome.audit);
}

#[test]
fn blocked_reasons_serialise_with_their_code() {
    let (actor, desk) = (Actor::new("a", &[]), Desk::default());
    let reason = blocked(call(
        &actor,
        &desk,
        "lookup_order",
        r#"{"order": "x", "extra": 1}"#,
    ));
    let json = serde_json::to_value(&reason).unwrap();
    assert_eq!(json["code"], "needs_input");
    assert_eq!(json["errors"][0]["path"], "/extra");
    assert_eq!(json["errors"][1]["path"], "/order");
    assert_eq!(json["errors"][1]["code"], "invalid_type");
}

#[test]
fn every_decision_names_its_code_as_the_audit_does() {
    let (actor, desk) = (admin(), Desk::default());
    for (name, arguments, code) in [
        ("lookup_order", r#"{"order": 1001}"#, "execute"),
        (
            "refund_order",
            r#"{"order": 1, "cents": 5, "reason": "late"}"#,
            "await_approval",
        ),
        ("no_such_tool", "{}", "blocked"),
    ] {
        let outcome = call(&actor, &desk, name, arguments);
        assert_eq!(outcome.audit.decision, code);
        let ran_or_waits = match code {
            "execute" => "executed",
            "await_approval" => "awaiting_approval",
            _ => "unknown_tool",
        };
        assert_eq!(outcome.outcome.code(), ran_or_waits);
    }
}

#[test]
fn the_governance_debugs_with_what_decides() {
    let governance: Governance<Desk> =
        Governance::new().with_limits(InputLimits::new().with_max_depth(4));
    assert_eq!(
        format!("{governance:?}"),
        "Governance { mode_policy: ModePolicy { tier_floor: [Auto, Auto, Auto, Auto], \
         tier_quorum: [1, 1, 1, 1], hook: false }, limits: InputLimits { max_bytes: 65536, max_depth: 4, \
         max_string_bytes: 16384 } }"
    );
}

#[test]
fn host_limits_apply_and_depth_is_capped_at_the_parsers_limit() {
    let (actor, desk) = (admin(), Desk::default());
    let arguments = r#"{"order": 1001}"#;
    let small =
        Governance::new().with_limits(InputLimits::new().with_max_bytes(arguments.len() - 1));
    let outcome = call_governed(
        &actor,
        &desk,
        &ToolCall::new("lookup_order", arguments),
        small,
    );
    assert_eq!(
        field_errors(outcome),
        [(String::new(), "too_large".to_owned())]
    );
    let exact = Governance::new().with_limits(InputLimits::new().with_max_bytes(arguments.len()));
    let outcome = call_governed(
        &actor,
        &desk,
        &ToolCall::new("lookup_order", arguments),
        exact,
    );
    assert_eq!(outcome.audit.decision, "execute");
    assert_eq!(InputLimits::new().with_max_depth(121).max_depth(), 120);
    assert_eq!(InputLimits::new().with_max_depth(120).max_depth(), 120);
    assert_eq!(InputLimits::new().with_max_depth(119).max_depth(), 119);
}

#[test]
fn field_errors_read_as_path_message_and_code() {
    let (actor, desk) = (admin(), Desk::default());
    let outcome = call(
        &actor,
        &desk,
        "internal_note",
        r#"{"ticket": 0, "body": " "}"#,
    );
    let Blocked::NeedsInput { errors } = blocked(outcome) else {
        panic!("expected NeedsInput")
    };
    assert_eq!(errors.omitted(), 0);
    assert_eq!(
        errors.to_string(),
        "/ticket: ticket numbers start at 1 (out_of_range); /body: the note is empty (required)"
    );
    let first = errors.iter().next().unwrap();
    assert_eq!(first.message(), "ticket numbers start at 1");
    assert_eq!(
        format!("{errors:?}"),
        r#"[FieldError { path: "/ticket", code: "out_of_range", message: "ticket numbers start at 1" }, FieldError { path: "/body", code: "required", message: "the note is empty" }]"#
    );
    let whole = field_errors(call(&actor, &desk, "lookup_order", "[]"));
    assert_eq!(whole[0].0, "");
    let Blocked::NeedsInput { errors } = blocked(call(&actor, &desk, "lookup_order", "[]")) else {
        panic!("expected NeedsInput")
    };
    assert_eq!(
        errors.to_string(),
        "arguments must be a JSON object, not an array (not_an_object)"
    );
}

#[test]
fn gate_1_three_bad_fields_are_three_errors() {
    let (actor, desk) = (admin(), Desk::default());
    /// (tool, arguments, every (path, code) expected)
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: [Case<'_>; 6] = [
        // Every missing field, not only the first serde names.
        (
            "refund_order",
            r#"{}"#,
            &[
                ("/cents", "required"),
                ("/order", "required"),
                ("/reason", "required"),
            ],
        ),
        // Missing fields together with a wrong type and an unknown field.
        (
            "refund_order",
            r#"{"cents": "seven", "zzz": true}"#,
            &[
                ("/cents", "invalid_type"),
                ("/order", "required"),
                ("/reason", "required"),
                ("/zzz", "unknown_field"),
            ],
        ),
        (
            "refund_order",
            r#"{"order": 1}"#,
            &[("/cents", "required"), ("/reason", "required")],
        ),
        (
            "refund_order",
            r#"{"order": "seven", "cents": -1, "reason": "Damaged"}"#,
            &[
                ("/cents", "invalid_value"),
                ("/order", "invalid_type"),
                ("/reason", "invalid_value"),
            ],
        ),
        // A missing field is reported with an unknown one (this input denies unknown
        // fields in serde).
        (
            "refund_order",
            r#"{"extra": 1, "order": 7, "reason": "late"}"#,
            &[("/cents", "required"), ("/extra", "unknown_field")],
        ),
        // Every field of another tool, an optional one too.
        (
            "internal_note",
            r#"{"ticket": "x", "body": 5, "api_token": 7}"#,
            &[
                ("/api_token", "invalid_type"),
                ("/body", "invalid_type"),
                ("/ticket", "invalid_type"),
            ],
        ),
    ];
    for (tool, arguments, expected) in cases {
        let errors = field_errors(call(&actor, &desk, tool, arguments));
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(path, code)| ((*path).to_owned(), (*code).to_owned()))
            .collect();
        assert_eq!(errors, expected, "{arguments}");
    }
}
