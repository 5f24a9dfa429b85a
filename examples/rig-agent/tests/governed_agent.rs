//! A rig agent whose tools are governed: a scripted model (no network) asks for a tool that
//! runs at once, one that needs a person's approval and one that is always blocked. The
//! agent gets the three results and finishes its turn; only the first tool ran.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairnloop::approvals::{AuditRecord, Caller};
use cairnloop::gate::LaneState;
use cairnloop::rig::{RigError, RigTools};
use cairnloop::{Governor, Registry, ToolEntry};
use cairnloop_rig_example::{DESK, Desk, LookupOrder, Seen, governed_agent, tool_results};
use rig_agent::completion::CompletionRequest;
use rig_agent::core::message::ToolResultContent;
use rig_agent::test_utils::{MockCompletionModel, MockTurn};
use rig_agent::tool::{ToolContext, ToolSet};
use serde_json::json;

const BOT_SCOPES: [&str; 2] = ["orders:read", "refunds:write"];

struct Team {
    governor: Arc<Governor<Desk>>,
    desk: Desk,
    governed: RigTools<Desk>,
}

fn team() -> Team {
    let governor = Arc::new(Governor::new(&DESK));
    let desk = Desk::default();
    let caller = Caller::new("support-bot", BOT_SCOPES).with_account("acme");
    let governed = RigTools::new(Arc::clone(&governor), desk.clone(), caller);
    Team {
        governor,
        desk,
        governed,
    }
}

/// What the model was sent as each call's result, by call id.
fn results(request: &CompletionRequest) -> BTreeMap<String, Seen> {
    tool_results(request)
        .into_iter()
        .map(|seen| (seen.call.clone(), seen))
        .collect()
}

#[tokio::test]
async fn three_calls_reach_the_model_as_results_and_only_the_auto_tool_runs() {
    let team = team();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lookup_order", json!({ "order": 1001 })),
        MockTurn::tool_call(
            "c2",
            "refund_order",
            json!({ "order": 1001, "cents": 1250, "reason": "damaged" }),
        ),
        MockTurn::tool_call("c3", "delete_customer", json!({ "customer": 7 })),
        MockTurn::text("Told the user."),
    ]);
    let recorded = model.clone();
    let agent = governed_agent(model, &team.governed).expect("the tools register");

    let response = agent
        .prompt("Order 1001 came broken; refund it and delete my account.")
        .max_turns(5)
        .await
        .expect("the agent finishes its turn");
    assert_eq!(response.output(), "Told the user.");

    // The model was offered the two tools the bot may call; the deletion is never shown.
    let requests = recorded.requests();
    assert_eq!(requests.len(), 4, "three tool rounds and the final answer");
    let offered: Vec<(String, String)> = requests[0]
        .tools
        .iter()
        .map(|tool| (tool.name.to_string(), tool.description.clone()))
        .collect();
    let names: Vec<&str> = offered.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["lookup_order", "refund_order"]);
    assert_eq!(offered[0].1, "Finds an order by its number.");
    assert!(
        offered[1].1.contains("A person approves each call"),
        "{}",
        offered[1].1
    );
    assert_eq!(
        requests[0].tools[1].parameters["properties"]["cents"]["type"],
        "integer"
    );

    let seen = results(&requests[3]);
    assert_eq!(seen.len(), 3, "{seen:?}");

    // Ran at once: its output.
    let looked_up = &seen["c1"];
    assert!(!looked_up.is_error);
    assert_eq!(looked_up.json, Some(json!("shipped")));

    // Awaits a person: the proposal's id and what to tell the user, not an error that
    // ends anything.
    let pending = team
        .governor
        .lanes(LaneState::Pending, None, 10)
        .await
        .expect("the store answers");
    assert_eq!(pending.len(), 1);
    let lane = &pending[0];
    assert_eq!(lane.proposal().tool(), "refund_order");
    let refund = &seen["c2"];
    let body = refund.json.as_ref().expect("a JSON body");
    assert_eq!(body["status"], "awaiting_approval");
    assert_eq!(body["proposal_id"], lane.key().to_string());
    assert_eq!(body["preview"], "Refund 12.50 EUR for order 1001 (Damaged)");
    assert!(
        refund.text.contains("awaits a person's approval"),
        "{}",
        refund.text
    );
    assert!(refund.text.contains(&lane.key().to_string()));
    assert!(refund.text.contains("Tell the user"));

    // Blocked (a tool it was not offered: the hook puts the call through the governor):
    // the governor's reason, read by the model; rig would otherwise end the run here.
    let deleted = &seen["c3"];
    assert!(deleted.is_error);
    assert!(
        deleted
            .text
            .contains("Nothing ran: this actor lacks the scope(s) customers:delete"),
        "{}",
        deleted.text
    );

    // Only the read-only tool ran.
    assert_eq!(team.desk.ran(), ["lookup_order(1001)"]);

    // The governor decided, and recorded, each of the three calls.
    let decisions: Vec<(String, String)> = team
        .governor
        .events()
        .await
        .expect("the store answers")
        .into_iter()
        .filter_map(|record| match record {
            AuditRecord::Decision(event) => {
                Some((event.tool.into_owned(), event.decision.into_owned()))
            }
            _ => None,
        })
        .collect();
    let tools: Vec<&str> = decisions.iter().map(|(tool, _)| tool.as_str()).collect();
    assert_eq!(tools, ["lookup_order", "refund_order", "delete_customer"]);
    assert_eq!(decisions[2].1, "blocked");
}

