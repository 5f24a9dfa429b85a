use super::text;
use crate::declare::{ParseError, RiskTier};

/// What must happen before a tool runs, from least to most strict.
///
/// The order is by strictness: `Auto < RequiresApproval < AlwaysBlock`, so the strictest
/// of several modes is their [`max`](Ord::max). The set is closed (no
/// `#[non_exhaustive]`).
///
/// ```
/// use cairnloop::ApprovalMode;
///
/// let mode: ApprovalMode = "requires_approval".parse()?;
/// assert_eq!(mode.max(ApprovalMode::Auto), ApprovalMode::RequiresApproval);
/// assert_eq!(mode.to_string(), "requires_approval");
/// # Ok::<(), cairnloop::declare::ParseError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ApprovalMode {
    /// Runs as soon as input, scopes and policy pass. Wire name `auto`.
    Auto,
    /// Waits for a human's approval of the exact call. Wire name `requires_approval`.
    RequiresApproval,
    /// Never runs. Wire name `always_block`.
    AlwaysBlock,
}

impl ApprovalMode {
    /// Every mode, from least to most strict.
    ///
    /// ```
    /// use cairnloop::ApprovalMode;
    ///
    /// assert_eq!(ApprovalMode::ALL.len(), 3);
    /// ```
    pub const ALL: [Self; 3] = [Self::Auto, Self::RequiresApproval, Self::AlwaysBlock];

    /// The wire names, in the order of [`Self::ALL`].
    const NAMES: [&'static str; 3] = ["auto", "requires_approval", "always_block"];

    /// The wire name: `auto`, `requires_approval` or `always_block`.
    ///
    /// ```
    /// use cairnloop::ApprovalMode;
    ///
    /// assert_eq!(ApprovalMode::AlwaysBlock.as_str(), "always_block");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The mode with this exact wire name, or `None`. Case-sensitive, no trimming.
    ///
    /// ```
    /// use cairnloop::ApprovalMode;
    ///
    /// assert_eq!(ApprovalMode::parse("auto"), Some(ApprovalMode::Auto));
    /// assert_eq!(ApprovalMode::parse("AUTO"), None);
    /// ```
    #[must_use]
    pub const fn parse(name: &str) -> Option<Self> {
        match text::position(name, &Self::NAMES) {
            Some(i) => Some(Self::ALL[i]),
            None => None,
        }
    }

    /// The stricter of two modes, usable in `const` items.
    ///
    /// ```
    /// use cairnloop::ApprovalMode;
    ///
    /// const MODE: ApprovalMode = ApprovalMode::Auto.strictest(ApprovalMode::AlwaysBlock);
    /// assert_eq!(MODE, ApprovalMode::AlwaysBlock);
    /// ```
    #[must_use]
    pub const fn strictest(self, other: Self) -> Self {
        if (other as u8) > (self as u8) {
            other
        } else {
            self
        }
    }
}

wire_name_traits!(ApprovalMode, ParseError::APPROVAL_MODE);

/// The approval mode a risk tier demands, failing closed.
///
/// read_only → auto; low_write and high_write → requires_approval; destructive, and any
/// tier that is unknown or absent (`None`, as [`RiskTier::parse`] gives for a name it does
/// not know) → always_block.
///
/// ```
/// use cairnloop::{ApprovalMode, RiskTier, derive_approval_mode};
///
/// const MODE: ApprovalMode = derive_approval_mode(Some(RiskTier::LowWrite));
/// assert_eq!(MODE, ApprovalMode::RequiresApproval);
///
/// // A tier from configuration or the wire that does not parse blocks.
/// assert_eq!(derive_approval_mode(RiskTier::parse("readonly")), ApprovalMode::AlwaysBlock);
/// assert_eq!(derive_approval_mode(None), ApprovalMode::AlwaysBlock);
/// ```
#[must_use]
pub const fn derive_approval_mode(tier: Option<RiskTier>) -> ApprovalMode {
    match tier {
        Some(tier) => tier.derived_approval_mode(),
        None => ApprovalMode::AlwaysBlock,
    }
}
