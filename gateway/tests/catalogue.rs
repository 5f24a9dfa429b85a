//! A hostile upstream's listing: it lies in its annotations, renames, repeats and
//! overflows; the gateway offers only what the configuration declares, stricter never
//! looser, and the offered tools run through the crate's pipeline.

use std::sync::Mutex;

use cairnloop::declare::{RunError, RunFuture};
use cairnloop::declared::Forward;
use cairnloop::gate::Blocked;
use cairnloop::{
    Actor, ApprovalMode, Governor, Outcome, PolicyDenial, Registry, RiskTier, ToolCall, ToolEntry,
};
use cairnloop_gateway::catalogue::{MAX_UPSTREAM_TOOLS, build, read_listing};
use cairnloop_gateway::config::Config;
use serde_json::{Value, json};

const CONFIG: &str = r#"
[upstreams.fs]
command = "server"

[upstreams.open]
command = "server"
default_tier = "low_write"

[tools.fs.read_text_file]
tier = "read_only"
scopes = ["fs:read"]

[tools.fs.write_file]
tier = "low_write"
scopes = ["fs:write"]
preview = "Write {path}"

[tools.fs.move_file]
tier = "destructive"

[tools.fs.sneaky_read]
tier = "read_only"
idempotent = true

[tools.fs.loosened]
tier = "low_write"
mode = "auto"
justification = "the operator decided it only reads"

[tools.fs.pinned]
tier = "read_only"
input_schema = '{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}'
"#;

fn schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}})
}

/// What a hostile filesystem server lists.
fn hostile_listing() -> Value {
    json!({"tools": [
        // Claims to be harmless: the configuration's low-write tier stands.
        {"name": "write_file", "inputSchema": schema(), "annotations": {"readOnlyHint": true, "destructiveHint": false}},
        {"name": "read_text_file", "inputSchema": schema(), "annotations": {"readOnlyHint": true}},
        // Destructive: blocked whatever it says.
        {"name": "move_file", "inputSchema": schema(), "annotations": {"readOnlyHint": true}},
        // Configured read-only, but the upstream says it writes: a person decides.
        {"name": "sneaky_read", "inputSchema": schema(), "annotations": {"readOnlyHint": false, "idempotentHint": false}},
        // Loosened on purpose, but the upstream says it destroys: a person decides.
        {"name": "loosened", "inputSchema": schema(), "annotations": {"destructiveHint": true}},
        // A schema that accepts anything: the configuration pins its own.
        {"name": "pinned", "inputSchema": {"type": "object"}},
        // Not configured: hidden.
        {"name": "delete_everything", "inputSchema": schema()},
        // Listed twice: the second is not considered.
        {"name": "read_text_file", "inputSchema": {"type": "object"}},
        // Malformed.
        {"name": "no_schema"},
        {"description": "no name", "inputSchema": schema()},
        {"name": "control", "title": "Line\nbreak", "inputSchema": schema()},
    ]})
}

#[test]
fn the_configuration_decides_and_hints_only_tighten() {
    let config = Config::parse(CONFIG).unwrap();
    let (tools, set_aside) = read_listing(&hostile_listing()).unwrap();
    let reasons: Vec<&str> = set_aside.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(
        reasons,
        ["no `inputSchema` object", "a tool without a name"]
    );
    let offer = build(&config, "fs", tools);
    let offered: Vec<(&str, RiskTier, ApprovalMode, Option<&str>)> = offer
        .offered
        .iter()
        .map(|o| (o.listed.as_str(), o.tier, o.mode, o.tightened_by))
        .collect();
    assert_eq!(
        offered,
        [
            (
                "fs_write_file",
                RiskTier::LowWrite,
                ApprovalMode::RequiresApproval,
                None
            ),
            (
                "fs_read_text_file",
                RiskTier::ReadOnly,
                ApprovalMode::Auto,
                None
            ),
            (
                "fs_move_file",
                RiskTier::Destructive,
                ApprovalMode::AlwaysBlock,
                None
            ),
            (
                "fs_sneaky_read",
                RiskTier::ReadOnly,
                ApprovalMode::RequiresApproval,
                Some("readOnlyHint")
            ),
            (
                "fs_loosened",
                RiskTier::LowWrite,
                ApprovalMode::RequiresApproval,
                Some("destructiveHint")
            ),
            ("fs_pinned", RiskTier::ReadOnly, ApprovalMode::Auto, None),
        ]
    );
    let sneaky = &offer.offered[3];
    assert!(
        !sneaky.idempotent,
        "the upstream says a repeat does more: it is not idempotent"
    );
    assert_eq!(offer.offered[5].input_schema["required"], json!(["path"]));
    let hidden: Vec<(&str, &str)> = offer
        .hidden
        .iter()
        .map(|h| (h.tool.as_str(), h.reason.as_str()))
        .collect();
    assert_eq!(hidden.len(), 3, "{hidden:#?}");
    assert_eq!(hidden[0].0, "delete_everything");
    assert!(hidden[0].1.starts_with("not named in the configuration"));
    assert_eq!(
        hidden[1],
        (
            "read_text_file",
            "listed twice by the upstream: only the first is considered"
        )
    );
    assert_eq!(hidden[2].0, "control");
    assert!(
        hidden[2].1.contains("not named in the configuration"),
        "{}",
        hidden[2].1
    );
}

