use core::fmt;

/// A string that is not one of the wire names of [`RiskTier`](crate::RiskTier) or
/// [`ApprovalMode`](crate::ApprovalMode), or not an idempotency key.
///
/// Opaque on purpose: the only thing to know is that the input was not a known name, and
/// that it must be treated as the strictest case.
///
/// ```
/// use cairnloop::RiskTier;
///
/// let err = "Read_Only".parse::<RiskTier>().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "unknown risk tier, expected read_only, low_write, high_write or destructive"
/// );
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{}", self.what)]
pub struct ParseError {
    what: &'static str,
}

impl ParseError {
    pub(crate) const RISK_TIER: Self = Self {
        what: "unknown risk tier, expected read_only, low_write, high_write or destructive",
    };
    pub(crate) const APPROVAL_MODE: Self = Self {
        what: "unknown approval mode, expected auto, requires_approval or always_block",
    };
    pub(crate) const IDEMPOTENCY_KEY: Self = Self {
        what: "invalid idempotency key, expected 64 lowercase hex digits",
    };
    #[cfg(all(feature = "serde", feature = "std"))]
    pub(crate) const LANE_MARK: Self = Self {
        what: "invalid queue position, expected milliseconds, a dash and an idempotency key",
    };
}

impl fmt::Debug for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ParseError").field(&self.what).finish()
    }
}
