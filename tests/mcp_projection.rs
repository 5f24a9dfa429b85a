//! MCP projection: each tier's annotations, `_meta`, the input schema's `required` and
//! `additionalProperties`, that the schema agrees with the input gate, and that a model
//! is listed exactly the tools it may call.
#![cfg(feature = "mcp")]

use cairnloop::mcp::ProjectionError;
use cairnloop::{
    Actor, ApprovalMode, Governance, Governor, ModePolicy, Outcome, Registry, RiskTier, ToolCall,
    ToolEntry, ToolSpec,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;

#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code, reason = "decoded, not read")]
struct Refund {
    order: u32,
    cents: u64,
    #[serde(default)]
    note: Option<String>,
    reason: Reason,
    lines: Vec<Line>,
    #[serde(default)]
    tags: std::collections::BTreeMap<String, u32>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Reason {
    Damaged,
    Late,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code, reason = "decoded, not read")]
struct Line {
    sku: String,
    qty: u16,
}

macro_rules! tool {
    ($ty:ident, $spec:expr, $input:ty) => {
        plain_tool!($ty($input) -> Result<(), String>, (), $spec, ["desk:use"], |call| { Ok(()) });
    };
}

tool!(
    ReadTool,
    ToolSpec::new("read_tool", "Read", "Reads.", RiskTier::ReadOnly)
        .idempotent()
        .closed_world(),
    Refund
);
tool!(
    LowTool,
    ToolSpec::new("low_tool", "Low", "Writes a little.", RiskTier::LowWrite),
    Refund
);
tool!(
    HighTool,
    ToolSpec::new("high_tool", "High", "Writes a lot.", RiskTier::HighWrite),
    Refund
);
tool!(
    WipeTool,
    ToolSpec::new("wipe_tool", "Wipe", "Destroys.", RiskTier::Destructive)
        .loosen_approval(ApprovalMode::RequiresApproval, "test data only"),
    Refund
);
tool!(
    NumberTool,
    ToolSpec::new(
        "number_tool",
        "Number",
        "Takes a number.",
        RiskTier::ReadOnly
    ),
    u32
);

static TOOLS: Registry<()> = Registry::new(&[
    ToolEntry::mcp::<ReadTool>(),
    ToolEntry::mcp::<LowTool>(),
    ToolEntry::mcp::<HighTool>(),
    ToolEntry::mcp::<WipeTool>(),
]);

fn entry(name: &str) -> Value {
    TOOLS.get(name).unwrap().mcp_tool().unwrap()
}

#[test]
fn annotations_are_explicit_for_every_tier() {
    let expected = [
        ("read_tool", true, false, true, false, "read_only", "auto"),
        (
            "low_tool",
            false,
            false,
            false,
            true,
            "low_write",
            "requires_approval",
        ),
        (
            "high_tool",
            false,
            true,
            false,
            true,
            "high_write",
            "requires_approval",
        ),
        (
            "wipe_tool",
            false,
            true,
            false,
            true,
            "destructive",
            "requires_approval",
        ),
    ];
    for (name, read_only, destructive, idempotent, open_world, tier, mode) in expected {
        let tool = entry(name);
        let annotations = tool["annotations"].as_object().unwrap();
        assert_eq!(annotations["readOnlyHint"], read_only, "{name}");
        assert_eq!(annotations["destructiveHint"], destructive, "{name}");
        assert_eq!(annotations["idempotentHint"], idempotent, "{name}");
        assert_eq!(annotations["openWorldHint"], open_world, "{name}");
        assert_eq!(tool["_meta"]["io.cairnloop/risk_tier"], tier);
        assert_eq!(tool["_meta"]["io.cairnloop/approval_mode"], mode);
    }
}

#[test]
fn name_title_and_description_come_from_the_spec() {
    let tool = entry("high_tool");
    assert_eq!(tool["name"], "high_tool");
    assert_eq!(tool["title"], "High");
    assert_eq!(tool["description"], "Writes a lot.");
    // The set of keys; their order is serde_json's map order (sorted, or as inserted
    // when a dependency turns on `preserve_order`).
    let mut keys: Vec<&str> = tool
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "_meta",
            "annotations",
            "description",
            "inputSchema",
            "name",
            "outputSchema",
            "title"
        ]
    );
}

