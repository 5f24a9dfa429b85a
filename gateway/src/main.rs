//! `cairnloop-gateway`: checks a configuration, serves the tools it declares over stdio,
//! and lets an operator decide what waits.

#![forbid(unsafe_code)]

use std::process::ExitCode;
use tokio::io::{AsyncRead, AsyncWrite};

use cairnloop::Governor;
use cairnloop::approvals::ApprovalStore;
use cairnloop::console::{
    Accounts, Console, ConsoleConfig, Credential as ConsoleCredential, Operator, SlackDecisions,
};
use cairnloop::gate::LaneState;
use cairnloop::mcp::{ClientApprover, LineTransport, McpServer};
use cairnloop::remote::{RemoteMcp, TokenVerifier};
use cairnloop_gateway::config::{
    Config, ConsoleSettings, Credential, Http, MetricsSettings, SlackSettings,
};
use cairnloop_gateway::metrics::MetricsAccess;
use cairnloop_gateway::store::{Opened, StoreAt};
use rmcp::ServiceExt;

/// How often a serving gateway with `[[notify]]` receivers looks for notices owed, when
/// nothing in the store woke it sooner.
const DELIVER_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The least time between two passes of the outbox.
const DELIVER_AT_MOST_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// How often a serving gateway sweeps its store for lapsed claims and expired calls.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

const USAGE: &str = "usage: cairnloop-gateway check CONFIG
       cairnloop-gateway serve CONFIG [--store STORE] [--http]
       cairnloop-gateway operator --store STORE (list | show ID | approve ID --as WHO | reject ID --as WHO --reason WHY)
       cairnloop-gateway audit verify (--store STORE | --file EXPORT) [--head HASH]
       cairnloop-gateway audit export --store STORE [--out FILE]

  STORE             where lanes are kept: a SQLite file's path, or env:NAME, a variable
                    holding a PostgreSQL connection string (replicas share the database;
                    the string holds the password, so it is never taken on the command
                    line); `serve` reads [store] url_env when --store is not given

  check CONFIG      read CONFIG (TOML), print every problem with its line and column, and
                    exit 1 if there is one; otherwise list what it declares
  serve CONFIG      start every upstream (one that does not start is tried again, its
                    tools withheld until then), and serve the tools CONFIG declares over
                    stdio (MCP), for [gateway] local_actor with its local_scopes; lanes in STORE.
                    With --http: over Streamable HTTP as [gateway.http] says, each
                    request with an OAuth access token, for the token's subject.
                    With [console]: the approval console too, at its address
  operator          list what waits in STORE, show one lane (JSON: its state, attempts,
                    who decided, why), or approve or reject it
  audit verify      check that every record of the audit trail links to the one before
                    it (SHA-256), in STORE or in an export; name the first record that
                    was changed, removed or inserted, and exit 1. With --head: also that
                    a head printed before (by verify or export) is still in the trail
  audit export      write the audit trail as JSON Lines, each record with its links,
                    which `audit verify --file` (or any SHA-256) checks without the store";

