//! A gateway assembled from its configuration: each upstream started and listed, what it
//! offers declared to the crate, and one governor over them with its store (a SQLite file,
//! or a PostgreSQL database that replicas share). An
//! upstream that does not start or list is tried again in the background; its
//! configured tools are withheld until it lists them.

use std::sync::Arc;

use cairnloop::approvals::{ApprovalConfig, ApprovalStore};
use cairnloop::declared::DeclaredTool;
use cairnloop::gate::Ttl;
use cairnloop::{Actor, Governance, Governor, ModePolicy, PolicyDenial, Registry, ToolEntry};

use crate::catalogue::{
    Hidden, Offer, Offered, UpstreamTool, build, read_listing, unlisted, without_text,
};
use crate::config::{Config, NotifySettings, Transport};
use crate::metrics::Metrics;
use crate::upstream::{ToUpstream, Upstream, UpstreamError, restart_delay};

/// Why a gateway could not be assembled.
///
/// ```
/// use cairnloop_gateway::serve::StartError;
/// use cairnloop_gateway::upstream::UpstreamError;
///
/// let err = StartError::Upstream { id: "fs".into(), error: UpstreamError::Timeout };
/// assert_eq!(err.to_string(), "upstream `fs`: the upstream did not answer in time");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// An upstream cannot be reached as configured (its credential's variable holds no
    /// token).
    #[error("upstream `{id}`: {error}")]
    Upstream {
        /// The upstream's id.
        id: String,
        /// What went wrong.
        error: UpstreamError,
    },
    /// An offered tool could not be declared to the crate.
    #[error("tool `{tool}`: {error}")]
    Declare {
        /// The listed name.
        tool: String,
        /// Why.
        error: crate::catalogue::DeclareError,
    },
    /// The registry refused the tools (two names equal ignoring ASCII case).
    #[error("{0}")]
    Registry(cairnloop::SpecError),
    /// A `[[notify]]` receiver cannot be told as configured (its URL's or secret's
    /// variable is not set, its root certificate does not read). Never shows the URL or
    /// the secret.
    #[error("[[notify]] `{name}`: {why}")]
    Notify {
        /// The receiver's name.
        name: String,
        /// Why.
        why: String,
    },
}

/// A gateway ready to serve: its governor, and what each upstream hides.
pub struct Gateway<S: ApprovalStore + Send + Sync + 'static> {
    /// The governor over every offered tool.
    pub governor: Arc<Governor<(), S>>,
    /// What it counts, when `[metrics]` asks for it.
    pub metrics: Option<Arc<Metrics>>,
    /// What each upstream lists that is not offered, and why; and the configured tools
    /// withheld until their upstream lists them.
    pub hidden: Vec<(String, Hidden)>,
    /// The upstreams that did not start or list at start, and why: each is tried again
    /// in the background (waits of [`restart_delay`] between tries), and its configured
    /// tools are offered once it lists them.
    pub unstarted: Vec<(String, String)>,
    /// The running upstreams (they stop when the gateway is dropped).
    pub upstreams: Vec<Arc<Upstream>>,
    /// Moves on each time an upstream's changed listing changed what the gateway offers
    /// (a tool withdrawn, offered again, or with a new schema). An `McpServer` over the
    /// governor tells its sessions by itself (`notifications/tools/list_changed`).
    pub catalogue: tokio::sync::watch::Receiver<u64>,
}

/// A tool declared at start: as declared then, and the declared tool that is withdrawn or
/// offered again as its upstream's listing changes.
struct Kept {
    declaration: Offered,
    tool: &'static DeclaredTool<()>,
    /// Declared from the configuration alone: its upstream did not list it at start.
    late: bool,
}

impl<S: ApprovalStore + Send + Sync + 'static> Gateway<S> {
    /// Stops every upstream (their processes are killed).
    pub async fn shutdown(&self) {
        for upstream in &self.upstreams {
            upstream.shutdown().await;
        }
    }
}

/// Scopes are the gateway's access rule; beyond them, a configured tool is allowed.
fn configured(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
    Ok(())
}

