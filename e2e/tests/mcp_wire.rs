//! The MCP server on its stdio transport, byte for byte: what a strict client sends, and
//! what comes back (or what would once have been dropped without a word).

#[path = "../../tests/fixtures/desk.rs"]
mod desk;
#[path = "fixtures/wire.rs"]
mod wire;

use std::sync::Arc;
use std::time::Duration;

use cairnloop::approvals::MemoryStore;
use cairnloop::gate::LaneState;
use cairnloop::mcp::{ClientApprover, FrameLimits, McpServer};
use cairnloop::{Governor, IdempotencyKey, RiskTier};
use desk::{DESK, Desk};
use serde_json::{Value, json};
use wire::{Wire, serve};

type Shared = Arc<Governor<Desk, MemoryStore>>;

fn governor() -> Shared {
    Arc::new(Governor::new(&DESK))
}

fn agent(governor: &Shared) -> McpServer<Desk, MemoryStore> {
    McpServer::new(Arc::clone(governor), Desk::default(), "agent-7")
        .with_account("acme")
        .with_scopes(["orders:read", "tickets:write", "refunds:write"])
}

const NOTE: &str = r#"{"ticket": 42, "body": "Called twice."}"#;

async fn assert_nothing_pending(governor: &Shared) {
    let pending = governor.lanes(LaneState::Pending, None, 10).await.unwrap();
    assert!(pending.is_empty(), "{pending:?}");
}

#[tokio::test]
async fn every_bad_line_gets_a_json_rpc_error_never_silence() {
    let mut wire = serve(
        agent(&governor()),
        FrameLimits::new().with_max_line_bytes(4096),
    );
    wire.initialize("2025-11-25", json!({})).await;

    wire.send("this is not json").await;
    let answer = wire.next().await;
    assert_eq!(
        (answer["error"]["code"].as_i64(), &answer["id"]),
        (Some(-32700), &Value::Null)
    );

    wire.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[1]}"#)
        .await;
    let answer = wire.next().await;
    assert_eq!(
        (answer["error"]["code"].as_i64(), &answer["id"]),
        (Some(-32602), &json!(5))
    );

    let answer = wire.call(6, "lookup_order", "[1001]").await;
    assert_eq!(
        (answer["error"]["code"].as_i64(), &answer["id"]),
        (Some(-32602), &json!(6))
    );
    let answer = wire.call(7, "lookup_order", r#""{\"order\":1}""#).await;
    assert_eq!(
        (answer["error"]["code"].as_i64(), &answer["id"]),
        (Some(-32602), &json!(7))
    );

    // Past the size limit: the id came before the cut, so the answer carries it.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"x","arguments":{{"a":"{}"}}}}}}"#,
        "y".repeat(8000)
    );
    wire.send(&big).await;
    let answer = wire.next().await;
    assert_eq!(
        (answer["error"]["code"].as_i64(), &answer["id"]),
        (Some(-32600), &json!(8))
    );

    // Past the depth limit.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let mut limits_wire = serve(agent(&governor()), FrameLimits::new());
    limits_wire.initialize("2025-11-25", json!({})).await;
    limits_wire.send(&deep).await;
    let answer = limits_wire.next().await;
    assert_eq!(
        (answer["error"]["code"].as_i64(), &answer["id"]),
        (Some(-32600), &json!(9))
    );

    // A JSON value that is no message, and a request of no known shape.
    wire.send("[]").await;
    assert_eq!(wire.next().await["error"]["code"], -32600);
    wire.send(r#"{"jsonrpc":"2.0","id":10,"method":7}"#).await;
    let answer = wire.next().await;
    assert_eq!(
        (answer["error"]["code"].as_i64(), &answer["id"]),
        (Some(-32600), &json!(10))
    );

    // After all that, the session still works.
    let answer = wire.call(11, "lookup_order", r#"{"order": 1001}"#).await;
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"status": "executed", "output": "shipped"})
    );
}

