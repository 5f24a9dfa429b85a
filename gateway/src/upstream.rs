//! An upstream MCP server started as a child process, spoken to over its standard input
//! and output: its listing for the catalogue, and the calls the gates let through.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use cairnloop::Actor;
use cairnloop::declare::{CallResultFuture, RunError, RunFuture};
use cairnloop::declared::Forward;

use crate::child::BoundedChild;
use crate::direct::{Answer, Direct, Unanswered};
use crate::result_text::reads_as_success;
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::ConfigureCommandExt;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use serde_json::value::RawValue;

/// The longest an upstream may take to start and answer its listing.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest [`Upstream::shutdown`] waits for an upstream's process to end.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// What a started upstream inherits of the gateway's environment (the set the official
/// TypeScript SDK passes on POSIX): what a program needs to find its tools and home.
/// Anything else it is given by name (`pass_env`) or value (`env`) in the configuration.
///
/// ```
/// assert!(cairnloop_gateway::upstream::INHERITED_ENV.contains(&"PATH"));
/// ```
pub const INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Most pages one reading of an upstream's `tools/list` takes; with [`MAX_LISTED_TOOLS`]
/// and [`MAX_LISTING_BYTES`], the bounds past which a listing is refused, so an upstream
/// that pages for ever (each page naming another) neither holds the gateway until its
/// start timeout nor fills its memory.
///
/// ```
/// use cairnloop_gateway::upstream::{MAX_LISTED_TOOLS, MAX_LISTING_BYTES, MAX_LISTING_PAGES};
/// assert!(MAX_LISTING_PAGES <= 100 && MAX_LISTED_TOOLS <= 10_000);
/// assert_eq!(MAX_LISTING_BYTES, 16 << 20);
/// ```
pub const MAX_LISTING_PAGES: usize = 64;
/// Most tools over every page of a listing (see [`MAX_LISTING_PAGES`]).
pub const MAX_LISTED_TOOLS: usize = 4_096;
/// Most bytes of a listing's tools, written as JSON (see [`MAX_LISTING_PAGES`]).
pub const MAX_LISTING_BYTES: usize = 16 * 1024 * 1024;

/// The largest result taken from an upstream, as JSON text (as a process wrote it on its
/// pipe; as written again from rmcp's model over HTTP); a larger one is a failed call (the upstream's work may be done: the lane says so). An upstream started by a
/// command is read within it too: the moment one of its frames runs past this bound and
/// [`FRAME_ENVELOPE_BYTES`], reading stops, what was read is dropped, the call is answered
/// at once, and the process is started again for the next call.
pub const MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;

/// What a frame from an upstream may hold beyond [`MAX_RESULT_BYTES`]: its JSON-RPC
/// envelope. A listing's page is a frame too, so one page takes at most the sum.
///
/// ```
/// use cairnloop_gateway::upstream::{FRAME_ENVELOPE_BYTES, MAX_RESULT_BYTES};
/// assert_eq!(MAX_RESULT_BYTES + FRAME_ENVELOPE_BYTES, 4 * 1024 * 1024 + 64 * 1024);
/// ```
pub const FRAME_ENVELOPE_BYTES: usize = 64 * 1024;

/// What a call or a listing is told when an answer ran past the bound.
fn oversize() -> String {
    format!(
        "the upstream's answer exceeded {} MiB",
        MAX_RESULT_BYTES >> 20
    )
}

/// Why an upstream could not be started or listed.
///
/// ```
/// use cairnloop_gateway::upstream::UpstreamError;
///
/// assert_eq!(UpstreamError::Timeout.to_string(), "the upstream did not answer in time");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The command could not be started.
    #[error("the upstream could not be started: {0}")]
    Start(String),
    /// The upstream did not complete MCP's handshake or its listing.
    #[error("the upstream does not speak MCP as expected: {0}")]
    Protocol(String),
    /// It took longer than [`START_TIMEOUT`].
    #[error("the upstream did not answer in time")]
    Timeout,
    /// [`Upstream::shutdown`] was called: nothing is started again.
    #[error("the gateway is stopping")]
    Stopped,
}

/// The first wait before an upstream that would not start is started again; each failure
/// in a row doubles it, up to [`MAX_RESTART_DELAY`].
pub const FIRST_RESTART_DELAY: Duration = Duration::from_millis(250);