/// Starts every upstream of `config`, declares what it offers, and makes the governor.
///
/// An upstream that does not start or list is left for later, not fatal: the others are
/// served, its configured tools are declared from the configuration and withheld
/// (hidden, blocked as unknown), and it is tried again in the background until it lists
/// them ([`Gateway::unstarted`] says which and why).
///
/// The tools live for the rest of the process (their entries borrow their text): a
/// gateway assembles its catalogue once, at start.
///
/// # Errors
///
/// [`StartError`]: an upstream reached by `url` whose `token_env` holds no token, or a
/// tool that cannot be declared.
pub async fn start<S: ApprovalStore + Send + Sync + 'static>(
    config: &Config,
    store: S,
) -> Result<Gateway<S>, StartError> {
    let mut entries: Vec<ToolEntry<()>> = Vec::new();
    let mut hidden = Vec::new();
    let mut unstarted = Vec::new();
    let mut upstreams = Vec::new();
    let mut watched = Vec::new();
    for declared in &config.upstreams {
        let upstream = upstream_of(declared)?;
        let (offer, later, listed_at_start) = match listed(&upstream).await {
            Ok((tools, set_aside)) => {
                let mentioned: Vec<&str> = (tools.iter().map(|tool| tool.name.as_str()))
                    .chain(set_aside.iter().filter_map(|aside| aside.name.as_deref()))
                    .collect();
                let later = unlisted(config, &declared.id, &mentioned);
                for aside in set_aside {
                    hidden.push((
                        declared.id.clone(),
                        Hidden::new(aside.name.unwrap_or_default(), aside.reason),
                    ));
                }
                (build(config, &declared.id, tools), later, true)
            }
            Err(not_read) => {
                let why = match not_read {
                    Unlisted::Stopped => UpstreamError::Stopped.to_string(),
                    Unlisted::Failed(why) => why,
                };
                unstarted.push((declared.id.clone(), why));
                (Offer::default(), unlisted(config, &declared.id, &[]), false)
            }
        };
        // Configured tools the upstream does not list yet are declared now, withdrawn,
        // and offered when it lists them: the registry is made once.
        let mut kept = Vec::new();
        let declarations = (offer.offered.iter().map(|offered| (offered, false)))
            .chain(later.offered.iter().map(|offered| (offered, true)));
        for (offered, late) in declarations {
            let tool = offered
                .declare::<()>(ToUpstream::new(Arc::clone(&upstream), &offered.tool))
                .map_err(|error| StartError::Declare {
                    tool: offered.listed.clone(),
                    error,
                })?;
            let tool: &'static _ = Box::leak(Box::new(tool));
            if late {
                tool.withdraw();
                let reason = if listed_at_start {
                    "configured, but not listed by the upstream: offered when it lists it"
                } else {
                    "configured; its upstream has not started: offered when it lists it"
                };
                hidden.push((
                    declared.id.clone(),
                    Hidden::new(offered.tool.clone(), reason.into()),
                ));
            }
            kept.push(Kept {
                declaration: offered.clone(),
                tool,
                late,
            });
            let entry =
                ToolEntry::declared(tool, configured).map_err(|error| StartError::Declare {
                    tool: offered.listed.clone(),
                    error: error.into(),
                })?;
            entries.push(entry);
        }
        hidden.extend(
            (offer.hidden.into_iter())
                .chain(later.hidden)
                .map(|h| (declared.id.clone(), h)),
        );
        watched.push((
            declared.id.clone(),
            Arc::clone(&upstream),
            kept,
            listed_at_start,
        ));
        upstreams.push(upstream);
    }
    let entries: &'static [ToolEntry<()>] = Box::leak(entries.into_boxed_slice());
    let registry: &'static Registry<()> = Box::leak(Box::new(
        Registry::try_new(entries).map_err(StartError::Registry)?,
    ));
    // The file's quorum per tier, read as 1 to 5 (what `with_quorum` takes).
    let policy = (config.gateway.quorum.iter()).fold(ModePolicy::new(), |policy, (tier, n)| {
        policy.with_quorum(*tier, *n)
    });
    let mut governor = Governor::new(registry)
        .with_store(store)
        .with_config(approval_config(config))
        .with_governance(Governance::new().with_mode_policy(policy));
    for notify in &config.notify {
        governor = governor.with_outbox(notify.name.clone(), notifier_of(config, notify)?);
    }
    // With [metrics], every audit record is counted as it is written (where it goes is
    // unchanged), and each upstream is read at a scrape.
    let metrics = config.metrics.as_ref().map(|_| {
        let metrics = Arc::new(Metrics::new(config));
        let ids = config.upstreams.iter().map(|declared| declared.id.clone());
        metrics.follow_upstreams(ids.zip(upstreams.iter().cloned()).collect());
        metrics
    });
    if let Some(metrics) = &metrics {
        governor = governor.with_audit_tap(Arc::clone(metrics));
    }
    let governor = Arc::new(governor);
    let (changed, catalogue) = tokio::sync::watch::channel(0u64);
    let changed = Arc::new(changed);
    for (id, upstream, kept, listed_at_start) in watched {
        let (config, changed) = (config.clone(), Arc::clone(&changed));
        tokio::spawn(follow(config, id, upstream, kept, listed_at_start, changed));
    }
    Ok(Gateway {
        governor,
        metrics,
        hidden,
        unstarted,
        upstreams,
        catalogue,
    })
}

