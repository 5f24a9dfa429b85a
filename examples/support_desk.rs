//! The support desk: four governed tools, three actors, a scripted stream of model calls
//! (good, malformed and hostile) and an operator working the approval queue.
//!
//! ```sh
//! cargo run --example support_desk                       # tables
//! cargo run --example support_desk -- --json             # JSON lines
//! cargo run --example support_desk -- --store desk.db    # keep the file
//! ```
//!
//! Approvals live in a SQLite file: a fresh one in the temp directory, or the one given
//! with `--store PATH`.
//!
//! Everything goes through one `Governor`: what each actor is shown, each call, each
//! decision of the operator, each execution, and the audit trail it kept.

mod desk;

use cairnloop::approvals::{ApprovalConfig, AuditRecord, ManualClock};
use cairnloop::gate::{Timestamp, Ttl};
use cairnloop::stores::SqliteStore;
use cairnloop::{
    Actor, ApprovalError, ApprovalLane, Governor, IdempotencyKey, Outcome, Registry, ToolCall,
    ToolEntry,
};
use desk::{DeleteCustomer, Desk, InternalNote, LookupOrder, RefundOrder};
use serde::Serialize;
use serde_json::Value;

/// The four tools of the demo: one per risk tier.
static SUPPORT_DESK: Registry<Desk> = Registry::new(&[
    ToolEntry::json::<LookupOrder>(),
    ToolEntry::json::<InternalNote>(),
    ToolEntry::json::<RefundOrder>(),
    ToolEntry::json::<DeleteCustomer>(),
]);

/// A fixed clock, so every run prints the same: 2026-12-02 09:00 UTC.
const START: u64 = 1_796_202_000_000;
const HOUR: u64 = 3_600_000;

fn at(hours: u64, minutes: u64) -> Timestamp {
    Timestamp::from_unix_millis(START + hours * HOUR + minutes * 60_000)
}

/// One line of the demo's output.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// Whether an actor sees a tool in its listing.
    Visible {
        actor: String,
        tool: String,
        visible: bool,
    },
    /// The pipeline's decision on one model call.
    Decision {
        actor: String,
        kind: String,
        tool: String,
        decision: String,
        code: Option<String>,
        detail: String,
    },
    /// One step of the operator on the approval queue, and what it led to.
    Step {
        who: String,
        tool: String,
        step: String,
        ok: bool,
        state: Option<String>,
        detail: String,
    },
    /// A tool that ran, and its output.
    Ran {
        actor: String,
        tool: String,
        via: String,
        output: Value,
    },
    /// One move of an approval lane, from the store's append-only trail.
    Transition {
        at_minutes: u64,
        tool: String,
        proposer: String,
        from: Option<String>,
        to: String,
        by: Option<String>,
        reason: Option<String>,
    },
}

