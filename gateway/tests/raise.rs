//! `raise` rules as a user writes them: CEL over a call's arguments and caller, each
//! problem of the file at its line and column, the bounds refused when the file is read,
//! and a rule that cannot be evaluated raising the call as if it held.

use cairnloop::{Actor, RiskTier};
use cairnloop_gateway::config::{Config, MAX_RAISES, MAX_WHEN_BYTES};
use serde_json::json;

const HEAD: &str =
    "[upstreams.fs]\ncommand = \"server\"\n[tools.fs.write_file]\ntier = \"low_write\"\n";

/// Each problem of `raise` (the value of the key, written on line 5) as line, column
/// and message.
fn problems(raise: &str) -> Vec<(usize, usize, String)> {
    Config::parse(&format!("{HEAD}raise = {raise}\n"))
        .unwrap_err()
        .iter()
        .map(|p| (p.line(), p.column(), p.message().to_owned()))
        .collect()
}

fn the_only_problem(raise: &str) -> (usize, usize, String) {
    let mut found = problems(raise);
    assert_eq!(found.len(), 1, "{found:#?}");
    found.remove(0)
}

fn rules(raise: &str) -> cairnloop_gateway::config::Raises {
    let config = Config::parse(&format!("{HEAD}raise = {raise}\n")).unwrap();
    config.tools[0].raise.clone()
}

#[test]
fn a_rule_raises_the_calls_it_holds_for_and_the_highest_rule_wins() {
    let raise = rules(
        r#"[
  { when = "!args.path.startsWith('/scratch/')", tier = "high_write", reason = "outside the scratch folder" },
  { when = "args.path.endsWith('.sh') && account != 'ops'", tier = "destructive", reason = "a script, outside ops" },
  { when = "args.lines.exists(l, l.contains('sudo'))", tier = "high_write", reason = "sudo" },
]"#,
    );
    let agent = Actor::new("agent-7", &[]);
    let ops = Actor::new("agent-7", &[]).with_account("ops");
    // The tier, and the reason of the rule that gave it (said to whoever decides).
    let tier = |arguments: serde_json::Value, actor: &Actor<'_>| {
        let raised = raise.raised_for(&arguments, actor);
        assert_eq!(
            raised.as_ref().map(|(tier, _)| *tier),
            raise.tier_for(&arguments, actor)
        );
        raised
    };
    let said = |tier, reason: &str| Some((tier, reason.to_owned()));

    let scratch = json!({"path": "/scratch/a.txt", "lines": ["hello"]});
    assert_eq!(tier(scratch, &agent), None);
    let etc = json!({"path": "/etc/hosts", "lines": []});
    assert_eq!(
        tier(etc, &agent),
        said(RiskTier::HighWrite, "outside the scratch folder")
    );
    let script = json!({"path": "/scratch/run.sh", "lines": []});
    assert_eq!(
        tier(script.clone(), &agent),
        said(RiskTier::Destructive, "a script, outside ops")
    );
    assert_eq!(tier(script, &ops), None);
    let sudo = json!({"path": "/scratch/a", "lines": ["ok", "sudo rm"]});
    assert_eq!(tier(sudo, &ops), said(RiskTier::HighWrite, "sudo"));
    // Two rules at one tier: the first that holds says why.
    let both = json!({"path": "/etc/x", "lines": ["sudo"]});
    assert_eq!(
        tier(both, &ops),
        said(RiskTier::HighWrite, "outside the scratch folder")
    );
}

#[test]
fn a_rule_that_fails_at_run_time_raises_to_its_tier() {
    let raise = rules(
        r#"[{ when = "args.cents > 100000", tier = "high_write", reason = "large" },
  { when = "actor == 'intern' && args.note.size() > 0", tier = "destructive", reason = "interns" }]"#,
    );
    let agent = Actor::new("agent-7", &[]);
    let intern = Actor::new("intern", &[]);
    // A missing field, a string where a number is compared, a list in `size()` of the
    // wrong kind: each fails, and the call is raised as if its rule held.
    assert_eq!(
        raise.tier_for(&json!({}), &agent),
        Some(RiskTier::HighWrite)
    );
    // And says so to whoever decides.
    assert_eq!(
        raise.raised_for(&json!({}), &agent),
        Some((
            RiskTier::HighWrite,
            "large (the rule could not be evaluated for this call)".to_owned()
        ))
    );
    assert_eq!(
        raise.tier_for(&json!({"cents": "a lot"}), &agent),
        Some(RiskTier::HighWrite)
    );
    assert_eq!(
        raise.tier_for(&json!({"cents": 5, "note": 3}), &intern),
        Some(RiskTier::Destructive)
    );
    // Short-circuited: a false left side never reads the missing field.
    assert_eq!(raise.tier_for(&json!({"cents": 5}), &agent), None);
    // A rule that is not a boolean fails too.
    let raise = rules(r#"[{ when = "args.cents", tier = "high_write", reason = "r" }]"#);
    assert_eq!(
        raise.tier_for(&json!({"cents": 0}), &agent),
        Some(RiskTier::HighWrite)
    );
}

