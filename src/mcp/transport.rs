//! MCP over stdio, one JSON-RPC message per line, for rmcp: every line is judged before
//! rmcp sees it, so no line goes unanswered and a call's argument text reaches the
//! strict decoder as the client wrote it.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::borrow::Cow;
use std::io;

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::stream::{FuturesUnordered, StreamExt};

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::Transport;
use rmcp::{ErrorData, RoleServer};
use tokio::io::{AsyncBufRead, AsyncWrite, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::fast::{Answered, Answering, AnswersAtOnce, answer_line, plain_call};
use super::frame::{Frame, FrameLimits, judge, nests_deeper_than, oversized, without_line_end};
use super::line_sink::LineSink;
use super::server::McpServer;
use crate::approvals::ApprovalStore;

/// How many bytes of an oversized line are kept to find its `id` in.
const ID_PREFIX: usize = 4096;

/// How long the calls answered here that are still running when the input ends are
/// waited for, to be answered (as long as rmcp waits for its own handlers' answers).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The stdio transport of [`McpServer`](crate::mcp::McpServer): newline-delimited
/// JSON-RPC over any reader and writer (`stdin`/`stdout` with [`LineTransport::stdio`]).
///
/// Unlike a transport that hands rmcp whatever parses, it answers every line it cannot
/// pass on, as JSON-RPC says:
///
/// | the line | the answer |
/// |---|---|
/// | not JSON, or not UTF-8 | `-32700` (parse error), `id: null` |
/// | larger or deeper than its [`FrameLimits`] | `-32600`, with the line's `id` when it can be read |
/// | `params`, or a `tools/call`'s `arguments`, not an object | `-32602` with the request's `id` |
/// | JSON that is no MCP message | `-32600` with the request's `id` |
///
/// A notification cannot be answered; a malformed one is reported on stderr. The text of
/// each `tools/call`'s `arguments` is attached to the request, so the server decodes
/// exactly what the client sent: duplicate keys and out-of-range numbers are caught.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use cairnloop::{Governor, Registry, mcp::{LineTransport, McpServer}};
/// # static TOOLS: Registry<()> = Registry::new(&[]);
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// use rmcp::ServiceExt;
/// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
/// server.serve(LineTransport::stdio()).await?.waiting().await?;
/// # Ok(())
/// # }
/// ```
pub struct LineTransport<R, W> {
    /// What reads and judges the input: here, as rmcp asks for the next message; or,
    /// once calls are answered here, on a task of its own.
    input: Input<R>,
    /// Where answers are written, in the order they are sent; `None` once closed.
    writer: Option<LineSink>,
    _writes: core::marker::PhantomData<fn(W)>,
    /// Whether the agreed protocol is 2026-07-28 or later, as the answer to `initialize`
    /// passed.
    current: Arc<AtomicBool>,
}

/// Where the input is read.
enum Input<R> {
    /// Here, in [`Transport::receive`]: when no call is answered here, and until the
    /// client has said it is initialized.
    Here(Box<Reader<R>>),
    /// On a task of its own, which answers the calls that run at once and hands every
    /// other message on: rmcp's loop is woken only for those.
    Task {
        messages: mpsc::UnboundedReceiver<ClientJsonRpcMessage>,
        task: JoinHandle<()>,
    },
    /// Only while the reader moves to its task.
    Ended,
}

/// The input and what is read of it.
struct Reader<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// Dropping the rest of a line that is already too long.
    discarding: bool,
    limits: FrameLimits,
    /// Where the answers the transport gives itself are written.
    writer: LineSink,
    /// What answers the calls that run at once, with [`LineTransport::with_fast_calls`].
    fast: Option<Arc<dyn AnswersAtOnce>>,
    /// The session as the transport saw it pass: whether the client said it is
    /// initialized (calls are answered here only after), and whether the agreed
    /// protocol is 2026-07-28 or later.
    initialized: bool,
    current: Arc<AtomicBool>,
    /// The calls answered here and not yet answered: a call the client cancels runs on
    /// to its recorded outcome, and its answer is dropped. One alone is polled as the
    /// reader is (most clients wait for each answer); with others, each is polled only
    /// when it is woken.
    solo: Option<InFlight>,
    in_flight: FuturesUnordered<InFlight>,
    /// Whether each call answered here runs on a task of its own, as it does on a
    /// runtime of many threads (where calls then run side by side); on a runtime of one
    /// thread it runs with the reading. Known at the first such call.
    spawn_calls: Option<bool>,
}

