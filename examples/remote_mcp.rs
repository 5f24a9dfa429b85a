//! The support-desk tools served remotely: MCP over Streamable HTTP, each request with an
//! OAuth access token (a JWT), checked against a local key set.
//!
//! ```sh
//! # Serve on 127.0.0.1:8378 (makes a signing key and its JWKS in ./remote-keys once):
//! cargo run --features remote,sqlite --example remote_mcp -- serve --store approvals.db
//! # In another terminal, a token for alice, acting through the client "inspector":
//! cargo run --features remote,sqlite --example remote_mcp -- mint --sub alice \
//!     --scope "orders:read tickets:write" --account acme
//! ```
//!
//! Point the MCP Inspector (or the TypeScript SDK's `StreamableHTTPClientTransport`) at
//! `http://127.0.0.1:8378/mcp` with the header `Authorization: Bearer <token>`. A request
//! without a valid token gets `401` and a pointer to
//! `/.well-known/oauth-protected-resource/mcp`.
//!
//! Options of `serve`: `--address IP:PORT`, `--keys DIR`, `--store PATH` (SQLite) or
//! `--postgres "host=... dbname=..."` (several servers sharing approvals),
//! `--client-approves TIER,TIER` (the token's subject may approve these tiers in the
//! client's prompt), `--allow-origin ORIGIN`, `--requests-per-minute N`.
//! Options of `mint`: `--keys DIR`, `--address IP:PORT` (for the audience), `--sub ID`,
//! `--client ID` (default `inspector`), `--scope "A B"`, `--account ID`, `--ttl SECONDS`.

mod desk;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use cairnloop::approvals::ApprovalStore;
use cairnloop::mcp::ClientApprover;
use cairnloop::remote::{HttpLimits, RemoteMcp, TokenVerifier};
use cairnloop::stores::{PostgresStore, SqliteStore};
use cairnloop::{Governor, RiskTier};
use desk::{DESK, Desk};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};

/// The issuer the local key set stands for.
const ISSUER: &str = "urn:cairnloop:example-issuer";
const KID: &str = "example-1";
const USAGE: &str = "usage: remote_mcp serve [--address IP:PORT] [--keys DIR] \
                     [--store PATH | --postgres CONFIG] [--client-approves TIER,...] \
                     [--allow-origin ORIGIN] [--requests-per-minute N]
       remote_mcp mint --sub ID --scope \"A B\" [--client ID] [--account ID] [--ttl SECONDS] \
                     [--keys DIR] [--address IP:PORT]";

