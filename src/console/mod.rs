//! The approval console (feature `console`): a web page where operators sign in, see
//! what agents propose, and decide it.
//!
//! [`Console`] is an [axum](https://docs.rs/axum) router over a shared [`Governor`]:
//! mount it in the host's server, or [`Console::serve`] it alone. Every decision goes
//! through the governor, so four eyes, expiry, the binding and re-validation hold exactly
//! as they do in code; the pages only show and ask.
//!
//! - **Queue** (`/queue`): pending proposals, newest first, filtered by tool, tier and
//!   actor, 25 a page, refreshed every few seconds by a small script (the decisions
//!   themselves need no script).
//! - **Proposal** (`/proposals/{key}`): the preview, the arguments as a read-only form made
//!   from the tool's input schema (or the host's renderer named by the tool's
//!   [`custom_ui`](crate::Tool::custom_ui)), the required scopes, what the approval binds,
//!   the lane's history, and the approve, reject and defer forms.
//! - **Reconcile** (`/reconcile`): lanes whose run was interrupted or whose outcome is
//!   unknown, each marked executed, failed or closed with a note.
//! - **Audit** (`/audit`, `/audit.jsonl`): the event log, filtered and paged, and exported
//!   as JSON lines.
//!
//! Security: operators sign in with an Argon2 password hash or a token (or a trusted
//! proxy header, when the host says so); the session cookie is `HttpOnly` and
//! `SameSite=Strict`; every form carries a single-use token; everything from a model is
//! escaped and the Content-Security-Policy allows no inline script; an operator sees only
//! their accounts; sign-in attempts are limited; the default address is 127.0.0.1.
//!
//! ```no_run
//! use std::sync::Arc;
//! use cairnloop::{Governor, Registry};
//! use cairnloop::console::{Accounts, Console, ConsoleConfig, Credential, Operator};
//!
//! static TOOLS: Registry<()> = Registry::new(&[]);
//!
//! # async fn serve() -> Result<(), cairnloop::console::ConsoleError> {
//! let governor = Arc::new(Governor::new(&TOOLS));
//! let config = ConsoleConfig::new().with_operator(Operator::new(
//!     "ops-lead",
//!     Credential::PasswordHash(Credential::hash_password("a long passphrase")?),
//!     Accounts::All,
//! ));
//! Console::new(governor, config).serve().await
//! # }
//! ```

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

mod config;
mod events;
mod handlers;
mod html;
mod pages;
mod sanitize;
mod session;
#[cfg(feature = "slack")]
mod slack;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;

use crate::approvals::{ApprovalLane, ApprovalStore, Governor};

pub use config::{Accounts, ConsoleConfig, ConsoleError, Credential, Operator, TokenDigest};
#[cfg(feature = "slack")]
pub use slack::SlackDecisions;

/// What a host's renderer gives for a tool's custom view: escaped text or fields (the
/// default choice), or markup cut down to a safe allow-list.
///
/// ```
/// use cairnloop::console::Rendered;
/// let view = Rendered::Text("Refund 12.50 EUR on order 1001".into());
/// let card = Rendered::Fields(vec![("Amount".into(), "12.50 EUR".into())]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rendered {
    /// Text, escaped like everything else (the default choice).
    Text(String),
    /// Label and value pairs, shown as a list, every one escaped: structure without
    /// markup.
    Fields(Vec<(String, String)>),
    /// Markup, cut down to an allow-list before it is shown: text formatting, lists,
    /// tables, definition lists, `class` and `title` attributes. Nothing that links,
    /// loads, runs or navigates survives (`a`, `img`, `meta`, `form`, `script`, `style`,
    /// event attributes, …), so a view cannot take the operator anywhere.
    Html(String),
}

type Renderer = dyn Fn(&ApprovalLane) -> Rendered + Send + Sync;

/// The approval console over a governor.
///
/// ```
/// use std::sync::Arc;
/// use cairnloop::{Governor, Registry};
/// use cairnloop::console::{Console, ConsoleConfig, Rendered};
///
/// static TOOLS: Registry<()> = Registry::new(&[]);
/// let console = Console::new(Arc::new(Governor::new(&TOOLS)), ConsoleConfig::new())
///     .with_renderer("refund-card", |lane| Rendered::Text(lane.proposal().title().to_string()));
/// let router: axum::Router = console.router();
/// ```
pub struct Console<C: ?Sized + 'static, S> {
    inner: Inner<C, S>,
}

