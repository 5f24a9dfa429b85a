//! The declaration rules: one check each (in the builders), one message each (here),
//! shared by the compile error (a `const` panic) and by [`SpecError`].

use const_format::concatcp;

use super::registry::MAX_TOOLS;
use super::spec::MAX_QUORUM;
use super::text::{MAX_NAME_LEN, MAX_SCOPES};

const RULE: &str = "cairnloop rule ";

const TOOL_NAME: &str = concatcp!(
    RULE,
    "1 (tool name): a tool name must be 1 to ",
    MAX_NAME_LEN,
    " characters from A-Z, a-z, 0-9, `_` and `-` (the names every model vendor and MCP client \
     accepts); fix: rename the tool, e.g. \"delete_customer\""
);
const TITLE_EMPTY: &str = concatcp!(
    RULE,
    "2 (title): the title is empty; fix: give the tool a short human-readable title, e.g. \
     \"Delete customer\""
);
const TITLE_CONTROL: &str = concatcp!(
    RULE,
    "2 (title): the title has a line break or a control character; fix: keep the title on \
     one line of printable text"
);
const DESCRIPTION_EMPTY: &str = concatcp!(
    RULE,
    "3 (description): the description is empty; fix: say what the tool does and when a \
     model should call it"
);
const DESCRIPTION_CONTROL: &str = concatcp!(
    RULE,
    "3 (description): the description has a control character other than `\\n` and `\\t`; \
     fix: remove it"
);
const MODE_WEAKER: &str = concatcp!(
    RULE,
    "4 (approval mode): the explicit approval mode is weaker than the one derived from the \
     risk tier; fix: drop `.with_approval(..)` or choose an equal or stricter mode; to \
     loosen on purpose call `.loosen_approval(mode, \"justification\")`"
);
const LOOSEN_NOT_LOOSER: &str = concatcp!(
    RULE,
    "4 (approval mode): `.loosen_approval` was given a mode that is not weaker than the one \
     derived from the risk tier; fix: use `.with_approval(mode)`, which tightens without a \
     justification"
);
const LOOSEN_NO_JUSTIFICATION: &str = concatcp!(
    RULE,
    "4 (approval mode): loosening the approval mode needs a justification; fix: pass a \
     non-empty, single-line reason to `.loosen_approval(mode, \"...\")`"
);
const DESTRUCTIVE_AUTO: &str = concatcp!(
    RULE,
    "4 (approval mode): a destructive tool can never run without approval, even with a \
     justification; fix: use `ApprovalMode::RequiresApproval` or lower the risk tier if the \
     tool is not destructive"
);
const RESULT_STATE_INVALID: &str = concatcp!(
    RULE,
    "5 (result states): a result state must be non-empty and use only a-z, 0-9 and `_`; \
     fix: rename it, e.g. \"not_found\""
);
const RESULT_STATE_DUPLICATE: &str = concatcp!(
    RULE,
    "5 (result states): a result state is declared twice; fix: remove the duplicate"
);
const SCOPE_INVALID: &str = concatcp!(
    RULE,
    "6 (scope): a scope must be non-empty printable ASCII without whitespace, `\"` or `\\` \
     (an RFC 6749 scope token); fix: name it like \"orders:read\""
);
const SCOPE_WILDCARD: &str = concatcp!(
    RULE,
    "6 (scope): wildcard scopes (`*`, `all`) are not allowed, scopes match exactly; fix: \
     require the precise scope, e.g. \"orders:read\""
);
const SCOPE_DUPLICATE: &str = concatcp!(
    RULE,
    "6 (scope): a scope is declared twice in one tool's SCOPES; fix: remove the duplicate"
);
const SCOPE_TOO_MANY: &str = concatcp!(
    RULE,
    "6 (scope): a tool may require at most ",
    MAX_SCOPES,
    " scopes; fix: group permissions into fewer scopes"
);
const TOOL_DUPLICATE: &str = concatcp!(
    RULE,
    "7 (registry): two tools in one registry have the same name, or names equal ignoring \
     ASCII case; fix: rename one of them"
);
const QUORUM_RANGE: &str = concatcp!(
    RULE,
    "8 (quorum): a quorum is 1 to ",
    MAX_QUORUM,
    " approvers; fix: pass a number in that range to `.with_quorum(n)`"
);
const QUORUM_AUTO: &str = concatcp!(
    RULE,
    "8 (quorum): a tool whose calls run at once (`ApprovalMode::Auto`) has nobody to \
     approve them, so a quorum above 1 means nothing; fix: drop `.with_quorum(n)`, or make \
     the tool wait with `.with_approval(ApprovalMode::RequiresApproval)`"
);
const TOO_MANY_TOOLS: &str = concatcp!(
    RULE,
    "7 (registry): one registry holds at most ",
    MAX_TOOLS,
    " tools; fix: split the tools into several registries"
);

