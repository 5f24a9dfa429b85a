//! Tools declared from data go through the one pipeline: every field error from their
//! JSON Schema, the strict parse, deny by default, approvals bound to the exact call and
//! run once, destructive never. The upstream here counts what reaches it.
#![cfg(feature = "declared")]

use std::sync::Mutex;

use cairnloop::declare::{RunError, RunFuture, ScopeOf, ToolSpecOf};
use cairnloop::declared::{DeclaredTool, Forward, Template};
use cairnloop::gate::Blocked;
use cairnloop::{Actor, Governor, Outcome, PolicyDenial, Registry, RiskTier, ToolCall, ToolEntry};
use serde_json::{Value, json};

/// An upstream that records each call it receives.
struct Upstream {
    calls: &'static Mutex<Vec<(String, Value)>>,
    tool: &'static str,
}

impl Forward<()> for Upstream {
    fn forward<'a>(&'a self, arguments: &'a Value, _: &'a Actor<'a>, _: &'a ()) -> RunFuture<'a> {
        self.calls
            .lock()
            .unwrap()
            .push((self.tool.to_owned(), arguments.clone()));
        Box::pin(async move { Ok::<_, RunError>(json!({"done": self.tool})) })
    }
}

/// A registry of `tool` alone, callable by anyone, for the rest of the run.
fn alone(tool: DeclaredTool<()>) -> &'static Registry<()> {
    let tool: &'static DeclaredTool<()> = Box::leak(Box::new(tool));
    let entries: &'static [ToolEntry<()>] =
        Box::leak(Box::new([ToolEntry::declared(tool, anyone).unwrap()]));
    Box::leak(Box::new(Registry::try_new(entries).unwrap()))
}

/// `put`, a file write of `tier`, forwarded to an upstream that records it in `calls`.
fn put(tier: RiskTier, calls: &'static Mutex<Vec<(String, Value)>>) -> DeclaredTool<()> {
    let spec = ToolSpecOf::try_new("put", "Put", "Writes a file.", tier).unwrap();
    DeclaredTool::new(&spec, &[], file_schema(), Upstream { calls, tool: "put" }).unwrap()
}

fn anyone(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
    Ok(())
}

fn nobody(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
    Err(PolicyDenial::NoPolicyDefined)
}

static CALLS: Mutex<Vec<(String, Value)>> = Mutex::new(Vec::new());

fn file_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "content": {"type": "string"}
        },
        "required": ["path", "content"],
        "additionalProperties": false
    })
}

fn tool(
    name: &'static str,
    tier: RiskTier,
    scopes: &[&str],
    schema: Value,
) -> &'static DeclaredTool<()> {
    let spec = ToolSpecOf::try_new(name, name, "Declared in a test.", tier).unwrap();
    let scopes: Vec<ScopeOf<'_>> = scopes
        .iter()
        .map(|s| ScopeOf::try_new(s).unwrap())
        .collect();
    let declared = DeclaredTool::new(
        &spec,
        &scopes,
        schema,
        Upstream {
            calls: &CALLS,
            tool: name,
        },
    )
    .unwrap();
    let declared = if tier == RiskTier::LowWrite {
        declared.with_preview(Template::parse("Write {path}").unwrap())
    } else {
        declared
    };
    Box::leak(Box::new(declared))
}

/// The registry, built once for the process (a gateway builds its catalogue at start).
fn registry() -> &'static Registry<()> {
    static REGISTRY: std::sync::OnceLock<&'static Registry<()>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| {
        let entries = vec![
            ToolEntry::declared(
                tool("read_file", RiskTier::ReadOnly, &["fs:read"], file_schema()),
                anyone,
            )
            .unwrap(),
            ToolEntry::declared(
                tool(
                    "write_file",
                    RiskTier::LowWrite,
                    &["fs:write"],
                    file_schema(),
                ),
                anyone,
            )
            .unwrap(),
            ToolEntry::declared(
                tool(
                    "move_file",
                    RiskTier::Destructive,
                    &["fs:write"],
                    file_schema(),
                ),
                anyone,
            )
            .unwrap(),
            ToolEntry::declared(
                tool("secret_file", RiskTier::ReadOnly, &[], file_schema()),
                nobody,
            )
            .unwrap(),
        ];
        let entries: &'static [ToolEntry<()>] = Box::leak(entries.into_boxed_slice());
        Box::leak(Box::new(Registry::try_new(entries).unwrap()))
    })
}