#[tokio::test]
async fn the_raw_argument_text_reaches_the_strict_decoder() {
    let governor = governor();
    let mut wire = serve(agent(&governor), FrameLimits::new());
    wire.initialize("2025-11-25", json!({})).await;

    // Duplicate keys: a field error, not the last value silently.
    let answer = wire
        .call(
            1,
            "refund_order",
            r#"{"order": 1, "cents": 1, "cents": 5000, "reason": "late"}"#,
        )
        .await;
    let result = &answer["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["blocked"], "needs_input");
    assert_eq!(
        result["structuredContent"]["errors"][0]["code"], "duplicate_key",
        "{result}"
    );

    // Three bad fields: three errors, each named in the text too.
    let answer = wire
        .call(
            2,
            "refund_order",
            r#"{"order": "x", "cents": -5, "reason": "whenever"}"#,
        )
        .await;
    let result = &answer["result"];
    let paths: Vec<&str> = result["structuredContent"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|error| error["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/cents", "/order", "/reason"], "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    for path in ["/cents", "/order", "/reason"] {
        assert!(text.contains(path), "{text}");
    }
    // Nothing was proposed.
    assert_nothing_pending(&governor).await;
}

#[tokio::test]
async fn the_protocol_versions_rmcp_serves_are_negotiated() {
    for version in ["2025-06-18", "2025-11-25"] {
        let mut wire = serve(agent(&governor()), FrameLimits::new());
        let answer = wire.initialize(version, json!({})).await;
        assert_eq!(answer["result"]["protocolVersion"], version);
        let listed = {
            wire.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
                .await;
            wire.next().await
        };
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "lookup_order",
                "internal_note",
                "refund_order",
                "tag_ticket"
            ]
        );
    }
}

/// A server whose client's person may approve low-write calls.
fn trusting(governor: &Shared, timeout: Duration) -> McpServer<Desk, MemoryStore> {
    agent(governor).with_client_approver(
        ClientApprover::new("user:alice")
            .may_approve(RiskTier::LowWrite)
            .with_timeout(timeout),
    )
}

const ELICITING: &str = r#"{"elicitation": {"form": {}}}"#;

/// `server` on a fresh pipe, initialised by a client that shows approval prompts.
async fn prompting_client(server: McpServer<Desk, MemoryStore>) -> Wire {
    let mut wire = serve(server, FrameLimits::new());
    wire.initialize("2025-11-25", serde_json::from_str(ELICITING).unwrap())
        .await;
    wire
}

/// Calls the note tool and answers the approval prompt with `answer`; the final answer.
async fn note_answered(wire: &mut Wire, answer: Value) -> Value {
    wire.send(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"internal_note","arguments":{NOTE}}}}}"#
    ))
    .await;
    let prompt = wire.next().await;
    assert_eq!(prompt["method"], "elicitation/create", "{prompt}");
    let message = prompt["params"]["message"].as_str().unwrap();
    for shown in [
        "Add internal note",
        "low_write",
        "tickets:write",
        "Approval open until: ",
    ] {
        assert!(message.contains(shown), "{shown} in {message}");
    }
    wire.send_json(json!({"jsonrpc": "2.0", "id": prompt["id"], "result": answer}))
        .await;
    wire.next().await
}

#[tokio::test]
async fn an_accepted_prompt_approves_as_the_clients_person_and_the_call_runs_once() {
    let governor = governor();
    let mut wire = prompting_client(trusting(&governor, Duration::from_secs(5))).await;
    let answer = note_answered(
        &mut wire,
        json!({"action": "accept", "content": {"decision": "approve"}}),
    )
    .await;
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"status": "executed", "output": null})
    );
    let lanes = governor.lanes(LaneState::Executed, None, 10).await.unwrap();
    assert_eq!(lanes.len(), 1);
    assert_eq!(
        (lanes[0].decided_by(), lanes[0].attempts()),
        (Some("user:alice"), 1)
    );
}

