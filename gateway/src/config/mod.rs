//! The gateway's configuration: the upstream MCP servers, and for each of their tools the
//! declaration cairnloop governs it by. Read from TOML into a tree that keeps every key's
//! place, checked through the same rules (and with the same messages) as a Rust tool's
//! declaration, and refused whole with every problem listed by line and column.
//!
//! ```toml
//! [gateway]
//! local_actor = "alice"              # who calls, when served over stdio
//! local_scopes = ["fs:read", "fs:write"]
//! # hold_secs = 45                   # a waiting call held open this long for a client
//!                                    # that follows no task (0: answered at once)
//! # approval_ttl_secs = 172800       # how long a call waits for a person (48 h)
//!
//! [gateway.http]                     # for `serve --http`: Streamable HTTP, OAuth tokens
//! address = "127.0.0.1:8379"
//! issuer = "https://auth.example.com"
//! jwks_file = "/etc/cairnloop/jwks.json"
//!
//! [store]                            # lanes shared by replicas (else `--store FILE`):
//! url_env = "CAIRNLOOP_DATABASE"     # the variable holding the PostgreSQL connection string
//!
//! [[notify]]                         # told of each call that waits, through the outbox
//! name = "ops-slack"
//! format = "slack"                   # json (the default), slack, teams
//! url_env = "OPS_SLACK_WEBHOOK"      # the variable holding the receiver's URL
//!
//! [slack]                            # decisions from a Slack notice's buttons (needs [console])
//! signing_secret_env = "SLACK_SIGNING_SECRET"
//! users = { U024BE7LH = "ops-lead" } # Slack user id = console operator
//!
//! [metrics]                          # GET /metrics (OpenMetrics), on the console's listener
//! # token_env = "METRICS_TOKEN"       # else on --http's; loopback only without a token
//!
//! [upstreams.fs]                     # an id: 1-16 of a-z 0-9, starting with a letter
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/share"]
//! # default_tier = "read_only"       # tools not named below; without it they are hidden
//! # env = { LOG_LEVEL = "warn" }     # set for it; of the gateway's own environment it
//! # pass_env = ["FS_LICENCE"]        # gets HOME, LOGNAME, PATH, SHELL, TERM, USER and these
//!
//! [upstreams.issues]
//! url = "https://mcp.example.com/mcp"
//! token_env = "ISSUES_TOKEN"         # the credential's variable, never the credential
//!
//! [tools.fs.read_text_file]          # listed as `fs_read_text_file`
//! tier = "read_only"
//! scopes = ["fs:read"]
//!
//! [tools.fs.write_file]
//! tier = "low_write"                 # awaits a person's approval
//! scopes = ["fs:write"]
//! preview = "Write {path}"
//! # hold_secs = 0                    # not held open (the gateway's `hold_secs`: 45)
//! raise = [                          # CEL over `args`, `actor`, `account`: one call's tier
//!   { when = "!args.path.startsWith('/srv/share/scratch/')", tier = "high_write", reason = "outside the scratch folder" },
//! ]
//!
//! [tools.fs.move_file]
//! tier = "destructive"               # always blocked
//! ```

mod console;
mod metrics;
mod names;
mod notify;
mod problem;
mod raise;
mod read;
mod slack;

use std::ops::Range;
use std::str::FromStr;

use cairnloop::approvals::check_id;
use cairnloop::declare::{MAX_QUORUM, ScopeOf, ToolSpecOf};
use cairnloop::{ApprovalMode, RiskTier, SpecError};
use toml::de::{DeTable, DeValue};

pub use cairnloop::declared::{Template, TemplateError};
pub use console::{ConsoleOperator, ConsoleSettings, Credential};
pub use metrics::MetricsSettings;
pub use names::{
    MAX_UPSTREAM_ID, MAX_UPSTREAM_TOOL_NAME, is_upstream_id, listed_name, upstream_tool,
};
pub use notify::NotifySettings;
pub use problem::{Problem, Problems};
pub use raise::{FUNCTIONS, MAX_RAISES, MAX_WHEN_BYTES, Raise, Raises};
use read::{Reader, Value};
pub use slack::SlackSettings;

/// A checked configuration.
///
/// ```
/// use cairnloop::{ApprovalMode, RiskTier};
/// use cairnloop_gateway::config::{Config, Transport};
///
/// let config = Config::parse(r#"
/// [upstreams.fs]
/// command = "npx"
/// args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]
///
/// [tools.fs.write_file]
/// tier = "low_write"
/// scopes = ["fs:write"]
/// "#)?;
/// assert!(matches!(config.upstreams[0].transport, Transport::Stdio { .. }));
/// let tool = &config.tools[0];
/// assert_eq!(tool.listed, "fs_write_file");
/// assert_eq!(tool.mode, ApprovalMode::RequiresApproval);
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// The gateway's own settings.
    pub gateway: Gateway,
    /// The upstream servers, in the order of the file.
    pub upstreams: Vec<Upstream>,
    /// The declared tools, in the order of the file.
    pub tools: Vec<ToolRule>,
    /// The approval console, when `[console]` asks for it.
    pub console: Option<ConsoleSettings>,
    /// The variable holding the PostgreSQL connection string of a store that replicas
    /// share (`[store] url_env`); `None`: `--store` names the store.
    pub store_url_env: Option<String>,
    /// The receivers told of each call that waits (`[[notify]]`), in the order of the file.
    pub notify: Vec<NotifySettings>,
    /// Decisions from Slack's buttons, when `[slack]` asks for them.
    pub slack: Option<SlackSettings>,
    /// The metrics endpoint, when `[metrics]` asks for it.
    pub metrics: Option<MetricsSettings>,
}

