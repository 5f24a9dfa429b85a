//! Two gateway processes, replicas of one configuration, sharing lanes and tasks in one
//! PostgreSQL database reached with a password role: a call proposed through one and
//! approved from an operator of the other runs exactly once, whichever replica it is made
//! again on; sixteen clients racing across both replicas run it once; a task opened on one
//! is followed on the other; a replica killed while it runs an approved call leaves its
//! outcome unknown once the claim's lease runs out, never run again; the password shows
//! nowhere.
//!
//! `scripts/with_postgres.sh` names the database in `CAIRNLOOP_POSTGRES_PASSWORD`; CI must
//! run these, elsewhere without it they say so and pass.

#[path = "../../tests/fixtures/receiver.rs"]
mod receiver;
#[path = "support/filesystem.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::filesystem_server;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The database's URL, with a password; `None` (the tests pass, saying why) outside CI.
fn database() -> Option<(String, String)> {
    match (
        std::env::var("CAIRNLOOP_POSTGRES_PASSWORD"),
        std::env::var("CAIRNLOOP_POSTGRES_SECRET"),
    ) {
        (Ok(url), Ok(secret)) => Some((url, secret)),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI must run the replicas against a real server (scripts/with_postgres.sh)")
        }
        _ => {
            eprintln!("no CAIRNLOOP_POSTGRES_PASSWORD: run under scripts/with_postgres.sh");
            None
        }
    }
}

struct Setup {
    share: PathBuf,
    config: PathBuf,
    url: String,
    secret: String,
    /// Every replica's and operator's standard error, to be searched for the password.
    logs: PathBuf,
}

/// A share and a configuration whose `[store]` names the database by a variable, with
/// `upstream` (given the setup's folder and the share in it) for its upstreams and tools.
fn setup(
    name: &str,
    database: (String, String),
    upstream: impl Fn(&Path, &Path) -> String,
) -> Setup {
    let (url, secret) = database;
    let dir =
        std::env::temp_dir().join(format!("cairnloop-replicas-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let share = dir.join("share");
    std::fs::create_dir_all(&share).unwrap();
    let share = share.canonicalize().unwrap();
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nlocal_actor = \"agent\"\nlocal_scopes = [\"fs:read\", \"fs:write\"]\nhold_secs = 0\n\n\
             [store]\nurl_env = \"GATEWAY_DATABASE\"\n\n{}",
            upstream(&dir, &share)
        ),
    )
    .unwrap();
    Setup {
        share,
        config,
        url,
        secret,
        logs,
    }
}

/// The npm filesystem server at `script`, serving `share`, and its tools.
fn filesystem(script: &Path) -> impl Fn(&Path, &Path) -> String {
    move |_, share| {
        format!(
            "[upstreams.fs]\ncommand = \"node\"\nargs = [{script:?}, {share:?}]\n\n{tools}",
            script = script.display().to_string(),
            share = share.display().to_string(),
            tools = include_str!("configs/filesystem-tools.toml"),
        )
    }
}

/// A replica served over stdio to an rmcp client, its standard error kept in `log`.
async fn replica(setup: &Setup, log: &str) -> RunningService<RoleClient, ()> {
    let log = std::fs::File::create(setup.logs.join(log)).unwrap();
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway")).configure(
        |command| {
            command
                .arg("serve")
                .arg(&setup.config)
                .env("GATEWAY_DATABASE", &setup.url);
        },
    );
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(log)
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, arguments: &Value) -> Value {
    let request = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().unwrap().clone());
    serde_json::to_value(client.call_tool(request).await.unwrap()).unwrap()
}

/// An operator's command against the shared database, named by a variable; neither of
/// its outputs holds the password.
fn operator(setup: &Setup, args: &[&str]) -> String {
    let store = std::ffi::OsStr::new("env:GATEWAY_DATABASE");
    let (out, err) = support::operator(store, &[("GATEWAY_DATABASE", &setup.url)], args);
    assert!(!out.contains(&setup.secret) && !err.contains(&setup.secret));
    out
}