/// A call answered here, on its way.
struct InFlight {
    id: Option<RequestId>,
    /// Its request's cancellation, as the call's own code sees it.
    token: CancellationToken,
    /// Set when the client cancels it: it runs on, and its answer is dropped.
    cancelled: bool,
    answering: Answering,
}

impl Future for InFlight {
    /// The request's id (`None` when cancelled), and its answer.
    type Output = (Option<RequestId>, Answered);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let answered = core::task::ready!(this.answering.as_mut().poll(cx));
        let id = this.id.take().filter(|_| !this.cancelled);
        Poll::Ready((id, answered))
    }
}

impl LineTransport<tokio::io::Stdin, tokio::io::Stdout> {
    /// The transport over this process's stdin and stdout.
    ///
    /// ```no_run
    /// let transport = cairnloop::mcp::LineTransport::stdio();
    /// ```
    #[must_use]
    pub fn stdio() -> Self {
        Self::new(tokio::io::stdin(), tokio::io::stdout())
    }
}

impl<R, W> LineTransport<R, W>
where
    R: tokio::io::AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// The transport over `reader` and `writer`, with the default [`FrameLimits`].
    ///
    /// ```
    /// let (client, server) = tokio::io::duplex(1 << 16);
    /// let (read, write) = tokio::io::split(server);
    /// let transport = cairnloop::mcp::LineTransport::new(read, write);
    /// # drop(client);
    /// ```
    pub fn new(reader: R, writer: W) -> Self {
        let writer = LineSink::new(writer);
        let current = Arc::new(AtomicBool::new(false));
        Self {
            input: Input::Here(Box::new(Reader {
                reader: BufReader::new(reader),
                line: Vec::new(),
                discarding: false,
                limits: FrameLimits::new(),
                writer: writer.clone(),
                fast: None,
                initialized: false,
                current: Arc::clone(&current),
                solo: None,
                in_flight: FuturesUnordered::new(),
                spawn_calls: None,
            })),
            writer: Some(writer),
            _writes: core::marker::PhantomData,
            current,
        }
    }

    /// The reader, before its task is started.
    fn reader(&mut self) -> Option<&mut Reader<R>> {
        match &mut self.input {
            Input::Here(reader) => Some(reader),
            Input::Task { .. } | Input::Ended => None,
        }
    }

    /// Answers the calls of `server` that run at once (no person to wait for) here, as
    /// `server` would: the line read once, the call gated, recorded and run by the same
    /// governor, and the same answer written, without rmcp's dispatch of a request. A call
    /// that waits for a person, a request with a task or with `_meta` beyond a
    /// `progressToken`, and every other message go to `server` through rmcp. For a server
    /// whose requests each name their caller (an authenticating transport's), this does
    /// nothing.
    ///
    /// Once the client has said it is initialized, the input is then read on a task of
    /// its own, where those calls are answered; on a runtime of many threads each call
    /// runs on a task of its own too.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::{LineTransport, McpServer}};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    /// use rmcp::ServiceExt;
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
    /// let transport = LineTransport::stdio().with_fast_calls(&server);
    /// server.serve(transport).await?.waiting().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn with_fast_calls<C, S>(mut self, server: &McpServer<C, S>) -> Self
    where
        C: Send + Sync + 'static,
        S: ApprovalStore + Send + Sync + 'static,
    {
        if let Some(reader) = self.reader() {
            reader.fast = server
                .fast_calls()
                .map(|calls| Arc::new(calls) as Arc<dyn AnswersAtOnce>);
        }
        self
    }

    /// Sets the size and depth limits of a line.
    ///
    /// ```
    /// use cairnloop::mcp::{FrameLimits, LineTransport};
    /// let (client, server) = tokio::io::duplex(1 << 16);
    /// let (read, write) = tokio::io::split(server);
    /// let transport = LineTransport::new(read, write)
    ///     .with_limits(FrameLimits::new().with_max_line_bytes(1 << 20));
    /// # drop(client);
    /// ```
    #[must_use]
    pub fn with_limits(mut self, limits: FrameLimits) -> Self {
        if let Some(reader) = self.reader() {
            reader.limits = limits;
        }
        self
    }
}