/// The gateway's own settings (`[gateway]`).
///
/// ```
/// # use cairnloop_gateway::config::Config;
/// let config = Config::parse("[gateway]\nlocal_actor = \"alice\"\n")?;
/// assert_eq!(config.gateway.local_actor.as_deref(), Some("alice"));
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Gateway {
    /// Who calls when the gateway is served over stdio (a desktop client sends no
    /// token); checked by the crate's identity rule.
    pub local_actor: Option<String>,
    /// The scopes that actor holds.
    pub local_scopes: Vec<String>,
    /// The person at the client over stdio, who may approve calls in the client's own
    /// prompt (MCP elicitation) for the tiers of `client_approves`; a different id from
    /// `local_actor` (four eyes).
    pub client_approver: Option<String>,
    /// The tiers the person at the client may approve in its prompt (`low_write`,
    /// `high_write`): over stdio `client_approver`, over HTTP the token's subject.
    pub client_approves: Vec<RiskTier>,
    /// Serving over Streamable HTTP (`[gateway.http]`), for `serve --http`.
    pub http: Option<Http>,
    /// How long a call that waits for a person is held open for a client that gets no
    /// task (`hold_secs`, 0 to 3600; [`DEFAULT_HOLD`] by default, 0: not held).
    pub hold: std::time::Duration,
    /// How long a call waits for a person before it expires (`approval_ttl_secs`, 1 to
    /// 2,592,000, 30 days; [`DEFAULT_APPROVAL_TTL`] by default).
    pub approval_ttl: std::time::Duration,
    /// How many approvers a waiting call of a tier needs (`quorum = { high_write = 2 }`),
    /// whatever tool it is, and whether its own tier or a `raise` rule made it that tier.
    pub quorum: Vec<(RiskTier, u8)>,
}

/// How long a call waits for a person unless `approval_ttl_secs` says otherwise: two
/// days, the crate's own default, so a call made on a Friday is still there on Monday
/// morning only if someone set it longer.
pub const DEFAULT_APPROVAL_TTL: std::time::Duration = std::time::Duration::from_secs(48 * 3600);

/// How long a waiting call is held open unless `hold_secs` says otherwise: under the 60
/// seconds after which the TypeScript SDK gives up on a request, so a client that does
/// not reset its timeout on progress gets the awaiting answer, not an error.
pub const DEFAULT_HOLD: std::time::Duration = std::time::Duration::from_secs(45);

impl Default for Gateway {
    fn default() -> Self {
        Self {
            local_actor: None,
            local_scopes: Vec::new(),
            client_approver: None,
            client_approves: Vec::new(),
            http: None,
            hold: DEFAULT_HOLD,
            approval_ttl: DEFAULT_APPROVAL_TTL,
            quorum: Vec::new(),
        }
    }
}

/// Serving MCP over Streamable HTTP (`[gateway.http]`): each request carries an OAuth
/// access token (a JWT) that the gateway checks against the authorization server's
/// public keys, read from a file (the gateway fetches nothing). The caller is the
/// token's subject (through its client, when it names one); its scopes are the token's.
///
/// ```
/// # use cairnloop_gateway::config::Config;
/// let config = Config::parse(r#"
/// [gateway.http]
/// address = "127.0.0.1:8379"
/// issuer = "https://auth.example.com"
/// jwks_file = "/etc/cairnloop/jwks.json"
/// "#)?;
/// let http = config.gateway.http.unwrap();
/// assert_eq!(http.audience, "http://127.0.0.1:8379/mcp");
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Http {
    /// Where to listen.
    pub address: std::net::SocketAddr,
    /// The authorization server whose tokens are accepted (`iss`), named in the
    /// protected-resource metadata.
    pub issuer: String,
    /// This server's resource identifier, which a token's `aud` must name; by default
    /// `http://ADDRESS/mcp`.
    pub audience: String,
    /// The issuer's public keys, a JSON Web Key Set.
    pub jwks_file: std::path::PathBuf,
    /// The claim that names the caller's account, if tokens carry one.
    pub account_claim: Option<String>,
    /// Browser origins allowed to call (none by default).
    pub allowed_origins: Vec<String>,
    /// `Host` headers accepted besides `localhost`, `127.0.0.1` and `::1`.
    pub allowed_hosts: Vec<String>,
}