fn calls_of(tool: &str) -> Vec<Value> {
    CALLS
        .lock()
        .unwrap()
        .iter()
        .filter(|(name, _)| name == tool)
        .map(|(_, arguments)| arguments.clone())
        .collect()
}

const AGENT: Actor<'static> = Actor::new("agent-7", &["fs:read", "fs:write"]);

fn call(governor: &Governor<()>, tool: &str, arguments: &str) -> Outcome {
    pollster::block_on(governor.call(&ToolCall::new(tool, arguments), &AGENT, &())).unwrap()
}

#[test]
fn a_read_runs_at_once_with_the_checked_arguments() {
    let governor = Governor::new(registry());
    let outcome = call(
        &governor,
        "read_file",
        r#"{"path": "/srv/a.txt", "content": ""}"#,
    );
    assert!(
        matches!(&outcome, Outcome::Executed(output) if *output == json!({"done": "read_file"})),
        "{outcome:?}"
    );
    assert!(calls_of("read_file").contains(&json!({"path": "/srv/a.txt", "content": ""})));
}

#[test]
fn every_field_error_comes_in_one_answer_and_nothing_is_forwarded() {
    let governor = Governor::new(registry());
    let outcome = call(
        &governor,
        "write_file",
        r#"{"content": 5, "zzz": true, "path": ""}"#,
    );
    let Outcome::Blocked(Blocked::NeedsInput { errors }) = outcome else {
        panic!("expected field errors, got {outcome:?}");
    };
    let found: Vec<(&str, &str)> = errors.iter().map(|e| (e.path(), e.code())).collect();
    assert_eq!(
        found,
        [
            ("/content", "invalid_type"),
            ("/path", "invalid_length"),
            ("/zzz", "unknown_field")
        ]
    );
    let outcome = call(&governor, "write_file", "{}");
    let Outcome::Blocked(Blocked::NeedsInput { errors }) = outcome else {
        panic!("expected field errors, got {outcome:?}");
    };
    let found: Vec<(&str, &str)> = errors.iter().map(|e| (e.path(), e.code())).collect();
    assert_eq!(found, [("/content", "required"), ("/path", "required")]);
    // Nothing that failed its schema reached the upstream.
    assert!(
        calls_of("write_file")
            .iter()
            .all(|a| a.get("zzz").is_none() && a["content"].is_string() && a["path"] != "")
    );
}

#[test]
fn the_strict_parse_holds_for_declared_tools_too() {
    let governor = Governor::new(registry());
    for arguments in [
        r#"{"path": "a", "path": "b", "content": "x"}"#,
        r#"{"path": "a", "content": "x", "n": 9007199254740993}"#,
        r#"[1, 2]"#,
        "not json",
    ] {
        let outcome = call(&governor, "read_file", arguments);
        assert!(
            matches!(outcome, Outcome::Blocked(Blocked::NeedsInput { .. })),
            "{arguments}: {outcome:?}"
        );
    }
}

#[test]
fn a_write_waits_for_a_person_and_then_runs_once() {
    let governor = Governor::new(registry());
    let arguments = r#"{"path": "/srv/approved.txt", "content": "hello"}"#;
    let Outcome::AwaitingApproval(lane) = call(&governor, "write_file", arguments) else {
        panic!("a low-write tool waits");
    };
    assert_eq!(
        lane.proposal().preview().text(),
        r#"Write "/srv/approved.txt""#
    );
    assert_eq!(lane.proposal().risk_tier(), RiskTier::LowWrite);
    assert_eq!(lane.proposal().required_scopes(), ["fs:write"]);
    let key = lane.key();
    // Four eyes: the proposer cannot approve its own call.
    assert!(pollster::block_on(governor.approve(&key, "agent-7")).is_err());
    pollster::block_on(governor.approve(&key, "operator")).unwrap();
    // The same call, its keys in another order: the same lane, run once.
    let reordered = r#"{"content": "hello", "path": "/srv/approved.txt"}"#;
    let outcome = call(&governor, "write_file", reordered);
    assert!(matches!(outcome, Outcome::Executed(_)), "{outcome:?}");
    let outcome = call(&governor, "write_file", arguments);
    assert!(matches!(outcome, Outcome::Executed(_)), "{outcome:?}");
    let runs = calls_of("write_file")
        .into_iter()
        .filter(|a| a["path"] == "/srv/approved.txt")
        .count();
    assert_eq!(
        runs, 1,
        "an approved call runs once; its repeat answers what it returned"
    );
    // Other arguments are another call: they wait for their own approval.
    let other = r#"{"path": "/srv/approved.txt", "content": "HELLO"}"#;
    assert!(matches!(
        call(&governor, "write_file", other),
        Outcome::AwaitingApproval(_)
    ));
}