#[tokio::test]
async fn a_declined_prompt_rejects_and_a_cancelled_one_leaves_the_call_pending() {
    let governor = governor();
    let mut wire = prompting_client(trusting(&governor, Duration::from_secs(5))).await;
    let answer = note_answered(&mut wire, json!({"action": "cancel"})).await;
    assert_eq!(
        answer["result"]["structuredContent"]["status"],
        "awaiting_approval"
    );
    assert_eq!(answer["result"]["isError"], false);
    let answer = note_answered(
        &mut wire,
        json!({"action": "accept", "content": {"decision": "maybe"}}),
    )
    .await;
    assert_eq!(
        answer["result"]["structuredContent"]["status"],
        "awaiting_approval"
    );
    let answer = note_answered(&mut wire, json!({"action": "decline"})).await;
    let result = &answer["result"];
    assert_eq!(
        (
            result["isError"].as_bool(),
            &result["structuredContent"]["status"]
        ),
        (Some(true), &json!("rejected"))
    );
    assert_eq!(
        result["structuredContent"]["reason"],
        "declined by user:alice in the MCP client"
    );
    let lanes = governor.lanes(LaneState::Rejected, None, 10).await.unwrap();
    assert_eq!((lanes.len(), lanes[0].attempts()), (1, 0));
}

#[tokio::test]
async fn an_unanswered_prompt_times_out_and_the_call_stays_pending() {
    let governor = governor();
    let mut wire = prompting_client(trusting(&governor, Duration::from_millis(200))).await;
    let answer = wire.call(1, "internal_note", NOTE).await;
    assert_eq!(answer["method"], "elicitation/create");
    // No answer: the prompt is withdrawn, and the call answered as pending.
    let withdrawn = wire.next().await;
    assert_eq!(
        withdrawn["method"], "notifications/cancelled",
        "{withdrawn}"
    );
    let answer = wire.next().await;
    assert_eq!(
        answer["result"]["structuredContent"]["status"], "awaiting_approval",
        "{answer}"
    );
    assert_eq!(
        governor
            .lanes(LaneState::Pending, None, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn tiers_the_host_does_not_trust_the_person_for_are_never_prompted() {
    let governor = governor();
    let mut wire = prompting_client(trusting(&governor, Duration::from_secs(5))).await;
    // High-write: another operator decides; no prompt is sent.
    let answer = wire
        .call(
            1,
            "refund_order",
            r#"{"order": 1, "cents": 5, "reason": "late"}"#,
        )
        .await;
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["result"]["structuredContent"]["status"],
        "awaiting_approval"
    );
    // The strict default: a server with no trusted person never prompts, even a client
    // that can show prompts.
    let mut strict = prompting_client(agent(&governor)).await;
    let answer = strict.call(2, "internal_note", NOTE).await;
    assert_eq!(answer["id"], 2);
    assert_eq!(
        answer["result"]["structuredContent"]["status"],
        "awaiting_approval"
    );
    // A person whose answer could not count is never asked: the agent itself under
    // another spelling, a look-alike, or an id the identity rule refuses.
    for (id, call) in [
        ("AGENT-7", 3),
        ("ａｇｅｎｔ－７", 4),
        ("аgent-7", 5),
        ("agent-7 ", 6),
    ] {
        let same = agent(&governor)
            .with_client_approver(ClientApprover::new(id).may_approve(RiskTier::LowWrite));
        let mut same = prompting_client(same).await;
        let answer = same.call(call, "internal_note", NOTE).await;
        assert_eq!(answer["id"], call, "{id}: {answer}");
        assert_eq!(
            answer["result"]["structuredContent"]["status"], "awaiting_approval",
            "{id}"
        );
    }
}

fn stateless_call(id: u32, extra: Value) -> Value {
    let mut params = json!({
        "name": "internal_note",
        "arguments": serde_json::from_str::<Value>(NOTE).unwrap(),
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "wire", "version": "1" },
            "io.modelcontextprotocol/clientCapabilities": serde_json::from_str::<Value>(ELICITING).unwrap(),
        },
    });
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
}