struct Inner<C: ?Sized + 'static, S> {
    governor: Arc<Governor<C, S>>,
    config: ConsoleConfig,
    sessions: session::Sessions,
    limiter: session::LoginLimiter,
    renderers: HashMap<String, Box<Renderer>>,
    streams: events::StreamCount,
    /// The context a changed call is gated with, when operators may approve with changes.
    edits: Option<Arc<C>>,
    #[cfg(feature = "slack")]
    slack: Option<SlackDecisions>,
}

impl<C, S> Console<C, S>
where
    C: ?Sized + Send + Sync + 'static,
    S: ApprovalStore + Send + Sync + 'static,
{
    /// A console over `governor`, with `config`'s operators.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::console::{Console, ConsoleConfig};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let console = Console::new(Arc::new(Governor::new(&TOOLS)), ConsoleConfig::new());
    /// ```
    pub fn new(governor: Arc<Governor<C, S>>, config: ConsoleConfig) -> Self {
        Self {
            inner: Inner {
                governor,
                config,
                sessions: session::Sessions::default(),
                limiter: session::LoginLimiter::default(),
                renderers: HashMap::new(),
                streams: events::StreamCount::default(),
                edits: None,
                #[cfg(feature = "slack")]
                slack: None,
            },
        }
    }

    /// Lets operators approve a pending call with changed arguments
    /// ([`Governor::approve_with_changes`]): the proposal's page offers its arguments as
    /// JSON to change. The changed call is gated as the proposer's with `context`, needs
    /// the operator's tier right for its own tier, and is approved by the operator; the
    /// original is closed as `superseded`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::console::{Console, ConsoleConfig};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let console = Console::new(Arc::new(Governor::new(&TOOLS)), ConsoleConfig::new())
    ///     .with_edits(Arc::new(()));
    /// ```
    #[must_use]
    pub fn with_edits(mut self, context: Arc<C>) -> Self {
        self.inner.edits = Some(context);
        self
    }

    /// Registers the renderer for tools whose [`custom_ui`](crate::Tool::custom_ui) is
    /// `name`: its view replaces the form generated from the input schema. A tool that
    /// names a renderer nobody registered gets the generated form, and a note saying so.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::console::{Console, ConsoleConfig, Rendered};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let console = Console::new(Arc::new(Governor::new(&TOOLS)), ConsoleConfig::new())
    ///     .with_renderer("refund-card", |lane| {
    ///         Rendered::Html(format!("<p class=\"card\">{} attempt(s)</p>", lane.attempts()))
    ///     });
    /// ```
    #[must_use]
    pub fn with_renderer(
        mut self,
        name: impl Into<String>,
        renderer: impl Fn(&ApprovalLane) -> Rendered + Send + Sync + 'static,
    ) -> Self {
        self.inner.renderers.insert(name.into(), Box::new(renderer));
        self
    }

    /// Takes decisions from Slack's buttons at `POST /slack/actions`, as the operators
    /// `slack` maps its users to (feature `slack`).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::console::{Console, ConsoleConfig, SlackDecisions};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let slack = SlackDecisions::new(b"signing secret".to_vec()).with_user("U024BE7LH", "ops-lead");
    /// let console = Console::new(Arc::new(Governor::new(&TOOLS)), ConsoleConfig::new()).with_slack(slack);
    /// ```
    #[cfg(feature = "slack")]
    #[must_use]
    pub fn with_slack(mut self, slack: SlackDecisions) -> Self {
        self.inner.slack = Some(slack);
        self
    }

    /// The console as a router, to serve or to nest in the host's own.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::console::{Console, ConsoleConfig};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let app = axum::Router::new()
    ///     .nest("/approvals", Console::new(Arc::new(Governor::new(&TOOLS)), ConsoleConfig::new()).router());
    /// ```
    pub fn router(self) -> Router {
        handlers::router(Arc::new(self.inner))
    }

    /// Serves the console at its configured address (127.0.0.1:8377 by default) until
    /// the process stops, with each client's address known to the sign-in limit.
    /// Sessions live in this process: after a restart, operators sign in again.
    ///
    /// # Errors
    ///
    /// [`ConsoleError::Serve`] when the address cannot be bound.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry};
    /// # use cairnloop::console::{Console, ConsoleConfig};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # async fn run() -> Result<(), cairnloop::console::ConsoleError> {
    /// let config = ConsoleConfig::new().with_address(([127, 0, 0, 1], 9000).into());
    /// Console::new(Arc::new(Governor::new(&TOOLS)), config).serve().await
    /// # }
    /// ```
    pub async fn serve(self) -> Result<(), ConsoleError> {
        let address = self.inner.config.address();
        let listener = tokio::net::TcpListener::bind(address).await?;
        axum::serve(
            listener,
            self.router()
                .into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await?;
        Ok(())
    }
}
