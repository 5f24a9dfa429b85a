//! What one token, one request and the whole server may take.

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The limits of the HTTP transport. Past each, a request gets an error answer and
/// nothing is done: `413` for a body too large, a JSON-RPC error for a message nested
/// too deep, `429` with `Retry-After` for a token past its rate or a server at its stream
/// limit.
///
/// A token's subject may make [`HttpLimits::requests_per_minute`] requests a minute, at
/// an even pace, with bursts of at most [`HttpLimits::burst`] requests back to back (a
/// generic cell rate: a subject that was idle may not spend a minute's budget at once).
///
/// ```
/// use cairnloop::remote::HttpLimits;
/// let limits = HttpLimits::new().with_requests_per_minute(120).with_max_streams(16);
/// assert_eq!(limits.max_body_bytes(), 1 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    max_body_bytes: usize,
    max_depth: usize,
    requests_per_minute: u32,
    burst: u32,
    max_streams: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpLimits {
    /// 1 MiB bodies, 64 levels of nesting, 600 requests per token per minute in bursts
    /// of at most 20, 256 requests or streams open at once.
    ///
    /// ```
    /// use cairnloop::remote::HttpLimits;
    /// let limits = HttpLimits::new();
    /// assert_eq!((limits.max_depth(), limits.requests_per_minute(), limits.max_streams()), (64, 600, 256));
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            max_body_bytes: 1 << 20,
            max_depth: 64,
            requests_per_minute: 600,
            burst: 20,
            max_streams: 256,
        }
    }

    /// The largest request body.
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().with_max_body_bytes(4096).max_body_bytes(), 4096);
    /// ```
    #[must_use]
    pub const fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The deepest nesting of a message.
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().with_max_depth(16).max_depth(), 16);
    /// ```
    #[must_use]
    pub const fn with_max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Requests one token's subject may make per minute.
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().with_requests_per_minute(60).requests_per_minute(), 60);
    /// ```
    #[must_use]
    pub const fn with_requests_per_minute(mut self, requests: u32) -> Self {
        self.requests_per_minute = requests;
        self
    }

    /// The most requests one subject may make back to back, before the pace of
    /// [`HttpLimits::requests_per_minute`] holds (at least 1, at most a minute's
    /// requests).
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().with_burst(5).burst(), 5);
    /// assert_eq!(HttpLimits::new().with_burst(0).burst(), 1);
    /// ```
    #[must_use]
    pub const fn with_burst(mut self, burst: u32) -> Self {
        self.burst = if burst == 0 { 1 } else { burst };
        self
    }

    /// The most requests back to back.
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().burst(), 20);
    /// ```
    #[must_use]
    pub const fn burst(&self) -> u32 {
        self.burst
    }

    /// Requests (and the event streams they open) in progress at once, for the server.
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().with_max_streams(8).max_streams(), 8);
    /// ```
    #[must_use]
    pub const fn with_max_streams(mut self, streams: usize) -> Self {
        self.max_streams = streams;
        self
    }

    /// The largest request body.
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().max_body_bytes(), 1_048_576);
    /// ```
    #[must_use]
    pub const fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The deepest nesting.
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().max_depth(), 64);
    /// ```
    #[must_use]
    pub const fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Requests per token per minute.
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().requests_per_minute(), 600);
    /// ```
    #[must_use]
    pub const fn requests_per_minute(&self) -> u32 {
        self.requests_per_minute
    }

    /// Requests in progress at once.
    ///
    /// ```
    /// # use cairnloop::remote::HttpLimits;
    /// assert_eq!(HttpLimits::new().max_streams(), 256);
    /// ```
    #[must_use]
    pub const fn max_streams(&self) -> usize {
        self.max_streams
    }
}

/// Most subjects counted at once: past it, those whose pace has caught up are dropped.
const MAX_COUNTED: usize = 100_000;

/// Requests per subject by the generic cell rate algorithm: each subject has a
/// theoretical arrival time, which every admitted request moves one interval on; a
/// request is refused while that time is more than a burst ahead of now.
#[derive(Default)]
pub(crate) struct RateCounter {
    arrivals: Mutex<HashMap<String, Instant>>,
}

impl RateCounter {
    /// Counts one request of `subject` now; when it is past its pace, how long until
    /// the next one is let in.
    pub(crate) fn admit(&self, subject: &str, limits: &HttpLimits) -> Result<(), Duration> {
        self.admit_when(subject, limits, Instant::now)
    }