/// No replica wrote the password to its log.
fn password_shown_nowhere(setup: &Setup) {
    for entry in std::fs::read_dir(&setup.logs).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(
            !text.contains(&setup.secret),
            "the password in a log: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_proposed_on_one_replica_and_approved_from_the_other_runs_once_among_sixteen_racers()
{
    let (Some(script), Some(database)) = (filesystem_server(), database()) else {
        return;
    };
    let setup = setup("race", database, filesystem(&script));
    let (one, two) = (
        replica(&setup, "one.log").await,
        replica(&setup, "two.log").await,
    );
    let target = setup.share.join("raced.txt");
    let write = json!({"path": target.display().to_string(), "content": "once"});

    let waiting = call(&one, "fs_write_file", &write).await;
    assert_eq!(
        waiting["structuredContent"]["status"], "awaiting_approval",
        "{waiting}"
    );
    let id = waiting["structuredContent"]["proposal_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Both replicas' operators see it.
    assert!(operator(&setup, &["list"]).contains(&id));
    assert!(operator(&setup, &["approve", &id, "--as", "ops-lead"]).contains("approved"));

    // Sixteen clients, eight on each replica, make the approved call at once.
    let clients = Arc::new([one, two]);
    let start = Arc::new(tokio::sync::Barrier::new(16));
    let racers: Vec<_> = (0..16)
        .map(|n| {
            let (clients, start, write) = (Arc::clone(&clients), Arc::clone(&start), write.clone());
            tokio::spawn(async move {
                start.wait().await;
                call(&clients[n % 2], "fs_write_file", &write).await
            })
        })
        .collect();
    let mut executed = 0;
    for racer in racers {
        let answer = racer.await.unwrap();
        let status = answer["structuredContent"]["status"].as_str().unwrap_or("");
        // The winner and any racer after it: executed; one that came while it ran is told
        // so, never run again.
        assert!(
            ["executed", "execution_pending"].contains(&status)
                || answer.to_string().contains("running"),
            "{answer}"
        );
        executed += usize::from(status == "executed");
    }
    assert!(executed >= 1);
    let lane: Value = serde_json::from_str(&operator(&setup, &["show", &id])).unwrap();
    assert_eq!(lane["state"], "executed", "{lane}");
    assert_eq!(lane["attempts"], 1, "ran once: {lane}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "once");
    for client in Arc::into_inner(clients).unwrap() {
        client.cancel().await.unwrap();
    }
    password_shown_nowhere(&setup);
}

/// A replica spoken to in raw JSON-RPC lines, as a 2026-07-28 client that follows tasks.
struct Raw {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Raw {
    fn start(setup: &Setup, log: &str) -> Self {
        let log = std::fs::File::create(setup.logs.join(log)).unwrap();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
            .arg("serve")
            .arg(&setup.config)
            .env("GATEWAY_DATABASE", &setup.url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, lines }
    }

    async fn ask(&mut self, id: u32, method: &str, params: Value) -> Value {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" },
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } },
        });
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
                .await
                .expect("an answer within 30 s")
                .unwrap()
                .expect("the replica is still there");
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                return answer;
            }
        }
    }

    /// The task `task` once it is no longer `working`, polled for up to `within`.
    async fn settled(&mut self, task: &str, within: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        for id in 1000.. {
            let polled = self.ask(id, "tasks/get", json!({ "taskId": task })).await;
            if polled["result"]["status"] != "working" || tokio::time::Instant::now() > deadline {
                return polled;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        unreachable!()
    }
}

/// The id of the lane whose listing line names `what`, in the operator's list.
fn lane_naming(setup: &Setup, what: &str) -> String {
    let listed = operator(setup, &["list"]);
    listed
        .lines()
        .find(|line| line.contains(what))
        .and_then(|line| line.split_whitespace().next())
        .unwrap_or_else(|| panic!("a lane naming {what} in {listed}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_opened_on_one_replica_is_followed_on_the_other_and_after_a_replica_dies() {
    let (Some(script), Some(database)) = (filesystem_server(), database()) else {
        return;
    };
    let setup = setup("tasks", database, filesystem(&script));
    let target = setup.share.join("tasked.txt");
    let write = json!({
        "name": "fs_write_file",
        "arguments": { "path": target.display().to_string(), "content": "tasked" },
    });
    let mut one = Raw::start(&setup, "one.log");
    let created = one.ask(1, "tools/call", write).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();

    // The replica that opened it is killed; the other follows the task.
    one.child.kill().await.unwrap();
    let mut two = Raw::start(&setup, "two.log");
    let polled = two.ask(2, "tasks/get", json!({ "taskId": task })).await;
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    // The tests share the database: this call's lane is the one that writes its file.
    let id = lane_naming(&setup, "tasked.txt");
    operator(&setup, &["approve", &id, "--as", "ops-lead"]);
    let done = two.settled(&task, Duration::from_secs(10)).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["isError"], false, "{done}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "tasked");
    let lane: Value = serde_json::from_str(&operator(&setup, &["show", &id])).unwrap();
    assert_eq!(lane["attempts"], 1, "{lane}");
    two.child.kill().await.unwrap();
    password_shown_nowhere(&setup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_of_both_replicas_deciding_one_call_at_once_leave_one_decision_standing() {
    let (Some(script), Some(database)) = (filesystem_server(), database()) else {
        return;
    };
    let setup = setup("decide", database, filesystem(&script));
    let one = replica(&setup, "one.log").await;
    let target = setup.share.join("decided.txt");
    let write = json!({"path": target.display().to_string(), "content": "decided"});
    let waiting = call(&one, "fs_write_file", &write).await;
    let id = waiting["structuredContent"]["proposal_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Eight operators' commands at once, half approving and half rejecting.
    let deciders: Vec<_> = (0..8)
        .map(|n| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"));
            command
                .args(["operator", "--store", "env:GATEWAY_DATABASE"])
                .env("GATEWAY_DATABASE", &setup.url);
            let who = format!("ops-{n}");
            if n % 2 == 0 {
                command.args(["approve", &id, "--as", &who]);
            } else {
                command.args(["reject", &id, "--as", &who, "--reason", "not now"]);
            }
            command
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut standing = 0;
    for decider in deciders {
        let output = decider.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(!said.contains(&setup.secret), "{said}");
        if output.status.success() {
            standing += 1;
        } else {
            // The losers are told the call was decided already, never a bare failure.
            assert!(
                said.contains("cannot approve") || said.contains("cannot reject"),
                "{said}"
            );
        }
    }
    assert_eq!(standing, 1, "one decision stands");
    let lane: Value = serde_json::from_str(&operator(&setup, &["show", &id])).unwrap();
    let state = lane["state"].as_str().unwrap();
    let decided_by = lane["decided_by"].as_str().unwrap();
    let approver = decided_by
        .trim_start_matches("ops-")
        .parse::<u32>()
        .unwrap()
        % 2
        == 0;
    assert_eq!(
        state,
        if approver { "approved" } else { "rejected" },
        "{lane}"
    );
    // Made again, the call follows the decision that stood.
    let again = call(&one, "fs_write_file", &write).await;
    assert_eq!(
        again["structuredContent"]["status"],
        if approver { "executed" } else { "rejected" },
        "{again}"
    );
    assert_eq!(target.exists(), approver);
    one.cancel().await.unwrap();
    password_shown_nowhere(&setup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_telling_one_receiver_send_each_notice_once() {
    let (Some(script), Some(database)) = (filesystem_server(), database()) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("cairnloop-replicas-desk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let desk = receiver::Receiver::start(&dir, false, &[]);
    let url = format!("{}/hook", desk.base);
    let setup = setup("notify", database, |dir, share| {
        format!(
            "[[notify]]\nname = \"desk\"\nurl_env = \"DESK_URL\"\n\n{}",
            filesystem(&script)(dir, share)
        )
    });
    let start = |log: &str| {
        let log = std::fs::File::create(setup.logs.join(log)).unwrap();
        let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
            .configure(|command| {
                command
                    .arg("serve")
                    .arg(&setup.config)
                    .env("GATEWAY_DATABASE", &setup.url)
                    .env("DESK_URL", &url);
            });
        TokioChildProcess::builder(command)
            .stderr(log)
            .spawn()
            .unwrap()
            .0
    };
    let one = ().serve(start("one.log")).await.unwrap();
    let two = ().serve(start("two.log")).await.unwrap();
    // Four calls wait, proposed through the first; both replicas deliver.
    for n in 0..4 {
        let write = json!({"path": setup.share.join(format!("told-{n}.txt")).display().to_string(), "content": "x"});
        let waiting = call(&one, "fs_write_file", &write).await;
        assert_eq!(
            waiting["structuredContent"]["status"], "awaiting_approval",
            "{waiting}"
        );
    }
    // The tests share the database, and the receiver hears of every waiting call in it:
    // these calls' notices are the ones that name their files.
    let told = || -> Vec<String> {
        (desk.posts().iter())
            .map(|post| post["body"].as_str().unwrap().to_owned())
            .filter(|body| body.contains("told-"))
            .map(|body| serde_json::from_str::<Value>(&body).unwrap()["key"].to_string())
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while told().len() < 4 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} notices after 30 s",
            told().len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut told = told();
    assert_eq!(told.len(), 4, "each notice sent once: {told:?}");
    told.sort();
    told.dedup();
    assert_eq!(told.len(), 4, "four calls, four notices");
    one.cancel().await.unwrap();
    two.cancel().await.unwrap();
    password_shown_nowhere(&setup);
}

const HOSTILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/hostile/upstream.py");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_between_claiming_a_call_and_recording_its_outcome_leaves_it_unknown_not_run_again()
 {
    let Some(database) = database() else {
        return;
    };
    // An upstream that takes every call and never answers; a call may take 5 s, so a
    // claim holds for 15 s.
    let setup = setup("killed", database, |dir, _| {
        let log = dir.join("calls.log").display().to_string();
        format!(
            "[upstreams.bad]\ncommand = \"python3\"\nargs = [{HOSTILE:?}, \"hang\", {log:?}]\n\
             call_timeout_secs = 5\n\n[tools.bad.write]\ntier = \"high_write\"\n"
        )
    });
    let calls = setup.config.with_file_name("calls.log");
    let reached = || {
        std::fs::read_to_string(&calls)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let mut one = Raw::start(&setup, "one.log");
    let write = json!({ "name": "bad_write", "arguments": { "text": "killed mid-run" } });
    let created = one.ask(1, "tools/call", write).await;
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let id = lane_naming(&setup, "bad_write");
    operator(&setup, &["approve", &id, "--as", "ops-lead"]);
    // The replica holding the task claims the call and forwards it; once the upstream has
    // it, the replica is killed (SIGKILL) before any outcome can be recorded.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while reached() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the approved call never reached the upstream"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    one.child.kill().await.unwrap();

    // The other replica follows the task: it waits while the claim holds, never runs the
    // call itself, and ends with the outcome unknown once the lease runs out.
    let mut two = Raw::start(&setup, "two.log");
    let polled = two.ask(2, "tasks/get", json!({ "taskId": task })).await;
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    let done = two.settled(&task, Duration::from_secs(40)).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["isError"], true, "{done}");
    assert!(done.to_string().contains("outcome_unknown"), "{done}");
    let lane: Value = serde_json::from_str(&operator(&setup, &["show", &id])).unwrap();
    assert_eq!(lane["state"], "outcome_unknown", "{lane}");
    assert_eq!(reached(), 1, "the call reached the upstream once");
    two.child.kill().await.unwrap();
    password_shown_nowhere(&setup);
}

#[test]
fn a_connection_string_on_the_command_line_or_an_unset_variable_is_refused_without_showing_it() {
    let run = |store: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
            .args(["operator", "--store", store, "list"])
            .env_remove("NOT_SET_ANYWHERE")
            .output()
            .unwrap();
        assert!(!output.status.success());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let given = run("postgres://gateway:hunter2@127.0.0.1:1/lanes");
    assert!(given.contains("not taken on the command line"), "{given}");
    assert!(!given.contains("hunter2"), "{given}");
    let unset = run("env:NOT_SET_ANYWHERE");
    assert!(unset.contains("$NOT_SET_ANYWHERE is not set"), "{unset}");
    // A database that refuses the password: the error says so, without the password.
    let output = Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
        .args(["operator", "--store", "env:BAD_DATABASE", "list"])
        .env(
            "BAD_DATABASE",
            "postgres://gateway:hunter2@127.0.0.1:1/lanes",
        )
        .output()
        .unwrap();
    let refused = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        refused.contains("cannot open the PostgreSQL database named by $BAD_DATABASE"),
        "{refused}"
    );
    assert!(!refused.contains("hunter2"), "{refused}");
}
