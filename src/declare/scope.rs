use core::fmt;

use super::rules::{Violation, expect_valid, to_spec_error};
use super::text;
use crate::declare::SpecError;

/// A permission a tool requires, such as `orders:read`.
///
/// Built in a `const` context, so a bad name is a compile error (rule 6): it must be an
/// RFC 6749 scope token (printable ASCII, no whitespace, `"` or `\`) and must not be a
/// wildcard (`*` anywhere, or `all` in any case). A granted scope satisfies a required one
/// only when the two are byte-for-byte equal: no prefixes, no wildcards, no case folding.
///
/// ```
/// use cairnloop::Scope;
///
/// const READ: Scope = Scope::new("orders:read");
/// assert_eq!(READ.as_str(), "orders:read");
/// assert!(READ.is_granted_by(&["orders:read"]));
/// assert!(!READ.is_granted_by(&["orders", "ORDERS:READ", "orders:*"]));
/// ```
///
/// A wildcard does not compile:
///
/// ```compile_fail
/// const EVERYTHING: cairnloop::Scope = cairnloop::Scope::new("*");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct ScopeOf<'a> {
    name: &'a str,
}

/// A [`ScopeOf`] whose name lives for the whole program: what a tool's `SCOPES` hold.
pub type Scope = ScopeOf<'static>;

impl<'a> ScopeOf<'a> {
    /// A validated scope; an invalid name fails compilation in a `const` item (and panics
    /// at run time, where [`Scope::try_new`] is the twin to use).
    ///
    /// ```
    /// use cairnloop::Scope;
    ///
    /// const NOTES: Scope = Scope::new("notes:write");
    /// assert_eq!(NOTES.to_string(), "notes:write");
    /// ```
    #[track_caller]
    #[must_use]
    pub const fn new(name: &'a str) -> Self {
        expect_valid(Self::check(name))
    }

    /// A validated scope, or the rule it breaks.
    ///
    /// ```
    /// use cairnloop::{Scope, SpecError};
    ///
    /// assert_eq!(Scope::try_new("orders read"), Err(SpecError::InvalidScope));
    /// assert_eq!(Scope::try_new("All"), Err(SpecError::WildcardScope));
    /// assert!(Scope::try_new("orders:read").is_ok());
    /// ```
    pub const fn try_new(name: &'a str) -> Result<Self, SpecError> {
        to_spec_error(Self::check(name))
    }

    const fn check(name: &'a str) -> Result<Self, Violation<'a>> {
        if !text::is_scope_token(name) {
            return Err(Violation::new(SpecError::InvalidScope, name));
        }
        if text::is_wildcard_scope(name) {
            return Err(Violation::new(SpecError::WildcardScope, name));
        }
        Ok(Self { name })
    }

    /// The scope's name.
    ///
    /// ```
    /// assert_eq!(cairnloop::Scope::new("a:b").as_str(), "a:b");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'a str {
        self.name
    }

    /// Whether one of `granted` equals this scope exactly (byte equality).
    ///
    /// ```
    /// use cairnloop::Scope;
    ///
    /// assert!(Scope::new("refunds:write").is_granted_by(&["orders:read", "refunds:write"]));
    /// assert!(!Scope::new("refunds:write").is_granted_by(&["refunds:write "]));
    /// ```
    #[must_use]
    pub fn is_granted_by(self, granted: &[&str]) -> bool {
        granted.iter().any(|g| g.as_bytes() == self.name.as_bytes())
    }

    /// Checks a tool's list of required scopes: at most 64, none twice.
    ///
    /// [`ToolEntry::of`](crate::ToolEntry::of) runs this at compile time for every tool
    /// it registers.
    ///
    /// ```
    /// use cairnloop::{Scope, SpecError};
    ///
    /// const READ: Scope = Scope::new("orders:read");
    /// assert_eq!(Scope::check_list(&[READ]), Ok(()));
    /// assert_eq!(Scope::check_list(&[READ, READ]), Err(SpecError::DuplicateScope));
    /// ```
    pub const fn check_list(scopes: &[ScopeOf<'_>]) -> Result<(), SpecError> {
        to_spec_error(Self::check_each(scopes))
    }

    pub(crate) const fn check_each<'s>(scopes: &[ScopeOf<'s>]) -> Result<(), Violation<'s>> {
        if scopes.len() > text::MAX_SCOPES {
            return Err(Violation::new(
                SpecError::TooManyScopes,
                scopes[text::MAX_SCOPES].name,
            ));
        }
        let mut i = 0;
        while i < scopes.len() {
            let mut j = i + 1;
            while j < scopes.len() {
                if text::eq(scopes[i].name, scopes[j].name) {
                    return Err(Violation::new(SpecError::DuplicateScope, scopes[i].name));
                }
                j += 1;
            }
            i += 1;
        }
        Ok(())
    }
}

impl fmt::Display for ScopeOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl fmt::Debug for ScopeOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.name, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granted_only_by_an_equal_string() {
        let scope = Scope::new("orders:read");
        assert!(scope.is_granted_by(&["tickets:write", "orders:read"]));
        assert!(!scope.is_granted_by(&[]));
        assert!(!scope.is_granted_by(&["orders:reads", "orders:rea", "tickets:write"]));
        assert_eq!(
            std::format!("{scope} {scope:?}"),
            "orders:read \"orders:read\""
        );
    }

    #[test]
    fn a_list_with_a_repeat_anywhere_is_refused() {
        const A: Scope = Scope::new("a:a");
        const B: Scope = Scope::new("b:b");
        const C: Scope = Scope::new("c:c");
        assert_eq!(Scope::check_list(&[]), Ok(()));
        assert_eq!(Scope::check_list(&[A, B, C]), Ok(()));
        for list in [&[A, A][..], &[A, B, A], &[B, A, C, A], &[C, B, B]] {
            assert_eq!(
                Scope::check_list(list),
                Err(SpecError::DuplicateScope),
                "{list:?}"
            );
        }
    }
}
