//! A thread that owns a blocking connection and runs jobs on it, so that an async caller
//! awaits a reply instead of blocking its runtime's worker thread. Runtime-agnostic: the
//! reply is a plain future woken from the worker thread.
//!
//! Group commit: the thread takes every job queued at that moment and runs them in one
//! transaction of the connection ([`Batch`]), each write in a savepoint of its own, so
//! one move that fails undoes only itself; replies are given after the commit, so a
//! caller is never told of a write that is not durable yet.
//!
//! Watching: after a batch that changed lanes commits, the thread moves the store's
//! [`StoreWatch`] on; while someone waits, it also asks the connection now and then
//! whether another connection changed the database ([`Batch::changed_elsewhere`]).

use std::borrow::ToOwned;
use std::boxed::Box;
use std::format;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use std::vec::Vec;

use crate::approvals::{StoreError, StoreWatch};

/// At most this many jobs share one commit: a bound on how long one reply waits.
const MOST_PER_BATCH: usize = 256;

/// How often the thread looks for other connections' writes while someone waits.
const LOOK_ELSEWHERE: Duration = Duration::from_millis(25);

/// What a job does to the database.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Access {
    /// Reads only: needs no transaction.
    Read,
    /// Writes, in a savepoint of its own.
    Write,
    /// Writes a lane: a write after whose commit watchers are woken.
    Lanes,
}

/// What the thread does around a batch of jobs.
pub(crate) trait Batch {
    /// Opens the batch's transaction. When it cannot, the batch's writes are answered
    /// with its error and not run (its reads still are).
    fn begin(&mut self) -> Result<(), StoreError>;
    /// Commits the batch's transaction, or rolls it back and says why.
    fn commit(&mut self) -> Result<(), StoreError>;
    /// Whether another connection committed a change since the last look (cheap: the
    /// thread asks it every few milliseconds while someone watches).
    fn changed_elsewhere(&mut self) -> bool;
}

/// Delivers a job's result once its batch's commit is known.
type Done = Box<dyn FnOnce(Result<(), &StoreError>) + Send>;
/// A job, run on the connection, or (given an error) answered with it without running.
type Job<C> = Box<dyn FnOnce(&mut C, Option<&StoreError>) -> Done + Send>;
/// A write nobody waits on, run at the start of the thread's next batch.
type Soon<C> = Box<dyn FnOnce(&mut C) + Send>;

/// Writes handed over without a reply are taken by the thread at its next batch, which
/// is at most [`SOON_EVERY`] away; past this many queued, the thread is woken.
const MOST_SOON: usize = 1024;

/// How often writes handed over without a reply are committed when no other job comes:
/// a commit costs about the same for one record as for a hundred (the transaction, the
/// log's frames, the locks), so at a steady trickle of calls this bounds its cost, and
/// it is as long as a record waits at most.
const SOON_EVERY: Duration = Duration::from_millis(100);

struct Queued<C> {
    access: Access,
    job: Job<C>,
}

/// The owner of a connection `C`, on a thread of its own.
pub(crate) struct Worker<C> {
    jobs: Mutex<Option<mpsc::Sender<Queued<C>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    soon: Arc<Mutex<Vec<Soon<C>>>>,
    /// Whether the last batch committed: after one that did not, writes are not taken
    /// without a reply until one does (their callers wait, and hear of a failure).
    committing: Arc<AtomicBool>,
}