impl<R> Reader<R>
where
    R: tokio::io::AsyncRead + Send + Unpin,
{
    /// Answers the line in `self.line` here when it is a call that runs at once; says
    /// whether it did.
    fn answered_here(&mut self) -> bool {
        let Some(fast) = self.fast.as_ref().filter(|_| self.initialized) else {
            return false;
        };
        let line = without_line_end(&self.line);
        // A line past the depth limit is the frame's to answer.
        let Some(call) =
            plain_call(line).filter(|_| !nests_deeper_than(line, self.limits.max_depth()))
        else {
            return false;
        };
        let token = CancellationToken::new();
        let Some(mut answering) = fast.answer(&call.name, call.arguments, &token) else {
            return false;
        };
        if self.writer.is_open() {
            let spawn = *self.spawn_calls.get_or_insert_with(|| {
                tokio::runtime::Handle::try_current().is_ok_and(|runtime| {
                    runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread
                })
            });
            if spawn {
                let running = tokio::spawn(answering);
                answering = Box::pin(async move {
                    running.await.unwrap_or_else(|_| {
                        Answered::Model(Err(ErrorData::internal_error(
                            "the call ended without an answer",
                            None,
                        )))
                    })
                });
            }
            let call = InFlight {
                id: Some(call.id),
                token,
                cancelled: false,
                answering,
            };
            if self.solo.is_none() && self.in_flight.is_empty() {
                self.solo = Some(call);
            } else {
                self.in_flight.push(call);
            }
        }
        // Otherwise the writer has stopped: nobody is left to answer, and nothing was
        // recorded.
        true
    }

    /// Writes the answers of the calls answered here that have finished; `Ready` when
    /// none is left in flight.
    fn poll_answers(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(call) = &mut self.solo
            && let Poll::Ready((id, answered)) = Pin::new(call).poll(cx)
        {
            self.solo = None;
            self.answer_call(id, answered);
        }
        while let Some((id, answered)) = core::task::ready!(self.in_flight.poll_next_unpin(cx)) {
            self.answer_call(id, answered);
        }
        if self.solo.is_some() {
            return Poll::Pending;
        }
        Poll::Ready(())
    }

    /// Writes the answer to call `id`; none when it was cancelled meanwhile (`None`): it
    /// ran to its recorded outcome.
    fn answer_call(&self, id: Option<RequestId>, answered: Answered) {
        if let Some(id) = id
            && let Some(line) = answer_line(answered, id, self.current.load(Ordering::Relaxed))
        {
            let _ = self.writer.send(line);
        }
    }

    /// Answers the calls still in flight as they finish, waiting at most
    /// [`DRAIN_TIMEOUT`]; those left are dropped.
    async fn drain(&mut self) {
        let answered = core::future::poll_fn(|cx| self.poll_answers(cx));
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, answered).await;
        self.solo = None;
        self.in_flight = FuturesUnordered::new();
    }

    /// Notes what the session's messages say: that the client is initialized, and that a
    /// call answered here is cancelled.
    fn note(&mut self, message: &ClientJsonRpcMessage) {
        let JsonRpcMessage::Notification(notification) = message else {
            return;
        };
        match &notification.notification {
            ClientNotification::InitializedNotification(_) => self.initialized = true,
            ClientNotification::CancelledNotification(cancelled) => {
                let Some(id) = &cancelled.params.request_id else {
                    return;
                };
                for call in self.solo.iter_mut().chain(self.in_flight.iter_mut()) {
                    if call.id.as_ref() == Some(id) {
                        call.cancelled = true;
                        call.token.cancel();
                    }
                }
            }
            _ => {}
        }
    }

    /// Queues an answer the transport gives itself (no one waits for it).
    fn answer(&mut self, reply: &ServerJsonRpcMessage) {
        let Ok(mut value) = serde_json::to_value(reply) else {
            return;
        };
        // JSON-RPC: an error whose request's id cannot be known says `"id": null`.
        if let Some(object) = value.as_object_mut() {
            object.entry("id").or_insert(serde_json::Value::Null);
        }
        let Ok(mut line) = serde_json::to_vec(&value) else {
            return;
        };
        line.push(b'\n');
        let _ = self.writer.send(line);
    }

    /// The next whole line in `self.line`, or why there is none, writing the answers of
    /// the calls in flight as they finish. Safe to cancel: a partial line stays in
    /// `self.line` for the next call.
    fn poll_next_line(&mut self, cx: &mut Context<'_>) -> Poll<Read> {
        let _ = self.poll_answers(cx);
        loop {
            let available = match core::task::ready!(Pin::new(&mut self.reader).poll_fill_buf(cx)) {
                Ok([]) => return Poll::Ready(Read::End),
                Ok(available) => available,
                Err(error) => return Poll::Ready(Read::Failed(error)),
            };
            let newline = memchr::memchr(b'\n', available);
            let take = newline.map_or(available.len(), |at| at + 1);
            let body = newline.unwrap_or(available.len());
            let mut read = None;
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
            } else if self.line.len() + body > self.limits.max_line_bytes() {
                let room = ID_PREFIX.saturating_sub(self.line.len());
                let prefix_end = body.min(room);
                self.line.extend_from_slice(&available[..prefix_end]);
                self.line.truncate(ID_PREFIX);
                self.discarding = newline.is_none();
                read = Some(Read::Oversized);
            } else {
                self.line.extend_from_slice(&available[..body]);
                if newline.is_some() {
                    read = Some(Read::Line);
                }
            }
            Pin::new(&mut self.reader).consume(take);
            if let Some(read) = read {
                return Poll::Ready(read);
            }
        }
    }
    /// The next message for rmcp; the lines that are not one are answered here on the
    /// way. `None` once the input has ended (the calls in flight answered first).
    async fn next_message(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let frame = match core::future::poll_fn(|cx| self.poll_next_line(cx)).await {
                Read::Line if self.answered_here() => {
                    self.line.clear();
                    continue;
                }
                Read::Line => judge(&self.line, &self.limits),
                Read::Oversized => oversized(&self.line, &self.limits),
                Read::End => {
                    self.drain().await;
                    return None;
                }
                Read::Failed(error) => {
                    std::eprintln!("cairnloop mcp: cannot read the input: {error}");
                    self.drain().await;
                    return None;
                }
            };
            self.line.clear();
            match frame {
                Frame::Message(message) => {
                    self.note(&message);
                    return Some(message);
                }
                Frame::Reply(reply) => self.answer(&reply),
                Frame::Skip(Some(reason)) => {
                    std::eprintln!("cairnloop mcp: a notification was ignored: {reason}");
                }
                Frame::Skip(None) => {}
            }
        }
    }

    /// Reads the input to its end, handing each message on (on a task of its own).
    async fn hand_on(mut self: Box<Self>, messages: mpsc::UnboundedSender<ClientJsonRpcMessage>) {
        while let Some(message) = self.next_message().await {
            if messages.send(message).is_err() {
                // rmcp has stopped reading.
                return;
            }
        }
    }
}