fn main() -> ExitCode {
    let arguments: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let command = arguments
        .first()
        .and_then(|word| word.to_str())
        .unwrap_or("");
    let parser = lexopt::Parser::from_args(arguments.iter().skip(1));
    let done = match command {
        "check" => check(parser),
        "serve" | "operator" | "audit" => {
            // Over stdio one thread: a call crosses from the client's pipe to the
            // upstream's and back, and a hop between worker threads would add a wake-up
            // each way. Over HTTP many clients call at once.
            let http = arguments.iter().any(|word| word == "--http");
            let runtime = if http {
                tokio::runtime::Builder::new_multi_thread()
            } else {
                tokio::runtime::Builder::new_current_thread()
            }
            .enable_all()
            .build();
            let runtime = match runtime {
                Ok(runtime) => runtime,
                Err(error) => return fail(&format!("cannot start a runtime: {error}")),
            };
            match command {
                "serve" => runtime.block_on(serve(parser)),
                "audit" => runtime.block_on(audit(parser)),
                _ => runtime.block_on(operator(parser)),
            }
        }
        "-h" | "--help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        "" => Err(Failure::Usage("a command is needed".into())),
        other => Err(Failure::Usage(format!("unknown command `{other}`"))),
    };
    match done {
        Ok(code) => code,
        Err(Failure::Usage(message)) => {
            eprintln!("cairnloop-gateway: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Run(message)) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("cairnloop-gateway: {message}");
    ExitCode::FAILURE
}

enum Failure {
    Usage(String),
    Run(String),
}

impl From<lexopt::Error> for Failure {
    fn from(error: lexopt::Error) -> Self {
        Self::Usage(error.to_string())
    }
}

/// The words and options of a command line.
struct Words {
    words: Vec<String>,
    store: Option<String>,
    by: Option<String>,
    reason: Option<String>,
    http: bool,
    file: Option<String>,
    out: Option<String>,
    head: Option<String>,
}

fn words(mut parser: lexopt::Parser) -> Result<Words, Failure> {
    use lexopt::prelude::*;
    let mut parsed = Words {
        words: Vec::new(),
        store: None,
        by: None,
        reason: None,
        http: false,
        file: None,
        out: None,
        head: None,
    };
    let text = |value: std::ffi::OsString| {
        value
            .into_string()
            .map_err(|_| Failure::Usage("arguments must be UTF-8".into()))
    };
    while let Some(arg) = parser.next()? {
        match arg {
            Long("store") => parsed.store = Some(text(parser.value()?)?),
            Long("as") => parsed.by = Some(text(parser.value()?)?),
            Long("reason") => parsed.reason = Some(text(parser.value()?)?),
            Long("http") => parsed.http = true,
            Long("file") => parsed.file = Some(text(parser.value()?)?),
            Long("out") => parsed.out = Some(text(parser.value()?)?),
            Long("head") => parsed.head = Some(text(parser.value()?)?),
            Value(value) => parsed.words.push(text(value)?),
            other => return Err(other.unexpected().into()),
        }
    }
    Ok(parsed)
}

/// The configuration at `path`, or every problem of it, each line naming the file.
fn read_config(path: &str) -> Result<Result<Config, (usize, String)>, Failure> {
    let source = std::fs::read_to_string(path)
        .map_err(|error| Failure::Usage(format!("cannot read {path}: {error}")))?;
    Ok(Config::parse(&source).map_err(|problems| {
        let listed = problems
            .iter()
            .map(|problem| format!("{path}:{problem}"))
            .collect::<Vec<_>>()
            .join("\n");
        (problems.len(), listed)
    }))
}

fn check(parser: lexopt::Parser) -> Result<ExitCode, Failure> {
    let parsed = words(parser)?;
    let [path] = parsed.words.as_slice() else {
        return Err(Failure::Usage(
            "`check` needs the configuration's path".into(),
        ));
    };
    let config = read_config(path)?;
    match config {
        Ok(config) => {
            println!("{path}: ok");
            for upstream in &config.upstreams {
                let hidden = match upstream.default_tier {
                    Some(tier) => format!("tools not named: {}", tier.as_str()),
                    None => "tools not named: hidden and blocked".into(),
                };
                println!("upstream {} ({hidden})", upstream.id);
            }
            for (tier, n) in &config.gateway.quorum {
                println!("every waiting {} call: {n} approvers", tier.as_str());
            }
            for tool in &config.tools {
                let quorum = if tool.quorum > 1 {
                    format!(", {} approvers", tool.quorum)
                } else {
                    String::new()
                };
                println!(
                    "  {} <- {}/{}: {}, {}{quorum}",
                    tool.listed,
                    tool.upstream,
                    tool.tool,
                    tool.tier.as_str(),
                    tool.mode.as_str()
                );
                for raise in tool.raise.rules() {
                    println!(
                        "    raised to {} when {} ({})",
                        raise.tier.as_str(),
                        raise.when,
                        raise.reason
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err((count, problems)) => {
            eprintln!("{problems}");
            eprintln!("{count} problem(s); nothing is served from this file");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The store `--store` names, or else the configuration's `[store] url_env`.
fn store_at(parsed: &Words, config: Option<&Config>) -> Result<StoreAt, Failure> {
    let read = |name: &str| std::env::var(name).ok();
    let at = match (
        &parsed.store,
        config.and_then(|config| config.store_url_env.as_deref()),
    ) {
        (Some(argument), _) => StoreAt::parse(argument, read),
        (None, Some(name)) => StoreAt::from_env(name, read),
        (None, None) => {
            return Err(Failure::Usage(
                "--store is needed (a SQLite file's path, or env:NAME for a PostgreSQL database), or [store] url_env".into(),
            ));
        }
    };
    at.map_err(|problem| Failure::Usage(problem.to_string()))
}

async fn serve(parser: lexopt::Parser) -> Result<ExitCode, Failure> {
    let parsed = words(parser)?;
    let [path] = parsed.words.as_slice() else {
        return Err(Failure::Usage(
            "`serve` needs the configuration's path".into(),
        ));
    };
    let config = read_config(path)?.map_err(|(_, problems)| Failure::Run(problems))?;
    let at = store_at(&parsed, Some(&config))?;
    match opened(&at).await? {
        Opened::File(store) => serve_on(path, &parsed, config, store).await,
        Opened::Postgres(store) => serve_on(path, &parsed, config, store).await,
        _ => Err(Failure::Run(format!("{at} cannot be served"))),
    }
}

async fn opened(at: &StoreAt) -> Result<Opened, Failure> {
    at.open()
        .await
        .map_err(|problem| Failure::Run(problem.to_string()))
}

/// Serves `config` with its lanes in `store`.
async fn serve_on<S>(
    path: &str,
    parsed: &Words,
    config: Config,
    store: S,
) -> Result<ExitCode, Failure>
where
    S: ApprovalStore + Send + Sync + 'static,
{
    // What serving needs is checked before any upstream is started.
    let downstream = if parsed.http {
        let http =
            config.gateway.http.clone().ok_or_else(|| {
                Failure::Run(format!("{path}: --http needs a [gateway.http] table"))
            })?;
        Downstream::Http(remote(&http)?, http.address)
    } else {
        let actor = config.gateway.local_actor.clone().ok_or_else(|| {
            Failure::Run(format!(
                "{path}: [gateway] local_actor is needed to serve over stdio (who calls)"
            ))
        })?;
        Downstream::Stdio(actor)
    };
    let console = match &config.console {
        Some(settings) => Some(console(settings).await?),
        None => None,
    };
    let slack = match &config.slack {
        Some(settings) => Some(slack(settings)?),
        None => None,
    };
    let mut metrics_access = match &config.metrics {
        Some(_) if console.is_none() && !parsed.http => {
            return Err(Failure::Run(format!(
                "{path}: [metrics] is served on the console's listener or the HTTP one: add [console], or serve --http"
            )));
        }
        Some(settings) => Some(metrics_access(settings)?),
        None => None,
    };
    let gateway = cairnloop_gateway::serve::start(&config, store)
        .await
        .map_err(|error| Failure::Run(error.to_string()))?;
    for (upstream, why) in &gateway.unstarted {
        eprintln!(
            "cairnloop-gateway: {upstream}: not started: {why}; tried again in the \
             background, its tools withheld until it lists them"
        );
    }
    for (upstream, hidden) in &gateway.hidden {
        eprintln!(
            "cairnloop-gateway: hidden {upstream}/{}: {}",
            hidden.tool, hidden.reason
        );
    }
    // A run that a previous process left unfinished is marked for a person to resolve.
    gateway
        .governor
        .sweep()
        .await
        .map_err(|error| Failure::Run(format!("cannot sweep the store: {error}")))?;
    let governor = std::sync::Arc::clone(&gateway.governor);
    // The receivers of [[notify]]: every notice the store owes them, sent by whichever
    // replica claims it first, as soon as a call is proposed anywhere and every second.
    if !config.notify.is_empty() {
        let delivering = std::sync::Arc::clone(&governor);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let holder = format!("gateway-{}-{nanos:08x}", std::process::id());
        let counted = gateway.metrics.clone();
        tokio::spawn(async move {
            let watch = delivering.watch().unwrap_or_default();
            let mut said = String::new();
            loop {
                let (seen, began) = (watch.generation(), tokio::time::Instant::now());
                match delivering.deliver_notices(&holder).await {
                    Err(error) => {
                        // Said once while it lasts, not every second.
                        let text = error.to_string();
                        if text != said {
                            eprintln!("cairnloop-gateway: notices cannot be delivered: {text}");
                            said = text;
                        }
                    }
                    Ok(pass) => {
                        if let Some(metrics) = &counted {
                            metrics.outbox_pass(&pass);
                        }
                        said.clear();
                    }
                }
                watch.changed(seen, DELIVER_EVERY).await;
                // A pass at most every 100 ms: a burst of calls is told in a few passes,
                // not one claim per call.
                tokio::time::sleep_until(began + DELIVER_AT_MOST_EVERY).await;
            }
        });
    }
    // And now and then while it serves: a replica that died mid-run leaves a claim whose
    // lease runs out, and a call nobody decided expires, in every console.
    let sweeping = std::sync::Arc::clone(&governor);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.tick().await;
        loop {
            every.tick().await;
            if let Err(error) = sweeping.sweep().await {
                eprintln!("cairnloop-gateway: the store could not be swept: {error}");
            }
        }
    });
    // Where a person decides, for the message of a call that waits.
    let mut decided_where = None;
    if let Some((listener, settings)) = console {
        let address = listener
            .local_addr()
            .map_err(|error| Failure::Run(error.to_string()))?;
        decided_where = Some(format!("http://{address}/"));
        // Operators may approve a call with changed arguments: the gateway's calls have no
        // context of their own to gate the change with.
        let mut served = Console::new(std::sync::Arc::clone(&governor), settings)
            .with_edits(std::sync::Arc::new(()));
        if let Some(slack) = slack {
            served = served.with_slack(slack);
        }
        let mut router = served.router();
        // With a console, /metrics is served beside it.
        if let (Some(metrics), Some(access)) = (&gateway.metrics, metrics_access.take()) {
            let metrics = std::sync::Arc::clone(metrics);
            router = router.merge(cairnloop_gateway::metrics::router(
                metrics,
                std::sync::Arc::clone(&governor),
                access,
            ));
        }
        let router = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
        eprintln!("cairnloop-gateway: console at http://{address}/");
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                eprintln!("cairnloop-gateway: the console stopped: {error}");
            }
        });
    }
    match downstream {
        Downstream::Stdio(actor) => {
            let mut server = waiting(
                McpServer::new(governor, (), actor)
                    .with_scopes(config.gateway.local_scopes.clone()),
                &config,
                decided_where.as_deref(),
            );
            if let Some(person) = &config.gateway.client_approver {
                server = server.with_client_approver(client_approver(person, &config));
            }
            // Calls that run at once are answered by the transport: one read of the line.
            let transport = stdio().with_fast_calls(&server);
            let running = server
                .serve(transport)
                .await
                .map_err(|error| Failure::Run(format!("could not start: {error}")))?;
            running
                .waiting()
                .await
                .map_err(|error| Failure::Run(error.to_string()))?;
        }
        Downstream::Http(verifier, address) => {
            let http = config.gateway.http.as_ref().expect("checked above");
            let hosts = ["localhost", "127.0.0.1", "::1"]
                .into_iter()
                .map(str::to_owned)
                .chain(http.allowed_hosts.iter().cloned());
            let mut remote = RemoteMcp::new(governor, (), verifier)
                .with_authorization_server(http.issuer.clone())
                .with_allowed_origins(http.allowed_origins.clone())
                .with_allowed_hosts(hosts);
            if !config.gateway.client_approves.is_empty() {
                remote =
                    remote.with_client_approver(client_approver("(the token's subject)", &config));
            }
            let (shared, place) = (std::sync::Arc::new(config.clone()), decided_where.clone());
            remote =
                remote.with_each_session(move |server| waiting(server, &shared, place.as_deref()));
            use axum::serve::ListenerExt as _;
            // Answers are small and streamed: Nagle's algorithm would hold each back.
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|error| Failure::Run(format!("cannot listen on {address}: {error}")))?
                .tap_io(|stream| {
                    let _ = stream.set_nodelay(true);
                });
            eprintln!("cairnloop-gateway: serving {}", http.audience);
            let mut router = remote.router();
            // Without a console, /metrics is served beside the MCP endpoint.
            if let (Some(metrics), Some(access)) = (&gateway.metrics, metrics_access.take()) {
                router = router.merge(cairnloop_gateway::metrics::router(
                    std::sync::Arc::clone(metrics),
                    std::sync::Arc::clone(&gateway.governor),
                    access,
                ));
            }
            axum::serve(
                listener,
                router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
            )
            .await
            .map_err(|error| Failure::Run(error.to_string()))?;
        }
    }
    gateway.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// A server's waiting calls as the file says: held open for `hold_secs` (the gateway's,
/// or a tool's own), their message naming where a person decides.
fn waiting<S>(
    server: McpServer<(), S>,
    config: &Config,
    decided_where: Option<&str>,
) -> McpServer<(), S>
where
    S: cairnloop::approvals::ApprovalStore + Send + Sync + 'static,
{
    let mut server = server.with_hold(config.gateway.hold);
    for tool in &config.tools {
        if let Some(hold) = tool.hold {
            server = server.with_tool_hold(tool.listed.clone(), hold);
        }
    }
    match decided_where {
        Some(place) => server.with_decision_place(place),
        None => server,
    }
}

/// The person at the client, trusted in its prompt for the tiers `client_approves` names.
fn client_approver(person: &str, config: &Config) -> ClientApprover {
    config
        .gateway
        .client_approves
        .iter()
        .fold(ClientApprover::new(person), |approver, tier| {
            approver.may_approve(*tier)
        })
}

/// Where the gateway's own clients reach it.
enum Downstream {
    /// Over stdio, for this actor.
    Stdio(String),
    /// Over Streamable HTTP at this address, for the tokens this verifier accepts.
    Http(TokenVerifier, std::net::SocketAddr),
}

/// The console `[console]` asks for: its operators (a token read from the environment
/// now, so that a missing one stops the gateway before anything starts) and its
/// address, bound.
async fn console(
    settings: &ConsoleSettings,
) -> Result<(tokio::net::TcpListener, ConsoleConfig), Failure> {
    let mut config = ConsoleConfig::new()
        .with_address(settings.address)
        .with_secure_cookie(settings.secure_cookie);
    for operator in &settings.operators {
        let credential = match &operator.credential {
            Credential::TokenEnv(name) => match std::env::var(name) {
                Ok(token) if !token.is_empty() => ConsoleCredential::token(&token),
                _ => {
                    return Err(Failure::Run(format!(
                        "console operator `{}`: the environment variable {name} holds no token",
                        operator.id
                    )));
                }
            },
            Credential::PasswordHash(hash) => ConsoleCredential::PasswordHash(hash.clone()),
            _ => {
                return Err(Failure::Run(format!(
                    "console operator `{}`: a credential this binary does not know",
                    operator.id
                )));
            }
        };
        let mut added = Operator::new(operator.id.clone(), credential, Accounts::All);
        if !operator.tiers.is_empty() {
            added = added.deciding_only(operator.tiers.iter().copied());
        }
        config = config.with_operator(added);
    }
    let listener = tokio::net::TcpListener::bind(settings.address)
        .await
        .map_err(|error| {
            Failure::Run(format!(
                "the console cannot listen on {}: {error}",
                settings.address
            ))
        })?;
    Ok((listener, config))
}

/// Who may read `/metrics`: the holder of the token `[metrics] token_env` names (read
/// now, so that a missing one stops the gateway before anything starts), or else clients
/// on this machine.
fn metrics_access(settings: &MetricsSettings) -> Result<MetricsAccess, Failure> {
    let token = match &settings.token_env {
        Some(name) => Some(
            std::env::var(name)
                .ok()
                .filter(|token| !token.is_empty())
                .ok_or_else(|| {
                    Failure::Run(format!(
                        "[metrics]: the environment variable {name} holds no token"
                    ))
                })?,
        ),
        None => None,
    };
    Ok(MetricsAccess::new(token))
}

/// The Slack decisions `[slack]` asks for: the signing secret read from the environment
/// now, so that a missing one stops the gateway before anything starts.
fn slack(settings: &SlackSettings) -> Result<SlackDecisions, Failure> {
    let name = &settings.signing_secret_env;
    let secret = std::env::var(name)
        .ok()
        .filter(|secret| !secret.is_empty())
        .ok_or_else(|| {
            Failure::Run(format!(
                "[slack]: the environment variable {name} holds no signing secret"
            ))
        })?;
    let mut slack = (settings.users.iter()).fold(
        SlackDecisions::new(secret.into_bytes()),
        |slack, (user, operator)| slack.with_user(user, operator),
    );
    if let Some(path) = &settings.root_certificate {
        let pem = std::fs::read(path).map_err(|error| {
            Failure::Run(format!("[slack]: cannot read {}: {error}", path.display()))
        })?;
        slack = slack
            .trusting(&pem)
            .map_err(|error| Failure::Run(format!("[slack]: {}: {error}", path.display())))?;
    }
    Ok(slack)
}

/// The token checks `[gateway.http]` asks for, with its key set read from its file.
fn remote(http: &Http) -> Result<TokenVerifier, Failure> {
    let jwks = std::fs::read_to_string(&http.jwks_file).map_err(|error| {
        Failure::Run(format!("cannot read {}: {error}", http.jwks_file.display()))
    })?;
    let verifier = TokenVerifier::new(&http.issuer, &http.audience, &jwks)
        .map_err(|error| Failure::Run(format!("{}: {error}", http.jwks_file.display())))?;
    Ok(match &http.account_claim {
        Some(claim) => verifier.with_account_claim(claim),
        None => verifier,
    })
}

/// Standard input and output as MCP's stdio transport. Pipes (what a desktop client
/// starts the gateway with) are polled by the runtime like any socket; tokio's own stdio
/// hands each read and write to a blocking thread, a wake-up more per frame each way.
/// Anything that is not a pipe (a file, a terminal) is read that way.
fn stdio() -> LineTransport<Box<dyn AsyncRead + Send + Unpin>, Box<dyn AsyncWrite + Send + Unpin>> {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let reader: Box<dyn AsyncRead + Send + Unpin> = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let writer: Box<dyn AsyncWrite + Send + Unpin> = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    LineTransport::new(reader, writer)
}

async fn operator(parser: lexopt::Parser) -> Result<ExitCode, Failure> {
    static NOTHING: cairnloop::Registry<()> = cairnloop::Registry::new(&[]);
    let parsed = words(parser)?;
    // Deciding reads and writes lanes only: no upstream is started.
    match opened(&store_at(&parsed, None)?).await? {
        Opened::File(store) => operate(&parsed, Governor::new(&NOTHING).with_store(store)).await,
        Opened::Postgres(store) => {
            operate(&parsed, Governor::new(&NOTHING).with_store(store)).await
        }
        _ => Err(Failure::Run("this store cannot be operated".into())),
    }
}

/// `audit verify` and `audit export`.
async fn audit(parser: lexopt::Parser) -> Result<ExitCode, Failure> {
    use cairnloop_gateway::audit::{self, Checked};
    let parsed = words(parser)?;
    let head = match parsed.head.as_deref() {
        Some(hex) => Some(cairnloop::approvals::chain_from_hex(hex).ok_or_else(|| {
            Failure::Usage("--head takes a link as 64 hex digits, as verify prints it".into())
        })?),
        None => None,
    };
    let failed = |error: audit::AuditError| Failure::Run(error.to_string());
    match parsed.words.first().map(String::as_str) {
        Some("verify") => {
            let checked = match (&parsed.file, &parsed.store) {
                (Some(path), None) => {
                    let file = std::fs::File::open(path)
                        .map_err(|error| Failure::Run(format!("cannot read {path}: {error}")))?;
                    audit::verify_export(std::io::BufReader::new(file), head).map_err(failed)?
                }
                (None, Some(_)) => {
                    let store = opened(&store_at(&parsed, None)?).await?;
                    audit::verify_store(&store, head).await.map_err(failed)?
                }
                _ => {
                    return Err(Failure::Usage(
                        "audit verify: either --store STORE or --file EXPORT".into(),
                    ));
                }
            };
            match checked {
                Checked::Holds(report) => {
                    println!("intact: {report}");
                    if report.watched_found == Some(false) {
                        return Err(Failure::Run(
                            "the head given is not the link of any record: the trail was rewritten or cut after it".into(),
                        ));
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Checked::Broken(broken) => Err(Failure::Run(format!("altered: {broken}"))),
            }
        }
        Some("export") => {
            let store = opened(&store_at(&parsed, None)?).await?;
            let written = match &parsed.out {
                Some(path) => {
                    let file = std::fs::File::create(path)
                        .map_err(|error| Failure::Run(format!("cannot write {path}: {error}")))?;
                    let mut out = std::io::BufWriter::new(file);
                    audit::export(&store, &mut out).await.map_err(failed)?
                }
                None => {
                    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                    audit::export(&store, &mut out).await.map_err(failed)?
                }
            };
            eprintln!("exported {written} records");
            Ok(ExitCode::SUCCESS)
        }
        _ => Err(Failure::Usage("audit: verify or export".into())),
    }
}

/// An operator's command on the lanes `governor` keeps.
async fn operate<S: ApprovalStore + Send + Sync + 'static>(
    parsed: &Words,
    governor: Governor<(), S>,
) -> Result<ExitCode, Failure> {
    let key = |word: Option<&String>| -> Result<cairnloop::IdempotencyKey, Failure> {
        word.ok_or_else(|| Failure::Usage("a proposal id is needed".into()))?
            .parse()
            .map_err(|error| Failure::Usage(format!("{error}")))
    };
    let run = |error: cairnloop::ApprovalError| Failure::Run(error.to_string());
    match parsed.words.first().map(String::as_str) {
        Some("list") => {
            for lane in governor
                .lanes(LaneState::Pending, None, 100)
                .await
                .map_err(run)?
            {
                let preview = lane
                    .proposal()
                    .preview()
                    .text()
                    .lines()
                    .next()
                    .unwrap_or("");
                let progress = lane
                    .quorum_progress()
                    .map(|progress| format!(" [{progress}]"))
                    .unwrap_or_default();
                println!(
                    "{} {} {} {preview}{progress}",
                    lane.key(),
                    lane.proposal().tool(),
                    lane.proposal().actor_id()
                );
            }
        }
        Some("show") => {
            let lane = governor
                .lane(&key(parsed.words.get(1))?)
                .await
                .map_err(run)?;
            let shown = serde_json::json!({
                "id": lane.key().to_string(),
                "tool": lane.proposal().tool(),
                "actor": lane.proposal().actor_id(),
                "preview": lane.proposal().preview().text(),
                "risk_tier": lane.proposal().risk_tier().as_str(),
                "raised_because": lane.proposal().raised_because(),
                "state": lane.state().as_str(),
                "attempts": lane.attempts(),
                "decided_by": lane.decided_by(),
                "reason": lane.reason(),
                "quorum": lane.quorum(),
                "approvals": lane.approvals().iter().map(|approval| serde_json::json!({
                    "by": approval.by(),
                    "at": approval.at().utc().to_string(),
                })).collect::<Vec<_>>(),
            });
            println!("{shown}");
        }
        Some(verb @ ("approve" | "reject")) => {
            let key = key(parsed.words.get(1))?;
            let by = parsed
                .by
                .as_deref()
                .ok_or_else(|| Failure::Usage("--as WHO is needed: who decides".into()))?;
            let lane = if verb == "approve" {
                governor.approve(&key, by).await
            } else {
                let reason = parsed
                    .reason
                    .as_deref()
                    .ok_or_else(|| Failure::Usage("--reason is needed to reject".into()))?;
                governor.reject(&key, by, reason).await
            }
            .map_err(run)?;
            match lane.quorum_progress() {
                Some(progress) => println!("{} {}: {progress}", lane.key(), lane.state()),
                None => println!("{} {}", lane.key(), lane.state()),
            }
        }
        _ => {
            return Err(Failure::Usage(
                "operator: list, show, approve or reject".into(),
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}