#[tokio::test]
async fn an_offered_tool_is_blocked_when_its_policy_turns_after_it_was_offered() {
    let team = team();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call(
            "c1",
            "refund_order",
            json!({ "order": 1001, "cents": 1250, "reason": "damaged" }),
        ),
        MockTurn::tool_call("c2", "lookup_order", json!({ "order": 0 })),
        MockTurn::text("Told the user."),
    ]);
    let recorded = model.clone();
    let agent = governed_agent(model, &team.governed).expect("the tools register");
    team.desk.freeze_refunds(true);
    let response = agent
        .prompt("refund order 0 and 1001")
        .max_turns(4)
        .await
        .expect("the agent finishes its turn");
    assert_eq!(response.output(), "Told the user.");

    let seen = results(&recorded.requests()[2]);
    let refund = &seen["c1"];
    assert!(refund.is_error);
    let body = refund.json.as_ref().expect("a JSON body");
    assert_eq!(body["status"], "blocked");
    assert_eq!(body["code"], "policy_denied");
    assert!(
        refund.text.contains("refunds are frozen for the audit"),
        "{}",
        refund.text
    );

    // Invalid arguments: every field error, for the model to fix.
    let lookup = &seen["c2"];
    assert!(lookup.is_error);
    let body = lookup.json.as_ref().expect("a JSON body");
    assert_eq!(body["code"], "needs_input");
    assert_eq!(body["errors"][0]["path"], "/order");
    assert!(
        lookup.text.contains("order numbers start at 1"),
        "{}",
        lookup.text
    );

    assert!(team.desk.ran().is_empty());
    let pending = team
        .governor
        .lanes(LaneState::Pending, None, 10)
        .await
        .expect("the store answers");
    assert!(pending.is_empty(), "nothing was proposed");
}

#[tokio::test]
async fn a_name_the_registry_does_not_have_is_left_to_rig() {
    let team = team();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "format_disk", json!({})),
        MockTurn::text("unreachable"),
    ]);
    let error = governed_agent(model, &team.governed)
        .expect("the tools register")
        .prompt("go")
        .max_turns(3)
        .await
        .expect_err("rig's own rule for a tool nobody registered: the run fails");
    assert!(format!("{error:?}").contains("format_disk"), "{error:?}");
    let events = team.governor.events().await.expect("the store answers");
    assert!(events.is_empty(), "the governor was not asked: {events:?}");
}

