//! The core's contract: wire names, the fail-closed derivation, the run-time twins of the
//! compile-time rules, and the registry's exact-match lookup and visibility filter.

use cairnloop::gate::{Verdict, verdict_for, visible};
use cairnloop::{
    Actor, ApprovalMode, Blocked, InputErrors, Invocation, ModePolicy, PolicyDenial, Registry,
    RiskTier, Scope, SpecError, Tool, ToolEntry, ToolSpec, derive_approval_mode,
};

#[test]
fn derive_approval_mode_maps_every_tier_and_fails_closed() {
    for (tier, mode) in [
        (RiskTier::ReadOnly, ApprovalMode::Auto),
        (RiskTier::LowWrite, ApprovalMode::RequiresApproval),
        (RiskTier::HighWrite, ApprovalMode::RequiresApproval),
        (RiskTier::Destructive, ApprovalMode::AlwaysBlock),
    ] {
        assert_eq!(derive_approval_mode(Some(tier)), mode, "{tier}");
    }
    assert_eq!(derive_approval_mode(None), ApprovalMode::AlwaysBlock);
    for unknown in [
        "",
        "admin",
        "Read_Only",
        "READ_ONLY",
        "read-only",
        " read_only",
        "readonly",
    ] {
        assert_eq!(
            derive_approval_mode(RiskTier::parse(unknown)),
            ApprovalMode::AlwaysBlock,
            "{unknown:?}"
        );
    }
}

#[test]
fn derive_approval_mode_is_usable_in_const_items() {
    const MODE: ApprovalMode = derive_approval_mode(RiskTier::parse("high_write"));
    const UNKNOWN: ApprovalMode = derive_approval_mode(RiskTier::parse("shred"));
    assert_eq!(MODE, ApprovalMode::RequiresApproval);
    assert_eq!(UNKNOWN, ApprovalMode::AlwaysBlock);
}

#[test]
fn a_higher_tier_never_derives_a_less_strict_mode() {
    for pair in RiskTier::ALL.windows(2) {
        assert!(pair[0] < pair[1]);
        assert!(pair[0].derived_approval_mode() <= pair[1].derived_approval_mode());
    }
    assert!(ApprovalMode::ALL.is_sorted());
}

#[test]
fn wire_names_are_exact_and_round_trip() {
    let tiers = ["read_only", "low_write", "high_write", "destructive"];
    for (tier, name) in RiskTier::ALL.into_iter().zip(tiers) {
        assert_eq!(tier.as_str(), name);
        assert_eq!(tier.to_string(), name);
        assert_eq!(RiskTier::parse(name), Some(tier));
        assert_eq!(name.parse::<RiskTier>(), Ok(tier));
    }
    let modes = ["auto", "requires_approval", "always_block"];
    for (mode, name) in ApprovalMode::ALL.into_iter().zip(modes) {
        assert_eq!(mode.as_str(), name);
        assert_eq!(mode.to_string(), name);
        assert_eq!(ApprovalMode::parse(name), Some(mode));
        assert_eq!(name.parse::<ApprovalMode>(), Ok(mode));
    }
}

#[test]
fn case_variants_and_near_misses_do_not_parse() {
    let near_misses = [
        "",
        " ",
        "Auto",
        "AUTO",
        "auto ",
        " auto",
        "auto\n",
        "auto\0",
        "requires-approval",
        "requiresApproval",
        "always_block_",
        "alwaysblock",
        "ReadOnly",
        "read_only\u{200b}",
        "reаd_only", // Cyrillic а
        "Destructive",
        "destructive\t",
        "low write",
        "high_Write",
        "none",
        "null",
    ];
    for s in near_misses {
        assert_eq!(RiskTier::parse(s), None, "{s:?}");
        assert_eq!(ApprovalMode::parse(s), None, "{s:?}");
        assert!(s.parse::<RiskTier>().is_err());
        assert!(s.parse::<ApprovalMode>().is_err());
    }
    let err = "Auto".parse::<ApprovalMode>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown approval mode, expected auto, requires_approval or always_block"
    );
    assert_eq!(
        format!("{err:?}"),
        r#"ParseError("unknown approval mode, expected auto, requires_approval or always_block")"#
    );
}

#[cfg(feature = "std")]
#[test]
fn timestamps_read_the_clock_and_print_in_milliseconds() {
    use cairnloop::gate::Timestamp;
    // 2026-01-01T00:00:00Z: the machine's clock is past it, and `now` never wraps.
    let now = Timestamp::now().expect("a clock after the epoch");
    assert!(now.unix_millis() > 1_767_225_600_000, "{now}");
    assert_eq!(Timestamp::from_unix_millis(1250).to_string(), "1250ms");
}