/// One upstream MCP server (`[upstreams.ID]`).
///
/// ```
/// # use cairnloop_gateway::config::{Config, Transport};
/// let config = Config::parse("[upstreams.gh]\nurl = \"https://mcp.example.com/mcp\"\ntoken_env = \"GH_TOKEN\"\n")?;
/// let Transport::Http { url, token_env } = &config.upstreams[0].transport else { panic!() };
/// assert_eq!((url.as_str(), token_env.as_deref()), ("https://mcp.example.com/mcp", Some("GH_TOKEN")));
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Upstream {
    /// Its id: the prefix of every name it lists.
    pub id: String,
    /// How it is reached.
    pub transport: Transport,
    /// The tier of its tools that the configuration does not name; `None`: those are
    /// hidden and blocked.
    pub default_tier: Option<RiskTier>,
    /// The longest one forwarded call may take (`call_timeout_secs`, 1 to 3600; 120 by
    /// default). Past it the call's outcome is unknown: a person resolves it.
    pub call_timeout: std::time::Duration,
}

/// How an upstream is reached.
///
/// ```
/// # use cairnloop_gateway::config::{Config, Transport};
/// let config = Config::parse("[upstreams.fs]\ncommand = \"server\"\nenv = { ROOT = \"/srv\" }\n")?;
/// let Transport::Stdio { env, .. } = &config.upstreams[0].transport else { panic!() };
/// assert_eq!(env, &[("ROOT".to_owned(), "/srv".to_owned())]);
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A command the gateway starts, speaking MCP on its standard input and output.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set in its environment, as the file gives them.
        env: Vec<(String, String)>,
        /// Variables handed on from the gateway's own environment, by name (`pass_env`):
        /// how a secret reaches an upstream without being written in the file. Nothing
        /// else of the gateway's environment is, beyond `HOME`, `LOGNAME`, `PATH`,
        /// `SHELL`, `TERM` and `USER`.
        pass_env: Vec<String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// Its URL (`http` or `https`).
        url: String,
        /// The environment variable whose value is sent as the bearer token (the
        /// client's own token is never forwarded).
        token_env: Option<String>,
    },
}

/// One upstream tool's declaration (`[tools.UPSTREAM.TOOL]`), checked.
///
/// ```
/// # use cairnloop::{ApprovalMode, RiskTier};
/// # use cairnloop_gateway::config::Config;
/// let config = Config::parse(r#"
/// [upstreams.fs]
/// command = "server"
/// [tools.fs.search_files]
/// tier = "low_write"
/// mode = "auto"
/// justification = "searches only read; the upstream marks it writing"
/// "#)?;
/// let tool = &config.tools[0];
/// assert_eq!((tool.tier, tool.mode), (RiskTier::LowWrite, ApprovalMode::Auto));
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolRule {
    /// The upstream's id.
    pub upstream: String,
    /// The tool's name at the upstream.
    pub tool: String,
    /// The name the gateway lists it under: its `name`, or the mapped one
    /// ([`listed_name`]).
    pub listed: String,
    /// Its risk tier.
    pub tier: RiskTier,
    /// Its approval mode: derived from the tier, tightened, or loosened with a
    /// justification.
    pub mode: ApprovalMode,
    /// Why the mode is looser than the tier's, when it is.
    pub justification: Option<String>,
    /// The scopes a caller needs.
    pub scopes: Vec<String>,
    /// What an operator reads about a call.
    pub preview: Option<Template>,
    /// The accounts a caller must act in; empty: any.
    pub accounts: Vec<String>,
    /// Its title, instead of the upstream's.
    pub title: Option<String>,
    /// Its description, instead of the upstream's.
    pub description: Option<String>,
    /// Whether a repeat of the same call does no more than the first.
    pub idempotent: bool,
    /// A JSON Schema its input must match, besides the upstream's own.
    pub input_schema: Option<serde_json::Value>,
    /// How long its calls that wait for a person are held open (`hold_secs`), in place of
    /// the gateway's.
    pub hold: Option<std::time::Duration>,
    /// The rules that raise one call above its tier (`raise`).
    pub raise: Raises,
    /// How many approvers each of its calls needs (`quorum`, 1 to 5).
    pub quorum: u8,
}

impl Config {
    /// Reads and checks a configuration.
    ///
    /// # Errors
    ///
    /// Every problem of the file, by line and column: TOML syntax, an unknown key, a
    /// value of the wrong kind, an upstream id or tool name outside its rule, an unknown
    /// upstream, a broken declaration rule (the crate's own message), two names equal
    /// ignoring ASCII case, a preview template or input schema that does not compile.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Config;
    /// let problems = Config::parse("[tools.nowhere.x]\ntier = \"read_only\"\n").unwrap_err();
    /// assert!(problems.to_string().contains("unknown upstream `nowhere`"));
    /// ```
    pub fn parse(source: &str) -> Result<Self, Problems> {
        let mut reader = Reader::new(source);
        let (document, syntax) = DeTable::parse_recoverable(source);
        for error in syntax {
            let span = error.span().unwrap_or(0..0);
            reader.problem(span, error.message().trim().to_owned());
        }
        let config = read_document(&mut reader, document.get_ref());
        if reader.problems.is_empty() {
            Ok(config)
        } else {
            Err(reader.problems.into_sorted())
        }
    }
}

