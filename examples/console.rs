//! The approval console over a SQLite store: operators sign in, see what the support-desk
//! agents propose, and decide it.
//!
//! ```sh
//! cargo run --features console,sqlite --example console -- --store approvals.db \
//!     --operator ops-lead=a-long-random-token --seed
//! ```
//!
//! Then open <http://127.0.0.1:8377>, sign in as `ops-lead` with the token, and decide.
//! `--seed` first proposes a few calls as the agent `agent-7` (account `acme`), so the
//! queue is not empty. The same store file works with the MCP server example: the model's
//! call waits there, an operator approves it here, the model's call made again runs once.
//!
//! Operators: `--operator ID=TOKEN` (a token credential), or `--operator-hash ID=PHC` (an
//! Argon2 hash from `console hash-password`, which reads the password on stdin); add
//! `--accounts ID=acme,globex` to limit what one operator sees, and
//! `--decides ID=read_only,low_write` to limit the risk tiers one operator may decide (they
//! still see the others, and why they cannot decide them). `--address` sets where it
//! listens (default 127.0.0.1:8377); `--trusted-header NAME` signs in whoever a reverse
//! proxy names in that header.

mod desk;

use std::io::Read as _;
use std::process::ExitCode;
use std::sync::Arc;

use cairnloop::console::{Accounts, Console, ConsoleConfig, Credential, Operator};
use cairnloop::stores::SqliteStore;
use cairnloop::{Actor, Governor, RiskTier, ToolCall};
use desk::{DESK, Desk};

const USAGE: &str = "usage: console [--store PATH] [--address IP:PORT] \
                     --operator ID=TOKEN | --operator-hash ID=PHC ... \
                     [--accounts ID=ACCOUNT,ACCOUNT] [--decides ID=TIER,TIER] \
                     [--trusted-header NAME] [--seed]
       console hash-password   (reads the password on stdin)";

struct Options {
    store: std::path::PathBuf,
    config: ConsoleConfig,
    seed: bool,
}

/// The console's options; `None` for `--help`.
fn parse(mut parser: lexopt::Parser) -> Result<Option<Options>, lexopt::Error> {
    use lexopt::prelude::*;
    let mut store = std::path::PathBuf::from("cairnloop-approvals.db");
    let mut config = ConsoleConfig::new();
    let mut operators: Vec<(String, Credential)> = Vec::new();
    let mut accounts: Vec<(String, Vec<String>)> = Vec::new();
    let mut decides: Vec<(String, Vec<RiskTier>)> = Vec::new();
    let mut seed = false;
    // `ID=VALUE`, both parts non-empty.
    let pair = |flag: &str, value: String| {
        value
            .split_once('=')
            .map(|(id, rest)| (id.to_string(), rest.to_string()))
            .filter(|(id, rest)| !id.is_empty() && !rest.is_empty())
            .ok_or_else(|| format!("{flag} takes ID=VALUE, got {value:?}"))
    };
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(None),
            Long("seed") => seed = true,
            Long("store") => store = parser.value()?.into(),
            Long("address") => config = config.with_address(parser.value()?.parse()?),
            Long("operator") => {
                let (id, token) = pair("--operator", parser.value()?.string()?)?;
                operators.push((id, Credential::token(&token)));
            }
            Long("operator-hash") => {
                let (id, hash) = pair("--operator-hash", parser.value()?.string()?)?;
                operators.push((id, Credential::PasswordHash(hash)));
            }
            Long("accounts") => {
                let (id, list) = pair("--accounts", parser.value()?.string()?)?;
                accounts.push((id, list.split(',').map(str::to_string).collect()));
            }
            Long("decides") => {
                let (id, list) = pair("--decides", parser.value()?.string()?)?;
                let tiers = list
                    .split(',')
                    .map(|tier| tier.parse().map_err(|_| format!("unknown tier {tier:?}")))
                    .collect::<Result<Vec<RiskTier>, String>>()?;
                decides.push((id, tiers));
            }
            Long("trusted-header") => {
                config = config.with_trusted_header(parser.value()?.string()?);
            }
            _ => return Err(arg.unexpected()),
        }
    }
    if operators.is_empty() {
        return Err("name at least one operator (--operator ID=TOKEN)".into());
    }
    for (id, credential) in operators {
        let only = accounts
            .iter()
            .find(|(one, _)| *one == id)
            .map_or(Accounts::All, |(_, list)| {
                Accounts::only(list.iter().cloned())
            });
        let mut operator = Operator::new(id.clone(), credential, only);
        if let Some((_, tiers)) = decides.iter().find(|(one, _)| *one == id) {
            operator = operator.deciding_only(tiers.iter().copied());
        }
        config = config.with_operator(operator);
    }
    Ok(Some(Options {
        store,
        config,
        seed,
    }))
}

/// A few proposals from the agent, so that the queue has something to decide.
async fn seed(governor: &Governor<Desk, SqliteStore>) -> Result<(), String> {
    let agent = Actor::new(
        "agent-7",
        &["orders:read", "tickets:write", "refunds:write"],
    )
    .with_account("acme");
    let calls = [
        (
            "internal_note",
            r#"{"ticket": 4211, "body": "Customer called twice about the late parcel."}"#,
        ),
        (
            "refund_order",
            r#"{"order": 1001, "cents": 1250, "reason": "late"}"#,
        ),
        (
            "refund_order",
            r#"{"order": 1002, "cents": 89900, "reason": "damaged"}"#,
        ),
    ];
    for (tool, arguments) in calls {
        governor
            .call(&ToolCall::new(tool, arguments), &agent, &Desk::default())
            .await
            .map_err(|error| format!("seeding {tool}: {error}"))?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|first| first == "hash-password")
    {
        let mut password = String::new();
        if std::io::stdin().read_to_string(&mut password).is_err() {
            eprintln!("console: could not read the password on stdin");
            return ExitCode::from(2);
        }
        return match Credential::hash_password(password.trim_end_matches(['\r', '\n'])) {
            Ok(hash) => {
                println!("{hash}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("console: {error}");
                ExitCode::FAILURE
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
            eprintln!("console: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let store = match SqliteStore::open(&options.store) {
        Ok(store) => store,
        Err(error) => {
            eprintln!("console: cannot open {}: {error}", options.store.display());
            return ExitCode::FAILURE;
        }
    };
    let governor = Arc::new(Governor::new(&DESK).with_store(store));
    if options.seed
        && let Err(message) = seed(&governor).await
    {
        eprintln!("console: {message}");
        return ExitCode::FAILURE;
    }
    let address = options.config.address();
    eprintln!("console: listening on http://{address}");
    match Console::new(governor, options.config).serve().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("console: {error}");
            ExitCode::FAILURE
        }
    }
}