#[tokio::test]
async fn an_approved_call_made_again_runs_once_and_then_gives_back_its_output() {
    let team = team();
    let refund = json!({ "order": 1001, "cents": 1250, "reason": "damaged" });
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "refund_order", refund.clone()),
        MockTurn::text("Asked for approval."),
    ]);
    governed_agent(model, &team.governed)
        .expect("the tools register")
        .prompt("refund order 1001")
        .max_turns(3)
        .await
        .expect("the agent finishes its turn");
    let pending = team
        .governor
        .lanes(LaneState::Pending, None, 10)
        .await
        .expect("the store answers");
    let key = pending[0].key();
    assert!(
        team.desk.ran().is_empty(),
        "nothing runs before the approval"
    );

    team.governor
        .approve(&key, "ops-lead")
        .await
        .expect("an operator approves");

    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c2", "refund_order", refund.clone()),
        MockTurn::tool_call("c3", "refund_order", refund),
        MockTurn::text("Refunded."),
    ]);
    let recorded = model.clone();
    governed_agent(model, &team.governed)
        .expect("the tools register")
        .prompt("it is approved now")
        .max_turns(4)
        .await
        .expect("the agent finishes its turn");

    assert_eq!(team.desk.ran(), ["refund_order(1001, 1250)"], "ran once");
    let seen = results(&recorded.requests()[2]);
    for call in ["c2", "c3"] {
        assert!(!seen[call].is_error, "{call}: {:?}", seen[call]);
        assert_eq!(seen[call].json, Some(json!("refunded")), "{call}");
    }
    let lane = team.governor.lane(&key).await.expect("the lane is stored");
    assert_eq!(lane.state(), LaneState::Executed);
    assert_eq!(lane.attempts(), 1);
}