fn read_document<'s>(reader: &mut Reader<'s>, document: &DeTable<'s>) -> Config {
    reader.only(
        document,
        "the file",
        &[
            "gateway",
            "upstreams",
            "tools",
            "console",
            "store",
            "notify",
            "slack",
            "metrics",
        ],
    );
    let mut config = Config {
        gateway: Gateway::default(),
        upstreams: Vec::new(),
        tools: Vec::new(),
        console: None,
        store_url_env: None,
        notify: Vec::new(),
        slack: None,
        metrics: None,
    };
    if let Some(store) = document.get("store")
        && let Some(table) = reader.table(store, "[store]")
    {
        reader.only(table, "[store]", &["url_env"]);
        if let Some(name) = table.get("url_env")
            && let Some(text) = reader.string(name, "`url_env`")
        {
            if is_variable_name(&text) {
                config.store_url_env = Some(text);
            } else {
                reader.problem(
                    name.span(),
                    format!("`url_env`: `{text}` is not a variable name (letters, digits and `_`, not starting with a digit); the connection string itself never goes in the file"),
                );
            }
        }
    }
    if let Some(console) = document.get("console") {
        config.console = console::read_console(reader, console);
    }
    if let Some(notify) = document.get("notify") {
        config.notify = notify::read_notify(reader, notify);
    }
    if let Some(metrics) = document.get("metrics") {
        config.metrics = metrics::read_metrics(reader, metrics);
    }
    if let Some(slack) = document.get("slack") {
        config.slack = slack::read_slack(reader, slack, config.console.as_ref());
    }
    if let Some(gateway) = document.get("gateway") {
        config.gateway = read_gateway(reader, gateway);
    }
    // The console's sign-in tokens and the receivers' URLs and signing secrets, which no
    // upstream is handed: each with what it is.
    let console_secrets: Vec<(String, &str)> = config
        .console
        .iter()
        .flat_map(|console| &console.operators)
        .filter_map(|operator| match &operator.credential {
            console::Credential::TokenEnv(name) => Some((
                name.clone(),
                "signs an operator into the console: it is never handed to an upstream, which could then approve its own calls",
            )),
            console::Credential::PasswordHash(_) => None,
        })
        .chain(config.notify.iter().flat_map(|notify| {
            std::iter::once(notify.url_env.clone())
                .chain(notify.secret_env.clone())
                .map(|name| (name, "holds a notice receiver's address or signing secret: it is never handed to an upstream, which could then forge notices"))
        }))
        .chain(config.metrics.iter().flat_map(|metrics| metrics.token_env.clone()).map(|name| {
            (name, "lets a client read the gateway's metrics: it is never handed to an upstream")
        }))
        .chain(config.slack.iter().map(|slack| {
            (slack.signing_secret_env.clone(), "signs Slack's clicks: it is never handed to an upstream, which could then approve its own calls")
        }))
        .collect();
    if let Some(upstreams) = document.get("upstreams")
        && let Some(upstreams) = reader.table(upstreams, "`upstreams`")
    {
        for (id, upstream) in upstreams.iter() {
            if let Some(upstream) =
                read_upstream(reader, id.get_ref(), id.span(), upstream, &console_secrets)
            {
                config.upstreams.push(upstream);
            }
        }
    }
    if let Some(tools) = document.get("tools")
        && let Some(tools) = reader.table(tools, "`tools`")
    {
        for (upstream, its_tools) in tools.iter() {
            let upstream_id = upstream.get_ref().to_string();
            let known = upstreams_named(document, &upstream_id);
            if !known {
                reader.problem(
                    upstream.span(),
                    format!(
                        "unknown upstream `{upstream_id}`: declare it in [upstreams.{upstream_id}]"
                    ),
                );
            }
            let Some(its_tools) = reader.table(its_tools, &format!("[tools.{upstream_id}]")) else {
                continue;
            };
            for (tool, rule) in its_tools.iter() {
                if let Some(rule) =
                    read_tool(reader, &upstream_id, tool.get_ref(), tool.span(), rule)
                {
                    config.tools.push(rule);
                }
            }
        }
    }
    check_names(reader, document, &config.tools);
    config
}

/// Whether `[upstreams.ID]` is declared (well formed or not: its own problems are
/// reported where it is).
fn upstreams_named(document: &DeTable<'_>, id: &str) -> bool {
    match document.get("upstreams").map(toml::Spanned::get_ref) {
        Some(DeValue::Table(upstreams)) => upstreams.get(id).is_some(),
        _ => false,
    }
}

