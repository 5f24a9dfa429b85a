//! `[slack]`: decisions taken from the Approve and Reject buttons of Slack notices, on the
//! console's listener, as the console's operators.

use std::path::PathBuf;

use super::ConsoleSettings;
use super::read::{Reader, Value};

/// Decisions from Slack (`[slack]`): the app's signing secret from the environment, and
/// which Slack user is which console operator. Its clicks are taken at the console's
/// address, `POST /slack/actions` (the Slack app's Interactivity Request URL), so it
/// needs `[console]`, whose operators decide with their tier rights and accounts, whether
/// the gateway serves MCP over stdio or HTTP.
///
/// ```
/// # use cairnloop_gateway::config::Config;
/// let config = Config::parse(r#"
/// [console.operators.ops-lead]
/// token_env = "OPS_LEAD_TOKEN"
///
/// [slack]
/// signing_secret_env = "SLACK_SIGNING_SECRET"
/// users = { U024BE7LH = "ops-lead" }
/// "#)?;
/// let slack = config.slack.unwrap();
/// assert_eq!(slack.users, vec![("U024BE7LH".to_string(), "ops-lead".to_string())]);
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlackSettings {
    /// The variable holding the Slack app's signing secret.
    pub signing_secret_env: String,
    /// Each Slack user id with the console operator it decides as, in the order of the
    /// file.
    pub users: Vec<(String, String)>,
    /// A private root certificate (PEM) that the answers posted to a click's
    /// `response_url` must chain to, in place of the public web roots.
    pub root_certificate: Option<PathBuf>,
}

/// Reads `[slack]`, checking its users against the console's operators.
pub(super) fn read_slack<'s>(
    reader: &mut Reader<'s>,
    value: &Value<'s>,
    console: Option<&ConsoleSettings>,
) -> Option<SlackSettings> {
    let table = reader.table(value, "[slack]")?;
    reader.only(
        table,
        "[slack]",
        &["signing_secret_env", "users", "root_certificate"],
    );
    let Some(console) = console else {
        reader.problem(
            value.span(),
            "[slack] needs [console]: its operators decide, and its listener takes Slack's clicks",
        );
        return None;
    };
    let secret = match table.get("signing_secret_env") {
        Some(at) => reader.string(at, "`signing_secret_env`").and_then(|name| {
            if super::is_variable_name(&name) {
                Some(name)
            } else {
                reader.problem(
                    at.span(),
                    format!("`signing_secret_env`: `{name}` is not a variable name; the secret itself never goes in the file"),
                );
                None
            }
        }),
        None => {
            reader.problem(
                value.span(),
                "[slack] needs `signing_secret_env`, the variable holding the app's signing secret",
            );
            None
        }
    };
    let mut users = Vec::new();
    match table.get("users") {
        Some(at) => {
            if let Some(mapped) = reader.table(at, "`users`") {
                for (user, operator) in mapped.iter() {
                    let Some(operator) = reader.string(operator, "a user's operator") else {
                        continue;
                    };
                    let user = user.get_ref().to_string();
                    if !user.bytes().all(|b| b.is_ascii_alphanumeric()) || user.is_empty() {
                        reader.problem(
                            at.span(),
                            format!("`users`: `{user}` is not a Slack user id (such as U024BE7LH)"),
                        );
                    } else if !console.operators.iter().any(|known| known.id == operator) {
                        reader.problem(
                            at.span(),
                            format!("`users`: `{user}` is mapped to `{operator}`, who is not an operator of [console]"),
                        );
                    } else {
                        users.push((user, operator));
                    }
                }
            }
        }
        None => reader.problem(
            value.span(),
            "[slack] needs `users`: each Slack user id with the console operator it decides as",
        ),
    }
    let root_certificate = table
        .get("root_certificate")
        .and_then(|at| reader.string(at, "`root_certificate`"))
        .map(PathBuf::from);
    Some(SlackSettings {
        signing_secret_env: secret?,
        users,
        root_certificate,
    })
}
