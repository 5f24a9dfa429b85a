//! A gateway assembled from its configuration: each upstream started and listed, what it
//! offers declared to the crate, and one governor over them with a SQLite store.

use std::sync::Arc;

use cairnloop::json::DeclaredTool;
use cairnloop::stores::SqliteStore;
use cairnloop::{Actor, Governor, PolicyDenial, Registry, ToolEntry};

use crate::catalogue::{Hidden, Offered, build, read_listing, unlisted, without_text};
use crate::config::{Config, Transport};
use crate::upstream::{ToUpstream, Upstream, UpstreamError};

/// Why a gateway could not be assembled.
///
/// ```
/// use cairnloop_gateway::serve::StartError;
///
/// let err = StartError::Listing("fs".into());
/// assert_eq!(err.to_string(), "upstream `fs`: its tools/list answer has no `tools` array");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// An upstream could not be started or listed.
    #[error("upstream `{id}`: {error}")]
    Upstream {
        /// The upstream's id.
        id: String,
        /// What went wrong.
        error: UpstreamError,
    },
    /// Its `tools/list` answer could not be read.
    #[error("upstream `{0}`: its tools/list answer has no `tools` array")]
    Listing(String),
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
}

/// A gateway ready to serve: its governor, and what each upstream hides.
pub struct Gateway {
    /// The governor over every offered tool.
    pub governor: Arc<Governor<(), SqliteStore>>,
    /// What each upstream lists that is not offered, and why.
    pub hidden: Vec<(String, Hidden)>,
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

impl Gateway {
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
/// The tools live for the rest of the process (their entries borrow their text): a
/// gateway assembles its catalogue once, at start.
///
/// # Errors
///
/// [`StartError`]: an upstream that does not start, list or declare (one reached by
/// `url` whose `token_env` holds no token).
pub async fn start(config: &Config, store: SqliteStore) -> Result<Gateway, StartError> {
    let mut entries: Vec<ToolEntry<()>> = Vec::new();
    let mut hidden = Vec::new();
    let mut upstreams = Vec::new();
    let mut watched = Vec::new();
    for declared in &config.upstreams {
        let upstream = match &declared.transport {
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
                let env = handed;
                Upstream::start(command, args, &env, declared.call_timeout).await
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
                Upstream::connect(url, token, declared.call_timeout).await
            }
        }
        .map_err(|error| StartError::Upstream {
            id: declared.id.clone(),
            error,
        })?;
        let listing = upstream
            .listing()
            .await
            .map_err(|error| StartError::Upstream {
                id: declared.id.clone(),
                error,
            })?;
        let (tools, set_aside) =
            read_listing(&listing).map_err(|_| StartError::Listing(declared.id.clone()))?;
        let mentioned: Vec<String> = tools
            .iter()
            .map(|tool| tool.name.clone())
            .chain(set_aside.iter().filter_map(|aside| aside.name.clone()))
            .collect();
        for aside in set_aside {
            hidden.push((
                declared.id.clone(),
                Hidden::new(aside.name.unwrap_or_default(), aside.reason),
            ));
        }
        let offer = build(config, &declared.id, tools);
        // Configured tools the upstream does not list yet are declared now, withdrawn,
        // and offered when it lists them: the registry is made once.
        let mentioned: Vec<&str> = mentioned.iter().map(String::as_str).collect();
        let later = unlisted(config, &declared.id, &mentioned);
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
                hidden.push((
                    declared.id.clone(),
                    Hidden::new(
                        offered.tool.clone(),
                        "configured, but not listed by the upstream: offered when it lists it"
                            .into(),
                    ),
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
        watched.push((declared.id.clone(), Arc::clone(&upstream), kept));
        upstreams.push(upstream);
    }
    let entries: &'static [ToolEntry<()>] = Box::leak(entries.into_boxed_slice());
    let registry: &'static Registry<()> = Box::leak(Box::new(
        Registry::try_new(entries).map_err(StartError::Registry)?,
    ));
    let governor = Arc::new(Governor::new(registry).with_store(store));
    let (changed, catalogue) = tokio::sync::watch::channel(0u64);
    let changed = Arc::new(changed);
    for (id, upstream, kept) in watched {
        let (config, changed) = (config.clone(), Arc::clone(&changed));
        tokio::spawn(async move {
            loop {
                upstream.listing_changed().await;
                if refresh(&config, &id, &upstream, &kept).await {
                    changed.send_modify(|count| *count += 1);
                }
            }
        });
    }
    Ok(Gateway {
        governor,
        hidden,
        upstreams,
        catalogue,
    })
}

/// Reads upstream `id`'s listing again and brings its tools in line with it: a tool it
/// offers as it was declared at start is offered with the schema it lists now; one it
/// no longer lists, hides, or lists with another declaration (tier, mode, scopes,
/// title: what the approval binds or a person reads) is withdrawn, hidden and blocked.
/// A configured tool it did not list at start is compared with its listing without the
/// upstream's own text (it was declared with the configuration's). Tools the
/// configuration does not name stay hidden: the catalogue is the configuration's.
/// Whether anything changed.
async fn refresh(config: &Config, id: &str, upstream: &Upstream, kept: &[Kept]) -> bool {
    let offer = match upstream.listing().await {
        Ok(listing) => read_listing(&listing).map(|(tools, _)| {
            let plain = build(config, id, without_text(tools.clone()));
            (build(config, id, tools), plain)
        }),
        Err(error) => {
            eprintln!("cairnloop-gateway: {id}: its listing changed but cannot be read: {error}");
            return false;
        }
    };
    let Ok((offer, plain)) = offer else {
        eprintln!("cairnloop-gateway: {id}: its new listing has no `tools` array");
        return false;
    };
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
