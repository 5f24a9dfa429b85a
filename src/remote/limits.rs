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
    max_streams: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpLimits {
    /// 1 MiB bodies, 64 levels of nesting, 600 requests per token per minute, 256
    /// requests or streams open at once.
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

/// Most subjects counted at once: past it, windows that ended are dropped first.
const MAX_COUNTED: usize = 100_000;

/// Requests per subject in fixed one-minute windows.
#[derive(Default)]
pub(crate) struct RateCounter {
    windows: Mutex<HashMap<String, (Instant, u32)>>,
}

impl RateCounter {
    /// Counts one request of `subject`; when it is past `limit` in its window, how long
    /// until the window ends.
    pub(crate) fn admit(&self, subject: &str, limit: u32) -> Result<(), Duration> {
        const WINDOW: Duration = Duration::from_secs(60);
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        if windows.len() >= MAX_COUNTED {
            windows.retain(|_, (start, _)| now < *start + WINDOW);
        }
        let window = windows.entry(subject.to_string()).or_insert((now, 0));
        if now >= window.0 + WINDOW {
            *window = (now, 0);
        }
        if window.1 >= limit {
            return Err(window.0 + WINDOW - now);
        }
        window.1 += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_past_its_rate_waits_and_others_do_not() {
        let counter = RateCounter::default();
        for _ in 0..3 {
            assert!(counter.admit("alice", 3).is_ok());
        }
        let wait = counter.admit("alice", 3).unwrap_err();
        assert!(wait <= Duration::from_secs(60) && wait > Duration::from_secs(50));
        assert!(counter.admit("bob", 3).is_ok());
    }
}
