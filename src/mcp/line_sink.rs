//! Whole lines from many senders to one writer, in the order they were sent: a line the
//! writer takes at once is written by its sender, without a hand-off to another task; the
//! rest waits, in order, for a task that finishes it when the writer is ready again.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::io::AsyncWrite;
use tokio::task::JoinHandle;

/// Lines for one writer (a pipe, a process's input, standard output), sent from any task
/// of a tokio runtime, written whole and in the order they were sent, never interleaved.
///
/// [`send`](LineSink::send) writes the line itself when the writer takes all of it at
/// once, which a pipe with room does: no other task is woken. What the writer does not
/// take waits in a queue, and a task started on first need writes it as the writer
/// becomes ready; later lines wait behind it. A write that fails ends the sink: that
/// line and every later one are refused with the error.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use tokio::io::AsyncReadExt;
/// use cairnloop::mcp::LineSink;
///
/// let (mut reader, writer) = tokio::io::duplex(1 << 10);
/// let sink = LineSink::new(writer);
/// sink.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n".to_vec())?;
/// sink.close().await;
/// let mut text = String::new();
/// reader.read_to_string(&mut text).await?;
/// assert_eq!(text, "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n");
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct LineSink {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// The task that writes what waits, once started.
    finisher: Mutex<Option<JoinHandle<()>>>,
}

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

struct State {
    /// `None` once closed or failed.
    writer: Option<Writer>,
    /// Bytes sent and not yet taken by the writer, in order.
    waiting: Vec<u8>,
    /// Whether the writer has taken bytes it has not yet been asked to flush.
    unflushed: bool,
    /// Whether no more lines are taken (what waits is still written).
    closing: bool,
    /// Why the writer failed.
    failed: Option<(io::ErrorKind, alloc::string::String)>,
    /// The finishing task's waker, while it has nothing to do.
    idle: Option<Waker>,
}

