//! The queue's live updates: server-sent events that say "the lanes changed", nothing
//! more. The page then fetches its rows as it would without them, through the same
//! session and the same filters.

use std::boxed::Box;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::string::ToString;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::response::sse::Event;
use futures_core::Stream;

use crate::approvals::{Changed, StoreWatch};

/// The least time between two events of one stream: a store that moves thousands of
/// lanes a second does not make every open page fetch its rows as often.
const GAP: Duration = Duration::from_millis(200);
/// How long one stream lasts; the browser then reconnects (after [`RETRY`]) through the
/// session check again, so a stream never outlives a session by more than this.
pub(super) const LIFETIME: Duration = Duration::from_secs(60);
/// How soon a browser reconnects after a stream ends.
const RETRY: Duration = Duration::from_secs(1);
/// How often a quiet stream looks whether its session still stands: one that ended
/// (signed out, in another tab, say) ends the stream, and the page learns it on reconnect.
const SESSION_LOOK: Duration = Duration::from_secs(1);
/// Streams open at once, for all operators together; past it a page polls instead.
pub(super) const MOST_STREAMS: usize = 256;

/// How many streams are open.
#[derive(Debug, Default)]
pub(super) struct StreamCount(Arc<AtomicUsize>);

impl StreamCount {
    /// A place for one more stream, or `None` when all are taken.
    pub(super) fn take(&self) -> Option<StreamSlot> {
        let count = Arc::clone(&self.0);
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < MOST_STREAMS).then_some(open + 1)
            })
            .ok()
            .map(|_| StreamSlot(count))
    }
}

/// One open stream's place, given back when the stream ends.
#[derive(Debug)]
pub(super) struct StreamSlot(Arc<AtomicUsize>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The events of one open page: one at the start (with the reconnect delay), then one
/// after each change of the lanes, at most one per [`GAP`], until [`LIFETIME`].
pub(super) struct LaneEvents {
    watch: StoreWatch,
    seen: u64,
    started: bool,
    until: Instant,
    waiting: Option<Changed>,
    gap: Option<Pin<Box<tokio::time::Sleep>>>,
    session_stands: Box<dyn Fn() -> bool + Send>,
    _slot: StreamSlot,
}

impl LaneEvents {
    pub(super) fn new(
        watch: StoreWatch,
        slot: StreamSlot,
        session_stands: impl Fn() -> bool + Send + 'static,
    ) -> Self {
        Self {
            seen: watch.generation(),
            watch,
            started: false,
            until: Instant::now() + LIFETIME,
            waiting: None,
            gap: None,
            session_stands: Box::new(session_stands),
            _slot: slot,
        }
    }
}

impl Stream for LaneEvents {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if !this.started {
            this.started = true;
            return Poll::Ready(Some(Ok(Event::default().retry(RETRY).comment("lanes"))));
        }
        if let Some(gap) = this.gap.as_mut() {
            if gap.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.gap = None;
        }
        loop {
            let left = this.until.saturating_duration_since(Instant::now());
            if left.is_zero() || !(this.session_stands)() {
                return Poll::Ready(None);
            }
            let (watch, seen) = (&this.watch, this.seen);
            let waiting = this
                .waiting
                .get_or_insert_with(|| watch.changed(seen, left.min(SESSION_LOOK)));
            match Pin::new(waiting).poll(cx) {
                Poll::Pending => return Poll::Pending,
                // Quiet for a while: look at the session (above), then wait again.
                Poll::Ready(false) => this.waiting = None,
                Poll::Ready(true) => break,
            }
        }
        this.waiting = None;
        this.seen = this.watch.generation();
        this.gap = Some(Box::pin(tokio::time::sleep(GAP)));
        let event = Event::default().event("lanes").data(this.seen.to_string());
        Poll::Ready(Some(Ok(event)))
    }
}