#[test]
fn a_policy_denial_gives_its_reason() {
    assert_eq!(PolicyDenial::NoPolicyDefined.reason(), "no policy defined");
    let denial = PolicyDenial::Denied("refunds above 500 EUR need a supervisor");
    assert_eq!(denial.reason(), "refunds above 500 EUR need a supervisor");
    assert_eq!(denial.to_string(), denial.reason());
}

#[test]
fn strictest_is_the_maximum() {
    for a in ApprovalMode::ALL {
        for b in ApprovalMode::ALL {
            assert_eq!(a.strictest(b), a.max(b));
        }
    }
}

#[test]
fn run_time_twins_report_each_rule() {
    use SpecError::*;
    let t = RiskTier::ReadOnly;
    assert_eq!(ToolSpec::try_new("", "T", "D", t), Err(InvalidName));
    assert_eq!(
        ToolSpec::try_new("n".repeat(65).leak(), "T", "D", t),
        Err(InvalidName)
    );
    assert!(ToolSpec::try_new("n".repeat(64).leak(), "T", "D", t).is_ok());
    assert_eq!(ToolSpec::try_new("a.b", "T", "D", t), Err(InvalidName));
    assert_eq!(ToolSpec::try_new("n", "", "D", t), Err(EmptyTitle));
    assert_eq!(ToolSpec::try_new("n", " \t", "D", t), Err(EmptyTitle));
    assert_eq!(
        ToolSpec::try_new("n", "a\u{2028}b", "D", t),
        Err(TitleControlCharacter)
    );
    assert_eq!(
        ToolSpec::try_new("n", "a\tb", "D", t),
        Err(TitleControlCharacter)
    );
    assert_eq!(ToolSpec::try_new("n", "T", "\n", t), Err(EmptyDescription));
    assert_eq!(
        ToolSpec::try_new("n", "T", "a\u{1b}[31m", t),
        Err(DescriptionControlCharacter)
    );
    assert!(ToolSpec::try_new("n", "T", "line one\n\tline two", t).is_ok());

    let write = ToolSpec::try_new("n", "T", "D", RiskTier::HighWrite).unwrap();
    assert_eq!(
        write.try_with_approval(ApprovalMode::Auto),
        Err(WeakerApprovalMode)
    );
    assert_eq!(
        write.try_loosen_approval(ApprovalMode::Auto, ""),
        Err(MissingJustification)
    );
    assert_eq!(
        write.try_loosen_approval(ApprovalMode::Auto, "a\nb"),
        Err(MissingJustification)
    );
    assert_eq!(
        write.try_loosen_approval(ApprovalMode::RequiresApproval, "same"),
        Err(NotALoosening)
    );
    let wipe = ToolSpec::try_new("n", "T", "D", RiskTier::Destructive).unwrap();
    assert_eq!(
        wipe.try_loosen_approval(ApprovalMode::Auto, "backups"),
        Err(DestructiveAuto)
    );
    assert_eq!(
        wipe.try_with_approval(ApprovalMode::Auto),
        Err(WeakerApprovalMode)
    );
    assert_eq!(wipe.try_with_result_states(&[""]), Err(InvalidResultState));
    assert_eq!(
        wipe.try_with_result_states(&["a", "b", "a"]),
        Err(DuplicateResultState)
    );

    assert_eq!(Scope::try_new(""), Err(InvalidScope));
    assert_eq!(Scope::try_new("a\u{a0}b"), Err(InvalidScope));
    assert_eq!(Scope::try_new("*"), Err(WildcardScope));
    assert_eq!(Scope::try_new("aLl"), Err(WildcardScope));
    let many: Vec<Scope> = (0..65)
        .map(|i| Scope::try_new(format!("s{i}").leak()).unwrap())
        .collect();
    assert_eq!(Scope::check_list(&many), Err(TooManyScopes));
    assert_eq!(Scope::check_list(&many[..64]), Ok(()));
}

#[test]
fn declared_result_states_are_kept_in_order() {
    let spec = ToolSpec::new("t", "T", "D", RiskTier::ReadOnly)
        .with_result_states(&["found", "not_found"]);
    assert_eq!(spec.result_states(), ["found", "not_found"]);
    let twin = ToolSpec::try_new("t", "T", "D", RiskTier::ReadOnly)
        .and_then(|s| s.try_with_result_states(&["ok"]))
        .unwrap();
    assert_eq!(twin.result_states(), ["ok"]);
}