#[test]
fn a_destructive_tool_is_never_forwarded_and_policy_denies_by_default() {
    let governor = Governor::new(registry());
    let outcome = call(
        &governor,
        "move_file",
        r#"{"path": "/srv/a", "content": ""}"#,
    );
    assert!(
        matches!(outcome, Outcome::Blocked(Blocked::AlwaysBlocked { .. })),
        "{outcome:?}"
    );
    assert!(calls_of("move_file").is_empty());
    let outcome = call(
        &governor,
        "secret_file",
        r#"{"path": "/srv/a", "content": ""}"#,
    );
    assert!(
        matches!(outcome, Outcome::Blocked(Blocked::PolicyDenied { .. })),
        "{outcome:?}"
    );
    assert!(calls_of("secret_file").is_empty());
    // A caller without the scope: blocked before anything is forwarded.
    let reader = Actor::new("reader", &["fs:read"]);
    let outcome = pollster::block_on(governor.call(
        &ToolCall::new("write_file", r#"{"path": "/x", "content": ""}"#),
        &reader,
        &(),
    ))
    .unwrap();
    assert!(
        matches!(outcome, Outcome::Blocked(Blocked::ScopeMissing { .. })),
        "{outcome:?}"
    );
}

/// An upstream that goes away mid-call: whether it wrote is unknown.
struct Vanishing {
    calls: &'static std::sync::atomic::AtomicUsize,
}

impl Forward<()> for Vanishing {
    fn forward<'a>(&'a self, _: &'a Value, _: &'a Actor<'a>, _: &'a ()) -> RunFuture<'a> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async {
            Err(RunError::OutcomeUnknown(
                "the upstream exited mid-call".into(),
            ))
        })
    }
}

#[test]
fn a_run_whose_outcome_is_unknown_is_never_run_again_on_its_own() {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    // Idempotent, so a failure would be retried: an unknown outcome must not be.
    let spec = ToolSpecOf::try_new("vanish", "Vanish", "Goes away.", RiskTier::LowWrite)
        .unwrap()
        .idempotent();
    let tool = DeclaredTool::new(
        &spec,
        &[],
        json!({"type": "object"}),
        Vanishing { calls: &CALLS },
    )
    .unwrap();
    let entries: &'static [ToolEntry<()>] = Box::leak(Box::new([ToolEntry::declared(
        Box::leak(Box::new(tool)),
        anyone,
    )
    .unwrap()]));
    let registry: &'static Registry<()> = Box::leak(Box::new(Registry::try_new(entries).unwrap()));
    // Three attempts for an idempotent tool that fails: none for one whose outcome is
    // unknown.
    let governor = Governor::new(registry)
        .with_config(cairnloop::approvals::ApprovalConfig::new().with_max_attempts(3));
    let Outcome::AwaitingApproval(lane) = call(&governor, "vanish", "{}") else {
        panic!("a low-write tool waits");
    };
    pollster::block_on(governor.approve(&lane.key(), "operator")).unwrap();
    let outcome = call(&governor, "vanish", "{}");
    let Outcome::AwaitingApproval(lane) = outcome else {
        panic!("the lane says where it stands: {outcome:?}");
    };
    assert_eq!(lane.state(), cairnloop::gate::LaneState::OutcomeUnknown);
    assert_eq!(
        lane.reason(),
        Some("outcome unknown: the upstream exited mid-call")
    );
    // Asked again and again: never run again on its own.
    for _ in 0..3 {
        assert!(matches!(
            call(&governor, "vanish", "{}"),
            Outcome::AwaitingApproval(_)
        ));
    }
    assert_eq!(CALLS.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// An upstream MCP server's answer: text and an image, as a `CallToolResult`.
#[cfg(feature = "rmcp")]
struct Pictures;

#[cfg(feature = "rmcp")]
impl Forward<()> for Pictures {
    fn forward<'a>(&'a self, _: &'a Value, _: &'a Actor<'a>, _: &'a ()) -> RunFuture<'a> {
        Box::pin(async {
            Ok(json!({
                "content": [
                    {"type": "text", "text": "a picture:"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
                ],
                "isError": false
            }))
        })
    }
}

