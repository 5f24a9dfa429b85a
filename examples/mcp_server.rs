//! A stdio MCP server serving the support-desk tools for one actor.
//!
//! ```sh
//! cargo run --features rmcp,sqlite --example mcp_server -- --actor agent-7 --account acme \
//!     --scopes orders:read,tickets:write --store approvals.db
//! ```
//!
//! Proposals live in the SQLite file given with `--store` (default
//! `cairnloop-approvals.db` in the working directory), so they survive a restart.
//!
//! An MCP host starts it as a subprocess and speaks JSON-RPC on its stdin and stdout;
//! `tools/list` shows exactly the tools this actor may call.

mod desk;

use std::process::ExitCode;
use std::sync::Arc;

use cairnloop::Governor;
use cairnloop::mcp::McpServer;
use cairnloop::stores::SqliteStore;
use desk::{DESK, Desk};
use rmcp::ServiceExt;

const USAGE: &str = "usage: mcp_server --actor ID [--account ID] [--scopes SCOPE,SCOPE,...] \
                     [--store PATH]";

struct Options {
    actor: String,
    account: Option<String>,
    scopes: Vec<String>,
    store: std::path::PathBuf,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let (mut actor, mut account, mut scopes) = (None, None, Vec::new());
    let mut store = std::path::PathBuf::from("cairnloop-approvals.db");
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--actor" => actor = Some(value),
            "--account" => account = Some(value),
            "--store" => store = value.into(),
            "--scopes" => {
                scopes = value
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    let actor = actor.ok_or("--actor is required")?;
    Ok(Some(Options {
        actor,
        account,
        scopes,
        store,
    }))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let store = match SqliteStore::open(&options.store) {
        Ok(store) => store,
        Err(error) => {
            eprintln!(
                "mcp_server: cannot open {}: {error}",
                options.store.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let governor = Arc::new(Governor::new(&DESK).with_store(store));
    // A run that a previous process left unfinished is marked for a person to resolve.
    if let Err(error) = governor.sweep().await {
        eprintln!("mcp_server: cannot sweep the store: {error}");
        return ExitCode::FAILURE;
    }
    let mut server =
        McpServer::new(governor, Desk::default(), options.actor).with_scopes(options.scopes);
    if let Some(account) = options.account {
        server = server.with_account(account);
    }
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(error) => {
            eprintln!("mcp_server: could not start: {error}");
            return ExitCode::FAILURE;
        }
    };
    match running.waiting().await {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp_server: {error}");
            ExitCode::FAILURE
        }
    }
}
