//! The webhook notifier: a few threads of its own post each notice, signed, with retries
//! and a cap, and report what became of it.

use std::string::{String, ToString};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use std::vec::Vec;

use crate::approvals::{Notice, NoticeReport, Notifier};
use crate::notifiers::WebhookFormat;
use crate::notifiers::signature::{SIGNATURE_HEADER, sign};

/// Why a webhook cannot be made.
///
/// ```
/// use cairnloop::notifiers::{Webhook, WebhookError};
///
/// assert!(matches!(Webhook::new("http://hooks.example.com/x"), Err(WebhookError::NotHttps)));
/// assert!(Webhook::new("http://127.0.0.1:9000/hook").is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// Not an `https://` URL (plain `http://` only to this machine: the notice carries
    /// what a call would do).
    #[error("a webhook's URL must be https:// (http:// only to localhost)")]
    NotHttps,
    /// The URL has no host.
    #[error("the webhook's URL has no host")]
    NoHost,
    /// The notifier's threads could not start.
    #[error("cannot start the webhook's threads: {0}")]
    Thread(String),
    /// The root certificate given to trust holds no certificate in PEM.
    #[error("the webhook's root certificate is not a PEM certificate: {0}")]
    Certificate(String),
}

/// A webhook's settings; [`Webhook::start`] makes the [`WebhookNotifier`].
///
/// Each notice is posted as JSON, signed (when a secret is set) in the
/// [`SIGNATURE_HEADER`] with the send time, so the receiver can refuse a forgery and a
/// replay ([`verify`](crate::notifiers::verify)). An answer other than 2xx, a timeout or a
/// network error is tried again after a wait that doubles, up to the cap of attempts;
/// a 4xx other than 408 and 429 is not (the receiver refused the notice itself), and
/// neither is a redirect: it is never followed, so a notice goes to the URL configured
/// and nowhere else. The endpoint's certificate is checked against the public web roots,
/// or against a private root given with [`Webhook::trusting`]. The audit trail says what
/// became of each.
///
/// ```no_run
/// use std::time::Duration;
/// use cairnloop::notifiers::{Webhook, WebhookFormat};
/// use cairnloop::{Governor, Registry};
///
/// # static TOOLS: Registry<()> = Registry::new(&[]);
/// let slack = Webhook::new("https://hooks.slack.com/services/T000/B000/XXXX")?
///     .format(WebhookFormat::Slack)
///     .console("https://approvals.example.com")
///     .attempts(5)
///     .start()?;
/// let governor = Governor::new(&TOOLS).with_notifier(slack);
/// # Ok::<(), cairnloop::notifiers::WebhookError>(())
/// ```
#[derive(Clone)]
pub struct Webhook {
    url: String,
    target: String,
    format: WebhookFormat,
    secret: Option<Vec<u8>>,
    console: Option<String>,
    attempts: u32,
    first_retry: Duration,
    timeout: Duration,
    threads: usize,
    queue: usize,
    /// The roots the endpoint's certificate must chain to; `None`: the public web roots.
    roots: Option<Vec<ureq::tls::Certificate<'static>>>,
    /// Whether a Slack body carries the buttons that decide the call.
    buttons: bool,
}

