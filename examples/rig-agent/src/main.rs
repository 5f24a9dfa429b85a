//! A rig agent whose tools are governed by cairnloop, driven by a scripted model, so it
//! runs with no network and no API key: `cargo run -p cairnloop-rig-example`.
//!
//! The model asks for three tools. The read-only one runs; the refund waits for a person;
//! the deletion (never offered to it) is blocked by the governor. The model reads each
//! outcome as a tool result and finishes its turn. An operator approves the refund, the model makes the same call again, and it runs
//! once.

use std::error::Error;
use std::sync::Arc;

use cairnloop::Governor;
use cairnloop::approvals::Caller;
use cairnloop::gate::LaneState;
use cairnloop::rig::RigTools;
use cairnloop_rig_example::{DESK, Desk, Seen, governed_agent, tool_results};
use rig_agent::test_utils::{MockCompletionModel, MockTurn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let governor = Arc::new(Governor::new(&DESK));
    let desk = Desk::default();
    let caller = Caller::new("support-bot", ["orders:read", "refunds:write"]).with_account("acme");
    let governed = RigTools::new(Arc::clone(&governor), desk.clone(), caller);

    println!("A rig agent (scripted model, no network) with three governed tools.");
    println!("It acts as `support-bot`, with the scopes orders:read and refunds:write.\n");
    println!("The model is offered the tools the bot may call:");
    for tool in governed.registrations()? {
        let definition = tool.descriptor();
        let rig_agent::core::effect::FamilyDescriptor::Tool { description, .. } = definition else {
            continue;
        };
        say(&format!("  {:<17}", tool.name()), &description);
    }
    println!("  (not delete_customer: the bot lacks its scope, and it is always blocked)");

    let calls = [
        ("c1", "lookup_order", json!({ "order": 1001 })),
        (
            "c2",
            "refund_order",
            json!({ "order": 1001, "cents": 1250, "reason": "damaged" }),
        ),
        ("c3", "delete_customer", json!({ "customer": 7 })),
    ];
    let mut turns: Vec<MockTurn> = calls
        .iter()
        .map(|(id, name, arguments)| MockTurn::tool_call(*id, *name, arguments.clone()))
        .collect();
    turns.push(MockTurn::text(
        "Order 1001 has shipped. The refund waits for a colleague's approval. \
         I cannot delete accounts.",
    ));
    let model = MockCompletionModel::from_turns(turns);
    let recorded = model.clone();
    let answer = governed_agent(model, &governed)?
        .prompt("Order 1001 came broken: refund it, and delete my account.")
        .max_turns(5)
        .await?;

    println!("\nTurn 1: the model calls three tools and reads back:");
    let requests = recorded.requests();
    let seen = requests.last().map(tool_results).unwrap_or_default();
    for ((_, name, arguments), result) in calls.iter().zip(&seen) {
        show(name, arguments, result);
    }
    say("  The agent answers: ", &answer.output());
    say("  Ran so far: ", &desk.ran().join(", "));

    let pending = governor.lanes(LaneState::Pending, None, 10).await?;
    let Some(lane) = pending.first() else {
        return Err("the refund should wait for approval".into());
    };
    let key = lane.key();
    println!(
        "\nAn operator (`ops-lead`) approves proposal {}.",
        short(&key.to_string())
    );
    governor.approve(&key, "ops-lead").await?;

    let refund = calls[1].2.clone();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c4", "refund_order", refund.clone()),
        MockTurn::text("Your refund of 12.50 EUR is on its way."),
    ]);
    let recorded = model.clone();
    let answer = governed_agent(model, &governed)?
        .prompt("Is my refund approved yet?")
        .max_turns(3)
        .await?;
    println!("\nTurn 2: the model makes the same refund call again:");
    let requests = recorded.requests();
    if let Some(result) = requests
        .last()
        .map(tool_results)
        .unwrap_or_default()
        .first()
    {
        show("refund_order", &refund, result);
    }
    say("  The agent answers: ", &answer.output());
    say("  Ran so far: ", &desk.ran().join(", "));
    let lane = governor.lane(&key).await?;
    say(
        "  ",
        &format!(
            "The proposal is {} after {} run; a third identical call would give back its \
             output and run nothing.",
            lane.state().as_str(),
            lane.attempts()
        ),
    );
    Ok(())
}

/// One line per call: what was asked and what the model read back.
fn show(name: &str, arguments: &Value, seen: &Seen) {
    println!("  - {name} {arguments}");
    let body = seen.json.clone().unwrap_or(Value::Null);
    let status = body.get("status").and_then(Value::as_str);
    let said = match status {
        _ if !seen.is_error => format!("ran, output {body}"),
        None => seen.text.clone(),
        Some("awaiting_approval") => format!(
            "awaiting approval: proposal {}, \"{}\"",
            short(body["proposal_id"].as_str().unwrap_or("")),
            body["preview"].as_str().unwrap_or("")
        ),
        Some(status) => format!(
            "{status} ({}): {}",
            body["code"].as_str().unwrap_or(""),
            seen.text
        ),
    };
    say("      ", &said);
}

/// The first 12 characters of a proposal id: enough to tell proposals apart here.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Prints `text` after `lead`, wrapped at word boundaries so that no line is wider than
/// 100 columns; the lines after the first are indented to where the text starts.
fn say(lead: &str, text: &str) {
    const WIDTH: usize = 100;
    let indent = lead.chars().count();
    let mut line = lead.to_string();
    let mut used = indent;
    for word in text.split_whitespace() {
        let length = word.chars().count();
        if used > indent && used + 1 + length > WIDTH {
            println!("{line}");
            line = " ".repeat(indent);
            used = indent;
        }
        if used > indent {
            line.push(' ');
            used += 1;
        }
        line.push_str(word);
        used += length;
    }
    println!("{line}");
}