#[test]
fn a_loosening_keeps_its_justification_and_a_tightening_drops_it() {
    let loose = ToolSpec::new("tag", "Tag", "Tags.", RiskTier::LowWrite)
        .loosen_approval(ApprovalMode::Auto, "cosmetic");
    assert_eq!(loose.loosened_because(), Some("cosmetic"));
    let tight = loose.with_approval(ApprovalMode::AlwaysBlock);
    assert_eq!(tight.approval_mode(), ApprovalMode::AlwaysBlock);
    assert_eq!(tight.loosened_because(), None);
}

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;

struct Ctx {
    on_call: bool,
}

macro_rules! tool {
    ($ty:ident, $name:literal, $tier:expr, [$($scope:literal),*], $authorize:expr) => {
        struct $ty;
        impl Tool for $ty {
            const SPEC: ToolSpec = ToolSpec::new($name, "A tool", "Does a thing.", $tier);
            const SCOPES: &'static [Scope] = &[$(Scope::new($scope)),*];
            type Input = ();
            type Output = ();
            type Error = ();
            type Context = Ctx;
            fn validate(_: &()) -> Result<(), InputErrors> {
                Ok(())
            }
            fn authorize(actor: &Actor<'_>, ctx: &Ctx) -> Result<(), PolicyDenial> {
                let f: fn(&Actor<'_>, &Ctx) -> Result<(), PolicyDenial> = $authorize;
                f(actor, ctx)
            }
            async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
                Ok(())
            }
        }
    };
}

tool!(
    DeleteFile,
    "delete_file",
    RiskTier::Destructive,
    ["files:delete"],
    |_, c| {
        if c.on_call {
            Ok(())
        } else {
            Err(PolicyDenial::Denied("only while on call"))
        }
    }
);
tool!(
    ReadFile,
    "read_file",
    RiskTier::ReadOnly,
    ["files:read"],
    |_, _| Ok(())
);
tool!(
    Audit,
    "audit",
    RiskTier::ReadOnly,
    ["files:read", "audit:read"],
    |_, _| Ok(())
);

struct NoPolicy;
impl Tool for NoPolicy {
    const SPEC: ToolSpec =
        ToolSpec::new("no_policy", "No policy", "Forgot one.", RiskTier::ReadOnly);
    const SCOPES: &'static [Scope] = &[];
    type Input = ();
    type Output = ();
    type Error = ();
    type Context = Ctx;
    fn validate(_: &()) -> Result<(), InputErrors> {
        Ok(())
    }
    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

static TOOLS: Registry<Ctx> = Registry::new(&[
    ToolEntry::of::<DeleteFile>(),
    ToolEntry::of::<ReadFile>(),
    ToolEntry::of::<Audit>(),
    ToolEntry::of::<NoPolicy>(),
]);

#[test]
fn registry_resolves_names_by_exact_bytes_only() {
    assert_eq!(
        TOOLS.get("delete_file").unwrap().spec().name(),
        "delete_file"
    );
    let near_misses = [
        "Delete_File",
        "DELETE_FILE",
        "delete_file ",
        " delete_file",
        "delete_file\n",
        "delete\u{200B}file",
        "dеlete_file",
        "delete_file\0",
        "delete-file",
        "deletefile",
        "delete_fil",
        "",
        "delete_file\u{feff}",
        "ｄelete_file",
    ];
    for name in near_misses {
        assert!(TOOLS.get(name).is_none(), "{name:?} resolved");
    }
    assert!(TOOLS.get(&"a".repeat(1 << 20)).is_none());
}

#[test]
fn registry_lists_every_tool_in_order() {
    let names: Vec<_> = TOOLS.tools().iter().map(|t| t.spec().name()).collect();
    assert_eq!(names, ["delete_file", "read_file", "audit", "no_policy"]);
}

#[test]
fn visibility_uses_scopes_and_policy_and_denies_by_default() {
    let ops = Actor::new("ops", &["files:read", "files:delete", "audit:read"]);
    let on_call = Ctx { on_call: true };
    let off_call = Ctx { on_call: false };
    let names = |actor: &Actor<'_>, ctx: &Ctx| -> Vec<&str> {
        visible(&TOOLS, actor, ctx, &ModePolicy::new())
            .map(|t| t.spec().name())
            .collect()
    };
    // delete_file passes its scopes and (on call) its policy, but a destructive tool is
    // always blocked: visible means callable, so it is never listed.
    assert_eq!(names(&ops, &on_call), ["read_file", "audit"]);
    assert_eq!(names(&ops, &off_call), ["read_file", "audit"]);
    let delete = TOOLS.get("delete_file").unwrap();
    assert!(matches!(
        verdict_for(delete, &ops, &on_call, &ModePolicy::new()),
        Verdict::Blocked(Blocked::AlwaysBlocked { .. })
    ));
    assert!(matches!(
        verdict_for(delete, &ops, &off_call, &ModePolicy::new()),
        Verdict::Blocked(Blocked::PolicyDenied { .. })
    ));
    let reader = Actor::new("reader", &["files:read"]);
    assert_eq!(names(&reader, &on_call), ["read_file"]);
    let wildcards = Actor::new(
        "w",
        &["*", "all", "files:*", "files", "FILES:READ", "files:read "],
    );
    assert!(names(&wildcards, &on_call).is_empty());

