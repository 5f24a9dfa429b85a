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
        .map(|event| (event.tool, event.code.unwrap_or(event.decision)))
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
