//! The MCP server goes through the governor: what it answers, and that every call's
//! decision reaches the governor's audit sink.

#[path = "../../tests/fixtures/calls.rs"]
mod calls;
#[path = "../../tests/fixtures/desk.rs"]
mod desk;

use std::sync::Arc;

use cairnloop::Governor;
use cairnloop::approvals::AuditRecord;
use cairnloop::mcp::McpServer;
use calls::Collect;
use desk::{DESK, Desk};

#[test]
fn every_mcp_call_reaches_the_audit_sink() {
    let sink = Arc::new(Collect::default());
    let governor = Arc::new(Governor::new(&DESK).with_audit_sink(Arc::clone(&sink)));
    let server = McpServer::new(Arc::clone(&governor), Desk::default(), "agent-7")
        .with_account("acme")
        .with_scopes(["orders:read", "tickets:write"]);
    let calls = [
        ("lookup_order", r#"{"order": 1001}"#),
        ("internal_note", r#"{"ticket": 4, "body": "Called."}"#),
        (
            "refund_order",
            r#"{"order": 1, "cents": 5, "reason": "late"}"#,
        ),
        ("lookup_order", r#"{"order": "x"}"#),
        ("no_such_tool", "{}"),
    ];
    for (name, arguments) in calls {
        let _ = pollster::block_on(server.call_tool_text(name, arguments));
    }
    let decisions: Vec<(String, String)> = sink
        .decisions()
        .into_iter()
        .map(|event| {
            let outcome = event.code.unwrap_or(event.decision);
            (event.tool.into_owned(), outcome.into_owned())
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("lookup_order", "execute"),
            ("internal_note", "await_approval"),
            ("refund_order", "scope_missing"),
            ("lookup_order", "needs_input"),
            ("no_such_tool", "unknown_tool"),
        ]
        .map(|(tool, code)| (tool.to_owned(), code.to_owned()))
    );
    // The proposal's lane was opened, and its opening is in the sink too.
    let opened = sink
        .records()
        .iter()
        .filter(|record| matches!(record, AuditRecord::Transition(_)))
        .count();
    assert_eq!(opened, 1);
}

#[test]
fn results_say_what_the_governor_decided() {
    // 2023-11-14T22:13:20Z.
    let clock = cairnloop::approvals::ManualClock::new(
        cairnloop::gate::Timestamp::from_unix_millis(1_700_000_000_000),
    );
    let governor = Arc::new(Governor::new(&DESK).with_clock(clock));
    let server = McpServer::new(governor, Desk::default(), "agent-7")
        .with_account("acme")
        .with_scopes(["orders:read", "tickets:write"]);
    let ran =
        pollster::block_on(server.call_tool_text("lookup_order", r#"{"order": 1001}"#)).unwrap();
    assert_eq!(ran.is_error, Some(false));
    let waits = pollster::block_on(
        server.call_tool_text("internal_note", r#"{"ticket": 4, "body": "Called."}"#),
    )
    .unwrap();
    let body = waits.structured_content.unwrap();
    assert_eq!(body["status"], "awaiting_approval");
    // A proposal lives 48 hours by default.
    assert_eq!(body["expires_at"], "2023-11-16T22:13:20Z", "{body}");
    assert_eq!(body["risk_tier"], "low_write");
    assert_eq!(
        body["required_scopes"],
        serde_json::json!(["tickets:write"])
    );
    assert_eq!(ran.structured_content.unwrap()["status"], "executed");
    let blocked =
        pollster::block_on(server.call_tool_text("lookup_order", r#"{"order": 1, "order": 2}"#))
            .unwrap();
    assert_eq!(blocked.is_error, Some(true));
    assert_eq!(blocked.structured_content.unwrap()["code"], "needs_input");
    let unknown = pollster::block_on(server.call_tool_text("Lookup_Order", "{}")).unwrap_err();
    assert_eq!(unknown.code.0, -32602);
}

/// Counts how often its JSON Schema is generated.
static SCHEMAS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[derive(serde::Deserialize, serde::Serialize)]
struct Counted {
    n: u32,
}

impl schemars::JsonSchema for Counted {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Counted".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        SCHEMAS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        schemars::json_schema!({
            "type": "object",
            "properties": { "n": { "type": "integer", "format": "uint32", "minimum": 0 } },
            "required": ["n"]
        })
    }
}

struct CountedTool;

impl cairnloop::Tool for CountedTool {
    const SPEC: cairnloop::ToolSpec = cairnloop::ToolSpec::new(
        "counted",
        "Counted",
        "Counts.",
        cairnloop::RiskTier::ReadOnly,
    );
    const SCOPES: &'static [cairnloop::Scope] = &[];
    type Input = Counted;
    type Output = u32;
    type Error = String;
    type Context = ();
    fn validate(_: &Counted) -> Result<(), cairnloop::InputErrors> {
        Ok(())
    }
    fn authorize(_: &cairnloop::Actor<'_>, _: &()) -> Result<(), cairnloop::PolicyDenial> {
        Ok(())
    }
    async fn run(call: cairnloop::Invocation<'_, Self>) -> Result<u32, String> {
        Ok(call.input().n)
    }
}

#[test]
fn input_schemas_are_computed_once_and_reused() {
    static COUNTED: cairnloop::Registry<()> =
        cairnloop::Registry::new(&[cairnloop::ToolEntry::mcp::<CountedTool>()]);
    let server = McpServer::new(Arc::new(Governor::new(&COUNTED)), (), "agent-7");
    for _ in 0..5 {
        let tools = server.list_tools_for_actor().unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(
            tools[0].input_schema["properties"]["n"]["maximum"],
            4_294_967_295_u64
        );
    }
    // Another server over the same registry (a session of its own) reuses them too.
    let another = McpServer::new(Arc::new(Governor::new(&COUNTED)), (), "agent-8");
    assert_eq!(another.list_tools_for_actor().unwrap().len(), 1);
    assert_eq!(SCHEMAS.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// Checks `value` against `schema` for the keywords a result schema uses (`type`, `enum`,
/// `properties`, `required`, `items`): written here, apart from the server, the way a
/// strict client reads the schema.
fn conforms(schema: &serde_json::Value, value: &serde_json::Value, at: &str) -> Result<(), String> {
    use serde_json::Value;
    if let Some(kind) = schema.get("type").and_then(Value::as_str) {
        let fits = match kind {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            other => return Err(format!("{at}: no check for type {other}")),
        };
        if !fits {
            return Err(format!("{at}: {value} is not of type {kind}"));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {allowed:?}"));
    }
    for name in schema["required"].as_array().into_iter().flatten() {
        if value.get(name.as_str().unwrap_or("")).is_none() {
            return Err(format!("{at}: {name} is required"));
        }
    }
    if let (Some(properties), Some(object)) = (schema["properties"].as_object(), value.as_object())
    {
        for (name, field) in object {
            if let Some(property) = properties.get(name) {
                conforms(property, field, &format!("{at}/{name}"))?;
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (index, item) in array.iter().enumerate() {
            conforms(items, item, &format!("{at}/{index}"))?;
        }
    }
    Ok(())
}

#[test]
fn every_result_matches_the_output_schema_the_tool_advertised() {
    use cairnloop::gate::{Timestamp, Ttl};
    let clock =
        cairnloop::approvals::ManualClock::new(Timestamp::from_unix_millis(1_700_000_000_000));
    let governor = Arc::new(Governor::new(&DESK).with_clock(clock.clone()));
    let admin = McpServer::new(Arc::clone(&governor), Desk::default(), "agent-7")
        .with_account("acme")
        .with_scopes(desk::EVERY_SCOPE.iter().copied());
    let reader = McpServer::new(Arc::clone(&governor), Desk::default(), "agent-8")
        .with_scopes(["orders:read"]);
    // Each result with the tool it answers for.
    let call = |server: &McpServer<Desk>, tool: &'static str, arguments: &str| {
        (
            tool,
            pollster::block_on(server.call_tool_text(tool, arguments)).unwrap(),
        )
    };
    let note = |ticket: u32| format!(r#"{{"ticket": {ticket}, "body": "Called."}}"#);
    let mut results = vec![
        call(&admin, "lookup_order", r#"{"order": 1001}"#),
        call(&admin, "lookup_order", r#"{"order": 7}"#),
        call(&admin, "refund_order", r#"{"cents": "seven", "zzz": true}"#),
        call(&reader, "lookup_order", r#"{"order": 1001}"#),
        call(
            &reader,
            "refund_order",
            r#"{"order": 1, "cents": 5, "reason": "late"}"#,
        ),
        call(&admin, "delete_customer", r#"{"customer": 5}"#),
    ];
    let waiting = call(&admin, "internal_note", &note(1));
    let key = |(_, result): &(&str, rmcp::model::CallToolResult)| {
        result.structured_content.as_ref().unwrap()["proposal_id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    pollster::block_on(governor.reject(&key(&waiting), "ops-lead", "not today")).unwrap();
    results.extend([waiting, call(&admin, "internal_note", &note(1))]);
    let deferred = call(&admin, "internal_note", &note(2));
    pollster::block_on(governor.defer(&key(&deferred), "ops-lead", "ask first")).unwrap();
    results.extend([deferred, call(&admin, "internal_note", &note(2))]);
    let approved = call(&admin, "internal_note", &note(3));
    pollster::block_on(governor.approve(&key(&approved), "ops-lead")).unwrap();
    results.extend([approved, call(&admin, "internal_note", &note(3))]);
    results.push(call(&admin, "internal_note", &note(4)));
    clock.advance(Ttl::from_secs(49 * 3600));
    results.push(call(&admin, "internal_note", &note(4)));

    let schemas: std::collections::HashMap<String, serde_json::Value> = DESK
        .mcp_tools()
        .unwrap()
        .into_iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap().to_owned(),
                tool["outputSchema"].clone(),
            )
        })
        .collect();
    let mut statuses = Vec::new();
    for (tool, result) in &results {
        let body = result.structured_content.as_ref().unwrap();
        conforms(&schemas[*tool], body, "").unwrap_or_else(|error| panic!("{error} in {body}"));
        statuses.push(body["status"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        statuses,
        [
            "executed",
            "failed",
            "blocked",
            "blocked",
            "blocked",
            "blocked",
            "awaiting_approval",
            "rejected",
            "awaiting_approval",
            "awaiting_approval",
            "awaiting_approval",
            "executed",
            "awaiting_approval",
            "expired",
        ]
    );
}

#[test]
fn the_by_name_listing_leaves_out_typed_only_tools_and_the_typed_one_names_them() {
    let governor = Governor::new(&DESK);
    let admin = cairnloop::Actor::new("admin-1", desk::EVERY_SCOPE).with_account("acme");
    let desk = Desk::default();
    let by_name: Vec<&str> = governor
        .visible(&admin, &desk)
        .map(|entry| entry.spec().name())
        .collect();
    assert!(!by_name.contains(&"typed_only"), "{by_name:?}");
    // Whatever a model is shown, a call by name does not block as not callable by name.
    for name in &by_name {
        let call = cairnloop::ToolCall::new(name, "{}");
        let outcome = pollster::block_on(governor.call(&call, &admin, &desk)).unwrap();
        assert_ne!(outcome.code(), "not_callable_by_name", "{name}");
    }
    let typed: Vec<&str> = governor
        .visible_typed(&admin, &desk)
        .map(|entry| entry.spec().name())
        .collect();
    assert!(typed.contains(&"typed_only"), "{typed:?}");
}
