//! MCP over stdio, one JSON-RPC message per line, for rmcp: every line is judged before
//! rmcp sees it, so no line goes unanswered and a call's argument text reaches the
//! strict decoder as the client wrote it.

use alloc::vec::Vec;
use std::borrow::Cow;
use std::io;

use alloc::sync::Arc;
use std::collections::HashMap;

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncWrite, BufReader};
use tokio_util::sync::CancellationToken;

use super::fast::{AnswersAtOnce, answer_line, plain_call};
use super::frame::{Frame, FrameLimits, judge, nests_deeper_than, oversized, without_line_end};
use super::line_sink::LineSink;
use super::server::McpServer;
use crate::approvals::ApprovalStore;

/// How many bytes of an oversized line are kept to find its `id` in.
const ID_PREFIX: usize = 4096;

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
    reader: BufReader<R>,
    line: Vec<u8>,
    /// Dropping the rest of a line that is already too long.
    discarding: bool,
    limits: FrameLimits,
    /// Where answers are written, in the order they are sent; `None` once closed.
    writer: Option<LineSink>,
    _writes: core::marker::PhantomData<fn(W)>,
    /// What answers the calls that run at once, with [`LineTransport::with_fast_calls`].
    fast: Option<Arc<dyn AnswersAtOnce>>,
    /// The session as the transport saw it pass: whether the client said it is
    /// initialized (calls are answered here only after), and whether the agreed
    /// protocol is 2026-07-28 or later.
    initialized: bool,
    current: bool,
    /// The calls answered here and not yet answered, and their cancellation: a call the
    /// client cancels runs on to its recorded outcome, and its answer is dropped.
    in_flight: InFlight,
}

type InFlight = Arc<std::sync::Mutex<HashMap<RequestId, CancellationToken>>>;

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
        Self {
            reader: BufReader::new(reader),
            line: Vec::new(),
            discarding: false,
            limits: FrameLimits::new(),
            writer: Some(LineSink::new(writer)),
            _writes: core::marker::PhantomData,
            fast: None,
            initialized: false,
            current: false,
            in_flight: Arc::default(),
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
        self.fast = server
            .fast_calls()
            .map(|calls| Arc::new(calls) as Arc<dyn AnswersAtOnce>);
        self
    }

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
        let Some(answering) = fast.answer(&call.name, call.arguments) else {
            return false;
        };
        let id = call.id;
        let Some(writer) = self.writer.clone().filter(LineSink::is_open) else {
            // The writer has stopped: nobody is left to answer, and nothing was recorded.
            return true;
        };
        let token = CancellationToken::new();
        lock(&self.in_flight).insert(id.clone(), token.clone());
        let calls = Arc::clone(&self.in_flight);
        let current = self.current;
        tokio::spawn(async move {
            let answered = super::cancel::within_token(token, answering).await;
            // Cancelled meanwhile: the call ran to its recorded outcome; no answer.
            if lock(&calls).remove(&id).is_none() {
                return;
            }
            if let Some(line) = answer_line(answered, id, current) {
                let _ = writer.send(line);
            }
        });
        true
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
                if let Some(id) = &cancelled.params.request_id
                    && let Some(token) = lock(&self.in_flight).remove(id)
                {
                    token.cancel();
                }
            }
            _ => {}
        }
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
        self.limits = limits;
        self
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
        if let Some(writer) = &self.writer {
            let _ = writer.send(line);
        }
    }

    /// The next whole line in `self.line`, or why there is none. Safe to cancel: a
    /// partial line stays in `self.line` for the next call.
    async fn next_line(&mut self) -> Read {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok([]) => return Read::End,
                Ok(available) => available,
                Err(error) => return Read::Failed(error),
            };
            let newline = available.iter().position(|&byte| byte == b'\n');
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
            self.reader.consume(take);
            if let Some(read) = read {
                return read;
            }
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
    R: tokio::io::AsyncRead + Send + Unpin,
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
            self.current =
                initialized.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str();
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
        loop {
            let frame = match self.next_line().await {
                Read::Line if self.answered_here() => {
                    self.line.clear();
                    continue;
                }
                Read::Line => judge(&self.line, &self.limits),
                Read::Oversized => oversized(&self.line, &self.limits),
                Read::End => return None,
                Read::Failed(error) => {
                    std::eprintln!("cairnloop mcp: cannot read the input: {error}");
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

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(writer) = self.writer.take() {
            writer.close().await;
        }
        Ok(())
    }
}

fn lock(in_flight: &InFlight) -> std::sync::MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
    in_flight
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
