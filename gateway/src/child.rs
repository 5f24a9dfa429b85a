//! An upstream's process as an MCP transport whose output is read within a bound per
//! frame: the moment a frame crosses it, reading stops, what was read is dropped, and the
//! connection ends, so a call waiting on that frame is answered at once with the reason.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use cairnloop::mcp::LineSink;
use process_wrap::tokio::ChildWrapper;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader, ReadBuf};
use tokio::process::ChildStdout;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::direct::Direct;

/// How long a closing upstream is given to end by itself, and again after `SIGTERM`,
/// before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// Reads `inner`, and fails the read in which a line (a JSON-RPC frame) runs past `bound`
/// bytes before its newline, after setting `crossed`: nothing of that read is handed on.
pub(crate) struct FrameBound<R> {
    inner: R,
    bound: usize,
    /// Bytes of the line still open, read so far.
    open: usize,
    crossed: Arc<AtomicBool>,
}

impl<R> FrameBound<R> {
    pub(crate) fn new(inner: R, bound: usize, crossed: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            bound,
            open: 0,
            crossed,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for FrameBound<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let mut rest = &buf.filled()[before..];
        let mut open = this.open;
        // Most reads end on a newline and hold less than the bound with the line already
        // open: no line in them can cross it, and only the last line's length is kept.
        if open.saturating_add(rest.len()) <= this.bound {
            this.open = match rest.iter().rposition(|&byte| byte == b'\n') {
                Some(last) => rest.len() - last - 1,
                None => open + rest.len(),
            };
            return Poll::Ready(Ok(()));
        }
        let mut crossed = false;
        loop {
            match rest.iter().position(|&byte| byte == b'\n') {
                Some(end) => {
                    crossed |= open.saturating_add(end) > this.bound;
                    open = 0;
                    rest = &rest[end + 1..];
                }
                None => {
                    open = open.saturating_add(rest.len());
                    crossed |= open > this.bound;
                    break;
                }
            }
        }
        this.open = open;
        if crossed {
            this.crossed.store(true, Ordering::SeqCst);
            buf.set_filled(before);
            return Poll::Ready(Err(io::Error::other("a frame crossed its bound")));
        }
        Poll::Ready(Ok(()))
    }
}

/// How many of an upstream's messages for rmcp (not answers to direct calls) wait to be
/// taken before its output is read no further.
const MESSAGES_WAITING: usize = 64;

/// A child process spoken to over its standard input and output, its output read through
/// [`FrameBound`] one line (one frame) at a time by a task of its own: a line that
/// answers a [`Direct`] call is handed to it whole, any other is decoded for rmcp, whose
/// loop is then woken only for those. Closing it closes its input, waits for it to end,
/// asks it to stop (`SIGTERM`), and kills it; one whose frame crossed the bound is killed
/// at once (its stream cannot be followed again, and the calls waiting on it are
/// answered only once it is closed); dropping it kills it.
pub(crate) struct BoundedChild {
    /// The messages for rmcp; closed when the output ends, fails, or crosses its bound.
    messages: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    /// The task that reads the output.
    reader: JoinHandle<()>,
    direct: Arc<Direct>,
    /// The child's input, shared with the direct calls, so that rmcp's frames and
    /// theirs are written whole and never interleave.
    input: LineSink,
    crossed: Arc<AtomicBool>,
    /// Killed as it is dropped (`KillOnDrop`), unless it ended first.
    child: Option<Box<dyn ChildWrapper>>,
}

impl BoundedChild {
    /// Takes `child`'s input and output; its frames are cut at `bound` bytes, and a cut
    /// sets `crossed`. Also gives the way to call it beside rmcp, each call waiting at
    /// most `call_timeout`. Inside a tokio runtime: its output is read by a task.
    pub(crate) fn new(
        mut child: Box<dyn ChildWrapper>,
        bound: usize,
        crossed: Arc<AtomicBool>,
        call_timeout: Duration,
    ) -> io::Result<(Self, Arc<Direct>)> {
        let taken = |what| io::Error::other(format!("the child's {what} was not piped"));
        let stdin = child
            .inner_mut()
            .stdin()
            .take()
            .ok_or_else(|| taken("input"))?;
        let stdout = child
            .inner_mut()
            .stdout()
            .take()
            .ok_or_else(|| taken("output"))?;
        let input = LineSink::new(stdin);
        let direct = Direct::start(input.clone(), call_timeout);
        let output = BufReader::with_capacity(
            64 * 1024,
            FrameBound::new(stdout, bound, Arc::clone(&crossed)),
        );
        let (sender, messages) = mpsc::channel(MESSAGES_WAITING);
        let reader = tokio::spawn(read_output(output, Arc::clone(&direct), sender));
        let transport = Self {
            messages,
            reader,
            direct: Arc::clone(&direct),
            input,
            crossed,
            child: Some(child),
        };
        Ok((transport, direct))
    }