/// Runs the whole script and returns what it printed, as records.
pub fn run_demo(store: SqliteStore) -> Vec<Record> {
    let desk = Desk::default();
    let clock = ManualClock::new(at(0, 0));
    let governor = Governor::new(&SUPPORT_DESK)
        .with_store(store)
        .with_config(ApprovalConfig::new().with_ttl(Ttl::DEFAULT))
        .with_clock(clock.clone());
    let agent = Actor::new("agent-7", &["orders:read", "tickets:write"]).with_account("acme");
    let billing = Actor::new("billing-2", &["orders:read", "refunds:write"]).with_account("acme");
    let admin = Actor::new(
        "admin-1",
        &[
            "orders:read",
            "tickets:write",
            "refunds:write",
            "customers:delete",
        ],
    )
    .with_account("acme");
    let actors = [&agent, &billing, &admin];
    let mut records = Vec::new();

    // 1. What each actor is shown: the very gates a call goes through.
    for actor in actors {
        for (entry, verdict) in governor.verdicts(actor, &desk) {
            let visible = verdict.code() != "blocked";
            records.push(Record::Visible {
                actor: actor.id().into(),
                tool: entry.spec().name().into(),
                visible,
            });
        }
    }

    // 2. A stream of model calls.
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
            &agent,
            "good",
            "internal_note",
            r#"{"ticket": 43, "body": "Chase the courier."}"#,
        ),
        (
            &billing,
            "good",
            "refund_order",
            r#"{"order": 1001, "cents": 1250, "reason": "damaged"}"#,
        ),
        (
            &billing,
            "good",
            "refund_order",
            r#"{"order": 1002, "cents": 99000, "reason": "late"}"#,
        ),
        (
            &admin,
            "good",
            "refund_order",
            r#"{"order": 1003, "cents": 500, "reason": "late"}"#,
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
            &billing,
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
            &billing,
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
    let mut queue: Vec<(IdempotencyKey, &Actor<'_>, &str, &str)> = Vec::new();
    for (actor, kind, name, arguments) in script {
        let outcome =
            pollster::block_on(governor.call(&ToolCall::new(name, arguments), actor, &desk))
                .expect("a memory store records every decision");
        let detail = match outcome {
            Outcome::Executed(output) => {
                records.push(Record::Ran {
                    actor: actor.id().into(),
                    tool: name.into(),
                    via: "auto".into(),
                    output: output.clone(),
                });
                format!("ran: {output}")
            }
            Outcome::Failed(error) => error.to_string(),
            Outcome::AwaitingApproval(lane) => {
                let preview = lane.proposal().preview().text().replace('\n', " | ");
                queue.push((lane.key(), actor, name, arguments));
                format!("proposal {}…: {preview}", &lane.key().to_string()[..8])
            }
            Outcome::Blocked(blocked) => blocked.to_string(),
        };
        // The governor recorded the decision in its store's log before it answered (a
        // proposal's lane is opened right after it).
        let audit = pollster::block_on(governor.events())
            .expect("memory store")
            .into_iter()
            .rev()
            .find_map(|record| match record {
                AuditRecord::Decision(event) => Some(event),
                AuditRecord::Transition(_) => None,
            })
            .expect("every call leaves its decision");
        records.push(Record::Decision {
            actor: actor.id().into(),
            kind: kind.into(),
            tool: audit.tool,
            decision: audit.decision,
            code: audit.code,
            detail,
        });
    }

    // 3. The operator works the queue.
    let [note, late_note, refund, big_refund, own_refund] = queue.as_slice() else {
        panic!("expected five proposals, got {}", queue.len());
    };
    // Every step is recorded with the state its lane is in afterwards.
    let step = |who: &str,
                lane: &(IdempotencyKey, &Actor<'_>, &str, &str),
                what: &str,
                result: Result<String, ApprovalError>| {
        Record::Step {
            who: who.into(),
            tool: lane.2.into(),
            step: what.into(),
            ok: result.is_ok(),
            state: pollster::block_on(governor.lane(&lane.0))
                .ok()
                .map(|l| l.state().as_str().into()),
            detail: result.unwrap_or_else(|error| error.to_string()),
        }
    };
    let decided = |result: Result<ApprovalLane, ApprovalError>| result.map(|_| String::new());
    records.push(step(
        "admin-1",
        own_refund,
        "approve own call",
        decided({
            clock.set(at(1, 0));
            pollster::block_on(governor.approve(&own_refund.0, "admin-1"))
        }),
    ));
    records.push(step(
        "lead-1",
        refund,
        "approve",
        decided({
            clock.set(at(1, 1));
            pollster::block_on(governor.approve(&refund.0, "lead-1"))
        }),
    ));
    records.push(step(
        "lead-1",
        note,
        "approve",
        decided({
            clock.set(at(1, 2));
            pollster::block_on(governor.approve(&note.0, "lead-1"))
        }),
    ));
    records.push(step(
        "lead-1",
        big_refund,
        "reject",
        decided({
            clock.set(at(1, 3));
            pollster::block_on(governor.reject(&big_refund.0, "lead-1", "above the refund limit"))
        }),
    ));
    records.push(step(
        "lead-1",
        own_refund,
        "defer",
        decided({
            clock.set(at(1, 4));
            pollster::block_on(governor.defer(&own_refund.0, "lead-1", "wait for the courier"))
        }),
    ));

    let executions = [
        (refund, &admin, "execute as another actor", at(2, 0)),
        (refund, refund.1, "execute as approved", at(2, 1)),
        (refund, refund.1, "execute again (replay)", at(2, 2)),
        (note, note.1, "execute as approved", at(2, 3)),
        (
            big_refund,
            big_refund.1,
            "execute a rejected call",
            at(2, 4),
        ),
    ];
    for (lane, actor, what, now) in executions {
        clock.set(now);
        let result = pollster::block_on(governor.execute(&lane.0, actor, &desk));
        if let Ok(output) = &result {
            records.push(Record::Ran {
                actor: lane.1.id().into(),
                tool: lane.2.into(),
                via: "approval".into(),
                output: output.clone(),
            });
        }
        records.push(step(
            actor.id(),
            lane,
            what,
            result.map(|output| format!("ran: {output}")),
        ));
    }
    records.push(step(
        "lead-1",
        late_note,
        "approve after 49 hours",
        decided({
            clock.set(at(49, 0));
            pollster::block_on(governor.approve(&late_note.0, "lead-1"))
        }),
    ));

    // 4. The approval lanes' append-only trail.
    for record in pollster::block_on(governor.events()).expect("memory store") {
        let AuditRecord::Transition(event) = record else {
            continue;
        };
        records.push(Record::Transition {
            at_minutes: (event.at.unix_millis() - START) / 60_000,
            tool: event.tool,
            proposer: event.proposer,
            from: event.from.map(|s| s.as_str().into()),
            to: event.to.as_str().into(),
            by: event.by,
            reason: event.reason,
        });
    }
    records
}

/// The records as JSON lines, one object per line.
pub fn json_lines(records: &[Record]) -> String {
    records
        .iter()
        .map(|record| serde_json::to_string(record).expect("records serialise") + "\n")
        .collect()
}

/// The records as aligned tables.
fn tables(records: &[Record]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let tools: Vec<&str> = SUPPORT_DESK
        .tools()
        .iter()
        .map(|t| t.spec().name())
        .collect();
    let _ = writeln!(out, "WHAT EACH ACTOR SEES");
    let _ = writeln!(
        out,
        "{:<10} {}",
        "actor",
        tools.iter().map(|t| format!("{t:<16}")).collect::<String>()
    );
    let mut row = String::new();
    let mut current = String::new();
    for record in records {
        if let Record::Visible { actor, visible, .. } = record {
            if *actor != current {
                if !row.is_empty() {
                    let _ = writeln!(out, "{row}");
                }
                current.clone_from(actor);
                row = format!("{actor:<10} ");
            }
            row.push_str(&format!("{:<16}", if *visible { "yes" } else { "-" }));
        }
    }
    let _ = writeln!(out, "{row}\n");

    let _ = writeln!(out, "MODEL CALLS");
    let _ = writeln!(
        out,
        "{:<10} {:<12} {:<24} {:<15} reason",
        "actor", "kind", "tool", "decision"
    );
    for record in records {
        if let Record::Decision {
            actor,
            kind,
            tool,
            decision,
            detail,
            ..
        } = record
        {
            let quoted = format!("\"{tool}\"");
            let _ = writeln!(
                out,
                "{actor:<10} {kind:<12} {quoted:<24} {decision:<15} {detail}"
            );
        }
    }
    let _ = writeln!(out, "\nAPPROVAL QUEUE");
    let _ = writeln!(
        out,
        "{:<10} {:<15} {:<28} {:<6} {:<18} detail",
        "who", "tool", "step", "ok", "state now"
    );
    for record in records {
        if let Record::Step {
            who,
            tool,
            step,
            ok,
            state,
            detail,
        } = record
        {
            let state = state.as_deref().unwrap_or("-");
            let _ = writeln!(
                out,
                "{who:<10} {tool:<15} {step:<28} {:<6} {state:<18} {detail}",
                if *ok { "yes" } else { "no" }
            );
        }
    }
    let _ = writeln!(out, "\nWHAT RAN");
    let _ = writeln!(out, "{:<10} {:<15} {:<10} output", "actor", "tool", "via");
    for record in records {
        if let Record::Ran {
            actor,
            tool,
            via,
            output,
        } = record
        {
            let _ = writeln!(out, "{actor:<10} {tool:<15} {via:<10} {output}");
        }
    }
    let _ = writeln!(out, "\nAUDIT TRAIL OF THE APPROVAL LANES");
    let _ = writeln!(
        out,
        "{:<8} {:<15} {:<10} {:<18} {:<18} {:<8} reason",
        "+min", "tool", "proposer", "from", "to", "by"
    );
    for record in records {
        if let Record::Transition {
            at_minutes,
            tool,
            proposer,
            from,
            to,
            by,
            reason,
        } = record
        {
            let _ = writeln!(
                out,
                "{at_minutes:<8} {tool:<15} {proposer:<10} {:<18} {to:<18} {:<8} {}",
                from.as_deref().unwrap_or("-"),
                by.as_deref().unwrap_or("-"),
                reason.as_deref().unwrap_or("")
            );
        }
    }
    out
}

const USAGE: &str = "usage: support_desk [--json] [--store PATH]";

fn main() -> std::process::ExitCode {
    let (mut json, mut store) = (false, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--store" => match args.next() {
                Some(path) => store = Some(std::path::PathBuf::from(path)),
                None => {
                    eprintln!("--store needs a path\n{USAGE}");
                    return std::process::ExitCode::from(2);
                }
            },
            "--help" | "-h" => {
                println!("{USAGE}");
                return std::process::ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown option {other}\n{USAGE}");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let path = store.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("cairnloop-support-desk-{}.db", std::process::id()))
    });
    let store = match SqliteStore::open(&path) {
        Ok(store) => store,
        Err(error) => {
            eprintln!("support_desk: cannot open {}: {error}", path.display());
            return std::process::ExitCode::FAILURE;
        }
    };
    let records = run_demo(store);
    if json {
        print!("{}", json_lines(&records));
    } else {
        print!("{}", tables(&records));
    }
    std::process::ExitCode::SUCCESS
}
