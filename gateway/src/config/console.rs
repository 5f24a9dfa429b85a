//! `[console]`: the approval console served by the gateway's own binary, and who may
//! sign in to it.

use std::net::SocketAddr;

use cairnloop::RiskTier;
use cairnloop::approvals::check_id;

use super::read::{Reader, Value};

/// The approval console, served beside the MCP server by `serve` (`[console]`).
///
/// ```
/// # use cairnloop_gateway::config::{Config, Credential};
/// let config = Config::parse(r#"
/// [console]
/// address = "127.0.0.1:8377"
///
/// [console.operators.ops-lead]
/// token_env = "OPS_LEAD_TOKEN"
///
/// [console.operators.junior]
/// password_hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"
/// tiers = ["read_only", "low_write"]
/// "#)?;
/// let console = config.console.unwrap();
/// assert_eq!(console.operators[0].id, "ops-lead");
/// assert_eq!(console.operators[0].credential, Credential::TokenEnv("OPS_LEAD_TOKEN".into()));
/// assert_eq!(console.operators[1].tiers.len(), 2);
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsoleSettings {
    /// Where it listens (`address`; 127.0.0.1:8377 by default).
    pub address: SocketAddr,
    /// Whether its cookies are `Secure` (`secure_cookie`: set it behind TLS).
    pub secure_cookie: bool,
    /// Who may sign in, in the order of the file.
    pub operators: Vec<ConsoleOperator>,
}

/// One operator of the console (`[console.operators.ID]`).
///
/// ```
/// # use cairnloop_gateway::config::Config;
/// let config = Config::parse("[console.operators.lead]\ntoken_env = \"LEAD_TOKEN\"\n")?;
/// assert!(config.console.unwrap().operators[0].tiers.is_empty()); // every tier
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsoleOperator {
    /// Their id, checked by the crate's identity rule: who decided, in every record.
    pub id: String,
    /// How they prove it.
    pub credential: Credential,
    /// The tiers they may decide (`tiers`); empty: every tier.
    pub tiers: Vec<RiskTier>,
}

/// How an operator signs in: never a secret written in the file.
///
/// ```
/// # use cairnloop_gateway::config::Credential;
/// let credential = Credential::TokenEnv("OPS_LEAD_TOKEN".into());
/// assert!(matches!(credential, Credential::TokenEnv(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// A sign-in token read from this environment variable when the gateway starts.
    TokenEnv(String),
    /// An Argon2 password hash in PHC form (`$argon2id$…`).
    PasswordHash(String),
}

/// The console's default address.
const DEFAULT_ADDRESS: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 8377);

pub(super) fn read_console<'s>(
    reader: &mut Reader<'s>,
    value: &Value<'s>,
) -> Option<ConsoleSettings> {
    let table = reader.table(value, "[console]")?;
    reader.only(
        table,
        "[console]",
        &["address", "secure_cookie", "operators"],
    );
    let mut console = ConsoleSettings {
        address: DEFAULT_ADDRESS,
        secure_cookie: false,
        operators: Vec::new(),
    };
    if let Some(address) = table.get("address")
        && let Some(text) = reader.string(address, "`address`")
    {
        match text.parse() {
            Ok(parsed) => console.address = parsed,
            Err(_) => reader.problem(
                address.span(),
                format!(
                    "`address`: `{text}` is not an IP address and port, such as 127.0.0.1:8377"
                ),
            ),
        }
    }
    if let Some(secure) = table.get("secure_cookie")
        && let Some(secure) = reader.boolean(secure, "`secure_cookie`")
    {
        console.secure_cookie = secure;
    }
    let operators = table
        .get("operators")
        .and_then(|operators| reader.table(operators, "[console.operators]"));
    match operators {
        Some(operators) if !operators.is_empty() => {
            for (id, operator) in operators.iter() {
                if let Some(operator) = read_operator(reader, id, operator) {
                    console.operators.push(operator);
                }
            }
        }
        _ => reader.problem(
            value.span(),
            "[console] needs at least one operator: [console.operators.ID] with `token_env` or `password_hash`",
        ),
    }
    Some(console)
}

fn read_operator<'s>(
    reader: &mut Reader<'s>,
    id: &toml::Spanned<std::borrow::Cow<'s, str>>,
    value: &Value<'s>,
) -> Option<ConsoleOperator> {
    let within = format!("[console.operators.{}]", id.get_ref());
    let table = reader.table(value, &within)?;
    reader.only(table, &within, &["token_env", "password_hash", "tiers"]);
    let checked = match check_id(id.get_ref()) {
        Ok(()) => Some(id.get_ref().to_string()),
        Err(error) => {
            reader.problem(id.span(), format!("operator id: {error}"));
            None
        }
    };
    let token_env = table
        .get("token_env")
        .and_then(|name| reader.string(name, "`token_env`"));
    let password_hash = table
        .get("password_hash")
        .and_then(|hash| reader.string(hash, "`password_hash`"));
    let credential = match (token_env, password_hash) {
        (Some(name), None) => Some(Credential::TokenEnv(name)),
        (None, Some(hash)) if hash.starts_with("$argon2") => Some(Credential::PasswordHash(hash)),
        (None, Some(_)) => {
            let span = table
                .get("password_hash")
                .map_or(value.span(), |at| at.span());
            reader.problem(
                span,
                "`password_hash` must be an Argon2 hash in PHC form ($argon2id$…), never the password",
            );
            None
        }
        _ => {
            reader.problem(
                value.span(),
                format!("{within} needs exactly one of `token_env` and `password_hash`"),
            );
            None
        }
    };
    let tiers = table.get("tiers").map_or_else(Vec::new, |tiers| {
        reader
            .strings(tiers, "`tiers`")
            .into_iter()
            .filter_map(|(tier, span)| match tier.parse::<RiskTier>() {
                Ok(tier) => Some(tier),
                Err(_) => {
                    reader.problem(
                        span,
                        format!("`{tier}` in `tiers` is not one of `read_only`, `low_write`, `high_write`, `destructive`"),
                    );
                    None
                }
            })
            .collect()
    });
    Some(ConsoleOperator {
        id: checked?,
        credential: credential?,
        tiers,
    })
}
