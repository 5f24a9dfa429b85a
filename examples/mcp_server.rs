//! A stdio MCP server serving the support-desk tools for one actor.
//!
//! ```sh
//! cargo run --features rmcp --example mcp_server -- --actor agent-7 --account acme \
//!     --scopes orders:read,tickets:write
//! ```
//!
//! An MCP host starts it as a subprocess and speaks JSON-RPC on its stdin and stdout;
//! `tools/list` shows exactly the tools this actor may call.

mod desk;

use std::process::ExitCode;
use std::sync::Arc;

use cairnloop::Governor;
use cairnloop::mcp::McpServer;
use desk::{DESK, Desk};
use rmcp::ServiceExt;

const USAGE: &str = "usage: mcp_server --actor ID [--account ID] [--scopes SCOPE,SCOPE,...]";

struct Options {
    actor: String,
    account: Option<String>,
    scopes: Vec<String>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let (mut actor, mut account, mut scopes) = (None, None, Vec::new());
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--actor" => actor = Some(value),
            "--account" => account = Some(value),
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
    Ok(Options {
        actor,
        account,
        scopes,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let governor = Arc::new(Governor::new(&DESK));
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
