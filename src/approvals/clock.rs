use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::gate::{Timestamp, Ttl};

/// Where a [`Governor`](crate::Governor) takes the time from: approvals expire, and a
/// backward clock fails closed.
///
/// ```
/// use cairnloop::approvals::{Clock, SystemClock};
///
/// assert!(SystemClock.now().is_some());
/// ```
pub trait Clock: Send + Sync {
    /// The time now, or `None` when the clock cannot tell (nothing time-bound is then
    /// decided).
    fn now(&self) -> Option<Timestamp>;
}

/// Any function that tells the time is a clock.
///
/// ```
/// use cairnloop::approvals::Clock;
/// use cairnloop::gate::Timestamp;
///
/// let frozen = || Some(Timestamp::from_unix_millis(42));
/// assert_eq!(frozen.now(), Some(Timestamp::from_unix_millis(42)));
/// ```
impl<F: Fn() -> Option<Timestamp> + Send + Sync> Clock for F {
    fn now(&self) -> Option<Timestamp> {
        self()
    }
}

/// The system's wall clock.
///
/// ```
/// use cairnloop::approvals::{Clock, SystemClock};
///
/// let now = SystemClock.now().unwrap();
/// assert!(now.unix_millis() > 1_700_000_000_000);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Option<Timestamp> {
        Timestamp::now()
    }
}

/// A clock that moves only when told to: for tests, simulations and replays. Clones share
/// one time.
///
/// ```
/// use cairnloop::approvals::{Clock, ManualClock};
/// use cairnloop::gate::{Timestamp, Ttl};
///
/// let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
/// let seen_by_governor = clock.clone();
/// clock.advance(Ttl::from_secs(1));
/// assert_eq!(seen_by_governor.now(), Some(Timestamp::from_unix_millis(2_000)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock showing `at`.
    ///
    /// ```
    /// # use cairnloop::approvals::{Clock, ManualClock};
    /// # use cairnloop::gate::Timestamp;
    /// assert_eq!(ManualClock::new(Timestamp::from_unix_millis(5)).now(), Some(Timestamp::from_unix_millis(5)));
    /// ```
    #[must_use]
    pub fn new(at: Timestamp) -> Self {
        Self(Arc::new(AtomicU64::new(at.unix_millis())))
    }

    /// Sets the time to `at` (which may be earlier: a backward clock is refused where it
    /// matters).
    ///
    /// ```
    /// # use cairnloop::approvals::{Clock, ManualClock};
    /// # use cairnloop::gate::Timestamp;
    /// let clock = ManualClock::default();
    /// clock.set(Timestamp::from_unix_millis(9));
    /// assert_eq!(clock.now(), Some(Timestamp::from_unix_millis(9)));
    /// ```
    pub fn set(&self, at: Timestamp) {
        self.0.store(at.unix_millis(), Ordering::SeqCst);
    }

    /// Moves the time on by `by`, saturating at the end of time.
    ///
    /// ```
    /// # use cairnloop::approvals::{Clock, ManualClock};
    /// # use cairnloop::gate::{Timestamp, Ttl};
    /// let clock = ManualClock::default();
    /// clock.advance(Ttl::from_millis(3));
    /// assert_eq!(clock.now(), Some(Timestamp::from_unix_millis(3)));
    /// ```
    pub fn advance(&self, by: Ttl) {
        let now = Timestamp::from_unix_millis(self.0.load(Ordering::SeqCst));
        let next = now.checked_add(by).map_or(u64::MAX, Timestamp::unix_millis);
        self.0.store(next, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Option<Timestamp> {
        Some(Timestamp::from_unix_millis(self.0.load(Ordering::SeqCst)))
    }
}