fn read_gateway<'s>(reader: &mut Reader<'s>, value: &Value<'s>) -> Gateway {
    let mut gateway = Gateway::default();
    let Some(table) = reader.table(value, "[gateway]") else {
        return gateway;
    };
    reader.only(
        table,
        "[gateway]",
        &[
            "local_actor",
            "local_scopes",
            "client_approver",
            "client_approves",
            "http",
            "hold_secs",
            "approval_ttl_secs",
            "quorum",
        ],
    );
    if let Some(quorum) = table.get("quorum")
        && let Some(tiers) = reader.table(quorum, "`quorum`")
    {
        for (tier, n) in tiers.iter() {
            let what = format!("`quorum.{}`", tier.get_ref());
            let n = reader.number(n, &what, 1..=u64::from(MAX_QUORUM));
            match tier.get_ref().parse::<RiskTier>() {
                Ok(tier @ (RiskTier::LowWrite | RiskTier::HighWrite)) => {
                    if let Some(n) = n.and_then(|n| u8::try_from(n).ok()) {
                        gateway.quorum.push((tier, n));
                    }
                }
                _ => reader.problem(
                    tier.span(),
                    format!("{what}: a quorum is for the tiers whose calls wait for people, `low_write` and `high_write`"),
                ),
            }
        }
    }
    if let Some(secs) = table.get("hold_secs")
        && let Some(secs) = reader.number(secs, "`hold_secs`", 0..=3600)
    {
        gateway.hold = std::time::Duration::from_secs(secs);
    }
    if let Some(secs) = table.get("approval_ttl_secs")
        && let Some(secs) = reader.number(secs, "`approval_ttl_secs`", 1..=30 * 24 * 3600)
    {
        gateway.approval_ttl = std::time::Duration::from_secs(secs);
    }
    if let Some(actor) = table.get("local_actor")
        && let Some(id) = reader.string(actor, "`local_actor`")
    {
        match check_id(&id) {
            Ok(()) => gateway.local_actor = Some(id),
            Err(error) => reader.problem(actor.span(), format!("`local_actor`: {error}")),
        }
    }
    if let Some(scopes) = table.get("local_scopes") {
        gateway.local_scopes = reader
            .strings(scopes, "`local_scopes`")
            .into_iter()
            .map(|(scope, _)| scope)
            .collect();
    }
    if let Some(approver) = table.get("client_approver")
        && let Some(id) = reader.string(approver, "`client_approver`")
    {
        match check_id(&id) {
            Err(error) => reader.problem(approver.span(), format!("`client_approver`: {error}")),
            Ok(())
                if gateway
                    .local_actor
                    .as_deref()
                    .is_some_and(|actor| cairnloop::approvals::same_person(actor, &id)) =>
            {
                reader.problem(
                    approver.span(),
                    "`client_approver` is the same person as `local_actor`: four eyes would refuse every approval they give",
                );
            }
            Ok(()) => gateway.client_approver = Some(id),
        }
    }
    if let Some(tiers) = table.get("client_approves") {
        for (tier, span) in reader.strings(tiers, "`client_approves`") {
            match tier.parse::<RiskTier>() {
                Ok(tier @ (RiskTier::LowWrite | RiskTier::HighWrite)) => {
                    gateway.client_approves.push(tier);
                }
                Ok(_) => reader.problem(
                    span,
                    format!("`{tier}` in `client_approves`: only `low_write` and `high_write` calls are approved (read-only ones need no approval, destructive ones are never run)"),
                ),
                Err(_) => reader.problem(
                    span,
                    format!("`{tier}` in `client_approves` is not one of `low_write`, `high_write`"),
                ),
            }
        }
        if gateway.client_approver.is_none() && table.get("http").is_none() {
            reader.problem(
                tiers.span(),
                "`client_approves` needs `client_approver` (who the person at the client is) or [gateway.http] (the token's subject)",
            );
        }
    }
    if let Some(http) = table.get("http") {
        gateway.http = read_http(reader, http);
    }
    gateway
}

fn read_http<'s>(reader: &mut Reader<'s>, value: &Value<'s>) -> Option<Http> {
    const WITHIN: &str = "[gateway.http]";
    let table = reader.table(value, WITHIN)?;
    reader.only(
        table,
        WITHIN,
        &[
            "address",
            "issuer",
            "audience",
            "jwks_file",
            "account_claim",
            "allowed_origins",
            "allowed_hosts",
        ],
    );
    let required = |reader: &mut Reader<'s>, key: &str| {
        let found = table
            .get(key)
            .and_then(|value| reader.string(value, &format!("`{key}`")));
        if found.is_none() && table.get(key).is_none() {
            reader.problem(value.span(), format!("{WITHIN} needs `{key}`"));
        }
        found
    };
    let address = required(reader, "address");
    let issuer = required(reader, "issuer");
    let jwks_file = required(reader, "jwks_file");
    let address = address.and_then(|text| match text.parse::<std::net::SocketAddr>() {
        Ok(address) => Some(address),
        Err(_) => {
            let span = table.get("address").map_or(value.span(), |at| at.span());
            reader.problem(
                span,
                format!(
                    "`address`: `{text}` is not an IP address and port, such as 127.0.0.1:8379"
                ),
            );
            None
        }
    });
    let audience = match table.get("audience") {
        Some(given) => reader.string(given, "`audience`"),
        None => address.map(|address| format!("http://{address}/mcp")),
    };
    let account_claim = table
        .get("account_claim")
        .and_then(|claim| reader.string(claim, "`account_claim`"));
    let list = |reader: &mut Reader<'s>, key: &str| {
        table.get(key).map_or_else(Vec::new, |given| {
            reader
                .strings(given, &format!("`{key}`"))
                .into_iter()
                .map(|(text, _)| text)
                .collect()
        })
    };
    let allowed_origins = list(reader, "allowed_origins");
    let allowed_hosts = list(reader, "allowed_hosts");
    Some(Http {
        address: address?,
        issuer: issuer?,
        audience: audience?,
        jwks_file: jwks_file?.into(),
        account_claim,
        allowed_origins,
        allowed_hosts,
    })
}