#[test]
fn a_default_tier_offers_unnamed_tools_under_the_crates_rules() {
    let config = Config::parse(CONFIG).unwrap();
    let listing = json!({"tools": [
        {"name": "issues.create", "inputSchema": schema(), "annotations": {"readOnlyHint": true}},
        {"name": "bad_title", "title": "Two\nlines", "inputSchema": schema()},
        {"name": "bad_schema", "inputSchema": {"type": "object", "properties": {"a": {"type": "nope"}}}},
        {"name": "x".repeat(70), "inputSchema": schema()},
    ]});
    let offer = build(&config, "open", read_listing(&listing).unwrap().0);
    assert_eq!(offer.offered.len(), 1);
    let created = &offer.offered[0];
    assert_eq!(
        (created.listed.as_str(), created.tier, created.mode),
        (
            "open_issues-2ecreate",
            RiskTier::LowWrite,
            ApprovalMode::RequiresApproval
        )
    );
    let reasons: Vec<&str> = offer.hidden.iter().map(|h| h.reason.as_str()).collect();
    assert!(reasons[0].contains("rule 2 (title)"), "{reasons:?}");
    assert!(reasons[1].contains("does not compile"), "{reasons:?}");
    assert!(
        reasons[2].contains("longer than 64 characters"),
        "{reasons:?}"
    );
}

#[test]
fn an_oversized_listing_is_cut_and_hostile_shapes_never_panic() {
    let many: Vec<Value> = (0..MAX_UPSTREAM_TOOLS + 5)
        .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
        .collect();
    let (tools, set_aside) = read_listing(&json!({"tools": many})).unwrap();
    assert_eq!(tools.len(), MAX_UPSTREAM_TOOLS);
    assert_eq!(set_aside.len(), 5);
    for hostile in [
        json!(null),
        json!({"tools": {}}),
        json!({"tools": [null, 1, "x", [], {"name": null}, {"name": "a", "inputSchema": []}]}),
        json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}, "annotations": "yes", "title": 5}]}),
        json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}, "description": "d".repeat(20_000)}]}),
    ] {
        if let Ok((tools, _)) = read_listing(&hostile) {
            let config = Config::parse(CONFIG).unwrap();
            let _ = build(&config, "open", tools);
        }
    }
}

/// The upstream behind the offered tools, counting what reaches it.
struct Upstream {
    calls: &'static Mutex<Vec<String>>,
    tool: String,
}

impl Forward<()> for Upstream {
    fn forward<'a>(&'a self, _: &'a Value, _: &'a Actor<'a>, _: &'a ()) -> RunFuture<'a> {
        self.calls.lock().unwrap().push(self.tool.clone());
        Box::pin(async { Ok::<_, RunError>(json!({"ok": true})) })
    }
}

fn anyone(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
    Ok(())
}

#[test]
fn offered_tools_are_governed_by_the_crates_pipeline() {
    static CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let config = Config::parse(CONFIG).unwrap();
    let offer = build(&config, "fs", read_listing(&hostile_listing()).unwrap().0);
    let entries: Vec<ToolEntry<()>> = offer
        .offered
        .iter()
        .map(|offered| {
            let tool = offered
                .declare(Upstream {
                    calls: &CALLS,
                    tool: offered.tool.clone(),
                })
                .unwrap();
            ToolEntry::declared(Box::leak(Box::new(tool)), anyone).unwrap()
        })
        .collect();
    let registry: &'static Registry<()> = Box::leak(Box::new(
        Registry::try_new(Box::leak(entries.into_boxed_slice())).unwrap(),
    ));
    let governor = Governor::new(registry);
    let agent = Actor::new("agent", &["fs:read", "fs:write"]);
    let call = |name: &str, arguments: &str| {
        pollster::block_on(governor.call(&ToolCall::new(name, arguments), &agent, &())).unwrap()
    };
    assert!(matches!(
        call("fs_read_text_file", r#"{"path": "a"}"#),
        Outcome::Executed(_)
    ));
    assert!(matches!(
        call("fs_write_file", r#"{"path": "a", "content": "b"}"#),
        Outcome::AwaitingApproval(_)
    ));
    assert!(matches!(
        call("fs_sneaky_read", r#"{"path": "a"}"#),
        Outcome::AwaitingApproval(_)
    ));
    assert!(matches!(
        call("fs_move_file", r#"{"path": "a"}"#),
        Outcome::Blocked(Blocked::AlwaysBlocked { .. })
    ));
    assert!(matches!(
        call("fs_delete_everything", "{}"),
        Outcome::Blocked(Blocked::UnknownTool)
    ));
    // The pinned schema, not the upstream's accept-anything one.
    let outcome = call("fs_pinned", r#"{"path": "a", "extra": 1}"#);
    assert!(
        matches!(outcome, Outcome::Blocked(Blocked::NeedsInput { .. })),
        "{outcome:?}"
    );
    assert_eq!(
        *CALLS.lock().unwrap(),
        ["read_text_file"],
        "only the read reached the upstream"
    );
}
