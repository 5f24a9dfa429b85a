//! A hostile upstream (`tests/hostile/upstream.py`, one misbehaviour per run) behind the
//! gateway: an approved call that it answers with death, silence, 5 MiB, garbage or a
//! refusal never runs twice, never brings the gateway down, and leaves its lane where a
//! person can see what happened. It also lies in its annotations: the configuration wins.

use std::path::{Path, PathBuf};
use std::process::Command;

use cairnloop::gate::LaneState;
use cairnloop::stores::SqliteStore;
use cairnloop::{Actor, Outcome, ToolCall};
use cairnloop_gateway::config::Config;
use cairnloop_gateway::serve::Gateway;

fn python() -> Option<&'static str> {
    let found = Command::new("python3").arg("--version").output().is_ok();
    assert!(
        found || std::env::var_os("CAIRNLOOP_FILESYSTEM_SERVER").is_none(),
        "CI runs these tests: python3 is needed"
    );
    if !found {
        eprintln!("no python3: the hostile upstream cannot run");
    }
    found.then_some("python3")
}

/// An empty folder of this test run's own, for `what`.
fn fresh_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cairnloop-hostile-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A configuration file in `dir` for `cairnloop-gateway serve`: the hostile upstream in
/// `mode` (with `more` lines in its table), its tool `write` read-only; the file and the
/// upstream's call log.
fn served_config(dir: &Path, mode: &str, more: &str) -> (PathBuf, PathBuf) {
    let log = dir.join("calls.log");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nlocal_actor = \"agent\"\n\n[upstreams.bad]\ncommand = \"python3\"\n\
             args = [{script:?}, {mode:?}, {log:?}]\n{more}\n\n[tools.bad.write]\ntier = \"read_only\"\n",
            script = script().display().to_string(),
            log = log.display().to_string(),
        ),
    )
    .unwrap();
    (config, log)
}

/// Makes the file `trigger` (what the hostile upstream waits for to change its
/// listing, or to start) and waits for the gateway's catalogue to change after it.
async fn catalogue_changes_after(
    catalogue: &mut tokio::sync::watch::Receiver<u64>,
    trigger: &Path,
    what: &str,
) {
    std::fs::write(trigger, "").unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(20), catalogue.changed())
        .await
        .unwrap_or_else(|_| panic!("{what}"))
        .unwrap();
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile/upstream.py")
}

/// The lane's state after an approved call met the upstream in `mode`, and how many
/// calls reached the upstream, after the call was asked for three more times.
/// A gateway in front of the hostile upstream in `mode`, its one tool (`bad_write`)
/// declared with `tier`; the folder holding its store and the upstream's call log.
async fn gateway_against(
    mode: &str,
    tier: &str,
) -> (Gateway<cairnloop::stores::SqliteStore>, PathBuf, PathBuf) {
    let dir = fresh_dir(mode);
    let log = dir.join("calls.log");
    let config = Config::parse(&format!(
        r#"
[upstreams.bad]
command = "python3"
args = [{script:?}, {mode:?}, {log:?}]
call_timeout_secs = 2

[tools.bad.write]
tier = {tier:?}
"#,
        script = script().display().to_string(),
        log = log.display().to_string(),
    ))
    .unwrap();
    let store = SqliteStore::open(dir.join("lanes.db")).unwrap();
    let gateway = cairnloop_gateway::serve::start(&config, store)
        .await
        .unwrap();
    (gateway, dir, log)
}