/// Why a tool declaration (a [`ToolSpec`](crate::ToolSpec), a [`Scope`](crate::Scope) or
/// a [`Registry`](crate::Registry)) is invalid.
///
/// In a `const` or `static` item the same rule is a compile error with the same text (and
/// the offending value quoted); this type is what the run-time twins (`try_*`) return, for
/// hosts that build declarations from configuration. [`SpecError::ALL`] lists every rule.
///
/// ```
/// use cairnloop::{RiskTier, SpecError, ToolSpec};
///
/// let err = ToolSpec::try_new("delete customer", "Delete", "Deletes.", RiskTier::Destructive)
///     .unwrap_err();
/// assert_eq!(err, SpecError::InvalidName);
/// assert_eq!(err.rule(), 1);
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
    /// Rule 7: more tools than one registry holds ([`MAX_TOOLS`](crate::declare::MAX_TOOLS)).
    TooManyTools,
    /// Rule 8: a quorum below 1 or above [`MAX_QUORUM`](crate::declare::MAX_QUORUM).
    QuorumOutOfRange,
    /// Rule 8: a quorum above 1 on a tool whose calls run at once (`Auto`).
    QuorumOnAuto,
}

impl SpecError {
    /// Every rule violation, in rule order: the table the docs and the ui-tests follow.
    ///
    /// ```
    /// use cairnloop::SpecError;
    ///
    /// assert!(SpecError::ALL.is_sorted_by_key(|e| e.rule()));
    /// assert_eq!(SpecError::ALL.map(SpecError::rule).iter().max(), Some(&8));
    /// ```
    pub const ALL: [Self; 19] = [
        Self::InvalidName,
        Self::EmptyTitle,
        Self::TitleControlCharacter,
        Self::EmptyDescription,
        Self::DescriptionControlCharacter,
        Self::WeakerApprovalMode,
        Self::NotALoosening,
        Self::MissingJustification,
        Self::DestructiveAuto,
        Self::InvalidResultState,
        Self::DuplicateResultState,
        Self::InvalidScope,
        Self::WildcardScope,
        Self::DuplicateScope,
        Self::TooManyScopes,
        Self::DuplicateToolName,
        Self::TooManyTools,
        Self::QuorumOutOfRange,
        Self::QuorumOnAuto,
    ];

    /// The number of the rule broken, 1 to 8.
    ///
    /// ```
    /// assert_eq!(cairnloop::SpecError::DuplicateScope.rule(), 6);
    /// ```
    #[must_use]
    pub const fn rule(self) -> u8 {
        match self {
            Self::InvalidName => 1,
            Self::EmptyTitle | Self::TitleControlCharacter => 2,
            Self::EmptyDescription | Self::DescriptionControlCharacter => 3,
            Self::WeakerApprovalMode
            | Self::NotALoosening
            | Self::MissingJustification
            | Self::DestructiveAuto => 4,
            Self::InvalidResultState | Self::DuplicateResultState => 5,
            Self::InvalidScope
            | Self::WildcardScope
            | Self::DuplicateScope
            | Self::TooManyScopes => 6,
            Self::DuplicateToolName | Self::TooManyTools => 7,
            Self::QuorumOutOfRange | Self::QuorumOnAuto => 8,
        }
    }

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
            Self::InvalidName => TOOL_NAME,
            Self::EmptyTitle => TITLE_EMPTY,
            Self::TitleControlCharacter => TITLE_CONTROL,
            Self::EmptyDescription => DESCRIPTION_EMPTY,
            Self::DescriptionControlCharacter => DESCRIPTION_CONTROL,
            Self::WeakerApprovalMode => MODE_WEAKER,
            Self::NotALoosening => LOOSEN_NOT_LOOSER,
            Self::MissingJustification => LOOSEN_NO_JUSTIFICATION,
            Self::DestructiveAuto => DESTRUCTIVE_AUTO,
            Self::InvalidResultState => RESULT_STATE_INVALID,
            Self::DuplicateResultState => RESULT_STATE_DUPLICATE,
            Self::InvalidScope => SCOPE_INVALID,
            Self::WildcardScope => SCOPE_WILDCARD,
            Self::DuplicateScope => SCOPE_DUPLICATE,
            Self::TooManyScopes => SCOPE_TOO_MANY,
            Self::DuplicateToolName => TOOL_DUPLICATE,
            Self::TooManyTools => TOO_MANY_TOOLS,
            Self::QuorumOutOfRange => QUORUM_RANGE,
            Self::QuorumOnAuto => QUORUM_AUTO,
        }
    }
}