/// What an MCP client receives from a tool whose output is another server's
/// `CallToolResult`: its content blocks as they are; from any other tool, the JSON text.
#[cfg(feature = "rmcp")]
#[test]
fn an_mcp_client_is_handed_an_upstream_result_as_the_upstream_wrote_it() {
    use cairnloop::mcp::McpServer;
    use std::sync::Arc;

    let declare = |name: &'static str, call_result: bool| {
        let spec = ToolSpecOf::try_new(name, name, "Pictures.", RiskTier::ReadOnly).unwrap();
        let tool = DeclaredTool::new(&spec, &[], json!({"type": "object"}), Pictures).unwrap();
        let tool = if call_result {
            tool.with_call_result_output()
        } else {
            tool
        };
        let tool: &'static DeclaredTool<()> = Box::leak(Box::new(tool));
        ToolEntry::declared(tool, anyone).unwrap()
    };
    let entries: &'static [ToolEntry<()>] = Box::leak(Box::new([
        declare("forwarded", true),
        declare("plain", false),
    ]));
    let registry: &'static Registry<()> = Box::leak(Box::new(Registry::try_new(entries).unwrap()));
    let server = McpServer::new(Arc::new(Governor::new(registry)), (), "agent-7");

    let forwarded = pollster::block_on(server.call_tool_text("forwarded", "{}")).unwrap();
    let forwarded = serde_json::to_value(&forwarded).unwrap();
    assert_eq!(
        forwarded["content"],
        json!([
            {"type": "text", "text": "a picture:"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        ])
    );
    assert_eq!(forwarded["structuredContent"]["status"], "executed");
    assert_eq!(
        forwarded["structuredContent"]["output"]["content"][1]["type"],
        "image"
    );
    assert_eq!(forwarded["isError"], false);

    // The listing says the output is a `CallToolResult`, and the result is one: a client
    // that checks results against their schema (the Inspector's does) accepts it, and a
    // result of another shape would fail the check.
    let listed = registry.mcp_tools().unwrap();
    let schema_of = |name: &str| {
        let entry = listed.iter().find(|entry| entry["name"] == name).unwrap();
        entry["outputSchema"].clone()
    };
    let forwarded_schema = schema_of("forwarded");
    let output = &forwarded_schema["properties"]["output"];
    assert_eq!(output["type"], "object");
    assert_eq!(output["properties"]["content"]["type"], "array");
    assert_eq!(output["required"], json!(["content"]));
    let validator = jsonschema::validator_for(&forwarded_schema).unwrap();
    assert!(validator.is_valid(&forwarded["structuredContent"]));
    let mut not_a_result = forwarded["structuredContent"].clone();
    not_a_result["output"]["content"] = json!("a picture");
    assert!(!validator.is_valid(&not_a_result));
    // Any other tool's output is the forward's own JSON: nothing is promised of it.
    assert_eq!(schema_of("plain")["properties"]["output"], json!({}));

    let plain = pollster::block_on(server.call_tool_text("plain", "{}")).unwrap();
    let plain = serde_json::to_value(&plain).unwrap();
    assert_eq!(plain["content"].as_array().unwrap().len(), 1);
    assert_eq!(plain["content"][0]["type"], "text");
    assert!(
        plain["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("{\"content\"")
    );
}

/// An upstream whose answer is `text`, handed on as that text where a client is answered
/// from it, and read into a tree otherwise.
#[cfg(feature = "rmcp")]
struct Said(&'static str);

#[cfg(feature = "rmcp")]
impl Forward<()> for Said {
    fn forward<'a>(&'a self, _: &'a Value, _: &'a Actor<'a>, _: &'a ()) -> RunFuture<'a> {
        let output =
            serde_json::from_str(self.0).map_err(|error| RunError::Output(error.to_string()));
        Box::pin(async move { output })
    }

    fn forward_call_result<'a>(
        &'a self,
        _: &'a Value,
        _: &'a Actor<'a>,
        _: &'a (),
    ) -> cairnloop::declare::CallResultFuture<'a> {
        let text = serde_json::value::RawValue::from_string(self.0.into())
            .map_err(|error| RunError::Output(error.to_string()));
        Box::pin(async move { text })
    }
}