#[test]
fn every_object_in_the_schema_is_closed_and_lists_what_it_requires() {
    let schema = entry("read_tool")["inputSchema"].clone();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["cents", "lines", "order", "reason"]);
    let line = &schema["$defs"]["Line"];
    assert_eq!(line["additionalProperties"], false);
    assert_eq!(line["required"], json!(["sku", "qty"]));
    assert!(schema.get("title").is_none());
    // A map stays open to any key, with its value schema; only objects are closed.
    let tags = &schema["properties"]["tags"];
    assert_eq!(tags["type"], "object");
    assert_eq!(tags["additionalProperties"]["type"], "integer");
    assert_eq!(tags["required"], json!([]));
    let order = schema["properties"]["order"].as_object().unwrap();
    assert!(!order.contains_key("required") && !order.contains_key("additionalProperties"));
}

#[test]
fn integer_bounds_in_the_schema_are_what_the_decoder_accepts() {
    let schema = entry("read_tool")["inputSchema"].clone();
    let bounds = |path: &Value| (path["minimum"].clone(), path["maximum"].clone());
    // `order: u32` holds 0 to 4294967295; `cents: u64` is cut to 2^53 - 1, past which the
    // decoder refuses a number as not exact; a map's integer values are bounded too.
    assert_eq!(
        bounds(&schema["properties"]["order"]),
        (json!(0), json!(4_294_967_295_u64))
    );
    assert_eq!(
        bounds(&schema["properties"]["cents"]),
        (json!(0), json!(9_007_199_254_740_991_u64))
    );
    assert_eq!(
        bounds(&schema["properties"]["tags"]["additionalProperties"]),
        (json!(0), json!(4_294_967_295_u64))
    );
    // And the decoder agrees at each edge.
    let actor = Actor::new("a", &["desk:use"]);
    let governor = Governor::new(&TOOLS);
    let code = |order: &str, cents: &str| {
        let args =
            format!(r#"{{"order": {order}, "cents": {cents}, "reason": "late", "lines": []}}"#);
        let outcome =
            pollster::block_on(governor.call(&ToolCall::new("read_tool", &args), &actor, &()));
        outcome.expect("recorded").code()
    };
    assert_eq!(code("4294967295", "9007199254740991"), "executed");
    assert_eq!(code("4294967296", "1"), "needs_input");
    assert_eq!(code("1", "9007199254740992"), "needs_input");
    assert_eq!(code("-1", "1"), "needs_input");
}

#[test]
fn the_schema_agrees_with_the_input_gate() {
    let actor = Actor::new("a", &["desk:use"]);
    let valid = r#"{"order": 1, "cents": 5, "reason": "late", "lines": [{"sku": "A", "qty": 1}]}"#;
    let missing = r#"{"order": 1, "cents": 5, "lines": []}"#;
    let extra = r#"{"order": 1, "cents": 5, "reason": "late", "lines": [], "x": 1}"#;
    let nested_extra =
        r#"{"order": 1, "cents": 5, "reason": "late", "lines": [{"sku": "A", "qty": 1, "x": 1}]}"#;
    let governor = Governor::new(&TOOLS);
    let call = |args| {
        let outcome =
            pollster::block_on(governor.call(&ToolCall::new("read_tool", args), &actor, &()));
        match outcome.expect("recorded") {
            Outcome::Executed(_) => "execute",
            Outcome::Blocked(_) => "blocked",
            other => panic!("unexpected {}", other.code()),
        }
    };
    assert_eq!(call(valid), "execute");
    let tagged =
        r#"{"order": 1, "cents": 5, "reason": "late", "lines": [], "tags": {"any key": 1}}"#;
    assert_eq!(call(tagged), "execute");
    for rejected in [missing, extra, nested_extra] {
        assert_eq!(call(rejected), "blocked", "{rejected}");
    }
}

#[test]
fn a_tool_without_a_schema_or_with_a_non_object_input_is_an_error_not_an_entry() {
    static WITHOUT: Registry<()> = Registry::new(&[ToolEntry::json::<ReadTool>()]);
    assert_eq!(
        WITHOUT.mcp_tools(),
        Err(ProjectionError::NoSchema { tool: "read_tool" })
    );
    static TYPED: Registry<()> = Registry::new(&[ToolEntry::of::<NumberTool>()]);
    assert_eq!(
        TYPED.mcp_tools(),
        Ok(vec![]),
        "typed-only tools are not offered by name"
    );
    static NUMBER: Registry<()> = Registry::new(&[ToolEntry::mcp::<NumberTool>()]);
    assert!(matches!(
        NUMBER.mcp_tools(),
        Err(ProjectionError::InputNotAnObject {
            tool: "number_tool",
            ..
        })
    ));
}

#[test]
fn the_listing_for_an_actor_uses_the_visibility_check() {
    assert_eq!(TOOLS.mcp_tools().unwrap().len(), 4);
    let governor = Governor::new(&TOOLS);
    let outsider = Actor::new("b", &["desk:*"]);
    assert!(governor.mcp_tools_for(&outsider, &()).unwrap().is_empty());
    let insider = Actor::new("a", &["desk:use"]);
    assert_eq!(governor.mcp_tools_for(&insider, &()).unwrap().len(), 4);
}

plain_tool!(
    /// A destructive tool left at its derived mode: every call is blocked.
    Shred(Refund) -> Result<(), String>, (),
    ToolSpec::new("shred", "Shred", "Shreds a file.", RiskTier::Destructive),
    ["desk:use"],
    |call| { Ok(()) }
);
#[test]
fn an_always_blocked_tool_is_absent_from_the_listing_and_from_tools_list() {
    static WITH_SHRED: Registry<()> =
        Registry::new(&[ToolEntry::mcp::<ReadTool>(), ToolEntry::mcp::<Shred>()]);
    let governor = Governor::new(&WITH_SHRED);
    let insider = Actor::new("a", &["desk:use"]);
    let listed: Vec<&str> = governor
        .visible(&insider, &())
        .map(|e| e.spec().name())
        .collect();
    assert_eq!(listed, ["read_tool"]);
    let names: Vec<Value> = governor
        .mcp_tools_for(&insider, &())
        .unwrap()
        .into_iter()
        .map(|tool| tool["name"].clone())
        .collect();
    assert_eq!(names, [json!("read_tool")]);
    // The operator's view still shows it, with the gate that blocks it.
    let shred = governor
        .verdicts(&insider, &())
        .find(|(entry, _)| entry.spec().name() == "shred")
        .map(|(_, verdict)| verdict.code());
    assert_eq!(shred, Some("blocked"));
}

/// A host that wants a person to approve even the read-only tools.
fn reads_need_approval() -> Governor<()> {
    let policy = ModePolicy::new().with_tier(RiskTier::ReadOnly, ApprovalMode::RequiresApproval);
    Governor::new(&TOOLS).with_governance(Governance::new().with_mode_policy(policy))
}

/// The approval mode `read_tool` carries in `_meta` in a listing.
fn read_mode<T: std::borrow::Borrow<Value>>(tools: &[T]) -> Option<&str> {
    let tool = tools
        .iter()
        .map(std::borrow::Borrow::borrow)
        .find(|tool: &&Value| tool["name"] == "read_tool")?;
    tool["_meta"]["io.cairnloop/approval_mode"].as_str()
}

#[test]
fn a_listing_for_an_actor_carries_the_mode_in_force_for_that_actor() {
    let insider = Actor::new("a", &["desk:use"]);
    // The declaration alone: read-only runs at once.
    assert_eq!(read_mode(&TOOLS.mcp_tools().unwrap()), Some("auto"));
    let plain = Governor::new(&TOOLS);
    let listed = plain.mcp_tools_for(&insider, &()).unwrap();
    assert_eq!(read_mode(&listed), Some("auto"));
    // With the host's override, a call of it awaits a person: the listing says so.
    let governor = reads_need_approval();
    let listed = governor.mcp_tools_for(&insider, &()).unwrap();
    assert_eq!(read_mode(&listed), Some("requires_approval"));
    // The tightened entry is this listing's own: the shared projection is unchanged.
    assert_eq!(read_mode(&TOOLS.mcp_tools().unwrap()), Some("auto"));
    assert_eq!(
        read_mode(&plain.mcp_tools_for(&insider, &()).unwrap()),
        Some("auto")
    );
    let call = ToolCall::new(
        "read_tool",
        r#"{"order": 1, "cents": 5, "reason": "late", "lines": []}"#,
    );
    let outcome = pollster::block_on(governor.call(&call, &insider, &()));
    assert!(
        matches!(outcome, Ok(Outcome::AwaitingApproval(_))),
        "{outcome:?}"
    );
}

#[cfg(feature = "rmcp")]
#[test]
fn tools_list_carries_the_mode_in_force_for_its_caller() {
    /// What `tools/list` answers the server's caller over `governor`, as JSON.
    fn served(governor: Governor<()>) -> Vec<Value> {
        cairnloop::mcp::McpServer::new(std::sync::Arc::new(governor), (), "a")
            .with_scopes(["desk:use"])
            .list_tools_for_actor()
            .unwrap()
            .into_iter()
            .map(|tool| serde_json::to_value(tool).unwrap())
            .collect()
    }
    assert_eq!(
        read_mode(&served(reads_need_approval())),
        Some("requires_approval")
    );
    // The projection is shared by every server over the registry: another caller's
    // listing is not changed by this one's.
    assert_eq!(read_mode(&served(Governor::new(&TOOLS))), Some("auto"));
}

/// An input whose JSON Schema counts how often it is generated.
#[derive(Deserialize, Serialize)]
#[allow(dead_code, reason = "decoded, not read")]
struct Counted {
    n: u32,
}

static SCHEMAS_MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl JsonSchema for Counted {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Counted".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        SCHEMAS_MADE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = generator;
        schemars::json_schema!({
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0}},
            "required": ["n"],
            "additionalProperties": false
        })
    }
}

plain_tool!(
    CountedTool,
    "counted",
    ReadOnly,
    [],
    |input: Counted| -> u32 { input.n }
);

static COUNTED: Registry<()> = Registry::new(&[ToolEntry::mcp::<CountedTool>()]);

#[test]
fn schemas_are_made_once_per_registry_and_shared() {
    let governor = Governor::new(&COUNTED);
    let actor = Actor::new("agent", &[]);
    let first = governor.mcp_tools_for(&actor, &()).unwrap();
    let made = SCHEMAS_MADE.load(std::sync::atomic::Ordering::SeqCst);
    assert!(made >= 1);
    for _ in 0..10 {
        assert_eq!(governor.mcp_tools_for(&actor, &()).unwrap(), first);
        assert_eq!(COUNTED.mcp_tools().unwrap(), first);
    }
    // Another governor over the same registry shares what was made.
    let other = Governor::new(&COUNTED);
    assert_eq!(other.mcp_tools_for(&actor, &()).unwrap(), first);
    assert_eq!(SCHEMAS_MADE.load(std::sync::atomic::Ordering::SeqCst), made);
    assert_eq!(first[0]["inputSchema"]["required"], json!(["n"]));
}