    // The same gates explain themselves.
    let audit = TOOLS.get("audit").unwrap();
    match verdict_for(audit, &reader, &on_call, &ModePolicy::new()) {
        Verdict::Blocked(Blocked::ScopeMissing { missing }) => {
            assert_eq!(
                missing.iter().map(Scope::as_str).collect::<Vec<_>>(),
                ["audit:read"]
            );
        }
        other => panic!("expected a missing scope, got {other:?}"),
    }
    let no_policy = TOOLS.get("no_policy").unwrap();
    assert!(matches!(
        verdict_for(no_policy, &ops, &on_call, &ModePolicy::new()),
        Verdict::Blocked(Blocked::PolicyDenied {
            reason: PolicyDenial::NoPolicyDefined
        })
    ));
}

#[test]
fn registry_twin_rejects_duplicate_names_ignoring_ascii_case() {
    static A: [ToolEntry<Ctx>; 2] = [ToolEntry::of::<ReadFile>(), ToolEntry::of::<ReadFile>()];
    assert_eq!(
        Registry::try_new(&A).err(),
        Some(SpecError::DuplicateToolName)
    );
}

#[test]
fn a_registry_holds_at_most_max_tools() {
    let entry = ToolEntry::of::<ReadFile>();
    let too_many: &'static [ToolEntry<Ctx>] =
        Vec::leak(vec![entry; cairnloop::declare::MAX_TOOLS + 1]);
    assert_eq!(
        Registry::try_new(too_many).err(),
        Some(SpecError::TooManyTools)
    );
    let many_same: &'static [ToolEntry<Ctx>] = Vec::leak(vec![entry; 5000]);
    assert_eq!(
        Registry::try_new(many_same).err(),
        Some(SpecError::DuplicateToolName)
    );
}

#[cfg(feature = "serde")]
mod serde_wire {
    use super::*;