#[tokio::test]
async fn a_stateless_peer_gets_the_prompt_in_the_result_and_retries_with_the_answer() {
    let governor = governor();
    let mut wire = serve(
        trusting(&governor, Duration::from_secs(5)),
        FrameLimits::new(),
    );
    wire.send_json(stateless_call(1, json!({}))).await;
    let first = wire.next().await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let state = result["requestState"].as_str().unwrap().to_owned();
    let prompt = &result["inputRequests"]["approval"];
    assert_eq!(prompt["method"], "elicitation/create");
    assert!(
        prompt["params"]["message"]
            .as_str()
            .unwrap()
            .contains("Add internal note")
    );

    // A tampered handle is refused, and nothing is decided.
    let mut tampered = state.clone().into_bytes();
    tampered[0] = if tampered[0] == b'a' { b'b' } else { b'a' };
    let approve =
        json!({ "approval": { "action": "accept", "content": { "decision": "approve" } } });
    wire.send_json(stateless_call(
        2,
        json!({
            "requestState": String::from_utf8(tampered).unwrap(),
            "inputResponses": approve,
        }),
    ))
    .await;
    let refused = wire.next().await;
    assert_eq!(
        (refused["error"]["code"].as_i64(), &refused["id"]),
        (Some(-32602), &json!(2))
    );
    let key: IdempotencyKey = state.parse().unwrap();
    assert_eq!(
        governor.lane(&key).await.unwrap().state(),
        LaneState::Pending
    );

    // The real handle with the approval: the call runs, once.
    wire.send_json(stateless_call(
        3,
        json!({ "requestState": state, "inputResponses": approve }),
    ))
    .await;
    let done = wire.next().await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"status": "executed", "output": null}),
        "{done}"
    );
    let lane = governor.lane(&key).await.unwrap();
    assert_eq!(
        (lane.state(), lane.attempts(), lane.decided_by()),
        (LaneState::Executed, 1, Some("user:alice"))
    );
    // Echoing it again does not run it again: the recorded outcome comes back.
    wire.send_json(stateless_call(
        4,
        json!({ "requestState": key.to_string(), "inputResponses": approve }),
    ))
    .await;
    let again = wire.next().await;
    assert_eq!(again["result"]["structuredContent"]["status"], "executed");
    assert_eq!(governor.lane(&key).await.unwrap().attempts(), 1);
}

/// With a quorum of two, the prompt says so; the person's approval counts once and the
/// call waits for the second, given elsewhere.
#[tokio::test]
async fn with_a_quorum_the_prompt_says_how_many_and_the_persons_approval_counts_once() {
    use cairnloop::{Governance, ModePolicy};
    let policy = ModePolicy::new().with_quorum(RiskTier::LowWrite, 2);
    let governor: Shared =
        Arc::new(Governor::new(&DESK).with_governance(Governance::new().with_mode_policy(policy)));
    let mut wire = prompting_client(trusting(&governor, Duration::from_secs(5))).await;
    wire.send(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"internal_note","arguments":{NOTE}}}}}"#
    ))
    .await;
    let prompt = wire.next().await;
    let message = prompt["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("Approvals: 0 of 2 approvals; yours counts once"),
        "{message}"
    );
    let answer = json!({"action": "accept", "content": {"decision": "approve"}});
    wire.send_json(json!({"jsonrpc": "2.0", "id": prompt["id"], "result": answer}))
        .await;
    let answer = wire.next().await;
    assert_eq!(
        answer["result"]["structuredContent"]["status"], "awaiting_approval",
        "{answer}"
    );
    let pending = governor.lanes(LaneState::Pending, None, 10).await.unwrap();
    assert_eq!(
        pending[0].quorum_progress().as_deref(),
        Some("1 of 2 approvals (user:alice)")
    );
    let approved = governor
        .approve(&pending[0].key(), "ops-lead")
        .await
        .unwrap();
    assert_eq!(approved.state(), LaneState::Approved);
}

/// A payout whose input raises it above ten dollars, and says why.
struct Payout;

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Cents {
    cents: u64,
}