impl core::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The URL may hold a token (Slack's and Teams' do): only its host is shown.
        f.debug_struct("Webhook")
            .field("target", &self.target)
            .field("format", &self.format)
            .field("signed", &self.secret.is_some())
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// A webhook to `url` with the defaults: JSON body, unsigned, 5 attempts, the first
    /// retry after 500 ms, 5 s per attempt, 2 threads, 1,000 notices queued at most.
    ///
    /// # Errors
    ///
    /// [`WebhookError::NotHttps`], [`WebhookError::NoHost`].
    ///
    /// ```
    /// let hook = cairnloop::notifiers::Webhook::new("https://hooks.example.com/approvals")?;
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    pub fn new(url: &str) -> Result<Self, WebhookError> {
        let (scheme, rest) = url.split_once("://").ok_or(WebhookError::NotHttps)?;
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = authority.rsplit('@').next().unwrap_or("");
        let name = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => host.split(':').next().unwrap_or(""),
        };
        if name.is_empty() {
            return Err(WebhookError::NoHost);
        }
        let local = matches!(name, "localhost" | "127.0.0.1" | "::1");
        if !(scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http") && local) {
            return Err(WebhookError::NotHttps);
        }
        Ok(Self {
            url: url.to_string(),
            target: std::format!("webhook:{name}"),
            format: WebhookFormat::Json,
            secret: None,
            console: None,
            attempts: 5,
            first_retry: Duration::from_millis(500),
            timeout: Duration::from_secs(5),
            threads: 2,
            queue: 1_000,
            roots: None,
            buttons: false,
        })
    }

    /// Trusts the root certificates in `pem` (an internal receiver's authority) for the
    /// endpoint's certificate, in place of the public web roots.
    ///
    /// # Errors
    ///
    /// [`WebhookError::Certificate`] when `pem` holds no certificate, or one that does not
    /// parse.
    ///
    /// ```
    /// # use cairnloop::notifiers::{Webhook, WebhookError};
    /// let refused = Webhook::new("https://hooks.internal/approvals")?.trusting(b"not a certificate");
    /// assert!(matches!(refused, Err(WebhookError::Certificate(_))));
    /// # Ok::<(), WebhookError>(())
    /// ```
    pub fn trusting(mut self, pem: &[u8]) -> Result<Self, WebhookError> {
        self.roots = Some(roots_in(pem)?);
        Ok(self)
    }

    /// The body's format.
    ///
    /// ```
    /// # use cairnloop::notifiers::{Webhook, WebhookFormat};
    /// let hook = Webhook::new("https://example.com/h")?.format(WebhookFormat::Teams);
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    #[must_use]
    pub fn format(mut self, format: WebhookFormat) -> Self {
        self.format = format;
        self
    }

    /// Signs each body with `secret` (HMAC-SHA256, in [`SIGNATURE_HEADER`]).
    ///
    /// ```
    /// # use cairnloop::notifiers::Webhook;
    /// let hook = Webhook::new("https://example.com/h")?.signed_with(b"a long random secret".to_vec());
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    #[must_use]
    pub fn signed_with(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.secret = Some(secret.into());
        self
    }

    /// Slack bodies carry Approve and Reject buttons and a box for a reason, answered by
    /// the console's Slack route (`SlackDecisions`, feature `slack`); other formats are
    /// unchanged.
    ///
    /// ```
    /// # use cairnloop::notifiers::{Webhook, WebhookFormat};
    /// let hook = Webhook::new("https://hooks.slack.com/services/T0/B0/X")?
    ///     .format(WebhookFormat::Slack)
    ///     .with_decisions();
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    #[must_use]
    pub fn with_decisions(mut self) -> Self {
        self.buttons = true;
        self
    }

    /// Where the console is served: each notice links to the proposal's page there.
    ///
    /// ```
    /// # use cairnloop::notifiers::Webhook;
    /// let hook = Webhook::new("https://example.com/h")?.console("https://approvals.example.com");
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    #[must_use]
    pub fn console(mut self, base: &str) -> Self {
        self.console = Some(base.trim_end_matches('/').to_string());
        self
    }

    /// At most this many attempts per notice (at least 1).
    ///
    /// ```
    /// # use cairnloop::notifiers::Webhook;
    /// let hook = Webhook::new("https://example.com/h")?.attempts(3);
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    #[must_use]
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// The wait before the first retry; each later one doubles it.
    ///
    /// ```
    /// # use cairnloop::notifiers::Webhook;
    /// let hook = Webhook::new("https://example.com/h")?.first_retry(std::time::Duration::from_secs(1));
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    #[must_use]
    pub fn first_retry(mut self, wait: Duration) -> Self {
        self.first_retry = wait;
        self
    }

    /// How long one attempt may take, connecting and answering included.
    ///
    /// ```
    /// # use cairnloop::notifiers::Webhook;
    /// let hook = Webhook::new("https://example.com/h")?.timeout(std::time::Duration::from_secs(2));
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Starts the notifier's threads.
    ///
    /// # Errors
    ///
    /// [`WebhookError::Thread`] when a thread cannot start.
    ///
    /// ```
    /// # use cairnloop::notifiers::Webhook;
    /// let notifier = Webhook::new("https://example.com/h")?.start()?;
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    pub fn start(self) -> Result<WebhookNotifier, WebhookError> {
        let (sender, receiver) = mpsc::sync_channel::<Job>(self.queue);
        let receiver = Arc::new(Mutex::new(receiver));
        let agent = agent(self.roots.as_deref(), self.timeout);
        let settings = Arc::new(self);
        let pending = Arc::new(Pending::default());
        for n in 0..settings.threads {
            let (receiver, settings, agent, pending) = (
                Arc::clone(&receiver),
                Arc::clone(&settings),
                agent.clone(),
                Arc::clone(&pending),
            );
            std::thread::Builder::new()
                .name(std::format!("cairnloop-webhook-{n}"))
                .spawn(move || {
                    loop {
                        // The lock is held only to take a job, not to post it.
                        let job = match receiver.lock() {
                            Ok(receiver) => receiver.recv(),
                            Err(_) => return,
                        };
                        let Ok((notice, report)) = job else { return };
                        settings.deliver(&agent, &notice, report);
                        pending.done();
                    }
                })
                .map_err(|error| WebhookError::Thread(error.to_string()))?;
        }
        Ok(WebhookNotifier {
            target: settings.target.clone(),
            grace: settings
                .timeout
                .saturating_add(settings.first_retry)
                .saturating_mul(settings.attempts),
            jobs: Mutex::new(Some(sender)),
            pending,
        })
    }

    fn deliver(&self, agent: &ureq::Agent, notice: &Notice, report: NoticeReport) {
        let link = self
            .console
            .as_ref()
            .map(|base| std::format!("{base}/proposals/{}", notice.key));
        let body = (self.format.body(notice, link.as_deref(), self.buttons)).to_string();
        let mut wait = self.first_retry;
        let mut last = String::new();
        for attempt in 1..=self.attempts {
            match self.post(agent, &body) {
                Ok(()) => return report.delivered(&self.target, attempt),
                Err((reason, again)) => {
                    last = reason;
                    if !again {
                        return report.refused(&self.target, attempt, last);
                    }
                }
            }
            if attempt < self.attempts {
                std::thread::sleep(wait);
                wait = wait.saturating_mul(2);
            }
        }
        report.failed(
            &self.target,
            self.attempts,
            std::format!("gave up after {} attempts: {last}", self.attempts),
        );
    }

    /// One attempt: `Err((why, worth trying again))` unless the receiver took it.
    fn post(&self, agent: &ureq::Agent, body: &str) -> Result<(), (String, bool)> {
        let mut request = agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("User-Agent", "cairnloop-webhook");
        if let Some(secret) = &self.secret {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs());
            request = request.header(SIGNATURE_HEADER, sign(secret, now, body.as_bytes()));
        }
        match request.send(body.as_bytes()) {
            Ok(answer) => {
                let status = answer.status().as_u16();
                match status {
                    200..=299 => Ok(()),
                    408 | 429 | 500..=599 => {
                        Err((std::format!("the endpoint answered {status}"), true))
                    }
                    300..=399 => Err((
                        std::format!("the endpoint redirected the notice ({status}): not followed"),
                        false,
                    )),
                    _ => Err((
                        std::format!("the endpoint refused the notice with {status}"),
                        false,
                    )),
                }
            }
            // The error names the host and the failure, never the URL's path or token.
            Err(error) => Err((describe(&error), true)),
        }
    }
}

