//! The configuration as a user writes it: a good file reads as declared, a bad one is
//! refused with every problem at once, by line and column, through the library and the
//! `check` command.

use std::process::Command;

use cairnloop::{ApprovalMode, RiskTier};
use cairnloop_gateway::config::{Config, Transport};

const GOOD: &str = include_str!("configs/good.toml");
const BAD: &str = include_str!("configs/bad.toml");

#[test]
fn the_filesystem_configuration_reads_as_declared() {
    let config = Config::parse(GOOD).unwrap();
    assert_eq!(config.gateway.local_actor.as_deref(), Some("alice"));
    let ids: Vec<&str> = config.upstreams.iter().map(|u| u.id.as_str()).collect();
    assert_eq!(ids, ["fs", "everything"]);
    let Transport::Stdio {
        command, args, env, ..
    } = &config.upstreams[0].transport
    else {
        panic!("fs is started by a command");
    };
    assert_eq!(command, "npx");
    assert_eq!(args[1], "@modelcontextprotocol/server-filesystem");
    assert_eq!(
        env,
        &[(
            "NODE_OPTIONS".to_owned(),
            "--max-old-space-size=256".to_owned()
        )]
    );
    assert_eq!(config.upstreams[0].default_tier, None);
    assert_eq!(config.upstreams[1].default_tier, Some(RiskTier::ReadOnly));

    let declared: Vec<(&str, RiskTier, ApprovalMode)> = config
        .tools
        .iter()
        .map(|tool| (tool.listed.as_str(), tool.tier, tool.mode))
        .collect();
    assert_eq!(
        declared,
        [
            ("fs_read_text_file", RiskTier::ReadOnly, ApprovalMode::Auto),
            (
                "fs_write_file",
                RiskTier::LowWrite,
                ApprovalMode::RequiresApproval
            ),
            (
                "fs_move_file",
                RiskTier::Destructive,
                ApprovalMode::AlwaysBlock
            ),
            (
                "fs_list_directory",
                RiskTier::ReadOnly,
                ApprovalMode::RequiresApproval
            ),
            ("fs_search_files", RiskTier::LowWrite, ApprovalMode::Auto),
            (
                "everything_get-2dsum",
                RiskTier::ReadOnly,
                ApprovalMode::Auto
            ),
            (
                "everything_long",
                RiskTier::HighWrite,
                ApprovalMode::RequiresApproval
            ),
        ]
    );
    let write = &config.tools[1];
    assert_eq!(write.scopes, ["fs:write"]);
    assert_eq!(write.accounts, ["team-a"]);
    let preview = write.preview.as_ref().unwrap();
    assert_eq!(
        preview.render(&serde_json::json!({"path": "/srv/share/a.txt", "content": "x"})),
        r#"Write "/srv/share/a.txt""#
    );
    assert!(config.tools[4].justification.is_some());
    assert!(config.tools[5].idempotent);
    assert_eq!(
        config.tools[5].input_schema.as_ref().unwrap()["required"],
        serde_json::json!(["a", "b"])
    );
    assert_eq!(config.tools[6].tool, "long.tool.name");
}

/// Every problem `bad.toml` has, as (line, column, a piece of the message).
const EXPECTED: &[(usize, usize, &str)] = &[
    (
        2,
        15,
        "`local_actor`: the id begins or ends with whitespace",
    ),
    (3, 1, "unknown key `colour` in [gateway]"),
    (7, 7, "[upstreams.fs] has both `command` and `url`"),
    (9, 12, "upstream id `my_fs` must be 1 to 16 of `a-z 0-9`"),
    (13, 7, "`url` must start with `https://` or `http://`"),
    (14, 13, "`token_env` names an environment variable"),
    (15, 1, "`args` is for an upstream started by `command`"),
    (17, 12, "upstream `empty` needs `command`"),
    (19, 8, "unknown upstream `nowhere`"),
    (24, 11, "rule 6 (scope): wildcard scopes"),
    (
        24,
        19,
        "rule 6 (scope): a scope must be non-empty printable ASCII",
    ),
    (
        28,
        8,
        "rule 4 (approval mode): the explicit approval mode is weaker",
    ),
    (
        32,
        17,
        "rule 4 (approval mode): `.loosen_approval` was given a mode that is not weaker",
    ),
    (
        36,
        8,
        "rule 4 (approval mode): a destructive tool can never run without approval",
    ),
    (
        39,
        12,
        "rule 7 (registry): two tools in one registry have the same name",
    ),
    (45, 16, "`input_schema`: the input schema does not compile"),
    (49, 11, "`preview`: a field is named by"),
    (
        50,
        21,
        "account `\\u{200b}acme`: the id holds the invisible character U+200B",
    ),
    (52, 12, "[tools.web.untiered] needs a `tier`"),
    (56, 8, "`tier` must be one of"),
    (57, 14, "`idempotent` must be true or false"),
    (58, 9, "rule 2 (title)"),
];

