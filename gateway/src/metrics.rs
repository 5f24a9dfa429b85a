//! What a serving gateway counts, for Prometheus: `GET /metrics` in the OpenMetrics text
//! format. Every label value comes from the configuration (a tool's listed name, an
//! upstream's id) or from a fixed set of words (an outcome, a state, a reason): never
//! from a call's arguments or a caller's id, so the number of series stays bounded
//! whatever a model sends.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairnloop::Governor;
use cairnloop::approvals::{
    ApprovalStore, AuditRecord, AuditSink, LaneQuery, OutboxPass, TransitionEvent,
};
use cairnloop::gate::LaneState;
use cairnloop::mcp::WaitingCalls;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::config::Config;
use crate::upstream::Upstream;

/// A series' labels: names fixed here, values from the configuration or a fixed set.
type Labels = Vec<(&'static str, String)>;

/// The label value of a tool the configuration does not name (one an upstream offers
/// through its `default_tier`, or a name no tool has).
pub const OTHER_TOOL: &str = "(other)";

/// The most lanes of one state counted at a scrape.
const COUNT_CAP: usize = 1_000_000;

/// The gateway's metrics: counted from the audit records its governor writes (a tap that
/// changes nothing about where they go), from its outbox's passes, and read from its
/// upstreams, its waiting calls and its store when scraped.
///
/// ```
/// # use cairnloop_gateway::config::Config;
/// use cairnloop_gateway::metrics::Metrics;
///
/// let config = Config::parse(
///     "[upstreams.fs]\ncommand = \"node\"\n[tools.fs.write_file]\ntier = \"low_write\"\n",
/// )?;
/// let metrics = Metrics::new(&config);
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
pub struct Metrics {
    registry: Mutex<Registry>,
    /// The tools' listed names, the only tool label values.
    tools: HashSet<String>,
    decisions: Family<Labels, Counter>,
    moves: Family<Labels, Counter>,
    to_decision: Family<Labels, Histogram>,
    to_run: Family<Labels, Histogram>,
    refusals: Family<Labels, Counter>,
    notices: Family<Labels, Counter>,
    lanes: Family<Labels, Gauge>,
    waiting: Family<Labels, Gauge>,
    upstream: Family<Labels, Counter>,
    upstreams: Mutex<Vec<(String, Arc<Upstream>)>>,
}

impl core::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Metrics")
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

fn seconds() -> Histogram {
    // 0.5 s to about 4.5 h: a person's decision takes seconds to hours.
    Histogram::new(exponential_buckets(0.5, 2.0, 16))
}

impl Metrics {
    /// The metrics of a gateway serving `config`, every series at zero.
    ///
    /// ```
    /// # use cairnloop_gateway::{config::Config, metrics::Metrics};
    /// let metrics = Metrics::new(&Config::parse("")?);
    /// assert!(metrics.encode_now(&[]).ends_with("# EOF\n"));
    /// # Ok::<(), cairnloop_gateway::config::Problems>(())
    /// ```
    #[must_use]
    pub fn new(config: &Config) -> Self {
        let metrics = Self {
            registry: Mutex::new(Registry::default()),
            tools: config
                .tools
                .iter()
                .map(|tool| tool.listed.clone())
                .collect(),
            decisions: Family::default(),
            moves: Family::default(),
            to_decision: Family::new_with_constructor(seconds),
            to_run: Family::new_with_constructor(seconds),
            refusals: Family::default(),
            notices: Family::default(),
            lanes: Family::default(),
            waiting: Family::default(),
            upstream: Family::default(),
            upstreams: Mutex::new(Vec::new()),
        };
        {
            let mut registry = metrics.registry.lock().unwrap_or_else(|e| e.into_inner());
            let counters = [
                (
                    "cairnloop_decisions",
                    "Calls decided by the gates, by tool and outcome",
                    &metrics.decisions,
                ),
                (
                    "cairnloop_lane_moves",
                    "Moves of approval lanes, by tool and the state moved to",
                    &metrics.moves,
                ),
                (
                    "cairnloop_refusals",
                    "Decisions asked for at a human surface and refused, by surface and reason",
                    &metrics.refusals,
                ),
                (
                    "cairnloop_notices",
                    "Notices of waiting calls, by outcome (delivered, retried, given_up)",
                    &metrics.notices,
                ),
                (
                    "cairnloop_upstream_events",
                    "Upstream starts, failed starts, calls, failed calls and timeouts, by upstream",
                    &metrics.upstream,
                ),
            ];
            for (name, help, family) in counters {
                registry.register(name, help, family.clone());
            }
            let histograms = [
                (
                    "cairnloop_time_to_decision_seconds",
                    "From a call's proposal to a person's approval or rejection",
                    &metrics.to_decision,
                ),
                (
                    "cairnloop_time_to_run_seconds",
                    "From a call's proposal to the end of its run",
                    &metrics.to_run,
                ),
            ];
            for (name, help, family) in histograms {
                registry.register(name, help, family.clone());
            }
            let gauges = [
                (
                    "cairnloop_lanes",
                    "Approval lanes in the store, by state",
                    &metrics.lanes,
                ),
                (
                    "cairnloop_waiting_calls",
                    "Calls waiting for a person in this process: held open, or followed by a task",
                    &metrics.waiting,
                ),
            ];
            for (name, help, family) in gauges {
                registry.register(name, help, family.clone());
            }
        }
        metrics
    }

    /// Follows these upstreams (by id) at each scrape.
    pub(crate) fn follow_upstreams(&self, upstreams: Vec<(String, Arc<Upstream>)>) {
        *self.upstreams.lock().unwrap_or_else(|e| e.into_inner()) = upstreams;
    }

    /// Counts what one pass of the outbox did.
    ///
    /// ```
    /// # use cairnloop_gateway::{config::Config, metrics::Metrics};
    /// let metrics = Metrics::new(&Config::parse("")?);
    /// metrics.outbox_pass(&cairnloop::approvals::OutboxPass::default());
    /// # Ok::<(), cairnloop_gateway::config::Problems>(())
    /// ```
    pub fn outbox_pass(&self, pass: &OutboxPass) {
        for (outcome, count) in [
            ("delivered", pass.delivered),
            ("retried", pass.retried),
            ("given_up", pass.given_up),
        ] {
            let labels = vec![("outcome", outcome.to_string())];
            self.notices.get_or_create(&labels).inc_by(count as u64);
        }
    }

    /// A tool's label value: its listed name when the configuration names it.
    fn tool(&self, name: &str) -> String {
        if self.tools.contains(name) {
            name.to_string()
        } else {
            OTHER_TOOL.to_string()
        }
    }

    fn transition(&self, event: &TransitionEvent) {
        let tool = self.tool(&event.tool);
        let labels = vec![
            ("tool", tool.clone()),
            ("to", event.to.as_str().to_string()),
        ];
        self.moves.get_or_create(&labels).inc();
        let Some(proposed) = event.proposed_at else {
            return;
        };
        let took = event
            .at
            .unix_millis()
            .saturating_sub(proposed.unix_millis()) as f64
            / 1_000.0;
        let labels = vec![("tool", tool)];
        match (event.from, event.to) {
            (Some(LaneState::Pending), LaneState::Approved | LaneState::Rejected) => {
                self.to_decision.get_or_create(&labels).observe(took);
            }
            (_, LaneState::Executed | LaneState::ExecutionFailed | LaneState::OutcomeUnknown) => {
                self.to_run.get_or_create(&labels).observe(took);
            }
            _ => {}
        }
    }

    /// The text of every series as it is now, with `upstreams`' counts and the calls
    /// waiting in this process (the store's lanes are read by [`Metrics::scrape`]).
    ///
    /// ```
    /// # use cairnloop_gateway::{config::Config, metrics::Metrics};
    /// let metrics = Metrics::new(&Config::parse("")?);
    /// assert!(metrics.encode_now(&[]).contains("cairnloop_waiting_calls"));
    /// # Ok::<(), cairnloop_gateway::config::Problems>(())
    /// ```
    #[must_use]
    pub fn encode_now(&self, lanes: &[(LaneState, usize)]) -> String {
        for (state, count) in lanes {
            let labels = vec![("state", state.as_str().to_string())];
            self.lanes
                .get_or_create(&labels)
                .set(i64::try_from(*count).unwrap_or(i64::MAX));
        }
        let waiting = WaitingCalls::now();
        for (kind, count) in [
            ("held", waiting.held_calls()),
            ("task", waiting.task_runners()),
        ] {
            let labels = vec![("kind", kind.to_string())];
            self.waiting
                .get_or_create(&labels)
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        let upstreams = self
            .upstreams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for (id, upstream) in upstreams {
            let counts = upstream.counts();
            for (event, count) in [
                ("start", counts.starts),
                ("start_failure", counts.start_failures),
                ("call", counts.calls),
                ("call_failure", counts.call_failures),
                ("timeout", counts.timeouts),
            ] {
                let labels = vec![("upstream", id.clone()), ("event", event.to_string())];
                let counter = self.upstream.get_or_create(&labels);
                counter
                    .inner()
                    .store(count, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let mut text = String::new();
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &registry);
        text
    }

    /// Every series as it is now, the store's lanes counted by state.
    ///
    /// # Errors
    ///
    /// The store's error, when a count cannot be read.
    pub async fn scrape<S: ApprovalStore + Send + Sync + 'static>(
        &self,
        governor: &Governor<(), S>,
    ) -> Result<String, cairnloop::ApprovalError> {
        let mut lanes = Vec::with_capacity(LaneState::ALL.len());
        for state in LaneState::ALL {
            let count = governor
                .count_lanes(&LaneQuery::new(state), COUNT_CAP)
                .await?;
            lanes.push((state, count));
        }
        Ok(self.encode_now(&lanes))
    }
}

impl AuditSink for Metrics {
    fn record(&self, record: &AuditRecord) {
        match record {
            AuditRecord::Decision(event) => {
                let labels = vec![
                    ("tool", self.tool(&event.tool)),
                    ("outcome", outcome_word(&event.decision).to_string()),
                ];
                self.decisions.get_or_create(&labels).inc();
            }
            AuditRecord::Transition(event) => self.transition(event),
            AuditRecord::Refusal(event) => {
                let labels = vec![
                    ("surface", bounded_word(&event.surface).to_string()),
                    ("reason", bounded_word(&event.reason).to_string()),
                ];
                self.refusals.get_or_create(&labels).inc();
            }
            _ => {}
        }
    }
}

/// A decision's outcome as a label: one of the gates' words.
fn outcome_word(decision: &str) -> &str {
    match decision {
        "execute" | "await_approval" | "blocked" | "proposal_failed" => decision,
        _ => "other",
    }
}

/// A word of the crate's own (a surface, a reason): letters and `_`, at most 32 of them;
/// anything else is counted as `other`.
fn bounded_word(word: &str) -> &str {
    let plain = !word.is_empty()
        && word.len() <= 32
        && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    if plain { word } else { "other" }
}

/// Whom `/metrics` answers: with a token, any client that sends it; without one, clients
/// on this machine only.
#[derive(Clone)]
pub struct MetricsAccess {
    token: Option<Arc<str>>,
}

impl MetricsAccess {
    /// Clients that send `Authorization: Bearer {token}`, or, with `None`, loopback
    /// clients only.
    ///
    /// ```
    /// use cairnloop_gateway::metrics::MetricsAccess;
    /// let loopback_only = MetricsAccess::new(None);
    /// let with_token = MetricsAccess::new(Some("a long random token".into()));
    /// ```
    #[must_use]
    pub fn new(token: Option<String>) -> Self {
        Self {
            token: token.map(Arc::from),
        }
    }

    fn admits(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Result<(), Unadmitted> {
        match &self.token {
            Some(token) => {
                let given = (headers.get(header::AUTHORIZATION))
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.strip_prefix("Bearer "))
                    .unwrap_or("");
                if constant_time_eq(given.as_bytes(), token.as_bytes()) {
                    Ok(())
                } else {
                    Err(Unadmitted::NoToken)
                }
            }
            None if peer.is_some_and(|peer| peer.ip().is_loopback()) => Ok(()),
            None => Err(Unadmitted::NotHere),
        }
    }
}

/// Why a scrape is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unadmitted {
    /// The token is missing or not the one configured.
    NoToken,
    /// Loopback only, and the client is elsewhere.
    NotHere,
}

impl Unadmitted {
    fn status(self) -> StatusCode {
        match self {
            Self::NoToken => StatusCode::UNAUTHORIZED,
            Self::NotHere => StatusCode::FORBIDDEN,
        }
    }
}

impl IntoResponse for Unadmitted {
    fn into_response(self) -> Response {
        match self {
            Self::NoToken => (
                self.status(),
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a metrics token is needed: Authorization: Bearer <token>\n",
            )
                .into_response(),
            Self::NotHere => (
                self.status(),
                "metrics are served to this machine only (set [metrics] token_env to serve others)\n",
            )
                .into_response(),
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `GET /metrics` over `governor`, for the clients `access` admits: to merge into the
/// console's or the HTTP listener's router (served with each client's address).
pub fn router<S: ApprovalStore + Send + Sync + 'static>(
    metrics: Arc<Metrics>,
    governor: Arc<Governor<(), S>>,
    access: MetricsAccess,
) -> axum::Router {
    axum::Router::new()
        .route("/metrics", axum::routing::get(scraped::<S>))
        .with_state((metrics, governor, access))
}

type Scraped<S> = (Arc<Metrics>, Arc<Governor<(), S>>, MetricsAccess);

async fn scraped<S: ApprovalStore + Send + Sync + 'static>(
    State((metrics, governor, access)): State<Scraped<S>>,
    request: axum::extract::Request,
) -> Response {
    // The client's address, when the listener is served with it (else: not loopback).
    let peer =
        (request.extensions().get::<ConnectInfo<SocketAddr>>()).map(|ConnectInfo(peer)| *peer);
    if let Err(refused) = access.admits(peer, request.headers()) {
        return refused.into_response();
    }
    match metrics.scrape(&governor).await {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(error) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the store cannot be read: {error}\n"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(address: &str) -> Option<SocketAddr> {
        Some(address.parse().unwrap())
    }

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        headers
    }

    fn status(admitted: Result<(), Unadmitted>) -> Option<StatusCode> {
        admitted.err().map(Unadmitted::status)
    }

    #[test]
    fn without_a_token_only_this_machine_reads_the_metrics() {
        let access = MetricsAccess::new(None);
        let none = HeaderMap::new();
        assert_eq!(status(access.admits(peer("127.0.0.1:40000"), &none)), None);
        assert_eq!(status(access.admits(peer("[::1]:40000"), &none)), None);
        for other in ["10.0.0.7:40000", "192.168.1.2:1", "[2001:db8::1]:80"] {
            assert_eq!(
                status(access.admits(peer(other), &none)),
                Some(StatusCode::FORBIDDEN),
                "{other}"
            );
        }
        // A listener that does not say who connected admits nobody.
        assert_eq!(
            status(access.admits(None, &none)),
            Some(StatusCode::FORBIDDEN)
        );
    }

    #[test]
    fn with_a_token_every_client_needs_it_loopback_too() {
        let access = MetricsAccess::new(Some("scrape-token-0123".into()));
        let here = peer("127.0.0.1:40000");
        let unauthorized = Some(StatusCode::UNAUTHORIZED);
        assert_eq!(status(access.admits(here, &HeaderMap::new())), unauthorized);
        assert_eq!(
            status(access.admits(here, &bearer("scrape-token-0124"))),
            unauthorized
        );
        assert_eq!(
            status(access.admits(here, &bearer("scrape-token-012"))),
            unauthorized
        );
        assert_eq!(
            status(access.admits(peer("10.0.0.7:1"), &bearer("scrape-token-0123"))),
            None
        );
    }

    #[test]
    fn label_values_never_come_from_a_call() {
        let config = Config::parse(
            "[upstreams.fs]\ncommand = \"node\"\n[tools.fs.write_file]\ntier = \"low_write\"\n",
        )
        .unwrap();
        let metrics = Metrics::new(&config);
        assert_eq!(metrics.tool("fs_write_file"), "fs_write_file");
        assert_eq!(metrics.tool("fs_write_file; rm -rf /"), OTHER_TOOL);
        assert_eq!(outcome_word("execute"), "execute");
        assert_eq!(outcome_word("alice's secret"), "other");
        assert_eq!(bounded_word("under_tier"), "under_tier");
        assert_eq!(bounded_word("U024BE7LH"), "other");
    }
}
