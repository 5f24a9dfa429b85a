//! A scripted stream of tool calls as a model might send them, good, malformed and
//! hostile, each put through the by-name pipeline; then an operator works the approval
//! queue: approves, rejects, lets one expire, is refused a self-approval and an execution
//! with changed arguments, executes the approved calls, and the audit trail is printed.
//!
//! `cargo run --features serde --example model_calls`

mod desk;

use cairnloop::{
    Actor, ApprovalConfig, ApprovalStore, Approvals, CallDecision, Governance, MemoryStore,
    Timestamp, ToolCall, Ttl,
};
use desk::{DESK, Desk, EVERY_SCOPE};

/// A fixed clock for a reproducible run: 2026-12-02 09:00 UTC, in milliseconds.
const START: u64 = 1_796_202_000_000;
const HOUR: u64 = 3_600_000;

fn at(hours: u64, millis: u64) -> Timestamp {
    Timestamp::from_unix_millis(START + hours * HOUR + millis)
}

fn main() {
    let desk = Desk::default();
    let admin = Actor::new("admin-1", EVERY_SCOPE).with_account("acme");
    let agent = Actor::new("agent-7", &["orders:read", "tickets:write"]).with_account("acme");
    let deep = format!(
        r#"{{"order": {}1{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );

    let script: Vec<(&Actor<'_>, &str, &str, &str)> = vec![
        (&agent, "good", "lookup_order", r#"{"order": 1001}"#),
        (
            &agent,
            "good",
            "internal_note",
            r#"{"ticket": 42, "body": "Customer called twice.", "api_token": "tok-9"}"#,
        ),
        (
            &admin,
            "good",
            "refund_order",
            r#"{"order": 1001, "cents": 1250, "reason": "damaged"}"#,
        ),
        (
            &agent,
            "no scope",
            "refund_order",
            r#"{"order": 1001, "cents": 1250, "reason": "damaged"}"#,
        ),
        (
            &admin,
            "destructive",
            "delete_customer",
            r#"{"customer": 9}"#,
        ),
        (&admin, "no policy", "forgotten", r#"{"order": 1}"#),
        (&agent, "malformed", "lookup_order", r#"{"order": 1001"#),
        (&agent, "malformed", "lookup_order", "[1001]"),
        (&agent, "malformed", "lookup_order", r#"{"order": "1001"}"#),
        (
            &agent,
            "malformed",
            "internal_note",
            r#"{"ticket": 0, "body": " "}"#,
        ),
        (
            &admin,
            "malformed",
            "refund_order",
            r#"{"order": 1, "cents": 5, "reason": "Damaged"}"#,
        ),
        (
            &agent,
            "hostile",
            "lookup_order",
            r#"{"order": 1, "order": 1001}"#,
        ),
        (
            &agent,
            "hostile",
            "lookup_order",
            r#"{"order": 1001, "as_admin": true}"#,
        ),
        (
            &admin,
            "hostile",
            "refund_order",
            r#"{"order": 1, "cents": 18446744073709551616, "reason": "late"}"#,
        ),
        (&agent, "hostile", "lookup_order", &deep),
        (&agent, "hostile", "Lookup_Order", r#"{"order": 1001}"#),
        (&agent, "hostile", "lookup_order ", r#"{"order": 1001}"#),
        (
            &agent,
            "hostile",
            "lookup\u{200B}_order",
            r#"{"order": 1001}"#,
        ),
        (&agent, "hostile", "lооkup_order", r#"{"order": 1001}"#),
    ];

    let approvals = Approvals::new(
        MemoryStore::new(),
        ApprovalConfig::new().with_ttl(Ttl::DEFAULT),
    );
    let mut queue = Vec::new();

    println!(
        "{:<8} {:<12} {:<24} {:<15} reason",
        "actor", "kind", "tool", "decision"
    );
    for (actor, kind, name, arguments) in script {
        let outcome = DESK.call(
            &ToolCall::new(name, arguments),
            actor,
            &desk,
            &Governance::new(),
        );
        // Quoted: a padded or look-alike name must be visible as such.
        let shown_name = format!("\"{}\"", outcome.audit.tool);
        let detail = match outcome.decision {
            CallDecision::Execute(ready) => match pollster::block_on(ready.run()) {
                Ok(output) => format!("ran: {output}"),
                Err(error) => format!("ran: {error}"),
            },
            CallDecision::AwaitApproval(proposal) => {
                let shown = format!(
                    "key {}…, preview: {}",
                    &proposal.idempotency_key().to_string()[..12],
                    proposal.preview().text().replace('\n', " | ")
                );
                let lane = approvals
                    .propose(proposal, at(0, 0))
                    .expect("a fresh store");
                queue.push((lane.key(), *actor, name, arguments));
                shown
            }
            CallDecision::Blocked(blocked) => blocked.to_string(),
        };
        println!(
            "{:<8} {:<12} {:<24} {:<15} {}",
            actor.id(),
            kind,
            shown_name,
            outcome.audit.decision,
            detail
        );
    }

    // A second refund and a second note, to reject one and let one expire.
    for (actor, name, arguments) in [
        (
            &admin,
            "refund_order",
            r#"{"order": 1002, "cents": 99000, "reason": "late"}"#,
        ),
        (
            &agent,
            "internal_note",
            r#"{"ticket": 43, "body": "Chase the courier."}"#,
        ),
    ] {
        let outcome = DESK.call(
            &ToolCall::new(name, arguments),
            actor,
            &desk,
            &Governance::new(),
        );
        if let CallDecision::AwaitApproval(proposal) = outcome.decision {
            let lane = approvals
                .propose(proposal, at(0, 1))
                .expect("a fresh store");
            queue.push((lane.key(), *actor, name, arguments));
        }
    }
    let [note, refund, big_refund, late_note] = queue.as_slice() else {
        panic!("expected four proposals, got {}", queue.len());
    };

    println!();
    println!("{:<10} {:<15} {:<36} result", "operator", "tool", "step");
    let step = |who: &str, tool: &str, what: &str, result: String| {
        println!("{who:<10} {tool:<15} {what:<36} {result}");
    };
    let shown = |result: Result<cairnloop::ApprovalLane, cairnloop::ApprovalError>| match result {
        Ok(lane) => format!("ok, now {}", lane.state()),
        Err(error) => format!("refused: {error}"),
    };
    step(
        "admin-1",
        "refund_order",
        "approve own call",
        shown(approvals.approve(&refund.0, "admin-1", at(1, 0))),
    );
    step(
        "lead",
        "refund_order",
        "approve",
        shown(approvals.approve(&refund.0, "lead", at(1, 1))),
    );
    step(
        "lead",
        "internal_note",
        "approve",
        shown(approvals.approve(&note.0, "lead", at(1, 2))),
    );
    step(
        "lead",
        "refund_order",
        "reject (1002)",
        shown(approvals.reject(&big_refund.0, "lead", "above the refund limit", at(1, 3))),
    );

    let governance = Governance::new();
    let changed = r#"{"order": 1001, "cents": 125000, "reason": "damaged"}"#;
    let run = |key, name, arguments, actor: &Actor<'_>, now| {
        let call = ToolCall::new(name, arguments);
        match pollster::block_on(approvals.execute(
            &DESK,
            key,
            &call,
            actor,
            &desk,
            &governance,
            now,
        )) {
            Ok(output) => format!("ran: {output}"),
            Err(error) => format!("refused: {error}"),
        }
    };
    step(
        "agent",
        "refund_order",
        "execute with cents changed",
        run(&refund.0, refund.2, changed, &refund.1, at(2, 0)),
    );
    step(
        "agent",
        "refund_order",
        "execute as approved",
        run(&refund.0, refund.2, refund.3, &refund.1, at(2, 1)),
    );
    step(
        "agent",
        "refund_order",
        "execute again (replay)",
        run(&refund.0, refund.2, refund.3, &refund.1, at(2, 2)),
    );
    step(
        "agent",
        "internal_note",
        "execute as approved",
        run(&note.0, note.2, note.3, &note.1, at(2, 3)),
    );

    step(
        "lead",
        "internal_note",
        "approve after 49 hours (43)",
        shown(approvals.approve(&late_note.0, "lead", at(49, 0))),
    );

    println!();
    println!("audit trail");
    println!(
        "{:<10} {:<15} {:<10} {:<18} {:<18} {:<8} reason",
        "at (+ms)", "tool", "proposer", "from", "to", "by"
    );
    for event in approvals.store().events().expect("memory store") {
        println!(
            "{:<10} {:<15} {:<10} {:<18} {:<18} {:<8} {}",
            event.at.unix_millis() - START,
            event.tool,
            event.proposer,
            event.from.map_or("-", |s| s.as_str()),
            event.to.as_str(),
            event.by.as_deref().unwrap_or("-"),
            event.reason.as_deref().unwrap_or("")
        );
    }
}
