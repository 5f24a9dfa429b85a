//! The gateway binary as a desktop client meets it: started over stdio in front of the
//! official filesystem MCP server, driven by rmcp's client; a write waits, the operator
//! approves it from another process, the re-issued call writes the file once; a gateway
//! restarted between the proposal and the approval still runs it once.
//!
//! `.ci/run` names the server in `CAIRNLOOP_FILESYSTEM_SERVER`, and then these must run;
//! without it the server is looked for where `npm ci` puts it, else they say so and pass.

use std::path::{Path, PathBuf};

#[path = "support/filesystem.rs"]
mod support;
use std::process::Command;
use support::filesystem_server;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

struct Setup {
    dir: PathBuf,
    config: PathBuf,
    store: PathBuf,
}

fn setup(name: &str, script: &Path) -> Setup {
    let dir = std::env::temp_dir().join(format!("cairnloop-gateway-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let share = dir.join("share");
    std::fs::create_dir_all(&share).unwrap();
    let share = share.canonicalize().unwrap();
    std::fs::write(share.join("hello.txt"), "hello").unwrap();
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[gateway]
local_actor = "agent"
local_scopes = ["fs:read", "fs:write"]
hold_secs = 0  # answered at once: held calls have tests of their own

[upstreams.fs]
command = "node"
args = [{script:?}, {share:?}]
{tools}"#,
            script = script.display().to_string(),
            share = share.display().to_string(),
            tools = include_str!("configs/filesystem-tools.toml"),
        ),
    )
    .unwrap();
    Setup {
        store: dir.join("lanes.db"),
        dir: share,
        config,
    }
}

async fn gateway(setup: &Setup) -> RunningService<RoleClient, ()> {
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway")).configure(
        |command| {
            command
                .arg("serve")
                .arg(&setup.config)
                .arg("--store")
                .arg(&setup.store);
        },
    );
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, arguments: Value) -> Value {
    let request = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().unwrap().clone());
    let result = client.call_tool(request).await.unwrap();
    serde_json::to_value(result).unwrap()
}

fn operator(setup: &Setup, args: &[&str]) -> String {
    support::operator(setup.store.as_os_str(), &[], args).0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_the_gateway_waits_is_approved_and_runs_once() {
    let Some(script) = filesystem_server() else {
        return;
    };
    let setup = setup("serve", &script);
    let client = gateway(&setup).await;

    let mut listed: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    listed.sort();
    // The destructive tool is never shown; unnamed tools do not exist.
    assert_eq!(listed, ["fs_read_text_file", "fs_write_file"]);

    let hello = setup.dir.join("hello.txt").display().to_string();
    let read = call(&client, "fs_read_text_file", json!({"path": hello})).await;
    assert_eq!(read["structuredContent"]["status"], "executed", "{read}");
    assert!(read.to_string().contains("hello"), "{read}");

    let target = setup.dir.join("written.txt");
    let write = json!({"path": target.display().to_string(), "content": "once"});
    let waiting = call(&client, "fs_write_file", write.clone()).await;
    assert_eq!(
        waiting["structuredContent"]["status"], "awaiting_approval",
        "{waiting}"
    );
    let id = waiting["structuredContent"]["proposal_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!target.exists());

    // The operator sees it and approves it from another process.
    let pending = operator(&setup, &["list"]);
    assert!(
        pending.contains(&id) && pending.contains("fs_write_file"),
        "{pending}"
    );
    let refused = Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
        .args(["operator", "--store"])
        .arg(&setup.store)
        .args(["approve", &id, "--as", "agent"])
        .output()
        .unwrap();
    assert!(
        !refused.status.success(),
        "the proposer cannot approve its own call"
    );
    assert!(operator(&setup, &["approve", &id, "--as", "operator"]).contains("approved"));

    let ran = call(&client, "fs_write_file", write.clone()).await;
    assert_eq!(ran["structuredContent"]["status"], "executed", "{ran}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "once");
    std::fs::write(&target, "sentinel").unwrap();
    let again = call(&client, "fs_write_file", write).await;
    assert_eq!(again["structuredContent"]["status"], "executed", "{again}");
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "sentinel",
        "written once"
    );

    // Destructive: refused, and the upstream never sees it.
    let moved = setup.dir.join("moved.txt");
    let refused = call(
        &client,
        "fs_move_file",
        json!({"source": hello, "destination": moved.display().to_string()}),
    )
    .await;
    assert_eq!(
        refused["structuredContent"]["status"], "blocked",
        "{refused}"
    );
    assert!(!moved.exists());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_restarted_between_proposal_and_approval_runs_the_call_once() {
    let Some(script) = filesystem_server() else {
        return;
    };
    let setup = setup("restart", &script);
    let target = setup.dir.join("after-restart.txt");
    let write = json!({"path": target.display().to_string(), "content": "kept"});

    let first = gateway(&setup).await;
    let waiting = call(&first, "fs_write_file", write.clone()).await;
    let id = waiting["structuredContent"]["proposal_id"]
        .as_str()
        .unwrap()
        .to_owned();
    first.cancel().await.unwrap();

    assert!(operator(&setup, &["approve", &id, "--as", "operator"]).contains("approved"));

    let second = gateway(&setup).await;
    let ran = call(&second, "fs_write_file", write.clone()).await;
    assert_eq!(ran["structuredContent"]["status"], "executed", "{ran}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    std::fs::remove_file(&target).unwrap();
    let again = call(&second, "fs_write_file", write).await;
    assert_eq!(again["structuredContent"]["status"], "executed", "{again}");
    assert!(
        !target.exists(),
        "the approved call ran once, before the repeat"
    );
    second.cancel().await.unwrap();
}
