use crate::messages;

/// Why a tool declaration (a [`ToolSpec`](crate::ToolSpec), a [`Scope`](crate::Scope) or
/// a [`Registry`](crate::Registry)) is invalid.
///
/// In a `const` or `static` item the same rule is a compile error with the same text; this
/// type is what the run-time twins (`try_*`) return, for hosts that build declarations from
/// configuration.
///
/// ```
/// use cairnloop::{RiskTier, SpecError, ToolSpec};
///
/// let err = ToolSpec::try_new("delete customer", "Delete", "Deletes.", RiskTier::Destructive)
///     .unwrap_err();
/// assert_eq!(err, SpecError::InvalidName);
/// assert!(err.to_string().starts_with("cairnloop rule 1 (tool name)"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{}", self.message())]
#[non_exhaustive]
pub enum SpecError {
    /// Rule 1: the name is not `[A-Za-z0-9_-]{1,64}`.
    InvalidName,
    /// Rule 2: the title is empty or blank.
    EmptyTitle,
    /// Rule 2: the title has a line break or a control character.
    TitleControlCharacter,
    /// Rule 3: the description is empty or blank.
    EmptyDescription,
    /// Rule 3: the description has a control character other than `\n` and `\t`.
    DescriptionControlCharacter,
    /// Rule 4: an explicit approval mode is weaker than the derived one.
    WeakerApprovalMode,
    /// Rule 4: `loosen_approval` was given a mode that does not loosen.
    NotALoosening,
    /// Rule 4: a loosening without a usable justification.
    MissingJustification,
    /// Rule 4: a destructive tool set to `Auto`.
    DestructiveAuto,
    /// Rule 5: a result state that is empty or not `[a-z0-9_]`.
    InvalidResultState,
    /// Rule 5: a result state declared twice.
    DuplicateResultState,
    /// Rule 6: a scope that is empty or has whitespace, control or non-ASCII characters.
    InvalidScope,
    /// Rule 6: a wildcard scope (`*`, `all`).
    WildcardScope,
    /// Rule 6: a scope required twice by one tool.
    DuplicateScope,
    /// Rule 6: more scopes than one tool may require.
    TooManyScopes,
    /// Rule 7: two tools in one registry with names equal, or equal ignoring ASCII case.
    DuplicateToolName,
    /// Rule 7: more tools than one registry holds ([`MAX_TOOLS`](crate::MAX_TOOLS)).
    TooManyTools,
}

impl SpecError {
    /// The message: the rule that was broken and the fix. Also the compile error's text.
    ///
    /// ```
    /// use cairnloop::SpecError;
    ///
    /// assert!(SpecError::WildcardScope.message().contains("rule 6"));
    /// ```
    #[must_use]
    pub const fn message(self) -> &'static str {
        match self {
            Self::InvalidName => messages::TOOL_NAME,
            Self::EmptyTitle => messages::TITLE_EMPTY,
            Self::TitleControlCharacter => messages::TITLE_CONTROL,
            Self::EmptyDescription => messages::DESCRIPTION_EMPTY,
            Self::DescriptionControlCharacter => messages::DESCRIPTION_CONTROL,
            Self::WeakerApprovalMode => messages::MODE_WEAKER,
            Self::NotALoosening => messages::LOOSEN_NOT_LOOSER,
            Self::MissingJustification => messages::LOOSEN_NO_JUSTIFICATION,
            Self::DestructiveAuto => messages::DESTRUCTIVE_AUTO,
            Self::InvalidResultState => messages::RESULT_STATE_INVALID,
            Self::DuplicateResultState => messages::RESULT_STATE_DUPLICATE,
            Self::InvalidScope => messages::SCOPE_INVALID,
            Self::WildcardScope => messages::SCOPE_WILDCARD,
            Self::DuplicateScope => messages::SCOPE_DUPLICATE,
            Self::TooManyScopes => messages::SCOPE_TOO_MANY,
            Self::DuplicateToolName => messages::TOOL_DUPLICATE,
            Self::TooManyTools => messages::TOO_MANY_TOOLS,
        }
    }
}

/// Unwraps a declaration in a `const` context: an error becomes a compile error that
/// carries the rule's message.
pub(crate) const fn expect_valid<T: Copy>(result: Result<T, SpecError>) -> T {
    match result {
        Ok(value) => value,
        Err(err) => panic!("{}", err.message()),
    }
}