#[test]
fn every_problem_of_a_bad_file_is_listed_with_its_place() {
    let problems = Config::parse(BAD).unwrap_err();
    let found: Vec<(usize, usize, &str)> = problems
        .iter()
        .map(|problem| (problem.line(), problem.column(), problem.message()))
        .collect();
    for (i, (line, column, piece)) in EXPECTED.iter().enumerate() {
        let Some(&(found_line, found_column, message)) = found.get(i) else {
            panic!("missing {line}:{column} {piece}; found {found:#?}");
        };
        assert_eq!((found_line, found_column), (*line, *column), "{message}");
        assert!(
            message.contains(piece),
            "{line}:{column}: {message:?} lacks {piece:?}"
        );
    }
    assert_eq!(found.len(), EXPECTED.len(), "{found:#?}");
}

#[test]
fn pass_env_hands_on_variables_by_name_and_never_a_console_operators_token() {
    let file = |pass: &str| {
        format!(
            "[console.operators.lead]\ntoken_env = \"OPS_LEAD_TOKEN\"\n\
             [upstreams.gh]\ncommand = \"server\"\npass_env = {pass}\n"
        )
    };
    let config = Config::parse(&file(r#"["GITHUB_TOKEN"]"#)).unwrap();
    let Transport::Stdio { pass_env, .. } = &config.upstreams[0].transport else {
        panic!("gh is started by a command");
    };
    assert_eq!(pass_env, &["GITHUB_TOKEN".to_owned()]);

    let problems = Config::parse(&file(r#"["OPS_LEAD_TOKEN", "not a name", 7]"#)).unwrap_err();
    let messages: Vec<String> = problems.iter().map(|p| p.message().to_owned()).collect();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert!(messages[0].contains("`OPS_LEAD_TOKEN` signs an operator into the console"));
    assert!(messages[1].contains("`not a name` is not one"));
    assert!(messages[2].contains("each of `pass_env`"));
    let problems = Config::parse(
        "[upstreams.web]\nurl = \"https://mcp.example.com/mcp\"\npass_env = [\"X\"]\n",
    )
    .unwrap_err();
    assert!(
        problems
            .to_string()
            .contains("`pass_env` is for an upstream started by `command`"),
        "{problems}"
    );
}

#[test]
fn the_name_collision_names_both_tools() {
    let problems = Config::parse(BAD).unwrap_err();
    let collision = problems.iter().find(|p| p.line() == 39).unwrap();
    assert!(
        collision
            .message()
            .contains("`read_file` of upstream `web` is listed as `web_read_file`")
    );
    assert!(
        collision
            .message()
            .contains("`shadow` of upstream `web` as `WEB_read_file`")
    );
}

#[test]
fn a_name_too_long_once_mapped_asks_for_a_name() {
    let tool = "t".repeat(62);
    let file =
        format!("[upstreams.fs]\ncommand = \"x\"\n[tools.fs.{tool}]\ntier = \"read_only\"\n");
    let problems = Config::parse(&file).unwrap_err();
    assert_eq!(problems.len(), 1);
    assert!(
        problems.to_string().starts_with("3:11: `fs_` and"),
        "{problems}"
    );
    assert!(problems.to_string().ends_with("give the tool a `name`"));
    let named = format!("{}name = \"fs_long\"\n", file);
    assert_eq!(Config::parse(&named).unwrap().tools[0].listed, "fs_long");
}

#[test]
fn a_syntax_error_is_reported_with_the_rest() {
    let problems =
        Config::parse("[upstreams.fs]\ncommand = \n[gateway]\ncolour = 1\n").unwrap_err();
    let lines: Vec<usize> = problems.iter().map(|p| p.line()).collect();
    assert!(lines.contains(&2), "{problems}");
    assert!(lines.contains(&4), "{problems}");
}

#[test]
fn no_prefix_or_mangling_of_a_file_panics() {
    // Every prefix of both files, and each with one byte replaced by characters TOML
    // treats specially: an answer (a config or problems), never a panic.
    for source in [GOOD, BAD] {
        for end in (0..=source.len()).filter(|&end| source.is_char_boundary(end)) {
            let _ = Config::parse(&source[..end]);
        }
        for (i, _) in source.char_indices().step_by(7) {
            for stand_in in ["\"", "[", "]", "=", "\n", "'", "{", "\u{0}", "é"] {
                let mut mangled = source.to_owned();
                let end = i + source[i..].chars().next().map_or(0, char::len_utf8);
                mangled.replace_range(i..end, stand_in);
                let _ = Config::parse(&mangled);
            }
        }
    }
}

fn gateway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
}

#[test]
fn check_prints_every_problem_with_the_files_name_and_exits_1() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/configs/bad.toml");
    let output = gateway().args(["check", path]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), EXPECTED.len() + 1, "{stderr}");
    assert!(
        lines[0].starts_with(&format!("{path}:2:15: `local_actor`")),
        "{stderr}"
    );
    assert_eq!(
        lines[EXPECTED.len()],
        "22 problem(s); nothing is served from this file"
    );
}

#[test]
fn check_lists_what_a_good_file_declares_and_exits_0() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/configs/good.toml");
    let output = gateway().args(["check", path]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("upstream fs (tools not named: hidden and blocked)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  fs_move_file <- fs/move_file: destructive, always_block"),
        "{stdout}"
    );
}