/// An upstream that fails every call.
#[cfg(feature = "rmcp")]
struct Failing;

#[cfg(feature = "rmcp")]
impl Forward<()> for Failing {
    fn forward<'a>(&'a self, _: &'a Value, _: &'a Actor<'a>, _: &'a ()) -> RunFuture<'a> {
        Box::pin(async { Err(RunError::Failed("the disk is full".into())) })
    }
}

/// The stdio transport answers a call that runs at once itself, a forwarded result from
/// its text where it can; each answer is one line, and reads as the one rmcp's handler
/// gives the same call (sent with a `_meta` the transport leaves to rmcp), for each
/// protocol version a session agrees on.
#[cfg(feature = "rmcp")]
#[tokio::test]
async fn a_forwarded_result_the_transport_answers_reads_as_the_servers_answer() {
    use cairnloop::mcp::{LineTransport, McpServer};
    use rmcp::ServiceExt;
    use std::sync::Arc;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    // Each tool answers with a `CallToolResult`, as a gateway's forwarded tools do.
    fn declare(name: &'static str, forward: impl Forward<()> + 'static) -> ToolEntry<()> {
        let spec = ToolSpecOf::try_new(name, name, "Forwarded.", RiskTier::ReadOnly).unwrap();
        let schema = json!({"type": "object"});
        let tool = DeclaredTool::new(&spec, &[], schema, forward).unwrap();
        let tool: &'static DeclaredTool<()> = Box::leak(Box::new(tool.with_call_result_output()));
        ToolEntry::declared(tool, anyone).unwrap()
    }
    let plain = r#"{"content":[{"type":"text","text":"h\u00e9llo \"x\"\n"}],"structuredContent":{"b":1,"a":[true]}}"#;
    let two_blocks =
        r#"{"content":[{"text":"a","type":"text"},{"type":"text","text":""}],"isError":false}"#;
    let over_lines = "{\n  \"content\": [{\"type\": \"text\", \"text\": \"spread\"}]\n}";
    let error_result = r#"{"content":[{"type":"text","text":"no such file"}],"isError":true}"#;
    let entries = vec![
        declare("plain", Said(plain)),
        declare("two_blocks", Said(two_blocks)),
        declare("over_lines", Said(over_lines)),
        declare("error_result", Said(error_result)),
        declare("pictures", Pictures),
        declare("failing", Failing),
    ];
    let names: Vec<&str> = entries.iter().map(|entry| entry.spec().name()).collect();
    let entries: &'static [ToolEntry<()>] = Box::leak(entries.into_boxed_slice());
    let registry: &'static Registry<()> = Box::leak(Box::new(Registry::try_new(entries).unwrap()));

    for version in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let server = McpServer::new(Arc::new(Governor::new(registry)), (), "agent-7");
        let (client, ours) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(ours);
        let transport = LineTransport::new(read, write).with_fast_calls(&server);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(transport).await {
                let _ = running.waiting().await;
            }
        });
        let (answers, mut to_server) = tokio::io::split(client);
        let mut answers = tokio::io::BufReader::new(answers).lines();
        let mut exchange = async |line: String| -> Value {
            to_server
                .write_all(format!("{line}\n").as_bytes())
                .await
                .unwrap();
            let line = answers.next_line().await.unwrap().unwrap();
            serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line}"))
        };
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        });
        assert_eq!(
            exchange(initialize.to_string()).await["result"]["protocolVersion"],
            version
        );
        for (n, name) in names.iter().enumerate() {
            let id = n * 2 + 1;
            let call = |id: usize, meta: &str| {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{}}{meta}}}}}"#
                )
            };
            // The client says it is initialized before its first call.
            let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
            let first = if n == 0 {
                format!("{initialized}\n")
            } else {
                String::new()
            };
            let mut here = exchange(first + &call(id, "")).await;
            let mut handled = exchange(call(id + 1, r#","_meta":{"trace":"t"}"#)).await;
            assert_eq!((&here["id"], &handled["id"]), (&json!(id), &json!(id + 1)));
            for answer in [&mut here, &mut handled] {
                answer.as_object_mut().unwrap().remove("id");
            }
            assert_eq!(here, handled, "{version}: {name}");
            let status = &here["result"]["structuredContent"]["status"];
            let expected = if *name == "failing" {
                "failed"
            } else {
                "executed"
            };
            assert_eq!(status, expected, "{version}: {name}: {here}");
        }
    }
}