/// The certificates in `pem`, at least one.
pub(crate) fn roots_in(pem: &[u8]) -> Result<Vec<ureq::tls::Certificate<'static>>, WebhookError> {
    let mut roots = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(certificate)) => roots.push(certificate),
            Ok(_) => {}
            Err(error) => return Err(WebhookError::Certificate(error.to_string())),
        }
    }
    if roots.is_empty() {
        return Err(WebhookError::Certificate("no certificate found".into()));
    }
    Ok(roots)
}

/// An HTTPS client that checks certificates against `roots` (or the public web roots),
/// gives up after `timeout`, and answers a redirect instead of following it: a body goes
/// where it was sent and nowhere else.
pub(crate) fn agent(
    roots: Option<&[ureq::tls::Certificate<'static>]>,
    timeout: Duration,
) -> ureq::Agent {
    let roots = match roots {
        Some(roots) => ureq::tls::RootCerts::new_with_certs(roots),
        None => ureq::tls::RootCerts::WebPki,
    };
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build())
        .build()
        .into()
}

fn describe(error: &ureq::Error) -> String {
    match error {
        ureq::Error::Timeout(_) => "the endpoint did not answer in time".to_string(),
        // TLS refusals come as I/O errors (an unknown issuer, say): their cause is said.
        ureq::Error::Io(io) => match io.get_ref() {
            Some(cause) => std::format!("the endpoint could not be reached: {cause}"),
            None => std::format!("the endpoint could not be reached: {}", io.kind()),
        },
        ureq::Error::ConnectionFailed => "the endpoint could not be reached".to_string(),
        ureq::Error::HostNotFound => "the endpoint's host was not found".to_string(),
        ureq::Error::Tls(why) => std::format!("TLS failed: {why}"),
        _ => "the notice could not be sent".to_string(),
    }
}