#[test]
fn check_without_a_file_is_a_usage_error() {
    let output = gateway().arg("check").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let output = gateway()
        .args(["check", "/nonexistent/gateway.toml"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("cannot read /nonexistent/gateway.toml")
    );
}

#[test]
fn a_pinned_schema_is_compiled_offline_with_a_linear_time_pattern_engine() {
    let with_schema = |schema: &str| {
        format!(
            "[upstreams.fs]\ncommand = \"x\"\n[tools.fs.t]\ntier = \"read_only\"\ninput_schema = '{schema}'\n"
        )
    };
    // A back-reference needs a backtracking engine: the linear-time one refuses it.
    let backtracking = with_schema(
        r#"{"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}}"#,
    );
    let problems = Config::parse(&backtracking).unwrap_err();
    assert!(
        problems
            .to_string()
            .contains("`input_schema`: the input schema does not compile"),
        "{problems}"
    );
    // A `$ref` to the network or a file is not fetched: the schema does not compile.
    for reference in ["https://example.com/schema.json", "file:///etc/passwd"] {
        let remote = with_schema(&format!(
            r#"{{"type": "object", "properties": {{"a": {{"$ref": "{reference}"}}}}}}"#
        ));
        let problems = Config::parse(&remote).unwrap_err();
        assert!(
            problems
                .to_string()
                .contains("`input_schema`: the input schema does not compile"),
            "{reference}: {problems}"
        );
    }
    let not_an_object = with_schema(r#"{"type": "string"}"#);
    assert!(
        Config::parse(&not_an_object)
            .unwrap_err()
            .to_string()
            .contains("must describe an object")
    );
    let fine = with_schema(
        r#"{"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}}"#,
    );
    assert!(Config::parse(&fine).is_ok());
}

#[test]
fn serving_over_http_is_declared_with_its_token_checks_and_every_problem_has_its_place() {
    let good = Config::parse(
        r#"
[gateway.http]
address = "0.0.0.0:8379"
issuer = "https://auth.example.com"
audience = "https://tools.example.com/mcp"
jwks_file = "/etc/cairnloop/jwks.json"
account_claim = "org"
allowed_hosts = ["tools.example.com"]
"#,
    )
    .unwrap();
    let http = good.gateway.http.unwrap();
    assert_eq!(http.address.port(), 8379);
    assert_eq!(http.audience, "https://tools.example.com/mcp");
    assert_eq!(http.account_claim.as_deref(), Some("org"));
    assert_eq!(http.allowed_hosts, ["tools.example.com"]);

    let found = problems_of(
        r#"
[gateway.http]
address = "localhost"
jwks_file = 7
token = "a secret"
"#,
    );
    assert_has(&found, 3, "not an IP address and port");
    assert_has(&found, 4, "`jwks_file`");
    assert_has(&found, 5, "token");
    assert!(
        found
            .iter()
            .any(|(_, message)| message.contains("needs `issuer`")),
        "{found:#?}"
    );
    assert_eq!(found.len(), 4, "{found:#?}");
}

#[test]
fn the_console_takes_no_secret_from_the_file_and_every_problem_has_its_place() {
    let found = problems_of(
        r#"
[console]
address = "127.0.0.1"

[console.operators.lead]
password_hash = "hunter2"

[console.operators." lead"]
token_env = "LEAD_TOKEN"

[console.operators.junior]
token_env = "JUNIOR_TOKEN"
password_hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA"
tiers = ["low_write", "everything"]
"#,
    );
    assert_has(&found, 3, "not an IP address and port");
    assert_has(&found, 6, "never the password");
    assert_has(&found, 8, "operator id");
    assert_has(&found, 11, "exactly one of `token_env` and `password_hash`");
    assert_has(&found, 14, "`everything` in `tiers`");
    assert_eq!(found.len(), 5, "{found:#?}");

    let none = Config::parse("[console]\naddress = \"127.0.0.1:8377\"\n").unwrap_err();
    assert!(
        none.to_string().contains("needs at least one operator"),
        "{none}"
    );
}

#[test]
fn a_client_approver_is_another_person_trusted_only_for_the_write_tiers() {
    let good = Config::parse(
        "[gateway]\nlocal_actor = \"agent\"\nclient_approver = \"user:alice\"\nclient_approves = [\"low_write\", \"high_write\"]\n",
    )
    .unwrap();
    assert_eq!(good.gateway.client_approver.as_deref(), Some("user:alice"));
    assert_eq!(
        good.gateway.client_approves,
        [RiskTier::LowWrite, RiskTier::HighWrite]
    );

    let found = problems_of(
        "[gateway]\nlocal_actor = \"alice\"\nclient_approver = \"ALICE\"\nclient_approves = [\"destructive\", \"sometimes\"]\n",
    );
    assert_eq!(found.len(), 4, "{found:#?}");
    assert_has(&found, 3, "same person");
    assert_has(&found, 4, "never run");
    assert_has(&found, 4, "`sometimes`");
    assert_has(&found, 4, "needs `client_approver`");
}

#[test]
fn a_waiting_call_is_held_45_seconds_unless_the_file_says_otherwise() {
    use std::time::Duration;
    let unsaid = Config::parse("[upstreams.fs]\ncommand = \"server\"\n").unwrap();
    assert_eq!(unsaid.gateway.hold, Duration::from_secs(45));
    let said = Config::parse(
        "[gateway]\nhold_secs = 0\n[upstreams.fs]\ncommand = \"server\"\n\
         [tools.fs.write_file]\ntier = \"low_write\"\nhold_secs = 600\n",
    )
    .unwrap();
    assert_eq!(said.gateway.hold, Duration::ZERO);
    assert_eq!(said.tools[0].hold, Some(Duration::from_secs(600)));

    let found = problems_of(
        "[gateway]\nhold_secs = 3601\n[upstreams.fs]\ncommand = \"server\"\n\
         [tools.fs.write_file]\ntier = \"low_write\"\nhold_secs = \"long\"\n",
    );
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_has(&found, 2, "`hold_secs`");
    assert_has(&found, 7, "`hold_secs`");
}

#[test]
fn a_call_waits_two_days_unless_approval_ttl_secs_says_otherwise_and_a_claim_outlives_the_longest_call()
 {
    let unsaid = Config::parse("[upstreams.fs]\ncommand = \"server\"\n").unwrap();
    assert_eq!(
        unsaid.gateway.approval_ttl,
        std::time::Duration::from_secs(172_800)
    );
    let approvals = cairnloop_gateway::serve::approval_config(&unsaid);
    assert_eq!(approvals.ttl().as_millis(), 172_800_000);
    // The default call timeout (120 s) and ten seconds to record the outcome.
    assert_eq!(approvals.lease().as_millis(), 130_000);

    let said = Config::parse(
        "[gateway]\napproval_ttl_secs = 60\n[upstreams.a]\ncommand = \"a\"\ncall_timeout_secs = 5\n\
         [upstreams.b]\ncommand = \"b\"\ncall_timeout_secs = 300\n",
    )
    .unwrap();
    let approvals = cairnloop_gateway::serve::approval_config(&said);
    assert_eq!(approvals.ttl().as_millis(), 60_000);
    assert_eq!(approvals.lease().as_millis(), 310_000);

    for bad in ["0", "2592001", "\"1d\""] {
        let found = problems_of(&format!(
            "[upstreams.fs]\ncommand = \"server\"\n[gateway]\napproval_ttl_secs = {bad}\n"
        ));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_has(&found, 4, "`approval_ttl_secs`");
    }
}

/// The problems `source` has, each as its line and message.
fn problems_of(source: &str) -> Vec<(usize, String)> {
    Config::parse(source)
        .unwrap_err()
        .iter()
        .map(|problem| (problem.line(), problem.message().to_owned()))
        .collect()
}

/// Asserts that one of `found` is at `line` and says `piece`.
fn assert_has(found: &[(usize, String)], line: usize, piece: &str) {
    assert!(
        found
            .iter()
            .any(|(at, message)| *at == line && message.contains(piece)),
        "no problem at line {line} with {piece:?}: {found:#?}"
    );
}

#[test]
fn a_notify_table_is_read_whole_and_every_problem_is_said_where_it_is() {
    let config =
        Config::parse("[[notify]]\nname = \"ops\"\nformat = \"teams\"\nurl_env = \"OPS_URL\"\n")
            .unwrap();
    let notify = &config.notify[0];
    assert_eq!(
        (notify.name.as_str(), notify.url_env.as_str()),
        ("ops", "OPS_URL")
    );
    assert_eq!(notify.format, cairnloop::notifiers::WebhookFormat::Teams);
    assert_eq!(
        (notify.secret_env.as_ref(), notify.root_certificate.as_ref()),
        (None, None)
    );

    let found = problems_of(
        "[[notify]]\nurl_env = \"https://hooks.example.com/x\"\n\
         [[notify]]\nname = \"a\"\nformat = \"pager\"\nurl_env = \"A_URL\"\nretries = 3\n\
         [[notify]]\nname = \"b\"\nurl_env = \"B_URL\"\n\
         [[notify]]\nname = \"b\"\nurl_env = \"B_URL\"\n\
         [[notify]]\nname = \"c\"\nurl_env = \"C_URL\"\nlink = \"approvals.example.com\"\n",
    );
    assert_has(&found, 1, "needs a `name`");
    assert_has(&found, 2, "not a variable name");
    assert_has(&found, 5, "`pager` is not one of `json`, `slack`, `teams`");
    assert_has(&found, 7, "`retries`");
    assert_has(&found, 11, "`b` is named twice");
    assert_has(&found, 17, "`link`");
    assert_eq!(found.len(), 6, "{found:#?}");

    // A receiver's address or secret is never handed to an upstream.
    let found = problems_of(
        "[[notify]]\nname = \"a\"\nurl_env = \"A_URL\"\nsecret_env = \"A_SECRET\"\n\
         [upstreams.fs]\ncommand = \"server\"\npass_env = [\"A_SECRET\"]\n",
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_has(
        &found,
        7,
        "`A_SECRET` holds a notice receiver's address or signing secret",
    );
}

#[test]
fn a_quorum_per_tool_and_per_tier_is_read_and_each_bad_one_is_said_where_it_is() {
    let config = Config::parse(
        "[gateway]\nquorum = { high_write = 3 }\n\
         [upstreams.fs]\ncommand = \"server\"\n\
         [tools.fs.write_file]\ntier = \"low_write\"\nquorum = 2\n\
         [tools.fs.read_text_file]\ntier = \"read_only\"\n",
    )
    .unwrap();
    assert_eq!(config.gateway.quorum, [(RiskTier::HighWrite, 3)]);
    let quorums: Vec<u8> = config.tools.iter().map(|tool| tool.quorum).collect();
    assert_eq!(quorums, [2, 1]);

    let found = problems_of(
        "[gateway]\nquorum = { high_write = 9, read_only = 2, destructive = 2 }\n\
         [upstreams.fs]\ncommand = \"server\"\n\
         [tools.fs.write_file]\ntier = \"low_write\"\nquorum = 0\n\
         [tools.fs.read_text_file]\ntier = \"read_only\"\nquorum = 2\n\
         [tools.fs.edit_file]\ntier = \"low_write\"\nmode = \"auto\"\njustification = \"drafts\"\nquorum = 2\n",
    );
    assert_has(
        &found,
        2,
        "`quorum.high_write` must be a whole number from 1 to 5",
    );
    assert_has(
        &found,
        2,
        "`quorum.read_only`: a quorum is for the tiers whose calls wait",
    );
    assert_has(
        &found,
        2,
        "`quorum.destructive`: a quorum is for the tiers whose calls wait",
    );
    assert_has(&found, 7, "`quorum` must be a whole number from 1 to 5");
    assert_has(&found, 10, "cairnloop rule 8 (quorum)");
    assert_has(&found, 15, "cairnloop rule 8 (quorum)");
    assert_eq!(found.len(), 6, "{found:#?}");
}