/// A declared tool offered only to some accounts: a caller in another account, or in
/// none, is refused by its policy and does not see it listed; nothing is forwarded.
#[test]
fn an_account_rule_is_part_of_the_policy() {
    use cairnloop::gate::{ModePolicy, visible};

    static OWN: Mutex<Vec<(String, Value)>> = Mutex::new(Vec::new());
    let spec = ToolSpecOf::try_new(
        "acme_report",
        "Report",
        "Acme's report.",
        RiskTier::ReadOnly,
    )
    .unwrap();
    let tool = DeclaredTool::new(
        &spec,
        &[],
        json!({"type": "object"}),
        Upstream {
            calls: &OWN,
            tool: "acme_report",
        },
    )
    .unwrap()
    .with_accounts(["acme"]);
    let registry = alone(tool);
    let governor = Governor::new(registry);

    let acme = Actor::new("agent-7", &[]).with_account("acme");
    let globex = Actor::new("agent-7", &[]).with_account("globex");
    let nobody = Actor::new("agent-7", &[]);
    let call = ToolCall::new("acme_report", "{}");
    let outcome = |actor: &Actor<'_>| pollster::block_on(governor.call(&call, actor, &())).unwrap();

    assert!(matches!(outcome(&acme), Outcome::Executed(_)));
    for stranger in [&globex, &nobody] {
        let Outcome::Blocked(Blocked::PolicyDenied { reason }) = outcome(stranger) else {
            panic!("a caller outside the tool's accounts is refused");
        };
        assert_eq!(
            reason.reason(),
            "the tool is offered only to callers acting in other accounts"
        );
    }
    assert_eq!(
        OWN.lock().unwrap().len(),
        1,
        "only acme's call was forwarded"
    );

    let policy = ModePolicy::new();
    let listed = |actor: &Actor<'_>| visible(registry, actor, &(), &policy).count();
    assert_eq!(listed(&acme), 1);
    assert_eq!(listed(&globex), 0);
    assert_eq!(listed(&nobody), 0);
}

