/// Why a tool's policy refused an actor.
///
/// The reason is a `&'static str` chosen by the tool's author, so it can be shown to the
/// model and to an operator without leaking internals (no record contents, no error
/// chains).
///
/// ```
/// use cairnloop::PolicyDenial;
///
/// assert_eq!(PolicyDenial::NoPolicyDefined.to_string(), "no policy defined");
/// let denial = PolicyDenial::Denied("refunds above 500 EUR need a supervisor");
/// assert_eq!(denial.reason(), "refunds above 500 EUR need a supervisor");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "code", content = "reason"))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum PolicyDenial {
    /// The tool declares no policy: the default of [`Tool::authorize`](crate::Tool::authorize),
    /// so a tool nobody wrote a policy for is denied to everyone.
    #[error("no policy defined")]
    NoPolicyDefined,
    /// The policy refused, for the reason given.
    #[error("{0}")]
    Denied(&'static str),
}

impl PolicyDenial {
    /// The human-readable reason.
    ///
    /// ```
    /// use cairnloop::PolicyDenial;
    ///
    /// assert_eq!(PolicyDenial::NoPolicyDefined.reason(), "no policy defined");
    /// ```
    #[must_use]
    pub const fn reason(&self) -> &'static str {
        match self {
            Self::NoPolicyDefined => "no policy defined",
            Self::Denied(reason) => reason,
        }
    }
}