impl<R, W> Drop for LineTransport<R, W> {
    fn drop(&mut self) {
        // The task reading the input ends with the transport.
        if let Input::Task { task, .. } = &self.input {
            task.abort();
        }
    }
}

enum Read {
    Line,
    Oversized,
    End,
    Failed(io::Error),
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn name() -> Cow<'static, str> {
        "cairnloop-stdio".into()
    }

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Response(response) = &item
            && let ServerResult::InitializeResult(initialized) = &response.result
        {
            // ISO dates compare as text.
            self.current.store(
                initialized.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str(),
                Ordering::Relaxed,
            );
        }
        // Written, or queued in order behind what waits; a write that fails later ends
        // the sink, and the next send says so.
        let sent = match (serde_json::to_vec(&item), &self.writer) {
            (Ok(mut line), Some(writer)) => {
                line.push(b'\n');
                writer.send(line)
            }
            (Err(error), _) => Err(io::Error::new(io::ErrorKind::InvalidData, error)),
            (_, None) => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "transport closed",
            )),
        };
        core::future::ready(sent)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.input = match core::mem::replace(&mut self.input, Input::Ended) {
            // Calls are answered here, and the client has said it is initialized: the
            // input is read on a task of its own from now on. Until then it is read
            // here, so the handshake is answered in the order it was sent.
            Input::Here(reader) if reader.fast.is_some() && reader.initialized => {
                let (sender, messages) = mpsc::unbounded_channel();
                let task = tokio::spawn(reader.hand_on(sender));
                Input::Task { messages, task }
            }
            input => input,
        };
        match &mut self.input {
            Input::Here(reader) => reader.next_message().await,
            Input::Task { messages, .. } => messages.recv().await,
            Input::Ended => None,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Input::Task { task, .. } = &self.input {
            task.abort();
        }
        if let Some(writer) = self.writer.take() {
            writer.close().await;
        }
        Ok(())
    }
}