/// The webhook that tells the `[[notify]]` receiver `notify`: its URL and secret read from
/// the environment now, its root certificate from its file. It tries once per notice: the
/// store's outbox retries.
fn notifier_of(
    config: &Config,
    notify: &NotifySettings,
) -> Result<cairnloop::notifiers::WebhookNotifier, StartError> {
    use cairnloop::notifiers::Webhook;
    let refused = |why: String| StartError::Notify {
        name: notify.name.clone(),
        why,
    };
    let variable = |name: &str| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.is_empty())
            .ok_or_else(|| refused(format!("${name} is not set")))
    };
    // The error names the variable, never the URL (Slack's and Teams' hold a token).
    let mut hook = Webhook::new(&variable(&notify.url_env)?)
        .map_err(|error| refused(format!("${}: {error}", notify.url_env)))?
        .format(notify.format)
        .attempts(1);
    if let Some(name) = &notify.secret_env {
        hook = hook.signed_with(variable(name)?.into_bytes());
    }
    // With [slack], Slack's messages carry the buttons that decide the call.
    if config.slack.is_some() {
        hook = hook.with_decisions();
    }
    if let Some(path) = &notify.root_certificate {
        let pem = std::fs::read(path)
            .map_err(|error| refused(format!("cannot read {}: {error}", path.display())))?;
        hook = hook
            .trusting(&pem)
            .map_err(|error| refused(format!("{}: {error}", path.display())))?;
    }
    let link = (notify.link.clone())
        .or_else(|| (config.console.as_ref()).map(|console| format!("http://{}", console.address)));
    if let Some(link) = link {
        hook = hook.console(&link);
    }
    hook.start().map_err(|error| refused(error.to_string()))
}

/// How long a claim to run an approved call outlives the longest call the gateway
/// forwards: the time to record the outcome after the upstream answers or times out.
pub const LEASE_MARGIN: std::time::Duration = std::time::Duration::from_secs(10);

/// The approvals of a gateway serving `config`: its calls wait `approval_ttl_secs`; a
/// claim to run one holds for the longest `call_timeout_secs` of its upstreams and
/// [`LEASE_MARGIN`], so that a replica that dies mid-run leaves a lane whose outcome is
/// unknown within that time, not five minutes later.
///
/// ```
/// # use cairnloop_gateway::{config::Config, serve::approval_config};
/// let config = Config::parse(
///     "[gateway]\napproval_ttl_secs = 600\n[upstreams.a]\ncommand = \"a\"\ncall_timeout_secs = 30\n",
/// )?;
/// let approvals = approval_config(&config);
/// assert_eq!(approvals.ttl().as_millis(), 600_000);
/// assert_eq!(approvals.lease().as_millis(), 40_000);
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[must_use]
pub fn approval_config(config: &Config) -> ApprovalConfig {
    let longest = (config.upstreams.iter())
        .map(|upstream| upstream.call_timeout)
        .max()
        .unwrap_or_default();
    let millis =
        |duration: std::time::Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    ApprovalConfig::new()
        .with_ttl(Ttl::from_millis(millis(config.gateway.approval_ttl)))
        .with_lease(Ttl::from_millis(millis(longest + LEASE_MARGIN)))
}

/// Keeps upstream `id`'s tools in line with its listing for as long as the gateway
/// runs: first, if it did not list at start, tries it again with growing waits until it
/// does; then reads its listing again each time it says it changed (or restarts).
/// `changed` moves on when what the gateway offers changed.
async fn follow(
    config: Config,
    id: String,
    upstream: Arc<Upstream>,
    kept: Vec<Kept>,
    listed_at_start: bool,
    changed: Arc<tokio::sync::watch::Sender<u64>>,
) {
    let apply = |tools: Vec<UpstreamTool>| {
        if reconcile(&config, &id, tools, &kept) {
            changed.send_modify(|count| *count += 1);
        }
    };
    if !listed_at_start {
        let mut failures = 1;
        loop {
            tokio::time::sleep(restart_delay(failures)).await;
            match listed(&upstream).await {
                Ok((tools, _)) => {
                    let by_default = config
                        .upstreams
                        .iter()
                        .any(|upstream| upstream.id == id && upstream.default_tier.is_some());
                    // The registry was made at start: only the tools declared then can be
                    // offered now.
                    let note = if by_default {
                        "; its configured tools are offered, the ones its `default_tier` \
                         would take in only after a restart"
                    } else {
                        "; its configured tools are offered"
                    };
                    eprintln!("cairnloop-gateway: {id}: started{note}");
                    apply(tools);
                    break;
                }
                Err(Unlisted::Stopped) => return,
                Err(Unlisted::Failed(why)) => {
                    failures = failures.saturating_add(1);
                    eprintln!(
                        "cairnloop-gateway: {id}: not started: {why}; tried again in {} ms",
                        restart_delay(failures).as_millis()
                    );
                }
            }
        }
    }
    loop {
        upstream.listing_changed().await;
        match listed(&upstream).await {
            Ok((tools, _)) => apply(tools),
            Err(Unlisted::Stopped) => return,
            Err(Unlisted::Failed(why)) => {
                eprintln!("cairnloop-gateway: {id}: its listing changed but cannot be read: {why}")
            }
        }
    }
}