async fn approved_call_against(mode: &str) -> (LaneState, Option<String>, usize) {
    let (gateway, dir, log) = gateway_against(mode, "low_write").await;
    let governor = &gateway.governor;
    let agent = Actor::new("agent", &[]);
    let call = ToolCall::new("bad_write", r#"{"text": "hi"}"#);
    // The upstream says it only reads; the configuration says it writes: it waits.
    let Outcome::AwaitingApproval(lane) = governor.call(&call, &agent, &()).await.unwrap() else {
        panic!("a low-write tool waits, whatever the upstream claims");
    };
    governor.approve(&lane.key(), "operator").await.unwrap();
    for _ in 0..4 {
        // Never an error that takes the gateway down: an answer each time.
        let outcome = governor.call(&call, &agent, &()).await.unwrap();
        assert!(
            !matches!(outcome, Outcome::Blocked(_)),
            "{mode}: {outcome:?}"
        );
    }
    let lane = governor.lane(&lane.key()).await.unwrap();
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count();
    let _ = std::fs::remove_dir_all(&dir);
    (lane.state(), lane.reason().map(str::to_owned), calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_misbehaves_mid_call_never_runs_an_approved_call_twice() {
    if python().is_none() {
        return;
    }
    for (mode, state, reason) in [
        ("exit", LaneState::OutcomeUnknown, "the upstream failed"),
        ("hang", LaneState::OutcomeUnknown, "did not answer in time"),
        (
            "huge",
            LaneState::OutcomeUnknown,
            "the upstream's answer exceeded 4 MiB",
        ),
        ("garbage", LaneState::OutcomeUnknown, "outcome unknown"),
        (
            "refuse",
            LaneState::ExecutionFailed,
            "the upstream refused the call: unknown tool: write",
        ),
        ("fine", LaneState::Executed, ""),
    ] {
        let (found, why, calls) = approved_call_against(mode).await;
        assert_eq!(found, state, "{mode}: {why:?}");
        assert!(
            why.as_deref().unwrap_or("").contains(reason),
            "{mode}: {why:?}"
        );
        assert_eq!(
            calls, 1,
            "{mode}: the approved call reached the upstream once"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_died_is_started_again_for_the_next_call_and_nothing_is_repeated() {
    if python().is_none() {
        return;
    }
    let (gateway, dir, log) = gateway_against("exit-once", "read_only").await;
    let agent = Actor::new("agent", &[]);
    let first = ToolCall::new("bad_write", r#"{"text": "first"}"#);
    let died = gateway.governor.call(&first, &agent, &()).await;
    assert!(
        !matches!(died, Ok(Outcome::Executed(_))),
        "the upstream died mid-call: {died:?}"
    );
    let second = ToolCall::new("bad_write", r#"{"text": "second"}"#);
    let outcome = gateway.governor.call(&second, &agent, &()).await.unwrap();
    assert!(
        matches!(&outcome, Outcome::Executed(result) if result["content"][0]["text"] == "written"),
        "{outcome:?}"
    );
    assert_eq!(gateway.upstreams[0].restarts().await, 1);
    let calls: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["arguments"]["text"]
                .to_string()
        })
        .collect();
    assert_eq!(
        calls,
        ["\"first\"", "\"second\""],
        "each call reached it once"
    );
    gateway.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that cancels its `tools/call` (MCP `notifications/cancelled`) has the
/// cancellation passed on to the upstream doing the work, through the gateway's binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_cancelled_upstream_too() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};

    if python().is_none() {
        return;
    }
    let dir = fresh_dir("cancel");
    let (config, log) = served_config(&dir, "hang", "");
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway")).configure(
        |command| {
            command
                .arg("serve")
                .arg(&config)
                .arg("--store")
                .arg(dir.join("lanes.db"));
        },
    );
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let params = CallToolRequestParams::new("bad_write").with_arguments(
        serde_json::json!({"text": "slow"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let reached = |path: &Path| {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let cancelled = dir.join("calls.log.cancelled");
    let waited = |done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !done() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        done()
    };
    assert!(
        waited(&|| reached(&log) == 1),
        "the call reached the upstream"
    );
    assert_eq!(reached(&cancelled), 0, "nothing is cancelled yet");
    handle
        .cancel(Some("the user stopped it".into()))
        .await
        .unwrap();
    assert!(
        waited(&|| reached(&cancelled) == 1),
        "the upstream was told the call is cancelled"
    );
    assert_eq!(reached(&log), 1, "and the call was not sent again");
    let _ = client.cancel().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The gateway's resident memory now and at its peak, in KiB, from `/proc`.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches(" kB").parse().ok())
            .unwrap()
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// An upstream whose answer to a read is 5 MiB, 100 MiB, 1 GiB or endless: the gateway stops
/// reading the moment the answer crosses its bound, answers at once with the bound (well
/// inside the call timeout, which would otherwise be what ended it), holds no more than
/// about the bound in memory meanwhile, and serves the next call from a new process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_past_the_bound_is_cut_there_at_once_and_the_gateway_serves_on() {
    use cairnloop_gateway::upstream::{FRAME_ENVELOPE_BYTES, MAX_RESULT_BYTES};
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};

    if python().is_none() {
        return;
    }
    let bound_kib = ((MAX_RESULT_BYTES + FRAME_ENVELOPE_BYTES) / 1024) as u64;
    for mode in ["huge", "flood100", "flood", "endless"] {
        let dir = fresh_dir(&format!("oversize-{mode}"));
        // A call timeout of a minute: an answer in seconds is the bound's doing.
        let (config, log) = served_config(&dir, mode, "call_timeout_secs = 60");
        let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
            .configure(|command| {
                command
                    .arg("serve")
                    .arg(&config)
                    .arg("--store")
                    .arg(dir.join("lanes.db"));
            });
        let transport = TokioChildProcess::new(command).unwrap();
        let pid = transport.id().unwrap();
        let client = ().serve(transport).await.unwrap();
        let call = || {
            let params = CallToolRequestParams::new("bad_write").with_arguments(
                serde_json::json!({"text": "read"})
                    .as_object()
                    .unwrap()
                    .clone(),
            );
            client.call_tool(params)
        };
        let (idle_kib, _) = memory_kib(pid);
        let started = std::time::Instant::now();
        let answer = call().await.unwrap();
        let answered_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let took = started.elapsed();
        let (_, peak_kib) = memory_kib(pid);
        let text = serde_json::to_string(&answer).unwrap();
        assert_eq!(answer.is_error, Some(true), "{mode}: {text}");
        assert!(
            text.contains("the upstream's answer exceeded 4 MiB"),
            "{mode}: {text}"
        );
        assert!(
            took < std::time::Duration::from_secs(30),
            "{mode}: {took:?}"
        );
        if mode != "huge" {
            // The upstream wrote down when its next MiB would cross the bound.
            let crossing: f64 = std::fs::read_to_string(format!("{}.crossed", log.display()))
                .unwrap()
                .parse()
                .unwrap();
            let after = answered_at - crossing;
            assert!(
                after < 1.0,
                "{mode}: answered {after:.3} s after the crossing"
            );
            eprintln!("{mode}: answered {after:.3} s after the crossing");
        }
        eprintln!(
            "{mode}: resident {idle_kib} KiB before the call, peak {peak_kib} KiB (bound {bound_kib} KiB)"
        );
        assert!(
            peak_kib.saturating_sub(idle_kib) < 2 * bound_kib,
            "{mode}: {idle_kib} KiB before, {peak_kib} KiB at the peak"
        );
        // The gateway serves on: the next call reaches a new process of the upstream.
        let again = call().await.unwrap();
        assert_eq!(again.is_error, Some(true), "{mode}");
        let reached = std::fs::read_to_string(&log).unwrap().lines().count();
        assert_eq!(reached, 2, "{mode}: each call reached the upstream once");
        let _ = client.cancel().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// An upstream that renames its tool after a call was approved, then lists it again with
/// another schema: the gateway's catalogue follows its listing, the approved call is
/// invalidated and never forwarded, and listings (the MCP projection too) never show a
/// stale tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_listing_withdraws_or_reoffers_a_tool_and_an_approval_never_reaches_a_renamed_one()
 {
    if python().is_none() {
        return;
    }
    let (gateway, dir, log) = gateway_against("renames", "low_write").await;
    let governor = &gateway.governor;
    let server = cairnloop::mcp::McpServer::new(std::sync::Arc::clone(governor), (), "agent");
    let listed = || -> Vec<(String, serde_json::Value)> {
        server
            .list_tools_for_actor()
            .unwrap()
            .into_iter()
            .map(|tool| {
                (
                    tool.name.to_string(),
                    serde_json::Value::Object((*tool.input_schema).clone()),
                )
            })
            .collect()
    };
    let agent = Actor::new("agent", &[]);
    let call = ToolCall::new("bad_write", r#"{"text": "hi"}"#);
    let Outcome::AwaitingApproval(lane) = governor.call(&call, &agent, &()).await.unwrap() else {
        panic!("a low-write tool waits");
    };
    governor.approve(&lane.key(), "operator").await.unwrap();
    assert_eq!(listed().len(), 1);

    // The upstream renames `write`: the gateway withdraws `bad_write`.
    let mut catalogue = gateway.catalogue.clone();
    catalogue_changes_after(
        &mut catalogue,
        &dir.join("calls.log.rename"),
        "the catalogue changes after the upstream's notification",
    )
    .await;
    assert!(listed().is_empty(), "{:?}", listed());
    assert_eq!(governor.visible(&agent, &()).count(), 0);
    assert!(matches!(
        governor.call(&call, &agent, &()).await.unwrap(),
        Outcome::Blocked(cairnloop::Blocked::UnknownTool)
    ));
    // The approved call is invalidated, not forwarded to whatever `write` is now.
    assert!(matches!(
        governor.execute(&lane.key(), &agent, &()).await,
        Err(cairnloop::ApprovalError::Invalidated(_))
    ));
    assert_eq!(
        governor.lane(&lane.key()).await.unwrap().state(),
        LaneState::Invalidated
    );

    // `write` comes back with `text` an integer: offered again, checked by its new schema.
    catalogue_changes_after(
        &mut catalogue,
        &dir.join("calls.log.retype"),
        "the catalogue changes again",
    )
    .await;
    let now = listed();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].1["properties"]["text"]["type"], "integer");
    assert!(matches!(
        governor.call(&call, &agent, &()).await.unwrap(),
        Outcome::Blocked(cairnloop::Blocked::NeedsInput { .. })
    ));
    let call = ToolCall::new("bad_write", r#"{"text": 7}"#);
    assert!(matches!(
        governor.call(&call, &agent, &()).await.unwrap(),
        Outcome::AwaitingApproval(_)
    ));
    // Nothing ever reached the upstream.
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default(), "");
    gateway.shutdown().await;
}

/// A tool the configuration names that the upstream does not list at start is declared
/// and withheld (hidden, blocked as unknown, never forwarded), then offered when the
/// upstream lists it, with the configuration's declaration: not the upstream's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_tool_the_upstream_lists_later_is_withheld_until_then() {
    if python().is_none() {
        return;
    }
    let dir = fresh_dir("later");
    let log = dir.join("calls.log");
    let config = Config::parse(&format!(
        "[upstreams.bad]\ncommand = \"python3\"\nargs = [{script:?}, \"renames\", {log:?}]\n\n\
         [tools.bad.write]\ntier = \"low_write\"\n\n\
         [tools.bad.write2]\ntier = \"read_only\"\ntitle = \"Write, renamed\"\n",
        script = script().display().to_string(),
        log = log.display().to_string(),
    ))
    .unwrap();
    let store = SqliteStore::open(dir.join("lanes.db")).unwrap();
    let gateway = cairnloop_gateway::serve::start(&config, store)
        .await
        .unwrap();
    let governor = &gateway.governor;
    let agent = Actor::new("agent", &[]);
    let visible = || -> Vec<String> {
        governor
            .visible(&agent, &())
            .map(|tool| tool.spec().name().to_owned())
            .collect()
    };
    let later = ToolCall::new("bad_write2", r#"{"text": "hi"}"#);
    assert_eq!(visible(), ["bad_write"]);
    assert!(
        gateway
            .hidden
            .iter()
            .any(|(upstream, hidden)| upstream == "bad"
                && hidden.tool == "write2"
                && hidden.reason.contains("offered when it lists it")),
        "{:?}",
        gateway.hidden
    );
    assert!(matches!(
        governor.call(&later, &agent, &()).await.unwrap(),
        Outcome::Blocked(cairnloop::Blocked::UnknownTool)
    ));

    // The upstream now lists `write2` (and no longer `write`).
    let mut catalogue = gateway.catalogue.clone();
    catalogue_changes_after(
        &mut catalogue,
        &dir.join("calls.log.rename"),
        "the catalogue changes after the upstream's notification",
    )
    .await;
    assert_eq!(visible(), ["bad_write2"]);
    let offered = governor
        .visible(&agent, &())
        .next()
        .map(|tool| tool.spec().title().to_owned());
    assert_eq!(offered.as_deref(), Some("Write, renamed"));
    let Outcome::Executed(done) = governor.call(&later, &agent, &()).await.unwrap() else {
        panic!("a read-only tool runs once its upstream lists it");
    };
    assert_eq!(done["content"][0]["text"], "written");
    let reached = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(reached.lines().count(), 1, "{reached}");
    assert!(reached.contains(r#""name": "write2""#), "{reached}");
    gateway.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Counts the `notifications/tools/list_changed` a client receives.
#[derive(Clone, Default)]
struct Told(std::sync::Arc<tokio::sync::Notify>);

impl rmcp::ClientHandler for Told {
    fn on_tool_list_changed(
        &self,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.0.notify_one();
        std::future::ready(())
    }
}

/// Through the binary, over stdio: the gateway says its tools list changes, and tells its
/// client when an upstream's new listing changed it; an upstream that would not start
/// does not stop the gateway, and its tool appears, the client told, once it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_is_told_when_an_upstream_listing_changes_what_is_offered() {
    if python().is_none() {
        return;
    }
    // The mode, the file that changes the upstream, and the tools listed before and after.
    told_when("renames", "log.rename", 1, 0).await;
    told_when("wakes", "log.awake", 0, 1).await;
}

async fn told_when(mode: &str, trigger: &str, before: usize, after: usize) {
    use rmcp::ServiceExt;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};

    let dir = fresh_dir(&format!("told-{mode}"));
    let (config, log) = served_config(&dir, mode, "");
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway")).configure(
        |command| {
            command
                .arg("serve")
                .arg(&config)
                .arg("--store")
                .arg(dir.join("lanes.db"));
        },
    );
    let told = Told::default();
    let client = told
        .clone()
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    let capabilities = client.peer_info().unwrap().capabilities.tools.clone();
    assert_eq!(
        capabilities.and_then(|tools| tools.list_changed),
        Some(true)
    );
    assert_eq!(
        client.list_all_tools().await.unwrap().len(),
        before,
        "{mode}"
    );
    std::fs::write(log.with_extension(trigger), "").unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(20), told.0.notified())
        .await
        .unwrap_or_else(|_| panic!("{mode}: the client is told the list changed"));
    assert_eq!(
        client.list_all_tools().await.unwrap().len(),
        after,
        "{mode}"
    );
    client.cancel().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// An upstream reads its environment, which the gateway started it with: what it needs
/// to run and what the file hands it, never the rest of the gateway's (a console
/// operator's token, another upstream's credential, anything the gateway was given).
#[test]
fn an_upstream_reads_no_secret_of_the_gateway_from_its_environment() {
    if python().is_none() {
        return;
    }
    let dir = fresh_dir("env");
    let (config, log) = served_config(
        &dir,
        "snoops",
        "env = { GIVEN_IN_THE_FILE = \"from the file\" }\npass_env = [\"HANDED_ON\", \"NOT_SET_ANYWHERE\"]",
    );
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
        .args(["serve".as_ref(), config.as_os_str(), "--store".as_ref()])
        .arg(dir.join("lanes.db"))
        .env("OPS_LEAD_TOKEN", "console-sign-in")
        .env("ISSUES_TOKEN", "another-upstreams-credential")
        .env("HANDED_ON", "handed on by name")
        .env_remove("NOT_SET_ANYWHERE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("gateway.err")).unwrap())
        .spawn()
        .unwrap();
    let reported = log.with_extension("log.env");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !reported.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = gateway.kill();
    let _ = gateway.wait();
    let text = std::fs::read_to_string(&reported).expect("the upstream was started");
    let env: std::collections::BTreeMap<String, String> = serde_json::from_str(&text).unwrap();

    assert_eq!(
        env.get("GIVEN_IN_THE_FILE").map(String::as_str),
        Some("from the file")
    );
    assert_eq!(
        env.get("HANDED_ON").map(String::as_str),
        Some("handed on by name")
    );
    assert!(!env.contains_key("NOT_SET_ANYWHERE"), "{env:?}");
    // Left out, and said, so a missing credential is not a mystery later.
    let said = std::fs::read_to_string(dir.join("gateway.err")).unwrap();
    assert!(
        said.contains("`pass_env` names NOT_SET_ANYWHERE") && !said.contains("HANDED_ON"),
        "{said}"
    );
    // What a program needs to run (a launcher such as pyenv's may put its own first).
    let path = std::env::var("PATH").unwrap();
    assert!(
        env.get("PATH").is_some_and(|found| found.ends_with(&path)),
        "{env:?}"
    );
    for secret in ["OPS_LEAD_TOKEN", "ISSUES_TOKEN"] {
        assert!(!env.contains_key(secret), "{secret} reached the upstream");
    }
    // Nor anything else of the gateway's: cargo gave it dozens of variables.
    assert!(
        env.keys().all(|name| !name.starts_with("CARGO")),
        "{:?}",
        env.keys().collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An upstream whose listing never ends (each page names another), or whose pages are
/// too large together, is refused within bounds: the gateway neither waits for it nor
/// fills its memory.
#[tokio::test]
async fn a_listing_that_never_ends_is_refused_after_a_bounded_read() {
    for (mode, says) in [
        ("pages", "past 64 pages"),
        ("bulky", "larger than 16777216 bytes"),
    ] {
        listing_refused(mode, says).await;
    }
}

async fn listing_refused(mode: &str, says: &str) {
    if python().is_none() {
        return;
    }
    let dir = fresh_dir(mode);
    let config = Config::parse(&format!(
        "[upstreams.bad]\ncommand = \"python3\"\nargs = [{script:?}, {mode:?}, {log:?}]\ndefault_tier = \"read_only\"\n",
        script = script().display().to_string(),
        log = dir.join("calls.log").display().to_string(),
    ))
    .unwrap();
    let started = std::time::Instant::now();
    let store = SqliteStore::open(dir.join("lanes.db")).unwrap();
    let gateway = cairnloop_gateway::serve::start(&config, store)
        .await
        .unwrap();
    // The gateway serves without it, and says why.
    let [(id, message)] = &gateway.unstarted[..] else {
        panic!("{mode}: {:?}", gateway.unstarted);
    };
    assert_eq!(id, "bad");
    assert!(message.contains(says), "{mode}: {message}");
    assert_eq!(
        gateway
            .governor
            .visible(&Actor::new("agent", &[]), &())
            .count(),
        0
    );
    // Not the start timeout (30 s): the bound on pages ended it.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "{message}"
    );
    gateway.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// An upstream that will not start (it exits at once until its test says otherwise)
/// does not stop the gateway: the gateway serves, withholds the upstream's configured
/// tool (blocked as unknown, never forwarded), tries it again with growing waits, and
/// offers the tool once the upstream starts and lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_will_not_start_is_tried_again_and_its_tools_withheld_until_it_lists_them()
{
    if python().is_none() {
        return;
    }
    let (gateway, dir, log) = gateway_against("wakes", "read_only").await;
    let governor = &gateway.governor;
    let agent = Actor::new("agent", &[]);
    let call = ToolCall::new("bad_write", r#"{"text": "hi"}"#);
    assert_eq!(gateway.unstarted.len(), 1, "{:?}", gateway.unstarted);
    assert_eq!(governor.visible(&agent, &()).count(), 0);
    assert!(matches!(
        governor.call(&call, &agent, &()).await.unwrap(),
        Outcome::Blocked(cairnloop::Blocked::UnknownTool)
    ));
    assert!(
        gateway
            .hidden
            .iter()
            .any(|(_, hidden)| hidden.tool == "write" && hidden.reason.contains("not started")),
        "{:?}",
        gateway.hidden
    );

    let mut catalogue = gateway.catalogue.clone();
    catalogue_changes_after(
        &mut catalogue,
        &log.with_extension("log.awake"),
        "the tool is offered once its upstream starts",
    )
    .await;
    assert_eq!(governor.visible(&agent, &()).count(), 1);
    assert!(matches!(
        governor.call(&call, &agent, &()).await.unwrap(),
        Outcome::Executed(_)
    ));
    let reached = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(reached.lines().count(), 1, "{reached}");
    gateway.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
