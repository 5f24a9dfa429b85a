//! A scripted stream of tool calls as a model might send them, good, malformed and
//! hostile, each put through the by-name pipeline; prints every decision and its reason.
//!
//! `cargo run --features serde --example model_calls`

mod desk;

use cairnloop::{Actor, CallDecision, Governance, ToolCall};
use desk::{DESK, Desk, EVERY_SCOPE};

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
            CallDecision::AwaitApproval(proposal) => format!(
                "key {}…, preview: {}",
                &proposal.idempotency_key().to_string()[..12],
                proposal.preview().text().replace('\n', " | ")
            ),
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
}