impl cairnloop::Tool for Payout {
    const SPEC: cairnloop::ToolSpec =
        cairnloop::ToolSpec::new("payout", "Payout", "Pays out.", RiskTier::LowWrite);
    const SCOPES: &'static [cairnloop::Scope] = &[];
    type Input = Cents;
    type Output = u64;
    type Error = String;
    type Context = Desk;
    fn validate(_: &Cents) -> Result<(), cairnloop::InputErrors> {
        Ok(())
    }
    fn authorize(_: &cairnloop::Actor<'_>, _: &Desk) -> Result<(), cairnloop::PolicyDenial> {
        Ok(())
    }
    fn risk_tier_for(input: &Cents) -> RiskTier {
        if input.cents > 1_000 {
            RiskTier::HighWrite
        } else {
            RiskTier::LowWrite
        }
    }
    fn risk_reason_for(input: &Cents) -> Option<&'static str> {
        (input.cents > 1_000).then_some("over ten dollars")
    }
    async fn run(call: cairnloop::Invocation<'_, Self>) -> Result<u64, String> {
        Ok(call.input().cents)
    }
}

static PAYOUTS: cairnloop::Registry<Desk> =
    cairnloop::Registry::new(&[cairnloop::ToolEntry::json::<Payout>()]);

/// The person asked at the client reads why a call was raised beside its tier.
#[tokio::test]
async fn the_prompt_says_why_a_call_was_raised() {
    let governor: Shared = Arc::new(Governor::new(&PAYOUTS));
    let server = agent(&governor).with_client_approver(
        ClientApprover::new("user:alice")
            .may_approve(RiskTier::HighWrite)
            .with_timeout(Duration::from_secs(5)),
    );
    let mut wire = prompting_client(server).await;
    let prompt = wire.call(1, "payout", r#"{"cents": 5000}"#).await;
    assert_eq!(prompt["method"], "elicitation/create", "{prompt}");
    let message = prompt["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("Risk tier: high_write (raised: over ten dollars)"),
        "{message}"
    );
    wire.send_json(json!({"jsonrpc": "2.0", "id": prompt["id"], "result": {"action": "decline"}}))
        .await;
    let answer = wire.next().await;
    assert_eq!(
        answer["result"]["structuredContent"]["status"], "rejected",
        "{answer}"
    );
}

/// The same call as `Wire::call` sends it, with a `_meta` key of no meaning to the server:
/// a request the transport leaves to rmcp's handler.
fn call_with_meta(id: u32, name: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments},"_meta":{{"trace":"t-1"}}}}}}"#
    )
}

/// Calls that run at once (or are blocked) are answered by the transport itself; each
/// answer is the one rmcp's handler gives the same call, for each protocol version a
/// session agrees on, and each call is recorded once either way.
#[tokio::test]
async fn a_call_the_transport_answers_reads_as_the_servers_answer() {
    let calls = [
        ("lookup_order", r#"{"order": 1001}"#),
        ("lookup_order", r#"{"order": 1}"#),
        ("tag_ticket", r#"{"order": 7}"#),
        (
            "refund_order",
            r#"{"order": "x", "cents": 1, "reason": "late"}"#,
        ),
        (
            "internal_note",
            r#"{"ticket": 1, "body": "b", "body": "c"}"#,
        ),
        ("forgotten", r#"{"order": 1}"#),
        ("delete_customer", r#"{"customer": 1}"#),
        ("drop_tables", "{}"),
    ];
    for version in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let governor = governor();
        let mut wire = serve(agent(&governor), FrameLimits::new());
        wire.initialize(version, json!({})).await;
        for (n, (name, arguments)) in calls.iter().enumerate() {
            let id = u32::try_from(n).unwrap() * 2 + 1;
            let mut here = wire.call(id, name, arguments).await;
            wire.send(&call_with_meta(id + 1, name, arguments)).await;
            let mut handled = wire.next().await;
            assert_eq!((&here["id"], &handled["id"]), (&json!(id), &json!(id + 1)));
            for answer in [&mut here, &mut handled] {
                answer.as_object_mut().unwrap().remove("id");
            }
            assert_eq!(here, handled, "{version}: {name}");
        }
        let events = governor.events().await.unwrap();
        assert_eq!(events.len(), calls.len() * 2, "{version}");
    }
}

type Reading = tokio::io::ReadHalf<tokio::io::DuplexStream>;
type Writing = tokio::io::WriteHalf<tokio::io::DuplexStream>;
type Answers = tokio::io::Lines<tokio::io::BufReader<Reading>>;

/// A stdio transport over an in-memory pipe that answers `server`'s calls that run at
/// once, with the client's end of the pipe: the lines written to it, and its input.
fn fast_transport(
    server: &McpServer<Desk, MemoryStore>,
) -> (
    cairnloop::mcp::LineTransport<Reading, Writing>,
    Answers,
    Writing,
) {
    use tokio::io::AsyncBufReadExt;
    let (client, ours) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(ours);
    let transport = cairnloop::mcp::LineTransport::new(read, write).with_fast_calls(server);
    let (answers, to_server) = tokio::io::split(client);
    (
        transport,
        tokio::io::BufReader::new(answers).lines(),
        to_server,
    )
}

/// On a runtime of many threads each call the transport answers runs on a task of its
/// own: calls sent together are each answered once, under their own ids, and rmcp is
/// handed none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_runtime_of_many_threads_each_call_answered_here_is_answered_once() {
    use rmcp::transport::Transport;
    use tokio::io::AsyncWriteExt;

    let governor = governor();
    let (mut transport, mut answers, mut to_server) = fast_transport(&agent(&governor));
    let initialized = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    to_server.write_all(initialized.as_bytes()).await.unwrap();
    let received = Transport::<rmcp::RoleServer>::receive(&mut transport).await;
    assert!(received.is_some());
    let calls: String = (10..18)
        .map(|id| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"lookup_order\",\"arguments\":{{\"order\":1001}}}}}}\n"
            )
        })
        .collect();
    to_server.write_all(calls.as_bytes()).await.unwrap();
    // rmcp is handed nothing while the calls are answered.
    let handed = Transport::<rmcp::RoleServer>::receive(&mut transport);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), handed)
            .await
            .is_err()
    );
    let mut ids = Vec::new();
    for _ in 10..18 {
        let line = tokio::time::timeout(Duration::from_secs(5), answers.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            answer["result"]["structuredContent"]["status"], "executed",
            "{line}"
        );
        ids.push(answer["id"].as_u64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, (10..18).collect::<Vec<u64>>());
}

