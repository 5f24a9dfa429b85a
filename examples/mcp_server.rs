//! A stdio MCP server serving the support-desk tools for one actor.
//!
//! ```sh
//! cargo run --features rmcp,sqlite --example mcp_server -- --actor agent-7 --account acme \
//!     --scopes orders:read,tickets:write --store approvals.db \
//!     --client-approver user:alice --client-approves low_write
//! ```
//!
//! With `--client-approver`, the person at the MCP client may approve calls of the tiers
//! named by `--client-approves` through the client's approval prompt (elicitation);
//! every other call that needs approval waits for an operator. Each decision and each
//! move of a proposal is logged on stderr, one JSON line each.
//!
//! Proposals live in the SQLite file given with `--store` (default
//! `cairnloop-approvals.db` in the working directory), so they survive a restart.
//!
//! An operator decides them out of band, on the same file:
//!
//! ```sh
//! mcp_server operator --store approvals.db list
//! mcp_server operator --store approvals.db approve KEY --as ops-lead
//! mcp_server operator --store approvals.db reject KEY --as ops-lead --reason "not today"
//! mcp_server operator --store approvals.db defer KEY --as ops-lead --reason "ask first"
//! mcp_server operator --store approvals.db show KEY
//! ```
//!
//! When the model makes the approved call again, the server runs it, once; made again
//! after that, the call gets the recorded outcome back.
//!
//! An MCP host starts it as a subprocess and speaks JSON-RPC on its stdin and stdout;
//! `tools/list` shows exactly the tools this actor may call.

mod desk;

use std::process::ExitCode;
use std::sync::Arc;

use cairnloop::approvals::{AuditRecord, AuditSink};
use cairnloop::mcp::{ClientApprover, LineTransport, McpServer};
use cairnloop::stores::SqliteStore;
use cairnloop::{Governor, RiskTier};
use desk::{DESK, Desk};
use rmcp::ServiceExt;

const USAGE: &str = "usage: mcp_server --actor ID [--account ID] [--scopes SCOPE,SCOPE,...] \
                     [--store PATH] [--client-approver ID [--client-approves TIER,TIER]] \
                     [--notify URL [--notify-format json|slack|teams] [--console-url URL]]
       (--notify needs the webhook feature; the secret that signs each notice is read
       from CAIRNLOOP_WEBHOOK_SECRET)
       mcp_server operator --help";

struct Options {
    actor: String,
    account: Option<String>,
    scopes: Vec<String>,
    store: std::path::PathBuf,
    approver: Option<ClientApprover>,
    /// A webhook told of each new proposal: its URL, body format and console link.
    notify: Option<(String, String, Option<String>)>,
}