impl LineSink {
    /// A sink writing to `writer`. Needs no runtime until a line waits.
    ///
    /// ```
    /// let sink = cairnloop::mcp::LineSink::new(tokio::io::sink());
    /// # drop(sink);
    /// ```
    pub fn new(writer: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    writer: Some(Box::new(writer)),
                    waiting: Vec::new(),
                    unflushed: false,
                    closing: false,
                    failed: None,
                    idle: None,
                }),
                finisher: Mutex::new(None),
            }),
        }
    }

    /// Sends `line` (ending with its own newline): written now when the writer takes it
    /// whole, otherwise queued behind what waits. Call it from a task of a tokio runtime.
    ///
    /// # Errors
    ///
    /// The writer's error once a write has failed; [`io::ErrorKind::NotConnected`] once
    /// the sink is closed. The line is then not written.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let sink = cairnloop::mcp::LineSink::new(tokio::io::sink());
    /// assert!(sink.send(b"{}\n".to_vec()).is_ok());
    /// # });
    /// ```
    pub fn send(&self, line: Vec<u8>) -> io::Result<()> {
        let mut state = self.shared.lock();
        state.refusal()?;
        if state.waiting.is_empty() && !state.unflushed {
            let mut cx = Context::from_waker(Waker::noop());
            let taken = state.write_some(&mut cx, &line)?;
            if taken == line.len() {
                // A pipe or a process's input has nothing to flush; a buffered writer
                // that cannot flush now is flushed by the finishing task.
                return match state.flush(&mut cx)? {
                    Poll::Ready(()) => Ok(()),
                    Poll::Pending => {
                        drop(state);
                        self.wake_finisher()
                    }
                };
            }
            state.waiting.extend_from_slice(&line[taken..]);
        } else {
            state.waiting.extend_from_slice(&line);
        }
        drop(state);
        self.wake_finisher()
    }

    /// Whether the sink still takes lines: not closed, and no write has failed.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let sink = cairnloop::mcp::LineSink::new(tokio::io::sink());
    /// assert!(sink.is_open());
    /// sink.close().await;
    /// assert!(!sink.is_open());
    /// # });
    /// ```
    #[must_use]
    pub fn is_open(&self) -> bool {
        self.shared.lock().refusal().is_ok()
    }

    /// Takes no more lines, writes what waits, and drops the writer (closing a pipe).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let sink = cairnloop::mcp::LineSink::new(tokio::io::sink());
    /// sink.close().await;
    /// assert!(sink.send(b"{}\n".to_vec()).is_err());
    /// # });
    /// ```
    pub async fn close(&self) {
        self.shared.lock().closing = true;
        if self.wake_finisher().is_err() {
            return;
        }
        let finisher = self
            .shared
            .finisher
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(finisher) = finisher {
            let _ = finisher.await;
        }
    }

    /// Drops the writer now (closing a pipe), with what waits: for a peer that may no
    /// longer read.
    ///
    /// ```
    /// let sink = cairnloop::mcp::LineSink::new(tokio::io::sink());
    /// sink.abandon();
    /// assert!(!sink.is_open());
    /// ```
    pub fn abandon(&self) {
        let mut state = self.shared.lock();
        state.closing = true;
        state.waiting = Vec::new();
        drop(state.writer.take());
        if let Some(idle) = state.idle.take() {
            idle.wake();
        }
    }

    /// Wakes the finishing task, starting it on first need.
    fn wake_finisher(&self) -> io::Result<()> {
        if let Some(idle) = self.shared.lock().idle.take() {
            idle.wake();
            return Ok(());
        }
        let mut finisher = self
            .shared
            .finisher
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if finisher.is_none() {
            let runtime = tokio::runtime::Handle::try_current()
                .map_err(|error| io::Error::other(alloc::format!("no runtime: {error}")))?;
            let shared = Arc::clone(&self.shared);
            *finisher =
                Some(runtime.spawn(core::future::poll_fn(move |cx| shared.lock().finish(cx))));
        }
        Ok(())
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// Why no line is taken, if none is.
    fn refusal(&self) -> io::Result<()> {
        if let Some((kind, message)) = &self.failed {
            return Err(io::Error::new(*kind, message.clone()));
        }
        if self.closing || self.writer.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the line sink is closed",
            ));
        }
        Ok(())
    }

    /// Ends the sink with `error`, dropping the writer and what waits.
    fn fail(&mut self, error: &io::Error) -> io::Error {
        self.failed = Some((error.kind(), alloc::string::ToString::to_string(error)));
        self.writer = None;
        self.waiting = Vec::new();
        io::Error::new(error.kind(), alloc::string::ToString::to_string(error))
    }

    /// Writes as much of `bytes` as the writer takes now; how much it took.
    fn write_some(&mut self, cx: &mut Context<'_>, bytes: &[u8]) -> io::Result<usize> {
        let mut taken = 0;
        while taken < bytes.len() {
            let Some(writer) = self.writer.as_mut() else {
                break;
            };
            match Pin::new(writer).poll_write(cx, &bytes[taken..]) {
                Poll::Ready(Ok(0)) => {
                    let error = io::Error::new(io::ErrorKind::WriteZero, "the writer took nothing");
                    return Err(self.fail(&error));
                }
                Poll::Ready(Ok(written)) => {
                    taken += written;
                    self.unflushed = true;
                }
                Poll::Ready(Err(error)) => return Err(self.fail(&error)),
                Poll::Pending => break,
            }
        }
        Ok(taken)
    }

    /// Flushes what the writer took; `Pending` when it cannot yet.
    fn flush(&mut self, cx: &mut Context<'_>) -> io::Result<Poll<()>> {
        if !self.unflushed {
            return Ok(Poll::Ready(()));
        }
        let Some(writer) = self.writer.as_mut() else {
            return Ok(Poll::Ready(()));
        };
        match Pin::new(writer).poll_flush(cx) {
            Poll::Ready(Ok(())) => {
                self.unflushed = false;
                Ok(Poll::Ready(()))
            }
            Poll::Ready(Err(error)) => Err(self.fail(&error)),
            Poll::Pending => Ok(Poll::Pending),
        }
    }

    /// The finishing task's step: writes what waits and flushes it; ends once the sink
    /// is closed with nothing waiting, or has failed.
    fn finish(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if self.writer.is_none() {
                return Poll::Ready(());
            }
            if !self.waiting.is_empty() {
                let waiting = core::mem::take(&mut self.waiting);
                let taken = match self.write_some(cx, &waiting) {
                    Ok(taken) => taken,
                    Err(_) => return Poll::Ready(()),
                };
                // Lines sent meanwhile cannot exist (the lock is held): put back the rest.
                self.waiting = waiting;
                self.waiting.drain(..taken);
                if !self.waiting.is_empty() {
                    return Poll::Pending;
                }
                continue;
            }
            match self.flush(cx) {
                Err(_) => return Poll::Ready(()),
                Ok(Poll::Pending) => return Poll::Pending,
                Ok(Poll::Ready(())) => {}
            }
            if self.closing {
                drop(self.writer.take());
                return Poll::Ready(());
            }
            self.idle = Some(cx.waker().clone());
            return Poll::Pending;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use tokio::io::AsyncReadExt;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// Closes `sink` while `reader` reads to the end; what it read.
    async fn close_and_read(sink: &LineSink, reader: &mut tokio::io::DuplexStream) -> Vec<u8> {
        let closing = tokio::spawn({
            let sink = sink.clone();
            async move { sink.close().await }
        });
        let mut read = Vec::new();
        reader.read_to_end(&mut read).await.unwrap();
        closing.await.unwrap();
        read
    }

    #[test]
    fn lines_the_writer_cannot_take_at_once_follow_in_order() {
        runtime().block_on(async {
            // A pipe far smaller than what is sent: most lines wait for the reader.
            let (mut reader, writer) = tokio::io::duplex(16);
            let sink = LineSink::new(writer);
            let lines: Vec<Vec<u8>> = (0..200)
                .map(|n| {
                    alloc::format!("{{\"n\":{n},\"pad\":\"{}\"}}\n", "x".repeat(n % 37))
                        .into_bytes()
                })
                .collect();
            for line in &lines {
                sink.send(line.clone()).unwrap();
            }
            assert_eq!(close_and_read(&sink, &mut reader).await, lines.concat());
            assert!(sink.send(b"late\n".to_vec()).is_err());
        });
    }

    #[test]
    fn a_line_sent_while_another_waits_never_overtakes_it_when_room_opens() {
        runtime().block_on(async {
            let (mut reader, writer) = tokio::io::duplex(16);
            let sink = LineSink::new(writer);
            let first = alloc::format!("{{\"first\":\"{}\"}}\n", "a".repeat(30)).into_bytes();
            let second = b"{\"second\":1}\n".to_vec();
            sink.send(first.clone()).unwrap();
            // Room opens before the finishing task has run: the next line still queues.
            let mut start = [0; 16];
            reader.read_exact(&mut start).await.unwrap();
            sink.send(second.clone()).unwrap();
            let rest = close_and_read(&sink, &mut reader).await;
            assert_eq!([&start[..], &rest].concat(), [first, second].concat());
        });
    }

    #[test]
    fn a_failed_write_refuses_that_line_and_every_later_one() {
        runtime().block_on(async {
            let (reader, writer) = tokio::io::duplex(64);
            drop(reader);
            let sink = LineSink::new(writer);
            let error = sink.send(b"{}\n".to_vec()).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
            assert_eq!(
                sink.send(b"{}\n".to_vec()).unwrap_err().kind(),
                io::ErrorKind::BrokenPipe
            );
            assert!(!sink.is_open());
        });
    }

    #[test]
    fn abandoning_drops_what_waits_and_closes_the_writer() {
        runtime().block_on(async {
            let (mut reader, writer) = tokio::io::duplex(4);
            let sink = LineSink::new(writer);
            sink.send(vec![b'x'; 64]).unwrap();
            sink.abandon();
            let mut read = Vec::new();
            reader.read_to_end(&mut read).await.unwrap();
            // What the pipe had taken before; nothing after, and the pipe ended.
            assert_eq!(read, vec![b'x'; 4]);
        });
    }
}
