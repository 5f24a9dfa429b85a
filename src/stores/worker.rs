//! A thread that owns a blocking connection and runs jobs on it, so that an async caller
//! awaits a reply instead of blocking its runtime's worker thread. Runtime-agnostic: the
//! reply is a plain future woken from the worker thread.

use std::borrow::ToOwned;
use std::boxed::Box;
use std::format;
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;

use crate::approvals::StoreError;

type Job<C> = Box<dyn FnOnce(&mut C) + Send>;

/// The owner of a connection `C`, on a thread of its own.
pub(crate) struct Worker<C> {
    jobs: Mutex<Option<mpsc::Sender<Job<C>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<C: Send + 'static> Worker<C> {
    /// Moves `connection` to a new thread named `name`.
    pub(crate) fn spawn(name: &str, mut connection: C) -> Result<Self, StoreError> {
        let (sender, receiver) = mpsc::channel::<Job<C>>();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                for job in receiver {
                    job(&mut connection);
                }
            })
            .map_err(|error| {
                StoreError::Backend(format!("cannot start the store's thread: {error}"))
            })?;
        Ok(Self {
            jobs: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Runs `job` on the connection; the future resolves to its result.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut C) -> Result<T, StoreError> + Send + 'static,
    ) -> Reply<T> {
        let slot = Arc::new(Mutex::new(Slot {
            value: None,
            waker: None,
        }));
        let filled = Arc::clone(&slot);
        let boxed: Job<C> = Box::new(move |connection| {
            let result = job(connection);
            if let Ok(mut slot) = filled.lock() {
                slot.value = Some(result);
                if let Some(waker) = slot.waker.take() {
                    waker.wake();
                }
            }
        });
        let sent = self
            .jobs
            .lock()
            .ok()
            .and_then(|jobs| jobs.as_ref().map(|jobs| jobs.send(boxed).is_ok()))
            .unwrap_or(false);
        if !sent && let Ok(mut slot) = slot.lock() {
            slot.value = Some(Err(StoreError::Backend("the store is closed".into())));
        }
        Reply { slot }
    }

    /// Hands `job` to the worker without waiting: for a guard in `drop`.
    pub(crate) fn detach(&self, job: impl FnOnce(&mut C) + Send + 'static) {
        if let Ok(jobs) = self.jobs.lock()
            && let Some(jobs) = jobs.as_ref()
        {
            let _ = jobs.send(Box::new(job));
        }
    }
}

impl<C> Drop for Worker<C> {
    fn drop(&mut self) {
        // Closing the channel ends the thread after the jobs already handed to it: a move
        // handed over by a guard is still written.
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        if let Ok(mut thread) = self.thread.lock()
            && let Some(thread) = thread.take()
        {
            let _ = thread.join();
        }
    }
}

struct Slot<T> {
    value: Option<Result<T, StoreError>>,
    waker: Option<Waker>,
}

/// The reply to one job.
pub(crate) struct Reply<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

impl<T> Future for Reply<T> {
    type Output = Result<T, StoreError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Ok(mut slot) = self.slot.lock() else {
            return Poll::Ready(Err(StoreError::Backend(
                "the store's reply was lost".into(),
            )));
        };
        match slot.value.take() {
            Some(value) => Poll::Ready(value),
            None => {
                // The worker may have dropped the job without running it (its thread
                // died): then nothing will ever fill the slot.
                if Arc::strong_count(&self.slot) == 1 {
                    return Poll::Ready(Err(StoreError::Backend(
                        "the store's thread stopped".into(),
                    )));
                }
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