/// A broken rule with the value that broke it (and, for rule 7, the other name), so that
/// a compile error can quote them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Violation<'a> {
    pub(crate) error: SpecError,
    found: &'a str,
    other: Option<&'a str>,
}

impl<'a> Violation<'a> {
    pub(crate) const fn new(error: SpecError, found: &'a str) -> Self {
        Self {
            error,
            found,
            other: None,
        }
    }

    pub(crate) const fn pair(error: SpecError, found: &'a str, other: &'a str) -> Self {
        Self {
            error,
            found,
            other: Some(other),
        }
    }
}

/// `Result<T, Violation>` → `Result<T, SpecError>`, in a `const fn`.
pub(crate) const fn to_spec_error<T: Copy>(
    result: Result<T, Violation<'_>>,
) -> Result<T, SpecError> {
    match result {
        Ok(value) => Ok(value),
        Err(violation) => Err(violation.error),
    }
}

/// Unwraps a declaration in a `const` context: an error becomes a compile error that
/// carries the rule's message and quotes the offending value.
#[track_caller]
pub(crate) const fn expect_valid<T: Copy>(result: Result<T, Violation<'_>>) -> T {
    match result {
        Ok(value) => value,
        Err(violation) => fail(violation),
    }
}

const QUOTE_BYTES: usize = 80;
const MESSAGE_BYTES: usize = 1024;

#[track_caller]
pub(crate) const fn fail(violation: Violation<'_>) -> ! {
    let mut out = Buffer {
        bytes: [0; MESSAGE_BYTES],
        len: 0,
    };
    out.push(violation.error.message());
    out.push(" (found ");
    out.quote(violation.found);
    if let Some(other) = violation.other {
        out.push(" and ");
        out.quote(other);
    }
    out.push(")");
    let (bytes, _) = out.bytes.split_at(out.len);
    match core::str::from_utf8(bytes) {
        Ok(text) => panic!("{}", text),
        Err(_) => panic!("{}", violation.error.message()),
    }
}

/// A fixed buffer a `const fn` can write a message into.
struct Buffer {
    bytes: [u8; MESSAGE_BYTES],
    len: usize,
}

impl Buffer {
    const fn push(&mut self, text: &str) {
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() && self.len < MESSAGE_BYTES {
            self.bytes[self.len] = b[i];
            self.len += 1;
            i += 1;
        }
    }

    /// The value between backticks, control bytes shown as `\xNN`, cut at a character
    /// boundary after `QUOTE_BYTES` bytes.
    const fn quote(&mut self, value: &str) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.push("`");
        let b = value.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if i >= QUOTE_BYTES && (c & 0xc0) != 0x80 {
                self.push("…");
                break;
            }
            if c < 0x20 || c == 0x7f {
                let escaped = [b'\\', b'x', HEX[(c >> 4) as usize], HEX[(c & 0xf) as usize]];
                if let Ok(text) = core::str::from_utf8(&escaped) {
                    self.push(text);
                }
            } else if self.len < MESSAGE_BYTES - 4 {
                self.bytes[self.len] = c;
                self.len += 1;
            } else {
                // Never end the buffer inside a character: drop the rest of the value.
                while self.len > 0 && (self.bytes[self.len - 1] & 0xc0) == 0x80 {
                    self.len -= 1;
                }
                if self.len > 0 && self.bytes[self.len - 1] >= 0xc0 {
                    self.len -= 1;
                }
                break;
            }
            i += 1;
        }
        self.push("`");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_covers_every_rule_in_order() {
        let rules: std::vec::Vec<u8> = SpecError::ALL.iter().map(|e| e.rule()).collect();
        assert_eq!(rules.first(), Some(&1));
        assert_eq!(rules.last(), Some(&8));
        assert!(rules.is_sorted());
        for error in SpecError::ALL {
            let prefix = std::format!("cairnloop rule {} (", error.rule());
            assert!(error.message().starts_with(&prefix), "{error:?}");
            assert!(error.message().contains("; fix: "), "{error:?}");
            assert_eq!(std::format!("{error}"), error.message());
        }
    }
}