fn read_upstream<'s>(
    reader: &mut Reader<'s>,
    id: &str,
    id_span: Range<usize>,
    value: &Value<'s>,
    console_secrets: &[(String, &str)],
) -> Option<Upstream> {
    let within = format!("[upstreams.{id}]");
    if !is_upstream_id(id) {
        reader.problem(
            id_span.clone(),
            format!("upstream id `{id}` must be 1 to {MAX_UPSTREAM_ID} of `a-z 0-9`, starting with a letter (it begins every name the upstream lists, and the first `_` ends it)"),
        );
    }
    let table = reader.table(value, &within)?;
    reader.only(
        table,
        &within,
        &[
            "command",
            "args",
            "env",
            "pass_env",
            "url",
            "token_env",
            "default_tier",
            "call_timeout_secs",
        ],
    );
    let call_timeout = table
        .get("call_timeout_secs")
        .and_then(|secs| reader.number(secs, "`call_timeout_secs`", 1..=3600))
        .map_or(DEFAULT_CALL_TIMEOUT, std::time::Duration::from_secs);
    let default_tier = table
        .get("default_tier")
        .and_then(|tier| read_tier(reader, tier, "`default_tier`"));
    let transport = match (table.get("command"), table.get("url")) {
        (Some(command), None) => {
            for key in ["token_env"] {
                if let Some((key, _)) = table.get_key_value(key) {
                    reader.problem(
                        key.span(),
                        format!(
                            "`{key}` is for an upstream reached by `url`",
                            key = key.get_ref()
                        ),
                    );
                }
            }
            let command = reader.string(command, "`command`");
            let args = table
                .get("args")
                .map(|args| reader.strings(args, "`args`"))
                .unwrap_or_default()
                .into_iter()
                .map(|(arg, _)| arg)
                .collect();
            let env = table
                .get("env")
                .map(|env| read_env(reader, env))
                .unwrap_or_default();
            let pass_env = table
                .get("pass_env")
                .map(|names| read_pass_env(reader, names, console_secrets))
                .unwrap_or_default();
            Transport::Stdio {
                command: command?,
                args,
                env,
                pass_env,
            }
        }
        (None, Some(url)) => {
            for key in ["args", "env", "pass_env"] {
                if let Some((key, _)) = table.get_key_value(key) {
                    reader.problem(
                        key.span(),
                        format!(
                            "`{key}` is for an upstream started by `command`",
                            key = key.get_ref()
                        ),
                    );
                }
            }
            let url_text = reader.string(url, "`url`")?;
            if !(url_text.starts_with("https://") || url_text.starts_with("http://")) {
                reader.problem(url.span(), "`url` must start with `https://` or `http://`");
            }
            let token_env = table.get("token_env").and_then(|name| {
                let variable = reader.string(name, "`token_env`")?;
                if !is_variable_name(&variable) {
                    reader.problem(name.span(), "`token_env` names an environment variable (`A-Z a-z 0-9 _`), whose value is the token; the token itself never goes in this file");
                }
                Some(variable)
            });
            Transport::Http {
                url: url_text,
                token_env,
            }
        }
        (Some(_), Some(url)) => {
            reader.problem(
                url.span(),
                format!("{within} has both `command` and `url`: give one"),
            );
            return None;
        }
        (None, None) => {
            reader.problem(id_span, format!("upstream `{id}` needs `command` (a server the gateway starts) or `url` (a Streamable HTTP endpoint)"));
            return None;
        }
    };
    Some(Upstream {
        id: id.to_owned(),
        transport,
        default_tier,
        call_timeout,
    })
}

/// Whether `name` can name an environment variable (`A-Z a-z 0-9 _`, not starting with a
/// digit).
fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The names of `pass_env`: each a variable's name, and none a console operator's sign-in
/// token (an upstream holding one could approve its own calls).
fn read_pass_env<'s>(
    reader: &mut Reader<'s>,
    value: &Value<'s>,
    console_secrets: &[(String, &str)],
) -> Vec<String> {
    let mut names = Vec::new();
    for (name, span) in reader.strings(value, "`pass_env`") {
        if !is_variable_name(&name) {
            reader.problem(
                span,
                format!(
                    "`pass_env` names environment variables (`A-Z a-z 0-9 _`); `{name}` is not one"
                ),
            );
        } else if let Some((_, what)) = console_secrets.iter().find(|(secret, _)| *secret == name) {
            reader.problem(span, format!("`{name}` {what}"));
        } else {
            names.push(name);
        }
    }
    names
}