/// The upstream `declared` describes, not started yet: its environment made (a
/// `pass_env` name the gateway lacks is said, and left out), its credential read.
fn upstream_of(declared: &crate::config::Upstream) -> Result<Arc<Upstream>, StartError> {
    Ok(match &declared.transport {
        Transport::Stdio {
            command,
            args,
            env,
            pass_env,
        } => {
            // Handed on by name from the gateway's environment, then the file's own
            // values. A name the gateway does not have is left out, and said: an
            // upstream missing its credential fails later, and less clearly.
            let mut handed = Vec::with_capacity(pass_env.len() + env.len());
            for name in pass_env {
                match std::env::var(name) {
                    Ok(value) => handed.push((name.clone(), value)),
                    Err(_) => eprintln!(
                        "cairnloop-gateway: {}: `pass_env` names {name}, which the \
                         gateway's environment does not hold (or not as text): the \
                         upstream starts without it",
                        declared.id
                    ),
                }
            }
            handed.extend(env.iter().cloned());
            Upstream::command(command, args, &handed, declared.call_timeout)
        }
        Transport::Http { url, token_env } => {
            let token = match token_env {
                Some(name) => match std::env::var(name) {
                    Ok(token) if !token.is_empty() => Some(token),
                    _ => {
                        return Err(StartError::Upstream {
                            id: declared.id.clone(),
                            error: UpstreamError::Start(format!(
                                "the environment variable {name} holds no token"
                            )),
                        });
                    }
                },
                None => None,
            };
            Upstream::url(url, token, declared.call_timeout)
        }
    })
}

/// The upstream's listing, read: its tools, and what was set aside.
async fn listed(
    upstream: &Upstream,
) -> Result<(Vec<UpstreamTool>, Vec<crate::catalogue::SetAside>), Unlisted> {
    let listing = upstream.listing().await.map_err(|error| match error {
        UpstreamError::Stopped => Unlisted::Stopped,
        other => Unlisted::Failed(other.to_string()),
    })?;
    read_listing(&listing).map_err(|error| Unlisted::Failed(error.to_string()))
}

/// Why an upstream's listing was not read.
enum Unlisted {
    /// The gateway is stopping: nothing more is tried.
    Stopped,
    /// Why, for a person.
    Failed(String),
}

/// Brings upstream `id`'s tools in line with the listing that gave `tools`: a tool it
/// offers as it was declared at start is offered with the schema it lists now; one it
/// no longer lists, hides, or lists with another declaration (tier, mode, scopes,
/// title: what the approval binds or a person reads) is withdrawn, hidden and blocked.
/// A configured tool it did not list at start is compared with its listing without the
/// upstream's own text (it was declared with the configuration's). Tools the
/// configuration does not name stay hidden: the catalogue is the configuration's.
/// Whether anything changed.
fn reconcile(config: &Config, id: &str, tools: Vec<UpstreamTool>, kept: &[Kept]) -> bool {
    // Only tools declared late are compared without the upstream's text.
    let plain = if kept.iter().any(|kept| kept.late) {
        build(config, id, without_text(tools.clone()))
    } else {
        Offer::default()
    };
    let offer = build(config, id, tools);
    let mut changed = false;
    for Kept {
        declaration,
        tool,
        late,
    } in kept
    {
        let now = (if *late { &plain } else { &offer })
            .offered
            .iter()
            .find(|offered| offered.tool == declaration.tool);
        let was = (tool.is_offered(), tool.input_schema());
        match now {
            Some(now) if now.same_declaration(declaration) => {
                if let Err(error) = tool.offer(now.input_schema.clone()) {
                    eprintln!("cairnloop-gateway: {id}/{}: withdrawn: {error}", now.tool);
                    tool.withdraw();
                }
            }
            Some(_) => {
                eprintln!(
                    "cairnloop-gateway: {id}/{}: withdrawn: its upstream declares it otherwise \
                     now; it is offered again after a restart",
                    declaration.tool
                );
                tool.withdraw();
            }
            None => tool.withdraw(),
        }
        changed |= was != (tool.is_offered(), tool.input_schema());
    }
    changed
}
