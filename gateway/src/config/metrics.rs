//! `[metrics]`: what the gateway counts, served for Prometheus at `/metrics`.

use super::read::{Reader, Value};

/// The metrics endpoint (`[metrics]`): `GET /metrics` in the OpenMetrics text format, on
/// the console's listener when there is a console, else on the HTTP listener of
/// `serve --http`. Without `token_env` it answers loopback addresses only; with it, any
/// address that sends `Authorization: Bearer <token>`.
///
/// ```
/// # use cairnloop_gateway::config::Config;
/// let config = Config::parse("[metrics]\ntoken_env = \"METRICS_TOKEN\"\n")?;
/// assert_eq!(config.metrics.unwrap().token_env.as_deref(), Some("METRICS_TOKEN"));
/// let config = Config::parse("[metrics]\n")?;
/// assert_eq!(config.metrics.unwrap().token_env, None); // loopback only
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetricsSettings {
    /// The variable holding the scrape token; `None`: loopback clients only, no token.
    pub token_env: Option<String>,
}

/// Reads `[metrics]`.
pub(super) fn read_metrics<'s>(
    reader: &mut Reader<'s>,
    value: &Value<'s>,
) -> Option<MetricsSettings> {
    let table = reader.table(value, "[metrics]")?;
    reader.only(table, "[metrics]", &["token_env"]);
    let mut settings = MetricsSettings::default();
    if let Some(at) = table.get("token_env")
        && let Some(name) = reader.string(at, "`token_env`")
    {
        if super::is_variable_name(&name) {
            settings.token_env = Some(name);
        } else {
            reader.problem(
                at.span(),
                format!("`token_env`: `{name}` is not a variable name; the token itself never goes in the file"),
            );
        }
    }
    Some(settings)
}
