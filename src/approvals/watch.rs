//! Telling waiters that a store changed: a generation counter and the tasks parked on it.

use std::collections::{BTreeMap, BinaryHeap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use std::vec::Vec;

/// A store's change signal: a generation that moves on after every write the store
/// commits (and, for a shared database, after writes of other processes), and a way to
/// wait for it to move.
///
/// A watcher never learns *what* changed: it notes the generation, reads what it needs,
/// and waits for the generation to move on before reading again. So no change is lost
/// between a read and the wait, and many changes wake a waiter once.
///
/// ```
/// use std::time::Duration;
/// use cairnloop::approvals::StoreWatch;
///
/// let watch = StoreWatch::new();
/// let seen = watch.generation();
/// watch.notify();
/// // Already moved on: resolves at once.
/// assert!(pollster::block_on(watch.changed(seen, Duration::from_secs(5))));
/// // Nothing more happens: resolves `false` at the deadline.
/// assert!(!pollster::block_on(watch.changed(watch.generation(), Duration::from_millis(10))));
/// ```
#[derive(Clone, Debug, Default)]
pub struct StoreWatch {
    inner: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    generation: AtomicU64,
    waiters: Mutex<Waiters>,
}

#[derive(Debug, Default)]
struct Waiters {
    next: u64,
    parked: BTreeMap<u64, Waker>,
}

impl StoreWatch {
    /// A signal no write has moved yet.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::StoreWatch::new().generation(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The current generation: note it before reading, wait for it to move on after.
    ///
    /// ```
    /// let watch = cairnloop::approvals::StoreWatch::new();
    /// watch.notify();
    /// assert_eq!(watch.generation(), 1);
    /// ```
    pub fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    /// Moves the generation on and wakes every waiter. A store calls it after a commit
    /// (never before: a woken reader must find the write).
    ///
    /// ```
    /// let watch = cairnloop::approvals::StoreWatch::new();
    /// let other = watch.clone();
    /// other.notify();
    /// assert_eq!(watch.generation(), 1);
    /// ```
    pub fn notify(&self) {
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        let parked = match self.inner.waiters.lock() {
            Ok(mut waiters) => core::mem::take(&mut waiters.parked),
            Err(_) => return,
        };
        for waker in parked.into_values() {
            waker.wake();
        }
    }

    /// How many tasks are waiting now (a store that must look for other processes'
    /// writes looks only while someone waits).
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::StoreWatch::new().waiting(), 0);
    /// ```
    pub fn waiting(&self) -> usize {
        self.inner
            .waiters
            .lock()
            .map(|waiters| waiters.parked.len())
            .unwrap_or(0)
    }

    /// Resolves `true` once the generation differs from `seen`, or `false` when
    /// `timeout` passes first. Runtime-agnostic: the deadline is kept by a timer thread
    /// of the library's, so any executor (or `pollster`) can await it.
    ///
    /// ```
    /// use std::time::Duration;
    /// let watch = cairnloop::approvals::StoreWatch::new();
    /// let waker = watch.clone();
    /// let seen = watch.generation();
    /// std::thread::spawn(move || waker.notify());
    /// assert!(pollster::block_on(watch.changed(seen, Duration::from_secs(10))));
    /// ```
    pub fn changed(&self, seen: u64, timeout: Duration) -> Changed {
        Changed {
            watch: self.clone(),
            seen,
            deadline: Instant::now().checked_add(timeout),
            slot: None,
            alarm: None,
        }
    }

    fn park(&self, slot: &mut Option<u64>, waker: &Waker) {
        let Ok(mut waiters) = self.inner.waiters.lock() else {
            return;
        };
        let id = *slot.get_or_insert_with(|| {
            waiters.next += 1;
            waiters.next
        });
        waiters.parked.insert(id, waker.clone());
    }

    fn unpark(&self, id: u64) {
        if let Ok(mut waiters) = self.inner.waiters.lock() {
            waiters.parked.remove(&id);
        }
    }
}

/// The future of [`StoreWatch::changed`]: `true` when the generation moved on, `false`
/// at the deadline.
///
/// ```
/// use std::time::Duration;
/// let watch = cairnloop::approvals::StoreWatch::new();
/// let changed: cairnloop::approvals::Changed = watch.changed(0, Duration::ZERO);
/// assert!(!pollster::block_on(changed));
/// ```
#[derive(Debug)]
pub struct Changed {
    watch: StoreWatch,
    seen: u64,
    /// `None`: too far ahead to represent, so never.
    deadline: Option<Instant>,
    slot: Option<u64>,
    alarm: Option<Arc<Mutex<Option<Waker>>>>,
}