/// PKCS#8 for an Ed25519 private key: this prefix, then the 32-byte seed.
const PKCS8_ED25519: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The signing key in `dir` (made on first use) and the public key set for it.
fn keys(dir: &Path) -> Result<(EncodingKey, String), String> {
    let seed_path = dir.join("signing.seed");
    let seed = match std::fs::read_to_string(&seed_path) {
        Ok(hex) => (0..32)
            .map(|i| {
                hex.get(2 * i..2 * i + 2)
                    .and_then(|b| u8::from_str_radix(b, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| format!("{} is not a 32-byte hex seed", seed_path.display()))?,
        Err(_) => {
            let mut seed = [0u8; 32];
            getrandom::fill(&mut seed).map_err(|error| error.to_string())?;
            std::fs::create_dir_all(dir).map_err(|error| error.to_string())?;
            let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
            std::fs::write(&seed_path, hex).map_err(|error| error.to_string())?;
            seed.to_vec()
        }
    };
    let mut der = PKCS8_ED25519.to_vec();
    der.extend_from_slice(&seed);
    let signing = EncodingKey::from_ed_der(&der);
    let mut jwk = Jwk::from_encoding_key(&signing, Algorithm::EdDSA).map_err(|e| e.to_string())?;
    jwk.common.key_id = Some(KID.into());
    let jwks =
        serde_json::to_string_pretty(&JwkSet { keys: vec![jwk] }).map_err(|e| e.to_string())?;
    // The key set is written once; one there already must be this key's, never replaced.
    let jwks_path = dir.join("jwks.json");
    match std::fs::read_to_string(&jwks_path) {
        Ok(existing) if existing == jwks => {}
        Ok(_) => {
            return Err(format!(
                "{} holds another key set than {}; nothing was overwritten (move it away, \
                 or give --keys another directory)",
                jwks_path.display(),
                seed_path.display()
            ));
        }
        Err(_) => std::fs::write(&jwks_path, &jwks).map_err(|error| error.to_string())?,
    }
    Ok((signing, jwks))
}

struct Options {
    address: std::net::SocketAddr,
    keys: PathBuf,
    store: PathBuf,
    postgres: Option<String>,
    tiers: Vec<RiskTier>,
    origins: Vec<String>,
    per_minute: Option<u32>,
    sub: Option<String>,
    client: String,
    scope: String,
    account: Option<String>,
    ttl: u64,
}

/// What to do.
enum Command {
    Serve,
    Mint,
    Help,
}

/// The command and its options; `--help` anywhere asks for the usage.
fn parse(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<(Command, Options), lexopt::Error> {
    use lexopt::prelude::*;
    let mut options = Options {
        address: ([127, 0, 0, 1], 8378).into(),
        keys: "remote-keys".into(),
        store: "cairnloop-approvals.db".into(),
        postgres: None,
        tiers: Vec::new(),
        origins: Vec::new(),
        per_minute: None,
        sub: None,
        client: "inspector".into(),
        scope: String::new(),
        account: None,
        ttl: 3_600,
    };
    let mut command = None;
    let mut parser = lexopt::Parser::from_args(args);
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok((Command::Help, options)),
            Long("address") => options.address = parser.value()?.parse()?,
            Long("keys") => options.keys = parser.value()?.into(),
            Long("store") => options.store = parser.value()?.into(),
            Long("postgres") => options.postgres = Some(parser.value()?.string()?),
            Long("client-approves") => {
                for tier in parser.value()?.string()?.split(',') {
                    let tier = tier.parse().map_err(|_| format!("unknown tier {tier:?}"))?;
                    options.tiers.push(tier);
                }
            }
            Long("allow-origin") => options.origins.push(parser.value()?.string()?),
            Long("requests-per-minute") => options.per_minute = Some(parser.value()?.parse()?),
            Long("sub") => options.sub = Some(parser.value()?.string()?),
            Long("client") => options.client = parser.value()?.string()?,
            Long("scope") => options.scope = parser.value()?.string()?,
            Long("account") => options.account = Some(parser.value()?.string()?),
            Long("ttl") => options.ttl = parser.value()?.parse()?,
            Value(word) if command.is_none() => {
                command = Some(match word.string()?.as_str() {
                    "serve" => Command::Serve,
                    "mint" => Command::Mint,
                    "help" => Command::Help,
                    other => return Err(format!("unknown command {other:?}").into()),
                });
            }
            _ => return Err(arg.unexpected()),
        }
    }
    let command = command.ok_or("say what to do: serve or mint")?;
    Ok((command, options))
}

fn mint(options: &Options) -> Result<String, String> {
    let sub = options.sub.as_deref().ok_or("mint needs --sub")?;
    let (signing, _) = keys(&options.keys)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let mut claims = serde_json::json!({
        "iss": ISSUER, "aud": format!("http://{}/mcp", options.address), "sub": sub,
        "azp": options.client, "scope": options.scope, "iat": now, "exp": now + options.ttl,
    });
    if let Some(account) = &options.account {
        claims["tenant"] = account.clone().into();
    }
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(KID.into());
    jsonwebtoken::encode(&header, &claims, &signing).map_err(|error| error.to_string())
}

async fn serve<S: ApprovalStore + Send + Sync + 'static>(
    governor: Governor<Desk, S>,
    options: Options,
) -> Result<(), String> {
    let (_, jwks) = keys(&options.keys)?;
    let audience = format!("http://{}/mcp", options.address);
    let verifier = TokenVerifier::new(ISSUER, &audience, &jwks)
        .map_err(|error| error.to_string())?
        .with_account_claim("tenant");
    let mut limits = HttpLimits::new();
    if let Some(per_minute) = options.per_minute {
        limits = limits.with_requests_per_minute(per_minute);
    }
    let mut remote = RemoteMcp::new(Arc::new(governor), Desk::default(), verifier)
        .with_authorization_server(ISSUER)
        .with_limits(limits)
        .with_allowed_origins(options.origins);
    if !options.tiers.is_empty() {
        let approver = options.tiers.iter().fold(
            ClientApprover::new("(the token's subject)"),
            |approver, tier| approver.may_approve(*tier),
        );
        remote = remote.with_client_approver(approver);
    }
    eprintln!("remote_mcp: serving {audience}");
    remote
        .serve(options.address)
        .await
        .map_err(|error| error.to_string())
}

#[tokio::main]
async fn main() -> ExitCode {
    let (command, options) = match parse(std::env::args_os().skip(1)) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("remote_mcp: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let done = match command {
        Command::Mint => mint(&options).map(|token| println!("{token}")),
        Command::Serve => match &options.postgres {
            Some(config) => match PostgresStore::connect(config) {
                Ok(store) => serve(Governor::new(&DESK).with_store(store), options).await,
                Err(error) => Err(format!("cannot connect to PostgreSQL: {error}")),
            },
            None => match SqliteStore::open(&options.store) {
                Ok(store) => serve(Governor::new(&DESK).with_store(store), options).await,
                Err(error) => Err(format!("cannot open {}: {error}", options.store.display())),
            },
        },
        Command::Help => {
            println!("{USAGE}");
            Ok(())
        }
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("remote_mcp: {message}");
            ExitCode::FAILURE
        }
    }
}
