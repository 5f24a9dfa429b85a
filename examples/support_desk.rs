//! The support desk: four governed tools, three actors, a scripted stream of model calls
//! (good, malformed and hostile) and an operator working the approval queue.
//!
//! ```sh
//! cargo run --example support_desk                       # tables
//! cargo run --example support_desk -- --json             # JSON lines
//! cargo run --example support_desk -- --store desk.db    # keep the file
//! ```
//!
//! Approvals live in a SQLite file: `cairnloop-support-desk.db` in the temp directory, or
//! the one given with `--store PATH`. Run it twice: the second run first lists what the
//! first left waiting for a decision. Each proposal has a short id (`#3f2a9c1e`, the
//! start of its idempotency key) that ties the queue, the decisions, the runs and the
//! audit trail together. Colour only on a terminal, and never with `NO_COLOR` set.
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
    /// A proposal an earlier run left waiting for a decision.
    Waiting {
        id: String,
        tool: String,
        proposer: String,
        preview: String,
    },
    /// The pipeline's decision on one model call.
    Decision {
        /// The proposal's short id, when the call awaits approval.
        id: Option<String>,
        actor: String,
        kind: String,
        tool: String,
        decision: String,
        code: Option<String>,
        detail: String,
    },
    /// One step of the operator on the approval queue, and what it led to.
    Step {
        id: String,
        who: String,
        tool: String,
        step: String,
        ok: bool,
        state: Option<String>,
        detail: String,
    },
    /// A tool that ran, and its output.
    Ran {
        /// The proposal's short id, for a call that ran after an approval.
        id: Option<String>,
        actor: String,
        tool: String,
        via: String,
        output: Value,
    },
    /// One move of an approval lane, from the store's append-only trail.
    Transition {
        id: String,
        at_minutes: u64,
        tool: String,
        proposer: String,
        from: Option<String>,
        to: String,
        by: Option<String>,
        reason: Option<String>,
    },
}

