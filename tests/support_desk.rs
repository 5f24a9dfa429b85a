//! Runs the support-desk demo and checks its JSON lines: every decision and every
//! transition its script implies.
#![cfg(feature = "sqlite")]

#[path = "../examples/support_desk.rs"]
#[allow(dead_code, reason = "the demo's main is not called here")]
mod demo;

use serde_json::Value;

/// The demo's records from `runs` runs on one fresh store: the last run's.
fn records(runs: usize) -> Vec<demo::Record> {
    let path = std::env::temp_dir().join(format!(
        "cairnloop-demo-test-{}-{:?}.db",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_file(&path);
    let mut records = Vec::new();
    for _ in 0..runs {
        let store = cairnloop::stores::SqliteStore::open(&path).expect("the store");
        records = demo::run_demo(store);
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    records
}

fn lines() -> Vec<Value> {
    demo::json_lines(&records(1))
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is one JSON object"))
        .collect()
}

fn of<'a>(lines: &'a [Value], record: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|line| line["record"] == record)
        .collect()
}

#[test]
fn each_actor_sees_exactly_its_tools() {
    let lines = lines();
    let visible: Vec<(String, String)> = of(&lines, "visible")
        .into_iter()
        .filter(|line| line["visible"] == true)
        .map(|line| {
            (
                line["actor"].as_str().unwrap().into(),
                line["tool"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected = [
        ("agent-7", "lookup_order"),
        ("agent-7", "internal_note"),
        ("billing-2", "lookup_order"),
        ("billing-2", "refund_order"),
        ("admin-1", "lookup_order"),
        ("admin-1", "internal_note"),
        ("admin-1", "refund_order"),
    ];
    // delete_customer is destructive: always blocked, so shown to no one.
    assert_eq!(visible, expected.map(|(a, t)| (a.to_owned(), t.to_owned())));
    assert_eq!(of(&lines, "visible").len(), 12);
}

#[test]
fn every_call_gets_the_decision_its_kind_implies() {
    let lines = lines();
    let decisions = of(&lines, "decision");
    assert_eq!(decisions.len(), 22);
    let codes: Vec<String> = decisions
        .iter()
        .map(|d| {
            d["code"]
                .as_str()
                .unwrap_or(d["decision"].as_str().unwrap())
                .to_owned()
        })
        .collect();
    assert_eq!(
        codes,
        [
            "execute",
            "await_approval",
            "await_approval",
            "await_approval",
            "await_approval",
            "await_approval",
            "await_approval",
            "scope_missing",
            "always_blocked",
            "needs_input",
            "needs_input",
            "needs_input",
            "needs_input",
            "needs_input",
            "needs_input",
            "needs_input",
            "needs_input",
            "needs_input",
            "unknown_tool",
            "unknown_tool",
            "unknown_tool",
            "unknown_tool",
        ]
    );
    for decision in &decisions {
        let kind = decision["kind"].as_str().unwrap();
        let executed = decision["decision"] == "execute";
        if kind != "good" {
            assert!(!executed, "a {kind} call executed: {decision}");
        }
    }
    // Secrets never reach the preview.
    assert!(
        decisions
            .iter()
            .all(|d| !d["detail"].as_str().unwrap().contains("tok-9"))
    );
}

#[test]
fn the_operator_steps_end_where_the_script_says() {
    let lines = lines();
    let steps: Vec<(String, bool, String)> = of(&lines, "step")
        .into_iter()
        .map(|s| {
            (
                s["step"].as_str().unwrap().into(),
                s["ok"].as_bool().unwrap(),
                s["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected = [
        ("approve own call", false, "pending"),
        ("approve", true, "approved"),
        ("approve", true, "approved"),
        ("reject", true, "rejected"),
        ("defer", true, "deferred"),
        ("execute as another actor", false, "approved"),
        ("execute as approved", true, "executed"),
        ("execute again (replay)", false, "executed"),
        ("execute as approved", true, "executed"),
        ("execute a rejected call", false, "rejected"),
        ("approve after 49 hours", false, "expired"),
    ];
    assert_eq!(
        steps,
        expected.map(|(s, ok, st)| (s.to_owned(), ok, st.to_owned()))
    );
}

#[test]
fn only_the_auto_call_and_the_two_approved_calls_ran() {
    let lines = lines();
    let ran: Vec<(String, String)> = of(&lines, "ran")
        .into_iter()
        .map(|r| {
            (
                r["tool"].as_str().unwrap().into(),
                r["via"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        ran,
        [
            ("lookup_order", "auto"),
            ("refund_order", "approval"),
            ("internal_note", "approval")
        ]
        .map(|(t, v)| (t.to_owned(), v.to_owned()))
    );
}

#[test]
fn the_trail_has_every_transition_in_order() {
    let lines = lines();
    let trail: Vec<String> = of(&lines, "transition")
        .into_iter()
        .map(|t| {
            format!(
                "{} {}->{}",
                t["tool"].as_str().unwrap(),
                t["from"].as_str().unwrap_or("-"),
                t["to"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        trail,
        [
            "internal_note -->pending",
            "internal_note -->pending",
            "refund_order -->pending",
            "refund_order -->pending",
            "refund_order -->pending",
            "internal_note -->pending",
            "refund_order pending->approved",
            "internal_note pending->approved",
            "refund_order pending->rejected",
            "refund_order pending->deferred",
            "refund_order approved->execution_pending",
            "refund_order execution_pending->executed",
            "internal_note approved->execution_pending",
            "internal_note execution_pending->executed",
            "internal_note pending->expired",
        ]
    );
}

#[test]
fn the_tables_fit_in_100_columns_and_colour_changes_nothing_else() {
    let records = records(1);
    let plain = demo::tables(&records, false);
    for line in plain.lines() {
        assert!(
            line.chars().count() <= demo::WIDTH,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    // Long reasons wrap onto the next lines: nothing is cut off.
    assert!(!plain.contains('…'), "a line was cut: {plain}");
    assert!(!plain.contains('\u{1b}'), "no colour unless asked");
    let coloured = demo::tables(&records, true);
    assert!(coloured.contains("\u{1b}[32mexecute\u{1b}[0m"));
    let mut stripped = String::new();
    let mut escape = false;
    for c in coloured.chars() {
        match (escape, c) {
            (false, '\u{1b}') => escape = true,
            (true, 'm') => escape = false,
            (true, _) => {}
            (false, c) => stripped.push(c),
        }
    }
    assert_eq!(stripped, plain);
    // No internal names, and no bare null for a run with no output.
    assert!(
        !plain.contains("start_execution") && !plain.contains("null"),
        "{plain}"
    );
}

#[test]
fn every_id_links_a_proposal_to_its_steps_runs_and_trail() {
    let lines = lines();
    let proposed: Vec<&str> = of(&lines, "decision")
        .iter()
        .filter_map(|d| d["id"].as_str())
        .collect();
    assert_eq!(proposed.len(), 6);
    assert!(
        proposed
            .iter()
            .all(|id| id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()))
    );
    for record in ["step", "transition"] {
        for line in of(&lines, record) {
            let id = line["id"].as_str().expect("an id");
            assert!(
                proposed.contains(&id),
                "{record} {line} names no proposal of this run"
            );
        }
    }
    let ran: Vec<&str> = of(&lines, "ran")
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(ran.len(), 2);
    assert!(ran.iter().all(|id| proposed.contains(id)));
    // The trail's times are numbers, in minutes.
    assert!(
        of(&lines, "transition")
            .iter()
            .all(|t| t["at_minutes"].is_u64())
    );
}

#[test]
fn a_second_run_shows_what_the_first_left_waiting() {
    let first = records(1);
    assert!(
        !first
            .iter()
            .any(|r| matches!(r, demo::Record::Waiting { .. }))
    );
    let second = records(2);
    let waiting: Vec<&demo::Record> = second
        .iter()
        .filter(|r| matches!(r, demo::Record::Waiting { .. }))
        .collect();
    assert_eq!(waiting.len(), 1, "the note the operator left alone");
    let table = demo::tables(&second, false);
    assert!(
        table.starts_with("STILL WAITING FROM EARLIER RUNS"),
        "{table}"
    );
}