/// The server's options; `None` for `--help`.
fn parse(mut parser: lexopt::Parser) -> Result<Option<Options>, lexopt::Error> {
    use lexopt::prelude::*;
    let (mut actor, mut account, mut scopes) = (None, None, Vec::new());
    let (mut approver, mut tiers) = (None, Vec::new());
    let mut store = std::path::PathBuf::from("cairnloop-approvals.db");
    let (mut notify, mut format, mut console) = (None, String::from("json"), None);
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(None),
            Long("actor") => actor = Some(parser.value()?.string()?),
            Long("account") => account = Some(parser.value()?.string()?),
            Long("store") => store = parser.value()?.into(),
            Long("scopes") => scopes = list(&parser.value()?.string()?),
            Long("notify") => notify = Some(parser.value()?.string()?),
            Long("notify-format") => format = parser.value()?.string()?,
            Long("console-url") => console = Some(parser.value()?.string()?),
            Long("client-approver") => approver = Some(parser.value()?.string()?),
            Long("client-approves") => {
                tiers = list(&parser.value()?.string()?)
                    .iter()
                    .map(|tier| {
                        tier.parse::<RiskTier>()
                            .map_err(|error| format!("--client-approves: {error}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(arg.unexpected()),
        }
    }
    let actor = actor.ok_or("--actor is required")?;
    if approver.is_none() && !tiers.is_empty() {
        return Err("--client-approves needs --client-approver".into());
    }
    let approver = approver.map(|id| {
        tiers
            .into_iter()
            .fold(ClientApprover::new(id), ClientApprover::may_approve)
    });
    Ok(Some(Options {
        actor,
        account,
        scopes,
        store,
        approver,
        notify: notify.map(|url| (url, format, console)),
    }))
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Logs each audit record on stderr, one JSON line (stdout carries the protocol).
struct StderrLog;

impl AuditSink for StderrLog {
    fn record(&self, record: &AuditRecord) {
        if let Ok(line) = serde_json::to_string(record) {
            eprintln!("{line}");
        }
    }
}

/// The governor, telling a webhook of each new proposal.
#[cfg(feature = "webhook")]
fn notified(
    governor: Governor<Desk, SqliteStore>,
    (url, format, console): (String, String, Option<String>),
) -> Result<Governor<Desk, SqliteStore>, String> {
    use cairnloop::notifiers::{Webhook, WebhookFormat};
    let format: WebhookFormat = format
        .parse()
        .map_err(|error| format!("--notify-format: {error}"))?;
    let mut hook = Webhook::new(&url)
        .map_err(|error| format!("--notify: {error}"))?
        .format(format);
    if let Ok(secret) = std::env::var("CAIRNLOOP_WEBHOOK_SECRET") {
        hook = hook.signed_with(secret.into_bytes());
    }
    if let Some(console) = console {
        hook = hook.console(&console);
    }
    let notifier = hook.start().map_err(|error| error.to_string())?;
    Ok(governor.with_notifier(notifier))
}

#[cfg(not(feature = "webhook"))]
fn notified(
    _: Governor<Desk, SqliteStore>,
    _: (String, String, Option<String>),
) -> Result<Governor<Desk, SqliteStore>, String> {
    Err("--notify needs the webhook feature (cargo run --features webhook ...)".into())
}

const OPERATOR_USAGE: &str = "usage: mcp_server operator [--store PATH] \
                              (list | show KEY | approve KEY --as ID | \
                              reject KEY --as ID --reason TEXT | defer KEY --as ID --reason TEXT)";

/// The operator's side: decides pending proposals in the store, out of band.
async fn operator(mut parser: lexopt::Parser) -> Result<(), String> {
    use lexopt::prelude::*;
    let (mut store, mut words, mut by, mut reason) = (
        std::path::PathBuf::from("cairnloop-approvals.db"),
        Vec::new(),
        None,
        None,
    );
    let text = |value: Result<std::ffi::OsString, lexopt::Error>| -> Result<String, String> {
        value
            .and_then(|value| value.string())
            .map_err(|error| error.to_string())
    };
    while let Some(arg) = parser.next().map_err(|error| error.to_string())? {
        match arg {
            Short('h') | Long("help") => {
                println!("{OPERATOR_USAGE}");
                return Ok(());
            }
            Long("store") => store = text(parser.value())?.into(),
            Long("as") => by = Some(text(parser.value())?),
            Long("reason") => reason = Some(text(parser.value())?),
            Value(word) => words.push(text(Ok(word))?),
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    let store = SqliteStore::open(&store)
        .map_err(|error| format!("cannot open {}: {error}", store.display()))?;
    let governor = Governor::new(&DESK).with_store(store);
    let key = |word: Option<&String>| -> Result<cairnloop::IdempotencyKey, String> {
        word.ok_or("a proposal id is needed")?
            .parse()
            .map_err(|error| format!("{error}"))
    };
    let words: Vec<&String> = words.iter().collect();
    match words.first().map(|word| word.as_str()) {
        Some("list") => {
            let pending = governor
                .lanes(cairnloop::gate::LaneState::Pending, None, 100)
                .await
                .map_err(|error| error.to_string())?;
            for lane in pending {
                let preview = lane
                    .proposal()
                    .preview()
                    .text()
                    .lines()
                    .next()
                    .unwrap_or("");
                println!(
                    "{} {} {} {}",
                    lane.key(),
                    lane.proposal().tool(),
                    lane.proposal().actor_id(),
                    preview
                );
            }
            Ok(())
        }
        Some("show") => {
            let lane = governor
                .lane(&key(words.get(1).copied())?)
                .await
                .map_err(|error| error.to_string())?;
            let shown = serde_json::json!({
                "id": lane.key().to_string(),
                "tool": lane.proposal().tool(),
                "state": lane.state().as_str(),
                "attempts": lane.attempts(),
                "decided_by": lane.decided_by(),
                "reason": lane.reason(),
            });
            println!("{shown}");
            Ok(())
        }
        Some(verb @ ("approve" | "reject" | "defer")) => {
            let key = key(words.get(1).copied())?;
            let by = by.ok_or("--as is required: who decides")?;
            let decided = match verb {
                "approve" => governor.approve(&key, &by).await,
                "reject" => {
                    governor
                        .reject(&key, &by, reason.as_deref().unwrap_or(""))
                        .await
                }
                _ => {
                    governor
                        .defer(&key, &by, reason.as_deref().unwrap_or(""))
                        .await
                }
            };
            let lane = decided.map_err(|error| error.to_string())?;
            println!("{} {}", lane.key(), lane.state());
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other}")),
        None => Err("say what to do".into()),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let operating = std::env::args_os()
        .nth(1)
        .is_some_and(|first| first == "operator");
    if operating {
        let parser = lexopt::Parser::from_args(std::env::args_os().skip(2));
        return match operator(parser).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("mcp_server operator: {message}\n{OPERATOR_USAGE}");
                ExitCode::from(2)
            }
        };
    }
    let options = match parse(lexopt::Parser::from_env()) {
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
    let governor = Governor::new(&DESK)
        .with_store(store)
        .with_audit_sink(StderrLog);
    let governor = match options.notify {
        None => Arc::new(governor),
        Some(notify) => match notified(governor, notify) {
            Ok(governor) => Arc::new(governor),
            Err(message) => {
                eprintln!("mcp_server: {message}");
                return ExitCode::from(2);
            }
        },
    };
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
    if let Some(approver) = options.approver {
        server = server.with_client_approver(approver);
    }
    let transport = LineTransport::stdio().with_fast_calls(&server);
    let running = match server.serve(transport).await {
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