/// A proposal's short id: the start of its idempotency key.
fn short(key: &IdempotencyKey) -> String {
    key.to_string()[..8].to_string()
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

    // 0. What earlier runs on this store left waiting. This run's calls carry a dedupe
    // token of their own (the log's length so far), so they are new proposals.
    let earlier = pollster::block_on(governor.events()).expect("the store answers");
    let run = format!("run-{}", earlier.len());
    let waiting =
        pollster::block_on(governor.lanes(cairnloop::gate::LaneState::Pending, None, 100))
            .expect("the store answers");
    for lane in waiting {
        let proposal = lane.proposal();
        records.push(Record::Waiting {
            id: short(&lane.key()),
            tool: proposal.tool().into(),
            proposer: proposal.actor_id().into(),
            preview: proposal
                .preview()
                .text()
                .lines()
                .next()
                .unwrap_or("")
                .into(),
        });
    }

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
            &admin,
            "good",
            "internal_note",
            r#"{"ticket": 44, "body": "Call the customer back tomorrow."}"#,
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
        let call = ToolCall::new(name, arguments).with_dedupe_token(&run);
        let outcome = pollster::block_on(governor.call(&call, actor, &desk))
            .expect("the store records every decision");
        let mut id = None;
        let detail = match outcome {
            Outcome::Executed(output) => {
                records.push(Record::Ran {
                    id: None,
                    actor: actor.id().into(),
                    tool: name.into(),
                    via: "auto".into(),
                    output: output.clone(),
                });
                ran(&output)
            }
            Outcome::Failed(error) => error.to_string(),
            Outcome::AwaitingApproval(lane) => {
                let preview = lane.proposal().preview().text();
                queue.push((lane.key(), actor, name, arguments));
                id = Some(short(&lane.key()));
                format!("waits: {}", preview.lines().next().unwrap_or(""))
            }
            Outcome::Blocked(blocked) => blocked.to_string(),
            // Nobody here approves with changes.
            Outcome::Superseded { original, .. } => format!("superseded: {}", original.key()),
        };
        // The governor recorded the decision in its store's log before it answered (a
        // proposal's lane is opened right after it).
        let audit = pollster::block_on(governor.events())
            .expect("memory store")
            .into_iter()
            .rev()
            .find_map(|record| match record {
                AuditRecord::Decision(event) => Some(event),
                _ => None,
            })
            .expect("every call leaves its decision");
        records.push(Record::Decision {
            id,
            actor: actor.id().into(),
            kind: kind.into(),
            tool: audit.tool.into_owned(),
            decision: audit.decision.into_owned(),
            code: audit.code.map(std::borrow::Cow::into_owned),
            detail,
        });
    }

    // 3. The operator works the queue.
    // The sixth proposal is left waiting: the next run shows it.
    let [note, late_note, refund, big_refund, own_refund, _left] = queue.as_slice() else {
        panic!("expected six proposals, got {}", queue.len());
    };
    // Every step is recorded with the state its lane is in afterwards.
    let step = |who: &str,
                lane: &(IdempotencyKey, &Actor<'_>, &str, &str),
                what: &str,
                result: Result<String, ApprovalError>| {
        Record::Step {
            id: short(&lane.0),
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
                id: Some(short(&lane.0)),
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
            result.map(|output| ran(&output)),
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
    // This run's part of the log: what earlier runs appended comes before it.
    for record in pollster::block_on(governor.events())
        .expect("the store answers")
        .into_iter()
        .skip(earlier.len())
    {
        let AuditRecord::Transition(event) = record else {
            continue;
        };
        records.push(Record::Transition {
            id: short(&event.key),
            at_minutes: (event.at.unix_millis() - START) / 60_000,
            tool: event.tool.into_owned(),
            proposer: event.proposer,
            from: event.from.map(|s| s.as_str().into()),
            to: event.to.as_str().into(),
            by: event.by,
            reason: event.reason,
        });
    }
    records
}

/// What a run gave back, as a person reads it.
fn ran(output: &Value) -> String {
    match output {
        Value::Null => "ran (no output)".into(),
        output => format!("ran, output {output}"),
    }
}

/// The records as JSON lines, one object per line.
pub fn json_lines(records: &[Record]) -> String {
    records
        .iter()
        .map(|record| serde_json::to_string(record).expect("records serialise") + "\n")
        .collect()
}

/// The widest line the tables print.
pub const WIDTH: usize = 100;

/// A time since the script started, as a person says it.
fn elapsed(minutes: u64) -> String {
    match minutes {
        0..=59 => format!("{minutes} min"),
        60..=1_439 if minutes.is_multiple_of(60) => format!("{} h", minutes / 60),
        60..=1_439 => format!("{} h {} min", minutes / 60, minutes % 60),
        _ => format!("{} d {} h", minutes / 1_440, (minutes % 1_440) / 60),
    }
}

/// The table writer: every line cut to [`WIDTH`] columns, and colour only when asked.
struct Out {
    text: String,
    colour: bool,
}

impl Out {
    fn line(&mut self, line: &str) {
        let cut: String = if line.chars().count() > WIDTH {
            line.chars().take(WIDTH - 1).chain(['…']).collect()
        } else {
            line.to_string()
        };
        let mut cut = cut.trim_end().to_string();
        if self.colour {
            for (word, code) in [
                (" execute ", "32"),
                (" await_approval ", "33"),
                (" blocked ", "31"),
            ] {
                cut = cut.replacen(word, &format!(" \x1b[{code}m{}\x1b[0m ", word.trim()), 1);
            }
        }
        self.text.push_str(&cut);
        self.text.push('\n');
    }

    /// A row whose last column, `detail`, goes on the lines below when it does not fit,
    /// broken between words: nothing is cut.
    fn row(&mut self, row: &str, detail: &str) {
        let joined = format!("{row} {detail}");
        if joined.chars().count() <= WIDTH || detail.is_empty() {
            return self.line(&joined);
        }
        self.line(row);
        let indent = "    ↳ ";
        let mut current = String::from(indent);
        for word in detail.split(' ') {
            if current.chars().count() + word.chars().count() + 1 > WIDTH && current != indent {
                self.line(&current);
                current = String::from("      ");
            }
            if !current.ends_with(' ') {
                current.push(' ');
            }
            current.push_str(word);
        }
        self.line(&current);
    }

    fn title(&mut self, title: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        if self.colour {
            self.text.push_str(&format!("\x1b[1m{title}\x1b[0m\n"));
        } else {
            self.text.push_str(title);
            self.text.push('\n');
        }
    }
}

/// The records as aligned tables, each line at most [`WIDTH`] columns; with `colour`,
/// decisions in green, yellow and red and titles in bold.
pub fn tables(records: &[Record], colour: bool) -> String {
    let mut out = Out {
        text: String::new(),
        colour,
    };
    let hash = |id: &str| format!("#{id}");
    let waiting: Vec<&Record> = records
        .iter()
        .filter(|r| matches!(r, Record::Waiting { .. }))
        .collect();
    if !waiting.is_empty() {
        out.title("STILL WAITING FROM EARLIER RUNS (kept in the SQLite store)");
        out.line(&format!(
            "{:<10} {:<14} {:<10} what",
            "id", "tool", "proposer"
        ));
        for record in waiting {
            if let Record::Waiting {
                id,
                tool,
                proposer,
                preview,
            } = record
            {
                out.line(&format!(
                    "{:<10} {tool:<14} {proposer:<10} {preview}",
                    hash(id)
                ));
            }
        }
    }
    let tools: Vec<&str> = SUPPORT_DESK
        .tools()
        .iter()
        .map(|t| t.spec().name())
        .collect();
    out.title("WHAT EACH ACTOR SEES");
    out.line(&format!(
        "{:<10} {}",
        "actor",
        tools.iter().map(|t| format!("{t:<16}")).collect::<String>()
    ));
    let mut row = String::new();
    let mut current = String::new();
    for record in records {
        if let Record::Visible { actor, visible, .. } = record {
            if *actor != current {
                if !row.is_empty() {
                    out.line(&row);
                }
                current.clone_from(actor);
                row = format!("{actor:<10} ");
            }
            row.push_str(&format!("{:<16}", if *visible { "yes" } else { "-" }));
        }
    }
    out.line(&row);

    out.title("MODEL CALLS");
    out.line(&format!(
        "{:<9} {:<11} {:<17} {:<14} {:<9} reason",
        "actor", "kind", "tool", "decision", "id"
    ));
    for record in records {
        if let Record::Decision {
            id,
            actor,
            kind,
            tool,
            decision,
            detail,
            ..
        } = record
        {
            let quoted = format!("\"{tool}\"");
            let id = id.as_deref().map(hash).unwrap_or_else(|| "-".into());
            out.row(
                &format!("{actor:<9} {kind:<11} {quoted:<17} {decision:<14} {id:<9}"),
                detail,
            );
        }
    }
    out.title("APPROVAL QUEUE: what the operator did");
    out.line(&format!(
        "{:<9} {:<9} {:<14} {:<25} {:<4} {:<10} detail",
        "id", "who", "tool", "step", "ok", "state now"
    ));
    for record in records {
        if let Record::Step {
            id,
            who,
            tool,
            step,
            ok,
            state,
            detail,
        } = record
        {
            let state = state.as_deref().unwrap_or("-");
            out.row(
                &format!(
                    "{:<9} {who:<9} {tool:<14} {step:<25} {:<4} {state:<10}",
                    hash(id),
                    if *ok { "yes" } else { "no" }
                ),
                detail,
            );
        }
    }
    out.title("WHAT RAN");
    out.line(&format!(
        "{:<9} {:<10} {:<14} {:<9} output",
        "id", "actor", "tool", "via"
    ));
    for record in records {
        if let Record::Ran {
            id,
            actor,
            tool,
            via,
            output,
        } = record
        {
            let id = id.as_deref().map(hash).unwrap_or_else(|| "-".into());
            let output = match output {
                Value::Null => "(no output)".to_string(),
                other => other.to_string(),
            };
            out.line(&format!("{id:<9} {actor:<10} {tool:<14} {via:<9} {output}"));
        }
    }
    out.title("AUDIT TRAIL OF THE APPROVAL LANES");
    out.line(&format!(
        "{:<11} {:<9} {:<14} {:<10} {:<17} {:<17} {:<7} reason",
        "+time", "id", "tool", "proposer", "from", "to", "by"
    ));
    for record in records {
        if let Record::Transition {
            id,
            at_minutes,
            tool,
            proposer,
            from,
            to,
            by,
            reason,
        } = record
        {
            out.row(
                &format!(
                    "{:<11} {:<9} {tool:<14} {proposer:<10} {:<17} {to:<17} {:<7}",
                    elapsed(*at_minutes),
                    hash(id),
                    from.as_deref().unwrap_or("(new)"),
                    by.as_deref().unwrap_or("-"),
                ),
                reason.as_deref().unwrap_or(""),
            );
        }
    }
    out.title("LEGEND");
    out.line("yes / -     the actor is shown the tool (visible means callable) / it is not");
    out.line("#3f2a9c1e   a proposal's short id (the start of its idempotency key): the same");
    out.line("            proposal in the calls, the queue, what ran and the trail");
    out.line("+time       time since the script started (its clock is simulated: 49 h pass)");
    out.line("ok          whether the step was applied; if not, detail says why");
    out.line("(new)       the lane was opened: a proposal, waiting for a decision");
    out.text
}

const USAGE: &str = "usage: support_desk [--json] [--store PATH]";

/// `--json` and `--store PATH`; `None` for `--help`.
fn parse(
    mut parser: lexopt::Parser,
) -> Result<Option<(bool, Option<std::path::PathBuf>)>, lexopt::Error> {
    use lexopt::prelude::*;
    let (mut json, mut store) = (false, None);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("json") => json = true,
            Long("store") => store = Some(parser.value()?.into()),
            Short('h') | Long("help") => return Ok(None),
            _ => return Err(arg.unexpected()),
        }
    }
    Ok(Some((json, store)))
}

fn main() -> std::process::ExitCode {
    let (json, store) = match parse(lexopt::Parser::from_env()) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("support_desk: {error}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    // One file for every run, so that a second run finds what the first left waiting.
    let path = store.unwrap_or_else(|| std::env::temp_dir().join("cairnloop-support-desk.db"));
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
        use std::io::IsTerminal;
        let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        print!("{}", tables(&records, colour));
    }
    std::process::ExitCode::SUCCESS
}