fn read_env<'s>(reader: &mut Reader<'s>, value: &Value<'s>) -> Vec<(String, String)> {
    let Some(table) = reader.table(value, "`env`") else {
        return Vec::new();
    };
    table
        .iter()
        .filter_map(|(name, value)| {
            let value = reader.string(value, &format!("`env.{}`", name.get_ref()))?;
            Some((name.get_ref().to_string(), value))
        })
        .collect()
}

fn read_tier<'s>(reader: &mut Reader<'s>, value: &Value<'s>, what: &str) -> Option<RiskTier> {
    let text = reader.string(value, what)?;
    match RiskTier::from_str(&text) {
        Ok(tier) => Some(tier),
        Err(_) => {
            reader.problem(
                value.span(),
                format!(
                    "{what} must be one of `read_only`, `low_write`, `high_write`, `destructive`"
                ),
            );
            None
        }
    }
}

/// How long a forwarded call may take when the configuration does not say.
pub const DEFAULT_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// The keys of a tool's declaration.
const TOOL_KEYS: &[&str] = &[
    "tier",
    "mode",
    "justification",
    "scopes",
    "preview",
    "accounts",
    "name",
    "title",
    "description",
    "idempotent",
    "input_schema",
    "hold_secs",
    "raise",
    "quorum",
];

fn read_tool<'s>(
    reader: &mut Reader<'s>,
    upstream: &str,
    tool: &str,
    tool_span: Range<usize>,
    value: &Value<'s>,
) -> Option<ToolRule> {
    let within = format!("[tools.{upstream}.{tool}]");
    let table = reader.table(value, &within)?;
    reader.only(table, &within, TOOL_KEYS);
    let valid_tool_name = !tool.is_empty()
        && tool.len() <= MAX_UPSTREAM_TOOL_NAME
        && tool
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b));
    if !valid_tool_name {
        reader.problem(tool_span.clone(), format!("tool name `{tool}` is not one an MCP server lists (1 to 128 of `A-Z a-z 0-9 _ - . /`)"));
    }
    let text = |reader: &mut Reader<'s>, key: &str| {
        table.get(key).and_then(|value| {
            reader
                .string(value, &format!("`{key}`"))
                .map(|text| (text, value.span()))
        })
    };
    let Some(tier_value) = table.get("tier") else {
        reader.problem(
            tool_span,
            format!(
                "{within} needs a `tier`: `read_only`, `low_write`, `high_write` or `destructive`"
            ),
        );
        return None;
    };
    let tier = read_tier(reader, tier_value, "`tier`");
    let listed = match text(reader, "name") {
        Some((name, _)) => Some(name),
        None if table.get("name").is_some() => None,
        None => {
            let mapped = listed_name(upstream, tool);
            if mapped.is_none() && valid_tool_name {
                reader.problem(tool_span.clone(), format!("`{upstream}_` and `{tool}` make a name longer than 64 characters once mapped: give the tool a `name`"));
            }
            mapped
        }
    };
    let title = text(reader, "title");
    let description = text(reader, "description");
    let justification = text(reader, "justification");
    let mode = table.get("mode").and_then(|mode| {
        let text = reader.string(mode, "`mode`")?;
        match ApprovalMode::from_str(&text) {
            Ok(parsed) => Some((parsed, mode.span())),
            Err(_) => {
                reader.problem(
                    mode.span(),
                    "`mode` must be one of `auto`, `requires_approval`, `always_block`",
                );
                None
            }
        }
    });
    let scopes = table
        .get("scopes")
        .map(|scopes| reader.strings(scopes, "`scopes`"))
        .unwrap_or_default();
    let accounts = table
        .get("accounts")
        .map(|accounts| reader.strings(accounts, "`accounts`"))
        .unwrap_or_default();
    for (account, span) in &accounts {
        if let Err(error) = check_id(account) {
            reader.problem(
                span.clone(),
                format!("account `{}`: {error}", account.escape_debug()),
            );
        }
    }
    let preview = text(reader, "preview").and_then(|(preview, span)| {
        Template::parse(&preview)
            .map_err(|error| reader.problem(span, format!("`preview`: {error}")))
            .ok()
    });
    let hold = table
        .get("hold_secs")
        .and_then(|secs| reader.number(secs, "`hold_secs`", 0..=3600))
        .map(std::time::Duration::from_secs);
    let idempotent = table
        .get("idempotent")
        .and_then(|flag| reader.boolean(flag, "`idempotent`"))
        .unwrap_or(false);
    let input_schema = text(reader, "input_schema")
        .and_then(|(schema, span)| compile_schema(reader, &schema, span));
    let raise = table
        .get("raise")
        .map(|rules| raise::read_raises(reader, rules, tier))
        .unwrap_or_default();

    // The declaration through the crate's own rules, as a Rust tool's `SPEC` and
    // `SCOPES` go through them at compile time. A tier that could not be read stands in
    // as read-only, so that the name, title and description are still checked.
    let listed = listed?;
    let tier_read = tier;
    let tier = tier.unwrap_or(RiskTier::ReadOnly);
    let spec_title = title.as_ref().map_or(listed.as_str(), |(title, _)| title);
    let spec_description = description
        .as_ref()
        .map_or("(the upstream's description)", |(description, _)| {
            description
        });
    let spec_span = |error: SpecError| match error.rule() {
        2 => title.as_ref().map(|(_, span)| span.clone()),
        3 => description.as_ref().map(|(_, span)| span.clone()),
        1 => table.get("name").map(toml::Spanned::span),
        _ => None,
    };
    let spec = match ToolSpecOf::try_new(&listed, spec_title, spec_description, tier) {
        Ok(spec) => spec,
        Err(error) => {
            let span = spec_span(error).unwrap_or_else(|| tool_span.clone());
            reader.problem(span, error.message());
            return None;
        }
    };
    // The mode's rules need the tier the file gives.
    tier_read?;
    let spec = match (mode, &justification) {
        (Some((mode, span)), Some((why, _))) => spec
            .try_loosen_approval(mode, why)
            .map_err(|error| (error, span)),
        (Some((mode, span)), None) => spec.try_with_approval(mode).map_err(|error| (error, span)),
        (None, Some((_, span))) => Err((SpecError::NotALoosening, span.clone())),
        (None, None) => Ok(spec),
    };
    let spec = match spec {
        Ok(spec) => spec,
        Err((error, span)) => {
            reader.problem(span, error.message());
            return None;
        }
    };
    let quorum = match table.get("quorum") {
        Some(value) => {
            let n = reader.number(value, "`quorum`", 1..=u64::from(MAX_QUORUM))?;
            let n = u8::try_from(n).unwrap_or(MAX_QUORUM);
            if let Err(error) = spec.try_with_quorum(n) {
                reader.problem(value.span(), error.message());
                return None;
            }
            n
        }
        None => 1,
    };
    let declared: Vec<ScopeOf<'_>> = scopes
        .iter()
        .filter_map(|(scope, span)| match ScopeOf::try_new(scope) {
            Ok(scope) => Some(scope),
            Err(error) => {
                reader.problem(span.clone(), error.message());
                None
            }
        })
        .collect();
    if declared.len() == scopes.len()
        && let Err(error) = ScopeOf::check_list(&declared)
    {
        let span = table.get("scopes").map_or(tool_span, toml::Spanned::span);
        reader.problem(span, error.message());
    }
    Some(ToolRule {
        upstream: upstream.to_owned(),
        tool: tool.to_owned(),
        mode: spec.approval_mode(),
        tier,
        listed: listed.clone(),
        justification: justification.map(|(why, _)| why),
        scopes: scopes.into_iter().map(|(scope, _)| scope).collect(),
        preview,
        accounts: accounts.into_iter().map(|(account, _)| account).collect(),
        title: title.map(|(title, _)| title),
        description: description.map(|(description, _)| description),
        idempotent,
        hold,
        input_schema,
        raise,
        quorum,
    })
}