    #[cfg(test)]
    fn admit_at(&self, subject: &str, limits: &HttpLimits, now: Instant) -> Result<(), Duration> {
        self.admit_when(subject, limits, || now)
    }

    /// The clock is read under the lock: a time read before it would be stale by the
    /// wait for the lock, and under contention a request would be refused for the time it
    /// queued, not for its subject's pace.
    fn admit_when(
        &self,
        subject: &str,
        limits: &HttpLimits,
        clock: impl FnOnce() -> Instant,
    ) -> Result<(), Duration> {
        // Zero requests a minute lets nobody in; the interval is at least a nanosecond.
        let per_minute = limits.requests_per_minute();
        if per_minute == 0 {
            return Err(Duration::from_secs(60));
        }
        let interval = (Duration::from_secs(60) / per_minute).max(Duration::from_nanos(1));
        // A burst is never more than a minute's budget.
        let tolerance = interval.saturating_mul(limits.burst().min(per_minute));
        let mut arrivals = self.arrivals.lock().unwrap_or_else(PoisonError::into_inner);
        let now = clock();
        if arrivals.len() >= MAX_COUNTED {
            arrivals.retain(|_, arrival| *arrival > now);
        }
        let arrival = arrivals.get(subject).copied().unwrap_or(now).max(now);
        let next = arrival.checked_add(interval).unwrap_or(arrival);
        let ahead = next.saturating_duration_since(now);
        if ahead > tolerance {
            return Err(ahead - tolerance);
        }
        arrivals.insert(subject.to_string(), next);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_cut_short_and_the_pace_then_holds() {
        let counter = RateCounter::default();
        let limits = HttpLimits::new(); // 600 a minute: one per 100 ms, bursts of 20
        let start = Instant::now();
        let admitted = (0..500)
            .filter(|_| counter.admit_at("alice", &limits, start).is_ok())
            .count();
        assert_eq!(admitted, 20, "500 at once: only the burst");
        let wait = counter.admit_at("alice", &limits, start).unwrap_err();
        assert_eq!(wait, Duration::from_millis(100));
        // Another subject has its own budget.
        assert!(counter.admit_at("bob", &limits, start).is_ok());
        // One interval later, one more; then none until the next.
        let later = start + Duration::from_millis(100);
        assert!(counter.admit_at("alice", &limits, later).is_ok());
        assert!(counter.admit_at("alice", &limits, later).is_err());
        // Over two seconds at any pace: the burst and one per interval, no more.
        let counter = RateCounter::default();
        let mut admitted = 0;
        for millis in 0..2_000 {
            let at = start + Duration::from_millis(millis);
            admitted += (0..5)
                .filter(|_| counter.admit_at("carol", &limits, at).is_ok())
                .count();
        }
        assert_eq!(admitted, 20 + 19, "{admitted} in 2 s");
    }

    /// Many threads at once, far under the pace: none is refused for the time it waited
    /// for the others (the clock was once read before the lock, and a queue longer than
    /// the burst's span refused the last in it).
    #[test]
    fn threads_queued_for_the_counter_are_not_refused_for_waiting() {
        let counter = std::sync::Arc::new(RateCounter::default());
        // The largest rate: an interval of 14 ns, so a burst of 20 spans 280 ns, less
        // than a wait for a contended lock; no thread comes near the pace itself.
        let limits = HttpLimits::new().with_requests_per_minute(u32::MAX);
        let threads = 16;
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(threads));
        let refused: usize = (0..threads)
            .map(|_| {
                let (counter, barrier) = (counter.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    (0..2_000)
                        .filter(|_| counter.admit("one-subject", &limits).is_err())
                        .count()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .sum();
        assert_eq!(
            refused, 0,
            "{refused} of 32,000 refused under a pace of 71 million a second"
        );
    }

    #[test]
    fn a_zero_rate_admits_nobody_and_a_huge_one_no_panic() {
        let counter = RateCounter::default();
        let now = Instant::now();
        let none = HttpLimits::new().with_requests_per_minute(0);
        assert!(counter.admit_at("a", &none, now).is_err());
        let huge = HttpLimits::new()
            .with_requests_per_minute(u32::MAX)
            .with_burst(u32::MAX);
        assert!(counter.admit_at("a", &huge, now).is_ok());
    }
}
