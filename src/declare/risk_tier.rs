use super::text;
use crate::declare::{ApprovalMode, ParseError};

/// How much harm a tool can do, from least to most.
///
/// The order is by risk: `ReadOnly < LowWrite < HighWrite < Destructive`. The set is closed
/// (no `#[non_exhaustive]`): every `match` on it is exhaustive, and nothing outside this
/// crate can make a fifth tier.
///
/// ```
/// use cairnloop::{ApprovalMode, RiskTier};
///
/// let tier: RiskTier = "high_write".parse()?;
/// assert_eq!(tier, RiskTier::HighWrite);
/// assert_eq!(tier.as_str(), "high_write");
/// assert_eq!(tier.derived_approval_mode(), ApprovalMode::RequiresApproval);
/// assert!(RiskTier::ReadOnly < RiskTier::Destructive);
/// # Ok::<(), cairnloop::declare::ParseError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum RiskTier {
    /// Only reads; changes nothing. Wire name `read_only`.
    ReadOnly,
    /// A small, easily undone write, such as an internal note. Wire name `low_write`.
    LowWrite,
    /// A write with real consequences, such as a refund. Wire name `high_write`.
    HighWrite,
    /// Destroys data or access, such as deleting an account. Wire name `destructive`.
    Destructive,
}

impl RiskTier {
    /// Every tier, from least to most risk.
    ///
    /// ```
    /// use cairnloop::RiskTier;
    ///
    /// assert!(RiskTier::ALL.is_sorted());
    /// ```
    pub const ALL: [Self; 4] = [
        Self::ReadOnly,
        Self::LowWrite,
        Self::HighWrite,
        Self::Destructive,
    ];

    /// The wire names, in the order of [`Self::ALL`].
    const NAMES: [&'static str; 4] = ["read_only", "low_write", "high_write", "destructive"];

    /// The wire name: `read_only`, `low_write`, `high_write` or `destructive`.
    ///
    /// ```
    /// use cairnloop::RiskTier;
    ///
    /// assert_eq!(RiskTier::LowWrite.as_str(), "low_write");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The approval mode this tier demands: read_only → auto, low_write and high_write →
    /// requires_approval, destructive → always_block.
    ///
    /// ```
    /// use cairnloop::{ApprovalMode, RiskTier};
    ///
    /// assert_eq!(RiskTier::Destructive.derived_approval_mode(), ApprovalMode::AlwaysBlock);
    /// ```
    #[must_use]
    pub const fn derived_approval_mode(self) -> ApprovalMode {
        match self {
            Self::ReadOnly => ApprovalMode::Auto,
            Self::LowWrite | Self::HighWrite => ApprovalMode::RequiresApproval,
            Self::Destructive => ApprovalMode::AlwaysBlock,
        }
    }

    /// The tier with this exact wire name, or `None`. Case-sensitive, no trimming.
    ///
    /// ```
    /// use cairnloop::RiskTier;
    ///
    /// const TIER: Option<RiskTier> = RiskTier::parse("destructive");
    /// assert_eq!(TIER, Some(RiskTier::Destructive));
    /// assert_eq!(RiskTier::parse("Destructive"), None);
    /// assert_eq!(RiskTier::parse("destructive "), None);
    /// ```
    #[must_use]
    pub const fn parse(name: &str) -> Option<Self> {
        match text::position(name, &Self::NAMES) {
            Some(i) => Some(Self::ALL[i]),
            None => None,
        }
    }
}

wire_name_traits!(RiskTier, ParseError::RISK_TIER);