/// The transport takes a plain call that runs at once before rmcp sees it (one with a
/// progress token too), only once the client has said it is initialized; a call that
/// waits for a person, or carries other `_meta`, goes on to rmcp.
#[tokio::test]
async fn only_a_plain_call_that_runs_at_once_is_taken_from_rmcp() {
    use rmcp::transport::Transport;
    use tokio::io::AsyncWriteExt;

    let governor = governor();
    let (mut transport, mut answers, mut to_server) = fast_transport(&agent(&governor));
    let lookup = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup_order","arguments":{"order":1001}}}"#;
    let mut next_message = async |line: &str| {
        to_server
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        let message = Transport::<rmcp::RoleServer>::receive(&mut transport);
        tokio::time::timeout(Duration::from_millis(300), message)
            .await
            .ok()
            .flatten()
            .map(|message| serde_json::to_value(message).unwrap())
    };
    // Before the session is initialized: rmcp's to answer.
    assert_eq!(next_message(lookup).await.unwrap()["id"], 1);
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert!(next_message(initialized).await.is_some());
    // Now answered here: rmcp is handed nothing, and the answer is written.
    assert_eq!(next_message(&lookup.replace(":1,", ":2,")).await, None);
    let line = answers.next_line().await.unwrap().unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["structuredContent"]["status"], "executed");
    let with_token = lookup.replace(":1,", ":5,").replace(
        r#""arguments""#,
        r#""_meta":{"progressToken":"p-5"},"arguments""#,
    );
    assert_eq!(next_message(&with_token).await, None);
    let line = answers.next_line().await.unwrap().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], 5);
    // A call that waits for a person, and one with `_meta`, are rmcp's.
    let note = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"internal_note","arguments":{NOTE}}}}}"#
    );
    assert_eq!(next_message(&note).await.unwrap()["id"], 3);
    let with_meta = call_with_meta(4, "lookup_order", r#"{"order": 1}"#);
    assert_eq!(next_message(&with_meta).await.unwrap()["id"], 4);
    // Nothing was proposed by the look at the waiting call.
    assert_nothing_pending(&governor).await;
}
