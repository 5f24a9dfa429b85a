//! Lane changes between processes on one PostgreSQL database: LISTEN/NOTIFY on one
//! connection of its own (a pooled connection cannot be relied on to receive
//! notifications), with wake-ups coalesced.
//!
//! A writer never notifies inside its own transaction: NOTIFY takes a database-wide lock at
//! commit, which would queue every writer's commit behind every other's. Instead a
//! committed lane change wakes this process's watchers at once and asks the relay to tell
//! the others; the relay sends one `NOTIFY` for every change made meanwhile, at most one
//! per [`COALESCE`]. A notification carries nothing: a watcher reads again.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_postgres::AsyncMessage;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};

use crate::approvals::StoreWatch;

/// The channel (per database) that NOTIFY below names.
const LISTEN: &str = "LISTEN cairnloop_lanes";
/// The least time between two NOTIFYs of one process.
const COALESCE: Duration = Duration::from_millis(10);
/// Waits between attempts to reconnect, doubling up to the last.
const FIRST_RETRY: Duration = Duration::from_millis(50);
const LAST_RETRY: Duration = Duration::from_secs(5);

/// This process's side of the relay: what a committed lane change calls.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    watch: StoreWatch,
    /// Holds at most one wake-up: every change made while the relay is busy is told once.
    wake: Notify,
    /// A change committed here that other processes were not told of yet.
    unsent: AtomicBool,
}

impl Changes {
    pub(crate) fn watch(&self) -> &StoreWatch {
        &self.watch
    }

    /// A lane change committed: wake this process's watchers now, the others soon.
    pub(crate) fn committed(&self) {
        self.watch.notify();
        self.unsent.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// Whether a change is still to be told, clearing it: the caller tells it now.
    pub(crate) fn take_unsent(&self) -> bool {
        self.unsent.swap(false, Ordering::AcqRel)
    }

    fn put_back_unsent(&self) {
        self.unsent.store(true, Ordering::Release);
    }
}

/// Tells other processes that lanes changed; what a closing store sends last, so a
/// change made just before a process ends is not left untold.
pub(crate) const NOTIFY: &str = "NOTIFY cairnloop_lanes";

/// Listens for other processes' changes and tells them this one's, for as long as the
/// store's runtime runs; reconnects by itself after the server or the network went away.
pub(crate) async fn relay<T>(config: tokio_postgres::Config, tls: T, changes: Arc<Changes>)
where
    T: MakeTlsConnect<tokio_postgres::Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<tokio_postgres::Socket>>::Future: Send,
{
    let mut retry = FIRST_RETRY;
    loop {
        if let Ok((client, mut connection)) = config.connect(tls.clone()).await {
            retry = FIRST_RETRY;
            let own = Arc::new(AtomicI32::new(0));
            let (heard, from) = (Arc::clone(&changes), Arc::clone(&own));
            // Drives the connection and turns each notification from another session into
            // a wake-up; ends when the connection does.
            let mut driver = tokio::spawn(poll_fn(move |cx| {
                loop {
                    match connection.poll_message(cx) {
                        Poll::Ready(Some(Ok(AsyncMessage::Notification(note)))) => {
                            if note.process_id() != from.load(Ordering::Relaxed) {
                                heard.watch.notify();
                            }
                        }
                        Poll::Ready(Some(Ok(_))) => {}
                        Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(()),
                        Poll::Pending => return Poll::Pending,
                    }
                }
            }));
            let listening = async {
                let pid: i32 = client
                    .query_one("SELECT pg_backend_pid()", &[])
                    .await?
                    .get(0);
                own.store(pid, Ordering::Relaxed);
                client.batch_execute(LISTEN).await
            };
            if listening.await.is_ok() {
                // What changed while nobody listened: every watcher reads again.
                changes.watch.notify();
                loop {
                    // A change left untold by a broken connection goes first.
                    let woken = changes.unsent.load(Ordering::Acquire) || {
                        let mut notified = pin!(changes.wake.notified());
                        poll_fn(|cx| {
                            if notified.as_mut().poll(cx).is_ready() {
                                return Poll::Ready(true);
                            }
                            match std::pin::Pin::new(&mut driver).poll(cx) {
                                Poll::Ready(_) => Poll::Ready(false),
                                Poll::Pending => Poll::Pending,
                            }
                        })
                        .await
                    };
                    if !woken {
                        break;
                    }
                    if changes.take_unsent() && client.batch_execute(NOTIFY).await.is_err() {
                        changes.put_back_unsent();
                        break;
                    }
                    tokio::time::sleep(COALESCE).await;
                }
            }
            driver.abort();
        }
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(LAST_RETRY);
    }
}
