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
