//! The database server's clock, told in this process without a query per move: the
//! server's time at its last reading plus the monotonic time since. Every process that
//! shares the server then decides expiries, leases and sweeps by one clock, whatever its
//! host's clock says.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::gate::Timestamp;

/// How often the server's clock is read again (the monotonic count drifts from it by
/// parts per million at most in between).
pub(crate) const READ_AGAIN: Duration = Duration::from_secs(30);

/// The statement that reads the server's clock, in milliseconds since the Unix epoch:
/// `clock_timestamp()`, the time now, not the transaction's start.
pub(crate) const READ_SERVER_CLOCK: &str =
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The server's time at a reading and the instant in this process it stands for, and
/// the latest time told.
pub(crate) struct ServerTime {
    reading: Mutex<(u64, Instant)>,
    /// Never less than a time told before: a new reading a little behind the count of
    /// the old one does not turn this process's time back.
    told: AtomicU64,
}

impl ServerTime {
    /// A reading of `server_millis`, asked for at `sent` and answered at `received`: it
    /// stands for the midpoint (the network's delay is taken as even both ways).
    pub(crate) fn new(server_millis: i64, sent: Instant, received: Instant) -> Self {
        let reading = Self::reading(server_millis, sent, received);
        Self {
            told: AtomicU64::new(reading.0),
            reading: Mutex::new(reading),
        }
    }

    /// Takes a new reading (see [`ServerTime::new`]).
    pub(crate) fn read_again(&self, server_millis: i64, sent: Instant, received: Instant) {
        if let Ok(mut reading) = self.reading.lock() {
            *reading = Self::reading(server_millis, sent, received);
        }
    }

    fn reading(server_millis: i64, sent: Instant, received: Instant) -> (u64, Instant) {
        let half = received.saturating_duration_since(sent) / 2;
        (u64::try_from(server_millis).unwrap_or(0), sent + half)
    }

    /// The server's time now, as this process counts it; `None` if it cannot be told.
    pub(crate) fn now(&self) -> Option<Timestamp> {
        let (at, since) = *self.reading.lock().ok()?;
        let elapsed = u64::try_from(since.elapsed().as_millis()).ok()?;
        let now = at.checked_add(elapsed)?;
        let told = self.told.fetch_max(now, Ordering::AcqRel).max(now);
        Some(Timestamp::from_unix_millis(told))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_counts_on_from_the_midpoint_of_a_reading_and_never_goes_back() {
        let sent = Instant::now();
        let received = sent + Duration::from_millis(10);
        let time = ServerTime::new(1_000_000, sent, received);
        let now = time.now().unwrap().unix_millis();
        // The reading stands for `sent` + 5 ms; at least that much time has passed since.
        let least = 1_000_000 + u64::try_from(sent.elapsed().as_millis()).unwrap() - 5;
        assert!(now >= least, "{now} < {least}");
        // A new reading far behind: the time told stays where it was.
        time.read_again(10, Instant::now(), Instant::now());
        assert!(time.now().unwrap().unix_millis() >= now);
        // A reading ahead moves it on.
        time.read_again(9_000_000, Instant::now(), Instant::now());
        assert!(time.now().unwrap().unix_millis() >= 9_000_000);
    }
}
