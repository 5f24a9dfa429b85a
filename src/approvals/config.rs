use crate::gate::{ApprovalRules, Ttl};

/// How a host runs approvals: how long they live, whether a proposer may approve their
/// own call, and how often a failed run is tried.
///
/// ```
/// use cairnloop::{approvals::ApprovalConfig, gate::Ttl};
///
/// const CONFIG: ApprovalConfig = ApprovalConfig::new().with_ttl(Ttl::from_secs(3600)).with_max_attempts(2);
/// assert_eq!(CONFIG.ttl(), Ttl::from_secs(3600));
/// assert!(!CONFIG.allows_self_approval());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApprovalConfig {
    ttl: Ttl,
    allow_self_approval: bool,
    max_attempts: u32,
    lease: Ttl,
}

impl ApprovalConfig {
    /// 48 hours to live, no self-approval, one attempt, a five-minute claim lease.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::ApprovalConfig::new().max_attempts(), 1);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            ttl: Ttl::DEFAULT,
            allow_self_approval: false,
            max_attempts: 1,
            lease: Ttl::from_secs(5 * 60),
        }
    }

    /// Sets how long a claim to run an approved call holds. A claim whose lease runs out
    /// with no outcome recorded means its holder died: a sweep marks the lane's outcome
    /// unknown, and it is never run again on its own. Set it longer than the slowest run.
    ///
    /// ```
    /// # use cairnloop::{approvals::ApprovalConfig, gate::Ttl};
    /// assert_eq!(ApprovalConfig::new().with_lease(Ttl::from_secs(30)).lease(), Ttl::from_secs(30));
    /// ```
    #[must_use]
    pub const fn with_lease(self, lease: Ttl) -> Self {
        Self { lease, ..self }
    }

    /// How long a claim to run an approved call holds.
    ///
    /// ```
    /// # use cairnloop::{approvals::ApprovalConfig, gate::Ttl};
    /// assert_eq!(ApprovalConfig::new().lease(), Ttl::from_secs(300));
    /// ```
    #[must_use]
    pub const fn lease(&self) -> Ttl {
        self.lease
    }

    /// Sets how long a proposal stays valid.
    ///
    /// ```
    /// # use cairnloop::{approvals::ApprovalConfig, gate::Ttl};
    /// assert_eq!(ApprovalConfig::new().with_ttl(Ttl::from_secs(60)).ttl(), Ttl::from_secs(60));
    /// ```
    #[must_use]
    pub const fn with_ttl(self, ttl: Ttl) -> Self {
        Self { ttl, ..self }
    }

    /// Lets a proposer approve their own calls (off by default: four eyes).
    ///
    /// ```
    /// assert!(cairnloop::approvals::ApprovalConfig::new().allowing_self_approval().allows_self_approval());
    /// ```
    #[must_use]
    pub const fn allowing_self_approval(self) -> Self {
        Self {
            allow_self_approval: true,
            ..self
        }
    }

    /// Sets how many times an approved call of an *idempotent* tool is run before it
    /// counts as failed (at least 1). A tool whose spec is not idempotent runs once,
    /// whatever this says: running it again could do its work twice.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::ApprovalConfig::new().with_max_attempts(0).max_attempts(), 1);
    /// ```
    #[must_use]
    pub const fn with_max_attempts(self, max_attempts: u32) -> Self {
        Self {
            max_attempts: if max_attempts == 0 { 1 } else { max_attempts },
            ..self
        }
    }

    /// How long a proposal stays valid.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::ApprovalConfig::new().ttl(), cairnloop::gate::Ttl::DEFAULT);
    /// ```
    #[must_use]
    pub const fn ttl(&self) -> Ttl {
        self.ttl
    }

    /// Whether a proposer may approve their own call.
    ///
    /// ```
    /// assert!(!cairnloop::approvals::ApprovalConfig::new().allows_self_approval());
    /// ```
    #[must_use]
    pub const fn allows_self_approval(&self) -> bool {
        self.allow_self_approval
    }

    /// The approval rules in force (four eyes unless self-approval is allowed): the same
    /// rules a device's lane table applies.
    ///
    /// ```
    /// use cairnloop::{approvals::ApprovalConfig, gate::ApprovalRules};
    /// assert_eq!(ApprovalConfig::new().rules(), ApprovalRules::FOUR_EYES);
    /// ```
    #[must_use]
    pub const fn rules(&self) -> ApprovalRules {
        if self.allow_self_approval {
            ApprovalRules::allowing_self_approval()
        } else {
            ApprovalRules::FOUR_EYES
        }
    }

    /// How many runs an approved call of an idempotent tool gets.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::ApprovalConfig::new().with_max_attempts(5).max_attempts(), 5);
    /// ```
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self::new()
    }
}