    async fn shut_down(&mut self) -> io::Result<()> {
        // The child's input is closed at once: what waits for a child that no longer
        // reads would never be written.
        self.input.abandon();
        self.reader.abort();
        self.direct.close();
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        let crossed = self.crossed.load(Ordering::SeqCst);
        if crossed || tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_err() {
            #[cfg(unix)]
            if !crossed
                && child.signal(libc::SIGTERM).is_ok()
                && tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok()
            {
                self.child = None;
                return Ok(());
            }
            Box::into_pin(child.kill()).await?;
        }
        self.child = None;
        Ok(())
    }
}

impl Drop for BoundedChild {
    fn drop(&mut self) {
        self.reader.abort();
        self.direct.close();
        self.input.abandon();
    }
}

/// Reads `output` to its end: each line that answers a direct call is handed to it, and
/// each other line that is a message goes to rmcp (`messages`), as rmcp's own reader
/// would (a line that is no message it knows is passed over). When the output ends,
/// fails, or crosses its bound, the direct calls still waiting are told, and `messages`
/// closes.
async fn read_output(
    mut output: BufReader<FrameBound<ChildStdout>>,
    direct: Arc<Direct>,
    messages: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
) {
    let mut line = Vec::new();
    // A read of 0 bytes is the output's end; one that leaves the line open ended inside
    // it, with nothing whole left to read.
    while matches!(output.read_until(b'\n', &mut line).await, Ok(read) if read > 0)
        && line.last() == Some(&b'\n')
    {
        let text = frame_text(&line);
        if !text.is_empty()
            && !direct.take(text)
            && let Ok(message) = serde_json::from_slice(text)
            && messages.send(message).await.is_err()
        {
            // rmcp has stopped reading.
            break;
        }
        line.clear();
    }
    direct.close();
}

/// A line without its end (`\n` or `\r\n`) and without a leading byte order mark.
fn frame_text(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

impl Transport<RoleClient> for BoundedChild {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Written, or queued in order behind what waits; a write that fails later ends
        // the sink, and the next send says so.
        let sent = serde_json::to_vec(&item)
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
            .and_then(|mut line| {
                line.push(b'\n');
                self.input.send(line)
            });
        std::future::ready(sent)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.messages.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shut_down()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use tokio::io::AsyncReadExt;

    /// Hands out one chunk per read, as a pipe would.
    struct Chunks(VecDeque<Vec<u8>>);

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if let Some(chunk) = self.0.pop_front() {
                buf.put_slice(&chunk);
            }
            Poll::Ready(Ok(()))
        }
    }

    /// What a reader bounded at `bound` hands on from `chunks`, and whether it was cut.
    fn read_through(chunks: &[&str], bound: usize) -> (String, bool) {
        let chunks = Chunks(chunks.iter().map(|c| c.as_bytes().to_vec()).collect());
        let crossed = Arc::new(AtomicBool::new(false));
        let mut bounded = FrameBound::new(chunks, bound, Arc::clone(&crossed));
        let mut out = Vec::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let _ = runtime.block_on(bounded.read_to_end(&mut out));
        (
            String::from_utf8(out).unwrap(),
            crossed.load(Ordering::SeqCst),
        )
    }

    #[test]
    fn frames_within_the_bound_pass_whole_however_they_are_split() {
        let (out, crossed) = read_through(&["abcd\nab", "cd\n", "a", "bcd", "\n"], 4);
        assert_eq!((out.as_str(), crossed), ("abcd\nabcd\nabcd\n", false));
    }

    #[test]
    fn the_read_that_crosses_the_bound_fails_and_hands_nothing_on() {
        // A line split over reads: the third byte past the bound's first two.
        assert_eq!(read_through(&["ab\nab", "cde"], 4), ("ab\nab".into(), true));
        // A whole long line inside one read, followed by a short one.
        assert_eq!(
            read_through(&["ok\n", "abcde\nok\n"], 4),
            ("ok\n".into(), true)
        );
        // A line exactly at the bound passes; its newline does not count.
        assert_eq!(read_through(&["abcd", "\n"], 4), ("abcd\n".into(), false));
        // Reads that each fit: the open line's length carries from one to the next.
        assert_eq!(
            read_through(&["ab\ncd", "efg", "h", "i"], 6),
            ("ab\ncdefgh".into(), true)
        );
        assert_eq!(
            read_through(&["ab\ncd", "efgh\n", "x\n"], 6),
            ("ab\ncdefgh\nx\n".into(), false)
        );
    }
}