#[tokio::test]
async fn the_argument_text_reaches_the_strict_decoder_as_rig_holds_it() {
    let team = team();
    let tools = team.governed.registrations().expect("the tools register");
    let lookup = tools
        .iter()
        .find(|tool| tool.name() == "lookup_order")
        .expect("lookup_order is offered");

    // A duplicate key would vanish in a parsed map; here it is a field error.
    let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    let cases = [
        (r#"{"order":1001,"order":2}"#, "duplicate"),
        (r#"{"order":0}"#, "/order"),
        (r#"{"order":"1001"}"#, "/order"),
        (r#"{"order":1001,"note":"x"}"#, "note"),
        (r#"{"order":18446744073709551616}"#, "/order"),
        ("not json", "(arguments)"),
        (deep.as_str(), "too_deep"),
    ];
    for (arguments, says) in cases {
        let result = lookup
            .execute(arguments.to_string(), &mut ToolContext::new())
            .await;
        let error = result
            .error()
            .unwrap_or_else(|| panic!("{arguments}: an invalid_args error, got {result:?}"));
        assert_eq!(error.kind().as_str(), "invalid_args", "{arguments}");
        let text = result.output().as_content();
        let ToolResultContent::Text(text) = &text[0] else {
            panic!("{arguments}: the text comes first");
        };
        assert!(text.text.contains(says), "{:.60}: {}", arguments, text.text);
    }
    // Every field error in one answer: a wrong type, a missing field, an unknown one.
    let refund = tools
        .iter()
        .find(|tool| tool.name() == "refund_order")
        .expect("refund_order is offered");
    let result = refund
        .execute(
            r#"{"cents":"seven","zzz":true}"#.to_string(),
            &mut ToolContext::new(),
        )
        .await;
    let text = result.output().as_content();
    let ToolResultContent::Text(text) = &text[0] else {
        panic!("the text comes first");
    };
    for path in ["/cents", "/order", "/zzz"] {
        assert!(text.text.contains(path), "{path}: {}", text.text);
    }
    assert!(team.desk.ran().is_empty(), "nothing ran");
}

#[test]
fn a_name_rig_already_holds_is_refused_and_nothing_is_added() {
    let team = team();
    // rig itself replaces a tool of the same name without a word:
    let refund = team.governed.registrations().expect("the tools register")[1].clone();
    let mut set = ToolSet::default();
    set.add_registered_tool(refund.clone());
    set.add_registered_tool(refund);
    assert_eq!(set.len(), 1);

    let error = team
        .governed
        .add_to(&mut set)
        .expect_err("refund_order is taken");
    assert_eq!(
        error,
        RigError::NameTaken {
            name: "refund_order".into()
        }
    );
    let names: Vec<&str> = set.names().collect();
    assert_eq!(names, ["refund_order"], "nothing else was added");

    let mut fresh = ToolSet::default();
    let added = team
        .governed
        .add_to(&mut fresh)
        .expect("a fresh set takes them");
    assert_eq!(added, ["lookup_order", "refund_order"]);
    assert!(team.governed.add_to(&mut fresh).is_err(), "and only once");
    assert_eq!(fresh.len(), 2);
}

#[test]
fn a_tool_without_an_input_schema_is_refused() {
    static PLAIN: Registry<Desk> = Registry::new(&[ToolEntry::json::<LookupOrder>()]);
    let governed = RigTools::new(
        Arc::new(Governor::new(&PLAIN)),
        Desk::default(),
        Caller::new("support-bot", BOT_SCOPES).with_account("acme"),
    );
    let mut set = ToolSet::default();
    assert_eq!(
        governed.add_to(&mut set).expect_err("no schema"),
        RigError::NoSchema {
            name: "lookup_order"
        }
    );
    assert!(set.is_empty());
}

#[tokio::test]
async fn each_outcome_has_its_own_rig_disposition() {
    let team = team();
    let tools = team.governed.registrations().expect("the tools register");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|tool| tool.name() == name)
            .expect("offered")
            .clone()
    };
    let run = |name: &'static str, arguments: &'static str| {
        let tool = tool(name);
        async move {
            tool.execute(arguments.to_string(), &mut ToolContext::new())
                .await
        }
    };

    let ran = run("lookup_order", r#"{"order":1001}"#).await;
    assert!(ran.is_success(), "{ran:?}");

    // Nothing ran and nothing failed: rig's "skipped".
    let waits = run(
        "refund_order",
        r#"{"order":1001,"cents":1250,"reason":"damaged"}"#,
    )
    .await;
    assert!(waits.is_skipped(), "{waits:?}");

    // The tool ran and failed: an error of kind `other`, with the tool's message.
    let failed = run("lookup_order", r#"{"order":404}"#).await;
    let error = failed.error().expect("an execution error");
    assert_eq!(error.kind().as_str(), "other");
    assert!(
        error.message().contains("order 404 not found"),
        "{}",
        error.message()
    );

    // Blocked by a policy: a refusal, not an execution error.
    team.desk.freeze_refunds(true);
    let refused = run(
        "refund_order",
        r#"{"order":1002,"cents":1,"reason":"late"}"#,
    )
    .await;
    assert!(
        refused.refusal().is_some() && refused.error().is_none(),
        "{refused:?}"
    );
    assert_eq!(team.desk.ran(), ["lookup_order(1001)", "lookup_order(404)"]);
}

#[tokio::test]
async fn a_handler_asked_to_run_another_tool_runs_nothing() {
    use rig_agent::core::effect::EffectKind;
    use rig_agent::core::serve::serve_inline;

    let team = team();
    let tools = team.governed.registrations().expect("the tools register");
    let lookup = &tools[0];
    assert_eq!(lookup.name(), "lookup_order");
    // Arguments that `lookup_order` would accept, under another tool's name.
    let asked = EffectKind::ToolCall {
        name: "refund_order".into(),
        args: r#"{"order":1001}"#.into(),
    };
    let answer = serve_inline(lookup.handler(), asked).await;
    assert!(answer.is_err(), "{answer:?}");
    assert!(team.desk.ran().is_empty(), "nothing ran");
    let events = team.governor.events().await.expect("the store answers");
    assert!(events.is_empty(), "the governor was not asked: {events:?}");
}

#[tokio::test]
async fn a_decision_that_cannot_be_recorded_runs_nothing_and_says_try_later() {
    use cairnloop::stores::{SqliteOptions, SqliteStore};

    // A store file made, then opened read-only: no decision can be written to it.
    let dir = std::env::temp_dir().join(format!(
        "cairnloop-rig-readonly-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("approvals.db");
    drop(SqliteStore::open(&path).expect("a new store"));
    let store = SqliteStore::open_with(&path, SqliteOptions::new().read_only())
        .expect("the store, read-only");
    let desk = Desk::default();
    let governor = Arc::new(Governor::new(&DESK).with_store(store));
    let governed = RigTools::new(
        governor,
        desk.clone(),
        Caller::new("support-bot", BOT_SCOPES).with_account("acme"),
    );
    let tools = governed.registrations().expect("the tools register");

    for (tool, arguments) in [
        (&tools[0], r#"{"order":1001}"#),
        (
            &tools[1],
            r#"{"order":1001,"cents":1250,"reason":"damaged"}"#,
        ),
    ] {
        let result = tool
            .execute(arguments.to_string(), &mut ToolContext::new())
            .await;
        let error = result.error().expect("an execution error");
        assert_eq!(error.retryable(), Some(true), "{}", tool.name());
        assert!(
            error.message().contains("could not be recorded"),
            "{}",
            error.message()
        );
    }
    assert!(desk.ran().is_empty(), "nothing ran without its record");
    std::fs::remove_dir_all(&dir).expect("the temp dir goes");
}