/// The longest wait between two attempts to start an upstream again.
pub const MAX_RESTART_DELAY: Duration = Duration::from_secs(30);

/// How long to wait before the next start after `failures` failed starts in a row.
///
/// ```
/// use std::time::{Duration, Instant};
/// use cairnloop_gateway::upstream::restart_delay;
///
/// assert_eq!(restart_delay(0), Duration::ZERO);
/// assert_eq!(restart_delay(1), Duration::from_millis(250));
/// assert_eq!(restart_delay(3), Duration::from_secs(1));
/// assert_eq!(restart_delay(40), Duration::from_secs(30));
/// ```
#[must_use]
pub fn restart_delay(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => FIRST_RESTART_DELAY
            .saturating_mul(1_u32.checked_shl(n - 1).unwrap_or(u32::MAX))
            .min(MAX_RESTART_DELAY),
    }
}

/// How an upstream is reached, kept to reach it again.
enum Launch {
    /// A child process, spoken to over its standard input and output.
    Command {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// A Streamable HTTP endpoint, with the gateway's own credential for it.
    Http { url: String, token: Option<String> },
}

/// The connection, and what restarting it has met.
struct Connection {
    /// The connection and its process, until it ends or [`Upstream::shutdown`].
    running: Option<Running>,
    /// Whether it was ever started: a start after that is a restart.
    started: bool,
    /// Set by [`Upstream::shutdown`]: nothing is started again.
    stopped: bool,
    /// Failed starts in a row, and when the next may be tried.
    failures: u32,
    retry_at: Option<Instant>,
    /// Times the upstream was started again after it went away.
    restarts: u64,
}

/// A connection, whether it ended because a frame crossed its bound, and (to a process)
/// the way to call it beside rmcp.
struct Running {
    service: RunningService<RoleClient, Listener>,
    crossed: Arc<AtomicBool>,
    direct: Option<Arc<Direct>>,
}

/// What a call or a listing is sent on.
struct Link {
    via: Via,
    crossed: Arc<AtomicBool>,
}

/// rmcp's client, or (for a call to a process) the gateway's own calls beside it.
enum Via {
    Peer(Peer<RoleClient>),
    Direct(Arc<Direct>),
}

impl Running {
    /// The way to send a listing (`listing`), or a call: a call to a process goes
    /// beside rmcp, which is then not touched.
    fn link(&self, listing: bool) -> Link {
        let via = match &self.direct {
            Some(direct) if !listing => Via::Direct(Arc::clone(direct)),
            _ => Via::Peer(self.service.peer().clone()),
        };
        Link {
            via,
            crossed: Arc::clone(&self.crossed),
        }
    }
}

/// A running upstream server, started by a command; started again, on the next call,
/// when its process has gone away (with a growing wait between failed starts).
///
/// ```no_run
/// # async fn demo() -> Result<(), cairnloop_gateway::upstream::UpstreamError> {
/// use cairnloop_gateway::upstream::Upstream;
///
/// let args = ["-y".into(), "@modelcontextprotocol/server-filesystem".into(), "/srv".into()];
/// let upstream = Upstream::start("npx", &args, &[], std::time::Duration::from_secs(120)).await?;
/// let listing = upstream.listing().await?;
/// assert!(listing["tools"].is_array());
/// # Ok(()) }
/// ```
pub struct Upstream {
    launch: Launch,
    /// Told by every connection, the ones after a restart too.
    listener: Listener,
    connection: tokio::sync::Mutex<Connection>,
    /// The running process's way to call it, while it runs: a call takes it without
    /// waiting its turn for the connection.
    direct: std::sync::Mutex<Option<(Arc<Direct>, Arc<AtomicBool>)>>,
    call_timeout: Duration,
    counts: Counts,
}

/// What has happened to an upstream since the gateway started, for its metrics.
///
/// ```no_run
/// # fn demo(upstream: &cairnloop_gateway::upstream::Upstream) {
/// let counts = upstream.counts();
/// println!("{} starts, {} timeouts", counts.starts, counts.timeouts);
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamCounts {
    /// Starts (or connections) that completed MCP's handshake, the first included.
    pub starts: u64,
    /// Starts that did not.
    pub start_failures: u64,
    /// Calls forwarded to it.
    pub calls: u64,
    /// Calls it refused or failed, or that went away under them (timeouts included).
    pub call_failures: u64,
    /// Calls it did not answer within the call timeout.
    pub timeouts: u64,
}

#[derive(Default)]
struct Counts {
    starts: AtomicU64,
    start_failures: AtomicU64,
    calls: AtomicU64,
    call_failures: AtomicU64,
    timeouts: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Upstream {
    /// Starts `command` with `args`, in an environment of `env` and only these of the
    /// gateway's own: [`INHERITED_ENV`] (the gateway's secrets, such as a console
    /// operator's token or another upstream's credential, are not a server's to read),
    /// and completes MCP's handshake; each call it forwards may take `call_timeout`.
    ///
    /// # Errors
    ///
    /// The command cannot start, does not speak MCP, or takes longer than
    /// [`START_TIMEOUT`].
    ///
    /// ```
    /// # use cairnloop_gateway::upstream::{Upstream, UpstreamError};
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// let timeout = std::time::Duration::from_secs(1);
    /// let started = runtime.block_on(Upstream::start("/nonexistent/server", &[], &[], timeout));
    /// assert!(matches!(started, Err(UpstreamError::Start(_))));
    /// ```
    pub async fn start(
        command: &str,
        args: &[String],
        env: &[(String, String)],
        call_timeout: Duration,
    ) -> Result<Arc<Self>, UpstreamError> {
        Self::reach(
            Launch::Command {
                command: command.to_owned(),
                args: args.to_vec(),
                env: env.to_vec(),
            },
            call_timeout,
        )
        .await
    }

    /// Connects to the Streamable HTTP endpoint at `url`, sending `token` (the
    /// gateway's own credential for it, never a client's) as a bearer token, and
    /// completes MCP's handshake; each call it forwards may take `call_timeout`.
    ///
    /// # Errors
    ///
    /// The endpoint cannot be reached, does not speak MCP, or takes longer than
    /// [`START_TIMEOUT`].
    ///
    /// ```
    /// # use cairnloop_gateway::upstream::{Upstream, UpstreamError};
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// let timeout = std::time::Duration::from_secs(1);
    /// // Nothing listens on port 9 (discard) here.
    /// let reached = runtime.block_on(Upstream::connect("http://127.0.0.1:9/mcp", None, timeout));
    /// assert!(reached.is_err());
    /// ```
    pub async fn connect(
        url: &str,
        token: Option<String>,
        call_timeout: Duration,
    ) -> Result<Arc<Self>, UpstreamError> {
        Self::reach(
            Launch::Http {
                url: url.to_owned(),
                token,
            },
            call_timeout,
        )
        .await
    }

    /// The upstream `command` starts (as [`Upstream::start`] starts it), not started
    /// yet: the first listing or call that needs it starts it, and after a failed start
    /// the next waits for [`restart_delay`].
    ///
    /// ```
    /// # use cairnloop_gateway::upstream::Upstream;
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// let timeout = std::time::Duration::from_secs(1);
    /// let upstream = Upstream::command("/nonexistent/server", &[], &[], timeout);
    /// // Nothing is started until it is needed; then the failure is said.
    /// assert!(runtime.block_on(upstream.listing()).is_err());
    /// ```
    #[must_use]
    pub fn command(
        command: &str,
        args: &[String],
        env: &[(String, String)],
        call_timeout: Duration,
    ) -> Arc<Self> {
        Arc::new(Self::new(
            Launch::Command {
                command: command.to_owned(),
                args: args.to_vec(),
                env: env.to_vec(),
            },
            call_timeout,
        ))
    }

    /// The upstream at `url` (as [`Upstream::connect`] reaches it), not reached yet:
    /// the first listing or call that needs it connects.
    ///
    /// ```
    /// # use cairnloop_gateway::upstream::Upstream;
    /// let timeout = std::time::Duration::from_secs(1);
    /// let upstream = Upstream::url("http://127.0.0.1:9/mcp", None, timeout);
    /// # let _ = upstream;
    /// ```
    #[must_use]
    pub fn url(url: &str, token: Option<String>, call_timeout: Duration) -> Arc<Self> {
        Arc::new(Self::new(
            Launch::Http {
                url: url.to_owned(),
                token,
            },
            call_timeout,
        ))
    }

    fn new(launch: Launch, call_timeout: Duration) -> Self {
        Self {
            launch,
            listener: Listener::default(),
            connection: tokio::sync::Mutex::new(Connection {
                running: None,
                started: false,
                stopped: false,
                failures: 0,
                retry_at: None,
                restarts: 0,
            }),
            direct: std::sync::Mutex::new(None),
            call_timeout,
            counts: Counts::default(),
        }
    }

    async fn reach(launch: Launch, call_timeout: Duration) -> Result<Arc<Self>, UpstreamError> {
        let mut upstream = Self::new(launch, call_timeout);
        let running = upstream
            .launch
            .connect(upstream.listener.clone(), call_timeout)
            .await?;
        let connection = upstream.connection.get_mut();
        connection.running = Some(running);
        connection.started = true;
        bump(&upstream.counts.starts);
        Ok(Arc::new(upstream))
    }

    /// What has happened to it since the gateway started.
    ///
    /// ```no_run
    /// # fn demo(upstream: &cairnloop_gateway::upstream::Upstream) {
    /// assert!(upstream.counts().calls >= upstream.counts().timeouts);
    /// # }
    /// ```
    pub fn counts(&self) -> UpstreamCounts {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        UpstreamCounts {
            starts: read(&self.counts.starts),
            start_failures: read(&self.counts.start_failures),
            calls: read(&self.counts.calls),
            call_failures: read(&self.counts.call_failures),
            timeouts: read(&self.counts.timeouts),
        }
    }

    /// How many times the upstream was started again after its process went away.
    ///
    /// ```no_run
    /// # async fn demo(upstream: &cairnloop_gateway::upstream::Upstream) {
    /// println!("restarted {} times", upstream.restarts().await);
    /// # }
    /// ```
    pub async fn restarts(&self) -> u64 {
        self.connection.lock().await.restarts
    }

    /// The connection to send on: the running one, or a new one when the old one has
    /// gone away (nothing was sent on it, so nothing is lost by starting again); with
    /// the flag that says whether that connection ended on a frame past its bound.
    async fn link(&self, listing: bool) -> Result<Link, UpstreamError> {
        if !listing && let Some(link) = self.direct_link() {
            return Ok(link);
        }
        let mut connection = self.connection.lock().await;
        if connection.stopped {
            return Err(UpstreamError::Stopped);
        }
        // A connection whose output ended is gone, whether or not rmcp's side of it has
        // noticed yet.
        if let Some(running) = &connection.running
            && !running.service.is_transport_closed()
            && !running
                .direct
                .as_ref()
                .is_some_and(|direct| direct.is_closed())
        {
            self.keep_direct(running);
            return Ok(running.link(listing));
        }
        let now = Instant::now();
        if let Some(at) = connection.retry_at
            && now < at
        {
            return Err(UpstreamError::Start(format!(
                "it failed to start {} time(s) in a row; next attempt in {} ms",
                connection.failures,
                at.duration_since(now).as_millis()
            )));
        }
        // The old connection ended: its process is killed as it is dropped.
        connection.running = None;
        // Boxed: a call's future, which holds this one, is then not the size of a start.
        let connecting = Box::pin(
            self.launch
                .connect(self.listener.clone(), self.call_timeout),
        );
        match connecting.await {
            Ok(running) => {
                self.keep_direct(&running);
                let link = running.link(listing);
                connection.running = Some(running);
                connection.failures = 0;
                connection.retry_at = None;
                if connection.started {
                    // A new process may list other tools.
                    connection.restarts += 1;
                    self.listener.changed.notify_one();
                }
                connection.started = true;
                bump(&self.counts.starts);
                Ok(link)
            }
            Err(error) => {
                bump(&self.counts.start_failures);
                connection.failures = connection.failures.saturating_add(1);
                connection.retry_at = Some(now + restart_delay(connection.failures));
                Err(error)
            }
        }
    }

    /// The running process's way to call it, unless its connection has ended.
    fn direct_link(&self) -> Option<Link> {
        let kept = self.direct.lock().unwrap_or_else(PoisonError::into_inner);
        let (direct, crossed) = kept.as_ref().filter(|(direct, _)| !direct.is_closed())?;
        Some(Link {
            via: Via::Direct(Arc::clone(direct)),
            crossed: Arc::clone(crossed),
        })
    }

    /// Keeps `running`'s way to call its process, for [`Upstream::direct_link`].
    fn keep_direct(&self, running: &Running) {
        *self.direct.lock().unwrap_or_else(PoisonError::into_inner) = running
            .direct
            .as_ref()
            .map(|direct| (Arc::clone(direct), Arc::clone(&running.crossed)));
    }

    /// Resolves when the upstream says its tool list changed
    /// (`notifications/tools/list_changed`) since the last time this resolved; a restart
    /// also counts, since the new process may list other tools.
    ///
    /// ```no_run
    /// # async fn demo(upstream: &cairnloop_gateway::upstream::Upstream) {
    /// upstream.listing_changed().await;
    /// println!("{}", upstream.listing().await.is_ok());
    /// # }
    /// ```
    pub async fn listing_changed(&self) {
        self.listener.changed.notified().await;
    }

    /// The upstream's `tools/list` answer (every page), as the JSON it sent, for
    /// [`read_listing`](crate::catalogue::read_listing).
    ///
    /// # Errors
    ///
    /// The upstream does not answer, or not in time.
    pub async fn listing(&self) -> Result<Value, UpstreamError> {
        let Link { via, crossed } = self.link(true).await?;
        let Via::Peer(peer) = via else {
            return Err(UpstreamError::Protocol("no MCP client to list with".into()));
        };
        let tools = tokio::time::timeout(START_TIMEOUT, every_page(&peer))
            .await
            .map_err(|_| UpstreamError::Timeout)?
            .map_err(|error| match crossed.load(Ordering::SeqCst) {
                true => UpstreamError::Protocol(oversize()),
                false => error,
            })?;
        let tools = serde_json::to_value(tools)
            .map_err(|error| UpstreamError::Protocol(error.to_string()))?;
        Ok(serde_json::json!({ "tools": tools }))
    }

    /// Stops talking to the upstream and ends its process: its input is closed, then it
    /// is asked to stop (`SIGTERM`) and killed if it does not (a few seconds each).
    /// Nothing starts it again.
    ///
    /// ```
    /// # use cairnloop_gateway::upstream::{Upstream, UpstreamError};
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// let upstream = Upstream::command("/nonexistent/server", &[], &[], std::time::Duration::from_secs(1));
    /// runtime.block_on(upstream.shutdown());
    /// assert!(matches!(runtime.block_on(upstream.listing()), Err(UpstreamError::Stopped)));
    /// ```
    pub async fn shutdown(&self) {
        let mut connection = self.connection.lock().await;
        connection.stopped = true;
        *self.direct.lock().unwrap_or_else(PoisonError::into_inner) = None;
        if let Some(Running { mut service, .. }) = connection.running.take() {
            let _ = service.close_with_timeout(SHUTDOWN_TIMEOUT).await;
            // The transport kills a process still running from a task of its own, as
            // it is dropped: give that task its turn before the runtime may end.
            drop(service);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// One call of `tool` with `arguments`: the upstream's `CallToolResult` as JSON, or
    /// why not.
    ///
    /// # Errors
    ///
    /// [`RunError::Failed`] with the text of an error result or an error answer: the
    /// upstream says it did not do the work. [`RunError::OutcomeUnknown`] when the
    /// upstream went away, stopped answering within its call timeout, or answered more
    /// than [`MAX_RESULT_BYTES`], or when the MCP client cancelled the request this call
    /// runs for (the upstream is told to stop): it may have done the work, so the call
    /// is never run again on its own.
    pub async fn call(&self, tool: &str, arguments: &Value) -> Result<Value, RunError> {
        self.counted(tool, arguments).await?.into_tree()
    }

    /// [`Upstream::call`], its result the text of the `CallToolResult` as the upstream
    /// wrote it (as rmcp's model of it writes it, over HTTP), for a client to be
    /// answered around it: every string in it reads as Unicode text.
    ///
    /// # Errors
    ///
    /// As [`Upstream::call`].
    pub async fn call_text(
        &self,
        tool: &str,
        arguments: &Value,
    ) -> Result<Box<RawValue>, RunError> {
        self.counted(tool, arguments).await?.into_text()
    }

    async fn counted(&self, tool: &str, arguments: &Value) -> Result<Returned, RunError> {
        bump(&self.counts.calls);
        let called = self.forward(tool, arguments).await;
        if called.is_err() {
            bump(&self.counts.call_failures);
        }
        called
    }

    async fn forward(&self, tool: &str, arguments: &Value) -> Result<Returned, RunError> {
        let link = self.link(false).await.map_err(|error| {
            RunError::Failed(format!(
                "not forwarded: the upstream is not running ({error})"
            ))
        })?;
        // A call given up on (its timeout, or the client cancelling its own request) is
        // dropped, and the upstream is then told (`notifications/cancelled`). Whether it
        // stopped in time is not known. A process's connection keeps its calls' time
        // itself, without a timer per call.
        let called = async {
            if matches!(link.via, Via::Direct(_)) {
                call_on(&link, tool, arguments).await
            } else {
                tokio::time::timeout(self.call_timeout, call_on(&link, tool, arguments))
                    .await
                    .unwrap_or(Ok(None))
            }
        };
        let answered = tokio::select! {
            answered = called => answered?,
            () = cairnloop::mcp::request_cancelled() => {
                return Err(unknown(
                    "the client cancelled the call; the upstream was told to stop".into(),
                ));
            }
        };
        let Some(returned) = answered else {
            bump(&self.counts.timeouts);
            return Err(unknown("the upstream did not answer in time".into()));
        };
        match returned {
            Returned::Tree(result)
                if result.get("isError").and_then(Value::as_bool) == Some(true) =>
            {
                Err(RunError::Failed(error_text(&result)))
            }
            returned => Ok(returned),
        }
    }
}

fn unknown(why: String) -> RunError {
    RunError::OutcomeUnknown(why)
}

/// A tool's result as it came back.
enum Returned {
    /// The text a process wrote, read as a successful tool's result
    /// ([`reads_as_success`]).
    Text(Box<RawValue>),
    /// Any other result, as a tree; and a result over HTTP, as rmcp's model writes it.
    Tree(Value),
}

impl Returned {
    fn into_tree(self) -> Result<Value, RunError> {
        match self {
            Self::Tree(result) => Ok(result),
            // Read once already, so this reads.
            Self::Text(text) => serde_json::from_str(text.get())
                .map_err(|error| RunError::Output(error.to_string())),
        }
    }

    fn into_text(self) -> Result<Box<RawValue>, RunError> {
        match self {
            Self::Text(text) => Ok(text),
            Self::Tree(result) => serde_json::value::to_raw_value(&result)
                .map_err(|error| RunError::Output(error.to_string())),
        }
    }
}

/// One call on `link`: the result, checked to be a tool's result; `None` when a
/// process's connection gave up on it, its time being up.
async fn call_on(link: &Link, tool: &str, arguments: &Value) -> Result<Option<Returned>, RunError> {
    let gone = |why: String| match link.crossed.load(Ordering::SeqCst) {
        // The connection was ended under the call: by a frame past its bound (this
        // call's answer, or another's on the same connection), or by the upstream itself.
        true => unknown(format!("{}; the upstream is started again", oversize())),
        false => unknown(format!("the upstream failed: {why}")),
    };
    let direct = match &link.via {
        Via::Direct(direct) => direct,
        // Boxed: a call to a process is then not the size of rmcp's.
        Via::Peer(peer) => return Box::pin(call_over_rmcp(peer, tool, arguments, gone)).await,
    };
    let answer = direct
        .call(tool, arguments)
        .map_err(|_| gone("the connection closed before the call was sent".into()))?
        .answer()
        .await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(Unanswered::Overdue) => return Ok(None),
        Err(Unanswered::Closed | Unanswered::WentAway) => {
            return Err(gone("the connection closed before its answer".into()));
        }
    };
    let text = match answer.map_err(|why| gone(format!("its answer does not read: {why}")))? {
        Answer::Refused(message) => {
            return Err(RunError::Failed(format!(
                "the upstream refused the call: {message}"
            )));
        }
        Answer::Result(text) => text,
    };
    if text.get().len() > MAX_RESULT_BYTES {
        return Err(unknown(oversize()));
    }
    if reads_as_success(&text) {
        return Ok(Some(Returned::Text(text)));
    }
    let result: Value = serde_json::from_str(text.get())
        .map_err(|error| gone(format!("its answer does not read: {error}")))?;
    if !is_tool_result(&result) {
        return Err(gone("its answer is not a tool's result".into()));
    }
    Ok(Some(Returned::Tree(result)))
}

/// One call over rmcp's client (an upstream reached over HTTP).
async fn call_over_rmcp(
    peer: &Peer<RoleClient>,
    tool: &str,
    arguments: &Value,
    gone: impl Fn(String) -> RunError,
) -> Result<Option<Returned>, RunError> {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let result = peer.call_tool(request).await.map_err(|error| match error {
        // An error answer: the upstream refused the call (an unknown tool, bad
        // arguments), so it did not do the work.
        rmcp::ServiceError::McpError(error) => {
            RunError::Failed(format!("the upstream refused the call: {}", error.message))
        }
        other => gone(other.to_string()),
    })?;
    if !fits(&result, MAX_RESULT_BYTES) {
        return Err(unknown(oversize()));
    }
    let result = serde_json::to_value(&result).map_err(|error| unknown(error.to_string()))?;
    Ok(Some(Returned::Tree(result)))
}

/// Whether `result` has the shape of a `CallToolResult`, read as leniently as rmcp reads
/// one: an object, whose `content` (when present) is a list of objects that each name
/// their `type`, and whose `isError` (when present) is a boolean.
pub(crate) fn is_tool_result(result: &Value) -> bool {
    let Some(result) = result.as_object() else {
        return false;
    };
    let content_reads = result.get("content").is_none_or(|content| {
        content.as_array().is_some_and(|blocks| {
            blocks
                .iter()
                .all(|block| block.get("type").is_some_and(Value::is_string))
        })
    });
    content_reads && result.get("isError").is_none_or(Value::is_boolean)
}

impl Launch {
    /// Starts the process or reaches the endpoint, and completes MCP's handshake; a call
    /// to a process waits at most `call_timeout` for its answer.
    async fn connect(
        &self,
        listener: Listener,
        call_timeout: Duration,
    ) -> Result<Running, UpstreamError> {
        let crossed = Arc::new(AtomicBool::new(false));
        let (command, args, env) = match self {
            Self::Command { command, args, env } => (command, args, env),
            Self::Http { url, token } => {
                let service = connect_http(url, token.as_deref(), listener).await?;
                return Ok(Running {
                    service,
                    crossed,
                    direct: None,
                });
            }
        };
        let command = tokio::process::Command::new(command).configure(|command| {
            command.args(args);
            command.stdin(std::process::Stdio::piped());
            command.stdout(std::process::Stdio::piped());
            // Its standard error is discarded: an upstream that hangs must not hold the
            // gateway's own open (not yet logged).
            command.stderr(std::process::Stdio::null());
            command.env_clear();
            for name in INHERITED_ENV {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
            command.envs(env.iter().map(|(name, value)| (name, value)));
        });
        let mut command = process_wrap::tokio::CommandWrap::from(command);
        command.wrap(process_wrap::tokio::KillOnDrop);
        let child = command
            .spawn()
            .map_err(|error| UpstreamError::Start(error.to_string()))?;
        let bound = MAX_RESULT_BYTES + FRAME_ENVELOPE_BYTES;
        let (transport, direct) =
            BoundedChild::new(child, bound, Arc::clone(&crossed), call_timeout)
                .map_err(|error| UpstreamError::Start(error.to_string()))?;
        let service = tokio::time::timeout(START_TIMEOUT, listener.serve(transport))
            .await
            .map_err(|_| UpstreamError::Timeout)?
            .map_err(|error| match crossed.load(Ordering::SeqCst) {
                true => UpstreamError::Protocol(oversize()),
                false => UpstreamError::Protocol(error.to_string()),
            })?;
        Ok(Running {
            service,
            crossed,
            direct: Some(direct),
        })
    }
}

/// The upstream's listing, page by page, within [`MAX_LISTING_PAGES`],
/// [`MAX_LISTED_TOOLS`] and [`MAX_LISTING_BYTES`].
async fn every_page(peer: &Peer<RoleClient>) -> Result<Vec<rmcp::model::Tool>, UpstreamError> {
    let mut tools = Vec::new();
    let mut bytes = 0;
    let mut cursor = None;
    for _ in 0..MAX_LISTING_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|error| UpstreamError::Protocol(error.to_string()))?;
        bytes = serde_json::to_vec(&page.tools)
            .map_or(usize::MAX, |text| bytes.saturating_add(text.len()));
        if bytes > MAX_LISTING_BYTES {
            return Err(UpstreamError::Protocol(format!(
                "the upstream's listing is larger than {MAX_LISTING_BYTES} bytes"
            )));
        }
        tools.extend(page.tools);
        if tools.len() > MAX_LISTED_TOOLS {
            return Err(UpstreamError::Protocol(format!(
                "the upstream lists more than {MAX_LISTED_TOOLS} tools"
            )));
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tools),
        }
    }
    Err(UpstreamError::Protocol(format!(
        "the upstream's listing goes on past {MAX_LISTING_PAGES} pages"
    )))
}

/// What the gateway hears from an upstream besides answers: that its tool list changed.
#[derive(Clone, Default)]
pub(crate) struct Listener {
    changed: Arc<tokio::sync::Notify>,
}

impl rmcp::ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.notify_one();
        std::future::ready(())
    }
}