    #[test]
    fn serde_uses_exactly_the_wire_names() {
        for tier in RiskTier::ALL {
            let json = serde_json::to_string(&tier).unwrap();
            assert_eq!(json, format!("\"{}\"", tier.as_str()));
            assert_eq!(serde_json::from_str::<RiskTier>(&json).unwrap(), tier);
        }
        for mode in ApprovalMode::ALL {
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.as_str()));
            assert_eq!(serde_json::from_str::<ApprovalMode>(&json).unwrap(), mode);
        }
        for bad in [
            "\"ReadOnly\"",
            "\"READ_ONLY\"",
            "\"read_only \"",
            "0",
            "null",
            "\"\"",
        ] {
            assert!(serde_json::from_str::<RiskTier>(bad).is_err(), "{bad}");
            assert!(serde_json::from_str::<ApprovalMode>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_spec_serializes_with_its_justification() {
        let spec = ToolSpec::new("tag", "Tag", "Tags.", RiskTier::LowWrite)
            .loosen_approval(ApprovalMode::Auto, "cosmetic");
        let json = serde_json::to_value(spec).unwrap();
        assert_eq!(json["risk_tier"], "low_write");
        assert_eq!(json["approval_mode"], "auto");
        assert_eq!(json["loosened_because"], "cosmetic");
    }
}

mod typed_pipeline {
    use super::*;
    use cairnloop::{Blocked, Decision, ModePolicy, decide};

    plain_tool!(Refund(u32) -> Result<(), ()>, (),
        ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::HighWrite),
        [],
        |call| { Ok(()) },
        preview |cents, out| { Some(write!(out, "Refund {cents} cents")) }
    );

    plain_tool!(Note(u32) -> Result<(), ()>, (),
        ToolSpec::new("note", "Plain", "A plain tool.", RiskTier::LowWrite),
        [],
        |call| { Ok(()) }
    );

    plain_tool!(ReadOnlyTyped(u32) -> Result<(), ()>, (),
        ToolSpec::new("typed", "Plain", "A plain tool.", RiskTier::ReadOnly),
        [],
        |call| { Ok(()) }
    );

    #[test]
    fn a_pending_call_writes_the_tools_own_preview_or_none() {
        let actor = Actor::new("agent", &[]);
        let Decision::AwaitApproval(pending) =
            decide::<Refund>(1250, &actor, &(), &ModePolicy::new())
        else {
            panic!("expected approval")
        };
        let mut text = String::new();
        assert_eq!(pending.write_preview(&mut text), Some(Ok(())));
        assert_eq!(text, "Refund 1250 cents");
        assert_eq!(*pending.input(), 1250);
        assert_eq!(pending.actor().id(), "agent");
        assert_eq!(pending.mode().resolved(), ApprovalMode::RequiresApproval);
        let debug = format!("{pending:?}");
        assert!(
            debug.starts_with("Pending { tool: \"refund\", actor: \"agent\""),
            "{debug}"
        );

        let Decision::AwaitApproval(pending) = decide::<Note>(1, &actor, &(), &ModePolicy::new())
        else {
            panic!("expected approval")
        };
        let mut text = String::new();
        assert_eq!(pending.write_preview(&mut text), None);
        assert!(text.is_empty());
        assert!(
            format!("{:?}", Decision::AwaitApproval(pending))
                .starts_with("AwaitApproval(Pending {")
        );
    }

    #[test]
    fn an_invocation_debugs_with_tool_input_and_actor() {
        let actor = Actor::new("agent", &["notes:write"]);
        let Decision::Execute { call, .. } =
            decide::<ReadOnlyTyped>(7, &actor, &(), &ModePolicy::new())
        else {
            panic!("expected execute")
        };
        assert_eq!(
            format!("{call:?}"),
            r#"Invocation { tool: "typed", input: 7, actor: Actor { id: "agent", account: None, scopes: ["notes:write"] }, .. }"#
        );
    }

    #[test]
    fn a_tool_has_no_custom_ui_unless_it_names_one() {
        assert_eq!(ReadOnlyTyped::custom_ui(), None);
        assert_eq!(Refund::custom_ui(), None);
    }

    #[test]
    fn decisions_and_blocks_debug_as_their_variants() {
        let actor = Actor::new("agent", &[]);
        let executed = decide::<ReadOnlyTyped>(1, &actor, &(), &ModePolicy::new());
        assert!(format!("{executed:?}").starts_with("Execute { tool: \"typed\""));
        let blocked: Vec<String> = [
            Blocked::UnknownTool,
            Blocked::NotCallableByName,
            Blocked::PolicyDenied {
                reason: PolicyDenial::NoPolicyDefined,
            },
            Blocked::AlwaysBlocked {
                decided_by: cairnloop::gate::ModeSource::Hook,
            },
        ]
        .iter()
        .map(|b| format!("{b:?}"))
        .collect();
        assert_eq!(
            blocked,
            [
                "UnknownTool",
                "NotCallableByName",
                "PolicyDenied(NoPolicyDefined)",
                "AlwaysBlocked(Hook)"
            ]
        );
        let denied = decide::<NoPolicy>((), &actor, &Ctx { on_call: true }, &ModePolicy::new());
        assert_eq!(
            format!("{denied:?}"),
            "Blocked(PolicyDenied(NoPolicyDefined))"
        );
    }
}

#[test]
fn run_time_twins_borrow_their_text_and_leak_nothing() {
    use cairnloop::declare::{ScopeOf, ToolSpecOf};
    // Text as a host reads it from configuration: owned, dropped when the host is done.
    let config = [
        String::from("export_report"),
        String::from("Export report"),
        String::from("Exports the monthly report."),
        String::from("reports:read"),
        String::from("rendered"),
        String::from("read-only export of data the caller may already see"),
    ];
    let states = [config[4].as_str()];
    let spec = ToolSpecOf::try_new(&config[0], &config[1], &config[2], RiskTier::LowWrite)
        .and_then(|spec| spec.try_with_result_states(&states))
        .and_then(|spec| spec.try_loosen_approval(ApprovalMode::Auto, &config[5]))
        .unwrap();
    assert_eq!(
        (spec.name(), spec.result_states(), spec.loosened_because()),
        ("export_report", &["rendered"][..], Some(config[5].as_str()))
    );
    let scope = ScopeOf::try_new(&config[3]).unwrap();
    assert!(scope.is_granted_by(&["reports:read"]));
    let bad = String::from("export report");
    assert_eq!(
        ToolSpecOf::try_new(&bad, "Export", "Exports.", RiskTier::ReadOnly),
        Err(SpecError::InvalidName)
    );
    assert_eq!(ScopeOf::try_new(&bad), Err(SpecError::InvalidScope));
}
