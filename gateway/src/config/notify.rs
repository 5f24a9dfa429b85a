//! `[[notify]]`: the receivers told of each call that waits for a person, through the
//! store's outbox.

use std::path::PathBuf;

use cairnloop::approvals::check_id;
use cairnloop::notifiers::WebhookFormat;
use toml::de::DeValue;

use super::read::{Reader, Value};

/// One receiver told of each call that waits (`[[notify]]`): a webhook whose URL, and
/// signing secret if any, are read from the environment when the gateway starts.
///
/// ```
/// # use cairnloop_gateway::config::Config;
/// let config = Config::parse(r#"
/// [[notify]]
/// name = "ops-slack"
/// format = "slack"
/// url_env = "OPS_SLACK_WEBHOOK"
///
/// [[notify]]
/// name = "audit-desk"
/// url_env = "AUDIT_DESK_URL"
/// secret_env = "AUDIT_DESK_SECRET"
/// root_certificate = "/etc/cairnloop/desk-ca.pem"
/// "#)?;
/// assert_eq!(config.notify.len(), 2);
/// assert_eq!(config.notify[1].secret_env.as_deref(), Some("AUDIT_DESK_SECRET"));
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotifySettings {
    /// The receiver's name, which the store's outbox keeps its notices under: keep it
    /// stable (a new name is owed a notice for every call waiting then).
    pub name: String,
    /// The body: `json` (the default), `slack` or `teams`.
    pub format: WebhookFormat,
    /// The variable holding the receiver's URL (Slack's and Teams' hold a token).
    pub url_env: String,
    /// The variable holding the secret each body is signed with, if any.
    pub secret_env: Option<String>,
    /// A private root certificate (PEM) the receiver's certificate must chain to, in
    /// place of the public web roots.
    pub root_certificate: Option<PathBuf>,
    /// Where each notice links to the call's page (`link`, a console's public address);
    /// by default the console's own address when `[console]` is served.
    pub link: Option<String>,
}

/// Reads every `[[notify]]` table.
pub(super) fn read_notify<'s>(reader: &mut Reader<'s>, value: &Value<'s>) -> Vec<NotifySettings> {
    let DeValue::Array(tables) = value.get_ref() else {
        reader.problem(
            value.span(),
            "`notify` must be tables: [[notify]] with `name` and `url_env`",
        );
        return Vec::new();
    };
    let mut found: Vec<NotifySettings> = Vec::new();
    for table in tables {
        if let Some(settings) = read_one(reader, table) {
            if found.iter().any(|other| other.name == settings.name) {
                reader.problem(
                    table.span(),
                    format!("[[notify]] `{}` is named twice", settings.name),
                );
                continue;
            }
            found.push(settings);
        }
    }
    found
}

fn read_one<'s>(reader: &mut Reader<'s>, value: &Value<'s>) -> Option<NotifySettings> {
    let table = reader.table(value, "[[notify]]")?;
    reader.only(
        table,
        "[[notify]]",
        &[
            "name",
            "format",
            "url_env",
            "secret_env",
            "root_certificate",
            "link",
        ],
    );
    let mut variable = |key: &str| -> Option<String> {
        let at = table.get(key)?;
        let name = reader.string(at, &format!("`{key}`"))?;
        if super::is_variable_name(&name) {
            Some(name)
        } else {
            reader.problem(
                at.span(),
                format!("`{key}`: `{name}` is not a variable name; the value itself never goes in the file"),
            );
            None
        }
    };
    let url_env = variable("url_env");
    let secret_env = variable("secret_env");
    let name = match table.get("name") {
        Some(at) => reader
            .string(at, "`name`")
            .and_then(|name| match check_id(&name) {
                Ok(()) => Some(name),
                Err(error) => {
                    reader.problem(at.span(), format!("`name`: {error}"));
                    None
                }
            }),
        None => {
            reader.problem(value.span(), "[[notify]] needs a `name`");
            None
        }
    };
    if url_env.is_none() && table.get("url_env").is_none() {
        reader.problem(
            value.span(),
            "[[notify]] needs `url_env`, the variable holding the receiver's URL",
        );
    }
    let format = match table.get("format") {
        None => Some(WebhookFormat::Json),
        Some(at) => reader
            .string(at, "`format`")
            .and_then(|text| match text.parse() {
                Ok(format) => Some(format),
                Err(_) => {
                    reader.problem(
                        at.span(),
                        format!("`format`: `{text}` is not one of `json`, `slack`, `teams`"),
                    );
                    None
                }
            }),
    };
    let root_certificate = table
        .get("root_certificate")
        .and_then(|at| reader.string(at, "`root_certificate`"))
        .map(PathBuf::from);
    let link = table.get("link").and_then(|at| {
        let text = reader.string(at, "`link`")?;
        if text.starts_with("https://") || text.starts_with("http://") {
            Some(text.trim_end_matches('/').to_owned())
        } else {
            reader.problem(
                at.span(),
                format!("`link`: `{text}` is not an http(s) address"),
            );
            None
        }
    });
    Some(NotifySettings {
        name: name?,
        format: format?,
        url_env: url_env?,
        secret_env,
        root_certificate,
        link,
    })
}