/// An MCP session over Streamable HTTP with `url`.
async fn connect_http(
    url: &str,
    token: Option<&str>,
    listener: Listener,
) -> Result<RunningService<RoleClient, Listener>, UpstreamError> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    // rustls is built without a default cryptography provider: name one (the same
    // pure-Rust `ring` the rest of the graph uses), once per process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token.to_owned());
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    tokio::time::timeout(START_TIMEOUT, listener.serve(transport))
        .await
        .map_err(|_| UpstreamError::Timeout)?
        .map_err(|error| UpstreamError::Protocol(error.to_string()))
}

/// Whether `value`, written as JSON, takes at most `most` bytes: counted as it is
/// written, and stopped at the first byte past the bound (no copy of the text is made).
fn fits(value: &rmcp::model::CallToolResult, most: usize) -> bool {
    struct Counter {
        left: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.left = self
                .left
                .checked_sub(bytes.len())
                .ok_or_else(|| std::io::Error::other("past the bound"))?;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(&mut Counter { left: most }, value).is_ok()
}

/// The text of an error result, as the upstream wrote it.
fn error_text(result: &Value) -> String {
    let text: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|content| {
            content
                .iter()
                .filter_map(|item| item.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if text.is_empty() {
        "the upstream answered with an error".into()
    } else {
        text.join("\n")
    }
}

/// What forwards one offered tool's calls to its upstream.
///
/// ```no_run
/// # async fn demo(offered: &cairnloop_gateway::catalogue::Offered, upstream: std::sync::Arc<cairnloop_gateway::upstream::Upstream>) {
/// use cairnloop_gateway::upstream::ToUpstream;
///
/// let tool = offered.declare::<()>(ToUpstream::new(upstream, &offered.tool)).unwrap();
/// # }
/// ```
pub struct ToUpstream {
    upstream: Arc<Upstream>,
    tool: String,
}

impl ToUpstream {
    /// Forwards to `tool` of `upstream`.
    ///
    /// ```no_run
    /// # fn demo(upstream: std::sync::Arc<cairnloop_gateway::upstream::Upstream>) {
    /// let forward = cairnloop_gateway::upstream::ToUpstream::new(upstream, "read_text_file");
    /// # }
    /// ```
    #[must_use]
    pub fn new(upstream: Arc<Upstream>, tool: &str) -> Self {
        Self {
            upstream,
            tool: tool.to_owned(),
        }
    }
}

impl<C: ?Sized + Sync> Forward<C> for ToUpstream {
    fn forward<'a>(&'a self, arguments: &'a Value, _: &'a Actor<'a>, _: &'a C) -> RunFuture<'a> {
        // The caller's identity and token stay here: the upstream sees the arguments only.
        Box::pin(self.upstream.call(&self.tool, arguments))
    }

    fn forward_call_result<'a>(
        &'a self,
        arguments: &'a Value,
        _: &'a Actor<'a>,
        _: &'a C,
    ) -> CallResultFuture<'a> {
        Box::pin(self.upstream.call_text(&self.tool, arguments))
    }
}
