use core::fmt;

/// A point in time: milliseconds since the Unix epoch. The clock is an argument
/// everywhere, so the lifecycle runs in `no_std`; under `std`, [`Timestamp::now`] reads the
/// system clock.
///
/// ```
/// use cairnloop::gate::{Timestamp, Ttl};
///
/// let proposed = Timestamp::from_unix_millis(1_000);
/// assert_eq!(proposed.checked_add(Ttl::from_secs(1)), Some(Timestamp::from_unix_millis(2_000)));
/// assert_eq!(Timestamp::from_unix_millis(u64::MAX).checked_add(Ttl::from_secs(1)), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Timestamp(u64);

impl Timestamp {
    /// The time `millis` milliseconds after the Unix epoch.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::Timestamp::from_unix_millis(5).unix_millis(), 5);
    /// ```
    #[must_use]
    pub const fn from_unix_millis(millis: u64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the Unix epoch.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::Timestamp::from_unix_millis(7).unix_millis(), 7);
    /// ```
    #[must_use]
    pub const fn unix_millis(self) -> u64 {
        self.0
    }

    /// `self + ttl`, or `None` when it would overflow.
    ///
    /// ```
    /// use cairnloop::gate::{Timestamp, Ttl};
    /// assert_eq!(Timestamp::from_unix_millis(0).checked_add(Ttl::from_millis(3)), Some(Timestamp::from_unix_millis(3)));
    /// ```
    #[must_use]
    pub const fn checked_add(self, ttl: Ttl) -> Option<Self> {
        match self.0.checked_add(ttl.0) {
            Some(millis) => Some(Self(millis)),
            None => None,
        }
    }

    /// The system clock now. A clock before the epoch or past `u64` milliseconds gives
    /// `None`, never a wrapped value.
    ///
    /// ```
    /// assert!(cairnloop::gate::Timestamp::now().is_some());
    /// ```
    #[cfg(feature = "std")]
    #[must_use]
    pub fn now() -> Option<Self> {
        let elapsed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        u64::try_from(elapsed.as_millis()).ok().map(Self)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

impl Timestamp {
    /// The time as an RFC 3339 UTC date and time to the second, for people and wire
    /// formats (`2026-12-03T01:30:00Z`).
    ///
    /// ```
    /// use cairnloop::gate::Timestamp;
    /// assert_eq!(Timestamp::from_unix_millis(0).utc().to_string(), "1970-01-01T00:00:00Z");
    /// assert_eq!(Timestamp::from_unix_millis(951_825_600_999).utc().to_string(), "2000-02-29T12:00:00Z");
    /// ```
    #[must_use]
    pub const fn utc(self) -> Utc {
        Utc(self)
    }
}

/// A [`Timestamp`] shown as an RFC 3339 UTC date and time (see [`Timestamp::utc`]).
///
/// ```
/// let shown = cairnloop::gate::Timestamp::from_unix_millis(86_400_000).utc();
/// assert_eq!(shown.to_string(), "1970-01-02T00:00:00Z");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utc(Timestamp);

impl fmt::Display for Utc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.0.0 / 1000;
        let (days, of_day) = (seconds / 86_400, seconds % 86_400);
        // Days since 1970-01-01 to a proleptic Gregorian date, by 400-year eras
        // (each 146,097 days long), counted from 0000-03-01 so that leap days end a year.
        let shifted = days + 719_468;
        let era = shifted / 146_097;
        let day_of_era = shifted % 146_097;
        let year_of_era =
            (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let month_index = (5 * day_of_year + 2) / 153;
        let day = day_of_year - (153 * month_index + 2) / 5 + 1;
        let month = if month_index < 10 {
            month_index + 3
        } else {
            month_index - 9
        };
        let year = year_of_era + era * 400 + u64::from(month <= 2);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            of_day / 3600,
            of_day % 3600 / 60,
            of_day % 60
        )
    }
}

/// How long an approval stays valid after it was proposed: 48 hours unless the host says
/// otherwise.
///
/// ```
/// use cairnloop::gate::Ttl;
///
/// assert_eq!(Ttl::DEFAULT, Ttl::from_secs(48 * 60 * 60));
/// assert_eq!(Ttl::from_secs(u64::MAX).as_millis(), u64::MAX); // saturates, never wraps
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Ttl(u64);

impl Ttl {
    /// 48 hours.
    pub const DEFAULT: Self = Self::from_secs(48 * 60 * 60);

    /// A time to live in milliseconds.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::Ttl::from_millis(1500).as_millis(), 1500);
    /// ```
    #[must_use]
    pub const fn from_millis(millis: u64) -> Self {
        Self(millis)
    }

    /// A time to live in seconds (saturating at `u64::MAX` milliseconds).
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::Ttl::from_secs(2).as_millis(), 2000);
    /// ```
    #[must_use]
    pub const fn from_secs(secs: u64) -> Self {
        Self(secs.saturating_mul(1000))
    }

    /// The time to live in milliseconds.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::Ttl::DEFAULT.as_millis(), 172_800_000);
    /// ```
    #[must_use]
    pub const fn as_millis(self) -> u64 {
        self.0
    }
}

impl Default for Ttl {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::Timestamp;

    #[test]
    fn utc_dates_match_known_calendar_dates() {
        // Each pair from the Unix `date -u -d @SECONDS` of a reference system.
        for (seconds, expected) in [
            (1_700_000_000_u64, "2023-11-14T22:13:20Z"),
            (4_102_444_800, "2100-01-01T00:00:00Z"),
            (4_107_542_399, "2100-02-28T23:59:59Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"),
            (253_402_300_799, "9999-12-31T23:59:59Z"),
            (1_709_164_800, "2024-02-29T00:00:00Z"),
        ] {
            let shown = alloc::format!("{}", Timestamp::from_unix_millis(seconds * 1000).utc());
            assert_eq!(shown, expected, "{seconds}");
        }
    }
}