/// A pinned input schema: JSON, checked by the same rule as any declared tool's
/// ([`cairnloop::declared::check_input_schema`]).
fn compile_schema(
    reader: &mut Reader<'_>,
    text: &str,
    span: Range<usize>,
) -> Option<serde_json::Value> {
    if text.len() > cairnloop::declared::MAX_SCHEMA_BYTES {
        reader.problem(
            span,
            format!(
                "`input_schema` is larger than {} bytes",
                cairnloop::declared::MAX_SCHEMA_BYTES
            ),
        );
        return None;
    }
    let schema: serde_json::Value = match serde_json::from_str(text) {
        Ok(schema) => schema,
        Err(error) => {
            reader.problem(span, format!("`input_schema` is not JSON: {error}"));
            return None;
        }
    };
    match cairnloop::declared::check_input_schema(&schema) {
        Ok(()) => Some(schema),
        Err(error) => {
            reader.problem(span, format!("`input_schema`: {error}"));
            None
        }
    }
}

/// Rule 7 over every listed name: none equal to another, even ignoring ASCII case.
fn check_names(reader: &mut Reader<'_>, document: &DeTable<'_>, tools: &[ToolRule]) {
    for (i, tool) in tools.iter().enumerate() {
        let Some(first) = tools[..i]
            .iter()
            .find(|earlier| earlier.listed.eq_ignore_ascii_case(&tool.listed))
        else {
            continue;
        };
        let span = tool_span(document, tool).unwrap_or(0..0);
        reader.problem(
            span,
            format!(
                "{} (`{}` of upstream `{}` is listed as `{}`, `{}` of upstream `{}` as `{}`)",
                SpecError::DuplicateToolName.message(),
                first.tool,
                first.upstream,
                first.listed,
                tool.tool,
                tool.upstream,
                tool.listed
            ),
        );
    }
}

/// Where `[tools.UPSTREAM.TOOL]` is named in the file.
fn tool_span(document: &DeTable<'_>, tool: &ToolRule) -> Option<Range<usize>> {
    let DeValue::Table(tools) = document.get("tools")?.get_ref() else {
        return None;
    };
    let DeValue::Table(its_tools) = tools.get(tool.upstream.as_str())?.get_ref() else {
        return None;
    };
    its_tools
        .get_key_value(tool.tool.as_str())
        .map(|(key, _)| key.span())
}