impl<C: Batch + Send + 'static> Worker<C> {
    /// Moves `connection` to a new thread named `name`; `watch` moves on after each
    /// committed change to lanes, and when another connection changed the database.
    pub(crate) fn spawn(
        name: &str,
        mut connection: C,
        watch: StoreWatch,
    ) -> Result<Self, StoreError> {
        let (sender, receiver) = mpsc::channel::<Queued<C>>();
        let soon: Arc<Mutex<Vec<Soon<C>>>> = Arc::default();
        let queued_soon = Arc::clone(&soon);
        let committing = Arc::new(AtomicBool::new(true));
        let committed = Arc::clone(&committing);
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let mut looked = Instant::now();
                let mut soon_at = Instant::now();
                let take_soon = || {
                    queued_soon
                        .lock()
                        .map(|mut soon| core::mem::take(&mut *soon))
                        .unwrap_or_default()
                };
                loop {
                    let first = match receiver.recv_timeout(LOOK_ELSEWHERE) {
                        Ok(first) => Some(first),
                        Err(mpsc::RecvTimeoutError::Timeout) => None,
                        Err(mpsc::RecvTimeoutError::Disconnected) => {
                            // Closed: what was handed over is still written.
                            run_batch(&mut connection, &receiver, take_soon(), None, &watch);
                            return;
                        }
                    };
                    // Writes handed over earlier go first, in the batch of the job that
                    // woke the thread (so every later job sees them), or in one of
                    // their own once they have waited long enough.
                    let soon = if first.is_some() || soon_at.elapsed() >= SOON_EVERY {
                        soon_at = Instant::now();
                        take_soon()
                    } else {
                        Vec::new()
                    };
                    if let Some(ok) = run_batch(&mut connection, &receiver, soon, first, &watch) {
                        committed.store(ok, Ordering::Release);
                    }
                    // Busy or idle, while someone waits another process's writes are
                    // seen within a few milliseconds.
                    if looked.elapsed() >= LOOK_ELSEWHERE {
                        looked = Instant::now();
                        if watch.waiting() > 0 && connection.changed_elsewhere() {
                            watch.notify();
                        }
                    }
                }
            })
            .map_err(|error| {
                StoreError::Backend(format!("cannot start the store's thread: {error}"))
            })?;
        Ok(Self {
            jobs: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
            soon,
            committing,
        })
    }

    /// Hands a write of `value` to the thread without a reply and without waking it: it
    /// runs at the start of the thread's next batch, within [`SOON_EVERY`], before any
    /// job handed over after it. `value` back when the store is closed, or its last batch
    /// failed to commit (nothing was taken).
    pub(crate) fn soon<T: Send + 'static>(
        &self,
        value: T,
        job: impl FnOnce(&mut C, T) + Send + 'static,
    ) -> Result<(), T> {
        if !self.committing.load(Ordering::Acquire) {
            return Err(value);
        }
        let open = self.jobs.lock().is_ok_and(|jobs| jobs.is_some());
        let Ok(mut soon) = self.soon.lock() else {
            return Err(value);
        };
        if !open {
            return Err(value);
        }
        soon.push(Box::new(move |connection: &mut C| job(connection, value)));
        if soon.len() >= MOST_SOON {
            drop(soon);
            // A no-op read wakes the thread, which takes the queue first.
            drop(self.run(Access::Read, |_| Ok(())));
        }
        Ok(())
    }

    /// Runs `job` on the connection; the future resolves to its result once the batch it
    /// ran in has committed. A write job runs in a savepoint of its own.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        access: Access,
        job: impl FnOnce(&mut C) -> Result<T, StoreError> + Send + 'static,
    ) -> Reply<T> {
        let slot = Arc::new(Mutex::new(Slot {
            value: None,
            waker: None,
        }));
        let filled = Arc::clone(&slot);
        let boxed: Job<C> = Box::new(move |connection, refused: Option<&StoreError>| {
            let result = match refused {
                Some(error) => Err(error.clone()),
                None => job(connection),
            };
            Box::new(move |committed: Result<(), &StoreError>| {
                // A failed commit wrote nothing of the batch, and what a job read may
                // have been one of its writes: every job of it gets the commit's error.
                let result = match committed {
                    Ok(()) => result,
                    Err(error) => Err(error.clone()),
                };
                if let Ok(mut slot) = filled.lock() {
                    slot.value = Some(result);
                    if let Some(waker) = slot.waker.take() {
                        waker.wake();
                    }
                }
            })
        });
        let sent = self
            .jobs
            .lock()
            .ok()
            .and_then(|jobs| {
                jobs.as_ref()
                    .map(|jobs| jobs.send(Queued { access, job: boxed }).is_ok())
            })
            .unwrap_or(false);
        if !sent && let Ok(mut slot) = slot.lock() {
            slot.value = Some(Err(StoreError::Backend("the store is closed".into())));
        }
        Reply { slot }
    }

    /// Hands a write to the worker without waiting: for a guard in `drop`.
    pub(crate) fn detach(&self, job: impl FnOnce(&mut C) + Send + 'static) {
        if let Ok(jobs) = self.jobs.lock()
            && let Some(jobs) = jobs.as_ref()
        {
            let job: Job<C> = Box::new(move |connection, refused: Option<&StoreError>| {
                if refused.is_none() {
                    job(connection);
                }
                Box::new(|_| {})
            });
            let _ = jobs.send(Queued {
                access: Access::Lanes,
                job,
            });
        }
    }
}

/// Runs the writes handed over without a reply, then `first` and every job queued behind
/// it (up to [`MOST_PER_BATCH`]), in one transaction; answers the jobs after the commit,
/// and wakes watchers if lanes changed. A write without a reply whose batch cannot begin
/// or commit is lost (its caller was told it might be). Says whether a batch that wrote
/// committed (`None`: nothing was written).
fn run_batch<C: Batch>(
    connection: &mut C,
    receiver: &mpsc::Receiver<Queued<C>>,
    soon: Vec<Soon<C>>,
    first: Option<Queued<C>>,
    watch: &StoreWatch,
) -> Option<bool> {
    let Some(first) = first else {
        if soon.is_empty() {
            return None;
        }
        let committed = connection.begin().and_then(|()| {
            for job in soon {
                job(connection);
            }
            connection.commit()
        });
        return Some(committed.is_ok());
    };
    let mut batch = Vec::from([first]);
    while batch.len() < MOST_PER_BATCH
        && let Ok(next) = receiver.try_recv()
    {
        batch.push(next);
    }
    // Reads alone need no transaction.
    let writes = !soon.is_empty() || batch.iter().any(|queued| queued.access != Access::Read);
    let lanes = batch.iter().any(|queued| queued.access == Access::Lanes);
    let begun = if writes { connection.begin() } else { Ok(()) };
    if begun.is_ok() {
        for job in soon {
            job(connection);
        }
    }
    let done: Vec<Done> = batch
        .into_iter()
        .map(|queued| {
            let refused = begun
                .as_ref()
                .err()
                .filter(|_| queued.access != Access::Read);
            (queued.job)(connection, refused)
        })
        .collect();
    let committed = if writes && begun.is_ok() {
        connection.commit()
    } else {
        Ok(())
    };
    // After the commit, before the replies: a woken watcher finds the change.
    if lanes && writes && begun.is_ok() && committed.is_ok() {
        watch.notify();
    }
    for done in done {
        done(committed.as_ref().map(|_| ()));
    }
    writes.then_some(begun.is_ok() && committed.is_ok())
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