#[test]
fn a_syntax_error_is_at_its_line_and_column_in_the_file() {
    // `raise = [{ when = "` is 19 characters: the expression starts at column 20.
    let (line, column, message) = the_only_problem(
        r#"[{ when = "args.path.startsWith(", tier = "high_write", reason = "r" }]"#,
    );
    assert_eq!((line, column), (5, 20 + 21), "{message}");
    assert!(
        message.starts_with("`when` is not CEL: Syntax error"),
        "{message}"
    );

    // In a multi-line string, on its own line.
    let found =
        problems("[{ when = '''\nargs.a &&\n  ) b''', tier = \"high_write\", reason = \"r\" }]");
    assert!(
        found
            .iter()
            .any(|(line, column, _)| (*line, *column) == (7, 3)),
        "{found:#?}"
    );
}

#[test]
fn unknown_names_functions_and_building_loops_are_refused_at_their_place() {
    let (line, column, message) = the_only_problem(
        r#"[{ when = "args.a && env.HOME == ''", tier = "high_write", reason = "r" }]"#,
    );
    assert_eq!((line, column), (5, 20 + 10));
    assert!(message.contains("unknown name `env`"), "{message}");

    let (_, _, message) = the_only_problem(
        r#"[{ when = "args.name.matches('^a+$')", tier = "high_write", reason = "r" }]"#,
    );
    assert!(
        message.contains("`matches` is not a function a rule may call"),
        "{message}"
    );

    for building in [
        "args.l.map(x, x).size() > 3",
        "args.l.filter(x, x > 1).size() > 0",
    ] {
        let (_, _, message) = the_only_problem(&format!(
            r#"[{{ when = "{building}", tier = "high_write", reason = "r" }}]"#
        ));
        assert!(
            message.contains("`map` and `filter` build lists"),
            "{message}"
        );
    }

    // A loop's body reads only its element: the rule's cost stays linear in the input.
    let (_, column, message) = the_only_problem(
        r#"[{ when = "args.l.all(x, x.startsWith(args.root))", tier = "high_write", reason = "r" }]"#,
    );
    assert!(
        message.contains("only its element `x` may be read, not `args`"),
        "{message}"
    );
    assert_eq!(column, 20 + 27);
    let found = problems(
        r#"[{ when = "args.l.all(x, args.l.all(y, y == x))", tier = "high_write", reason = "r" }]"#,
    );
    let messages: Vec<&str> = found.iter().map(|(_, _, m)| m.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(messages[0].contains("only its element `x` may be read, not `args`"));
    assert!(messages[1].contains("only its element `y` may be read, not `x`"));
    // Nested loops over the element's own parts are fine.
    rules(
        r#"[{ when = "args.rows.exists(r, r.cells.all(c, c > 0))", tier = "high_write", reason = "r" }]"#,
    );
}

#[test]
fn a_rule_is_bounded_and_complete_and_raises_above_the_tool() {
    let long = format!("args.a == '{}'", "x".repeat(MAX_WHEN_BYTES));
    let (_, _, message) = the_only_problem(&format!(
        r#"[{{ when = "{long}", tier = "high_write", reason = "r" }}]"#
    ));
    assert!(
        message.contains(&format!("at most {MAX_WHEN_BYTES}")),
        "{message}"
    );

    let many = vec![r#"{ when = "true", tier = "high_write", reason = "r" }"#; MAX_RAISES + 1];
    let (_, _, message) = the_only_problem(&format!("[{}]", many.join(", ")));
    assert!(
        message.contains(&format!("at most {MAX_RAISES}")),
        "{message}"
    );

    let found = problems(
        r#"[{ when = "true", tier = "low_write", reason = "r" },
  { when = "true", tier = "huge", reason = "r" },
  { when = "true", tier = "high_write" },
  { when = "true", tier = "high_write", reason = " ", why = "x" },
  "true"]"#,
    );
    let says = |line: usize, piece: &str| {
        assert!(
            found
                .iter()
                .any(|(at, _, m)| *at == line && m.contains(piece)),
            "no {piece:?} at line {line}: {found:#?}"
        );
    };
    says(5, "`low_write` is not above `low_write`");
    says(6, "`tier` must be one of");
    says(7, "needs `reason`");
    says(8, "cannot be empty");
    says(8, "unknown key `why`");
    says(9, "must be a table");
    assert_eq!(found.len(), 6, "{found:#?}");
}

#[test]
fn check_prints_each_rule_under_its_tool_and_the_quorums() {
    let dir = std::env::temp_dir().join(format!("cairnloop-raise-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gateway.toml");
    std::fs::write(
        &path,
        format!(
            "[gateway]\nquorum = {{ high_write = 2 }}\n{HEAD}quorum = 3\nraise = [{{ when = \"!args.path.startsWith('/scratch/')\", tier = \"high_write\", reason = \"outside scratch\" }}]\n"
        ),
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains(
            "upstream fs (tools not named: hidden and blocked)\nevery waiting high_write call: 2 approvers\n  fs_write_file <- fs/write_file: low_write, requires_approval, 3 approvers\n    raised to high_write when !args.path.startsWith('/scratch/') (outside scratch)\n"
        ),
        "{stdout}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