type Job = (Notice, NoticeReport);

/// A started [`Webhook`]: a [`Notifier`] whose `proposed` only queues the notice, so an
/// agent's call never waits for the endpoint. A full queue (the endpoint far behind)
/// drops the notice and says so in the audit trail.
///
/// ```no_run
/// # use cairnloop::notifiers::Webhook;
/// let notifier = Webhook::new("https://example.com/h")?.start()?;
/// assert_eq!(notifier.target(), "webhook:example.com");
/// # Ok::<(), cairnloop::notifiers::WebhookError>(())
/// ```
pub struct WebhookNotifier {
    target: String,
    jobs: Mutex<Option<mpsc::SyncSender<Job>>>,
    pending: Arc<Pending>,
    /// How long dropping the notifier waits for the notices still queued.
    grace: Duration,
}

/// Notices queued or being delivered, so that dropping the notifier (a process ending
/// right after a proposal, say) waits for them a while instead of losing them unrecorded.
#[derive(Debug, Default)]
struct Pending {
    count: Mutex<usize>,
    idle: std::sync::Condvar,
}

impl Pending {
    fn add(&self) {
        if let Ok(mut count) = self.count.lock() {
            *count += 1;
        }
    }

    fn done(&self) {
        if let Ok(mut count) = self.count.lock() {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.idle.notify_all();
            }
        }
    }

    fn wait_idle(&self, grace: Duration) {
        if let Ok(count) = self.count.lock() {
            let _ = self
                .idle
                .wait_timeout_while(count, grace, |count| *count > 0);
        }
    }
}

impl Drop for WebhookNotifier {
    fn drop(&mut self) {
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        self.pending.wait_idle(self.grace);
    }
}

impl core::fmt::Debug for WebhookNotifier {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WebhookNotifier")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl WebhookNotifier {
    /// The name its audit records give the target: `webhook:<host>`.
    ///
    /// ```no_run
    /// # let notifier = cairnloop::notifiers::Webhook::new("https://example.com/h")?.start()?;
    /// assert_eq!(notifier.target(), "webhook:example.com");
    /// # Ok::<(), cairnloop::notifiers::WebhookError>(())
    /// ```
    pub fn target(&self) -> &str {
        &self.target
    }
}

impl Notifier for WebhookNotifier {
    fn proposed(&self, notice: Notice, report: NoticeReport) {
        self.pending.add();
        let refused = match self.jobs.lock() {
            Ok(jobs) => match jobs.as_ref() {
                Some(jobs) => {
                    jobs.try_send((notice, report))
                        .err()
                        .map(|error| match error {
                            mpsc::TrySendError::Full(job)
                            | mpsc::TrySendError::Disconnected(job) => job.1,
                        })
                }
                None => Some(report),
            },
            // Poisoned: nothing is queued, and the report cannot be written either.
            Err(_) => {
                self.pending.done();
                None
            }
        };
        if refused.is_some() {
            self.pending.done();
        }
        if let Some(report) = refused {
            report.failed(&self.target, 0, "the webhook's queue is full");
        }
    }
}
