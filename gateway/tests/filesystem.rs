//! The gateway's pieces against a server nobody here wrote: the official filesystem MCP
//! server from npm (`tests/mcp-ts`, installed by `npm ci` there), started as a child
//! process. Reads run; a write waits for a person and, approved, writes the file once;
//! a move is never forwarded; a tool the configuration does not name does not exist.
//!
//! `.ci/run` names the server in `CAIRNLOOP_FILESYSTEM_SERVER`, and then it must run.
//! Without that variable, the server is looked for where `npm ci` puts it; without
//! `node` or the server these tests say so and pass.

use std::path::PathBuf;

#[path = "support/filesystem.rs"]
mod support;
use std::sync::Arc;
use support::filesystem_server;

use cairnloop::gate::Blocked;
use cairnloop::{Actor, Governor, Outcome, PolicyDenial, Registry, ToolCall, ToolEntry};
use cairnloop_gateway::catalogue::{build, read_listing};
use cairnloop_gateway::config::Config;
use cairnloop_gateway::upstream::{ToUpstream, Upstream};
use serde_json::json;

/// The upstream, started by the test itself, and the shared tool declarations.
const TOOLS: &str = include_str!("configs/filesystem-tools.toml");

fn anyone(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
    Ok(())
}

/// A fresh directory the server may use.
fn share() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cairnloop-gateway-fs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The server resolves symbolic links; so do we, so that paths compare.
    dir.canonicalize().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filesystem_server_is_governed_tool_by_tool() {
    let Some(script) = filesystem_server() else {
        return;
    };
    let share = share();
    std::fs::write(share.join("hello.txt"), "hello").unwrap();
    let upstream = Upstream::start(
        "node",
        &[script.display().to_string(), share.display().to_string()],
        &[],
        std::time::Duration::from_secs(60),
    )
    .await
    .unwrap();

    let config = Config::parse(&format!("[upstreams.fs]\ncommand = \"node\"\n{TOOLS}")).unwrap();
    let listing = upstream.listing().await.unwrap();
    let (tools, set_aside) = read_listing(&listing).unwrap();
    assert!(set_aside.is_empty(), "{set_aside:?}");
    let offer = build(&config, "fs", tools);
    let mut offered: Vec<&str> = offer.offered.iter().map(|o| o.listed.as_str()).collect();
    offered.sort_unstable();
    assert_eq!(
        offered,
        ["fs_move_file", "fs_read_text_file", "fs_write_file"]
    );
    assert!(
        offer.hidden.iter().any(|h| h.tool == "create_directory"),
        "{:?}",
        offer.hidden
    );

    let entries: Vec<ToolEntry<()>> = offer
        .offered
        .iter()
        .map(|offered| {
            let tool = offered
                .declare::<()>(ToUpstream::new(Arc::clone(&upstream), &offered.tool))
                .unwrap();
            ToolEntry::declared(Box::leak(Box::new(tool)), anyone).unwrap()
        })
        .collect();
    let registry: &'static Registry<()> = Box::leak(Box::new(
        Registry::try_new(Box::leak(entries.into_boxed_slice())).unwrap(),
    ));
    let governor = Governor::new(registry);
    let agent = Actor::new("agent", &["fs:read", "fs:write"]);
    let call = |name: &'static str, arguments: serde_json::Value| {
        let governor = &governor;
        let agent = &agent;
        async move {
            let arguments = arguments.to_string();
            governor
                .call(&ToolCall::new(name, &arguments), agent, &())
                .await
                .unwrap()
        }
    };

    // A read runs at once, through the upstream.
    let hello = share.join("hello.txt").display().to_string();
    let outcome = call("fs_read_text_file", json!({"path": hello})).await;
    let Outcome::Executed(result) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(result["content"][0]["text"], "hello", "{result}");

    // The upstream's own schema is enforced before anything is forwarded.
    let outcome = call("fs_read_text_file", json!({"file": hello})).await;
    assert!(
        matches!(outcome, Outcome::Blocked(Blocked::NeedsInput { .. })),
        "{outcome:?}"
    );

    // A write waits; nothing is written until a person approves.
    let target = share.join("approved.txt");
    let write = json!({"path": target.display().to_string(), "content": "once"});
    let Outcome::AwaitingApproval(lane) = call("fs_write_file", write.clone()).await else {
        panic!("a write waits for a person");
    };
    assert_eq!(
        lane.proposal().preview().text(),
        format!("Write \"{}\"", target.display())
    );
    assert!(!target.exists());
    governor.approve(&lane.key(), "operator").await.unwrap();
    let outcome = call("fs_write_file", write.clone()).await;
    assert!(matches!(outcome, Outcome::Executed(_)), "{outcome:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "once");
    // Asked again, the call answers what it returned and does not write again.
    std::fs::write(&target, "sentinel").unwrap();
    let outcome = call("fs_write_file", write).await;
    assert!(matches!(outcome, Outcome::Executed(_)), "{outcome:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "sentinel");

    // A move is destructive: never forwarded.
    let moved = share.join("moved.txt");
    let outcome = call(
        "fs_move_file",
        json!({"source": hello, "destination": moved.display().to_string()}),
    )
    .await;
    assert!(
        matches!(outcome, Outcome::Blocked(Blocked::AlwaysBlocked { .. })),
        "{outcome:?}"
    );
    assert!(share.join("hello.txt").exists() && !moved.exists());

    // A tool the configuration does not name is not there.
    let created = share.join("created");
    let outcome = call(
        "fs_create_directory",
        json!({"path": created.display().to_string()}),
    )
    .await;
    assert!(
        matches!(outcome, Outcome::Blocked(Blocked::UnknownTool)),
        "{outcome:?}"
    );
    assert!(!created.exists());
    let _ = std::fs::remove_dir_all(&share);
}