#[test]
fn a_tier_rule_raises_a_declared_call_from_its_arguments_and_its_caller() {
    static OWN: Mutex<Vec<(String, Value)>> = Mutex::new(Vec::new());
    // Outside /scratch a write waits; anywhere for the `intern` account it is destructive;
    // a path of "/boom" is a bug in the rule; "/lower" asks for less than the tool.
    let tool = put(RiskTier::ReadOnly, &OWN).with_tier_rule(|arguments, actor| {
        let path = arguments["path"].as_str().unwrap_or_default();
        assert_ne!(path, "/boom", "a bug in the rule");
        if actor.account() == Some("intern") {
            Some(RiskTier::Destructive)
        } else if path == "/lower" {
            Some(RiskTier::ReadOnly)
        } else {
            (!path.starts_with("/scratch/")).then_some(RiskTier::HighWrite)
        }
    });
    let registry = alone(tool);
    let governor = Governor::new(registry);
    let staff = Actor::new("agent-7", &[]).with_account("staff");
    let intern = Actor::new("agent-7", &[]).with_account("intern");
    let outcome = |path: &str, actor: &Actor<'_>| {
        let arguments = json!({"path": path, "content": "x"}).to_string();
        pollster::block_on(governor.call(&ToolCall::new("put", &arguments), actor, &())).unwrap()
    };

    assert!(matches!(
        outcome("/scratch/a", &staff),
        Outcome::Executed(_)
    ));
    assert!(matches!(outcome("/lower", &staff), Outcome::Executed(_)));
    let Outcome::AwaitingApproval(lane) = outcome("/etc/passwd", &staff) else {
        panic!("a write outside the scratch folder waits for a person");
    };
    assert_eq!(lane.proposal().risk_tier(), RiskTier::HighWrite);
    assert!(matches!(
        outcome("/scratch/a", &intern),
        Outcome::Blocked(Blocked::AlwaysBlocked { .. })
    ));
    assert!(matches!(
        outcome("/boom", &staff),
        Outcome::Blocked(Blocked::TierRuleFailed)
    ));
    let forwarded: Vec<String> = OWN
        .lock()
        .unwrap()
        .iter()
        .map(|(_, arguments)| arguments["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(forwarded, ["/scratch/a", "/lower"]);
}

/// A rule that says why it raised a call: the reason is kept with the proposal, in the
/// decision's audit record and in what the model is told, and only for a call it raised.
#[test]
fn a_rules_reason_travels_with_the_call_it_raised_and_only_with_it() {
    use cairnloop::approvals::AuditRecord;
    static OWN: Mutex<Vec<(String, Value)>> = Mutex::new(Vec::new());
    let tool = put(RiskTier::LowWrite, &OWN).with_explained_tier_rule(|arguments, _| {
        match arguments["path"].as_str() {
            Some("/etc/passwd") => Some((RiskTier::HighWrite, "outside the scratch folder".into())),
            // Asks for the tool's own tier, and for less: nothing raised, nothing to say.
            Some("/same") => Some((RiskTier::LowWrite, "the same tier".into())),
            Some("/lower") => Some((RiskTier::ReadOnly, "a lower tier".into())),
            _ => None,
        }
    });
    let registry = alone(tool);
    let governor = Governor::new(registry);
    let agent = Actor::new("agent-7", &[]);
    let waiting = |path: &str| {
        let arguments = json!({"path": path, "content": "x"}).to_string();
        let call = ToolCall::new("put", &arguments);
        match pollster::block_on(governor.call(&call, &agent, &())).unwrap() {
            Outcome::AwaitingApproval(lane) => lane,
            other => panic!("{path} should wait for a person: {other:?}"),
        }
    };

    let raised = waiting("/etc/passwd");
    assert_eq!(raised.proposal().risk_tier(), RiskTier::HighWrite);
    assert_eq!(
        raised.proposal().raised_because(),
        Some("outside the scratch folder")
    );
    let reply = Outcome::AwaitingApproval(raised.clone()).into_reply();
    assert_eq!(reply.body()["raised_because"], "outside the scratch folder");
    assert!(
        reply
            .text()
            .contains("Its arguments made it high_write: outside the scratch folder."),
        "{}",
        reply.text()
    );
    // Read back from the store, it still says why.
    let stored = pollster::block_on(governor.lane(&raised.key())).unwrap();
    assert_eq!(
        stored.proposal().raised_because(),
        Some("outside the scratch folder")
    );

    for path in ["/same", "/lower", "/scratch/a"] {
        let lane = waiting(path);
        assert_eq!(lane.proposal().risk_tier(), RiskTier::LowWrite, "{path}");
        assert_eq!(lane.proposal().raised_because(), None, "{path}");
        let reply = Outcome::AwaitingApproval(lane).into_reply();
        assert!(reply.body().get("raised_because").is_none(), "{path}");
    }

    let reasons: Vec<Option<String>> = pollster::block_on(governor.events())
        .unwrap()
        .into_iter()
        .filter_map(|record| match record {
            AuditRecord::Decision(event) => Some(event.raised_because),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasons,
        [
            Some("outside the scratch folder".to_owned()),
            None,
            None,
            None
        ]
    );
}