impl Future for Changed {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = self.get_mut();
        if this.watch.generation() != this.seen {
            return Poll::Ready(true);
        }
        if this
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return Poll::Ready(false);
        }
        this.watch.park(&mut this.slot, cx.waker());
        // A notify between the first check and parking took no waker of ours: look again.
        if this.watch.generation() != this.seen {
            return Poll::Ready(true);
        }
        if let Some(deadline) = this.deadline {
            match &this.alarm {
                Some(alarm) => {
                    if let Ok(mut waker) = alarm.lock() {
                        *waker = Some(cx.waker().clone());
                    }
                }
                None => {
                    let alarm = Arc::new(Mutex::new(Some(cx.waker().clone())));
                    set_alarm(deadline, Arc::clone(&alarm));
                    this.alarm = Some(alarm);
                }
            }
        }
        Poll::Pending
    }
}

impl Drop for Changed {
    fn drop(&mut self) {
        if let Some(id) = self.slot {
            self.watch.unpark(id);
        }
        // The timer may still hold the alarm until its deadline; it wakes nobody then.
        if let Some(alarm) = &self.alarm
            && let Ok(mut waker) = alarm.lock()
        {
            waker.take();
        }
    }
}

type Alarm = (Instant, Arc<Mutex<Option<Waker>>>);

/// Hands a deadline to the one timer thread, started on first use.
fn set_alarm(deadline: Instant, alarm: Arc<Mutex<Option<Waker>>>) {
    static TIMER: OnceLock<Mutex<mpsc::Sender<Alarm>>> = OnceLock::new();
    let timer = TIMER.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<Alarm>();
        // If the thread cannot start, the sends below fail and waiters wake only on a
        // change: a deadline is then missed, never a change.
        let _ = std::thread::Builder::new()
            .name("cairnloop-timer".into())
            .spawn(move || run_timer(&receiver));
        Mutex::new(sender)
    });
    if let Ok(sender) = timer.lock() {
        let _ = sender.send((deadline, alarm));
    }
}

fn run_timer(receiver: &mpsc::Receiver<Alarm>) {
    // Ordered by deadline (earliest first through `Reverse`), then by arrival.
    let mut heap: BinaryHeap<core::cmp::Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut alarms: BTreeMap<u64, Arc<Mutex<Option<Waker>>>> = BTreeMap::new();
    let mut next = 0u64;
    loop {
        let received = match heap.peek() {
            Some(core::cmp::Reverse((deadline, _))) => {
                let wait = deadline.saturating_duration_since(Instant::now());
                match receiver.recv_timeout(wait) {
                    Ok(alarm) => Some(alarm),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
            None => match receiver.recv() {
                Ok(alarm) => Some(alarm),
                Err(_) => return,
            },
        };
        if let Some((deadline, alarm)) = received {
            next += 1;
            heap.push(core::cmp::Reverse((deadline, next)));
            alarms.insert(next, alarm);
        }
        let now = Instant::now();
        let mut due: Vec<Arc<Mutex<Option<Waker>>>> = Vec::new();
        while let Some(core::cmp::Reverse((deadline, id))) = heap.peek().copied() {
            if deadline > now {
                break;
            }
            heap.pop();
            due.extend(alarms.remove(&id));
        }
        for alarm in due {
            let waker = alarm.lock().ok().and_then(|mut waker| waker.take());
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_on_another_thread_is_woken_by_a_notify() {
        let watch = StoreWatch::new();
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let (w, b) = (watch.clone(), Arc::clone(&barrier));
        let seen = watch.generation();
        let waiter = std::thread::spawn(move || {
            b.wait();
            pollster::block_on(w.changed(seen, Duration::from_secs(30)))
        });
        barrier.wait();
        watch.notify();
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn a_deadline_ends_the_wait_and_leaves_no_waiter_behind() {
        let watch = StoreWatch::new();
        let started = Instant::now();
        assert!(!pollster::block_on(
            watch.changed(0, Duration::from_millis(30))
        ));
        assert!(started.elapsed() >= Duration::from_millis(30));
        assert_eq!(watch.waiting(), 0);
    }
}
