use core::fmt;

use crate::{Actor, PolicyDenial, Scope};

/// The required scopes an actor was not granted, in declared order.
///
/// ```
/// use cairnloop::{Actor, Scope, check_scopes};
///
/// const SCOPES: &[Scope] = &[Scope::new("orders:read"), Scope::new("refunds:write")];
/// let missing = check_scopes(SCOPES, &Actor::new("a", &["orders:read"])).unwrap_err();
/// assert_eq!(missing.iter().map(Scope::as_str).collect::<Vec<_>>(), ["refunds:write"]);
/// assert_eq!(missing.to_string(), "refunds:write");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MissingScopes {
    required: &'static [Scope],
    // Bit i set: required[i] is missing. At most 64 scopes per tool (rule 6).
    mask: u64,
}

impl MissingScopes {
    /// The missing scopes, in the order the tool declares them.
    ///
    /// ```
    /// # use cairnloop::{Actor, Scope, check_scopes};
    /// const SCOPES: &[Scope] = &[Scope::new("a:b")];
    /// let missing = check_scopes(SCOPES, &Actor::new("x", &[])).unwrap_err();
    /// assert_eq!(missing.iter().next(), Some(Scope::new("a:b")));
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.required
            .iter()
            .enumerate()
            .filter(|(i, _)| self.mask & (1 << i) != 0)
            .map(|(_, scope)| *scope)
    }

    /// How many scopes are missing (never zero).
    ///
    /// ```
    /// # use cairnloop::{Actor, Scope, check_scopes};
    /// const SCOPES: &[Scope] = &[Scope::new("a:b"), Scope::new("c:d")];
    /// assert_eq!(check_scopes(SCOPES, &Actor::new("x", &[])).unwrap_err().len(), 2);
    /// ```
    #[must_use]
    #[allow(clippy::len_without_is_empty, reason = "never empty")]
    pub const fn len(&self) -> usize {
        self.mask.count_ones() as usize
    }
}

impl fmt::Debug for MissingScopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl fmt::Display for MissingScopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, scope) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(scope.as_str())?;
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for MissingScopes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// Checks that every required scope is granted to `actor`, by exact byte equality.
///
/// This is gate 2 of the pipeline and half of the visibility filter; it is public so a host
/// can explain a decision with the very same check.
///
/// ```
/// use cairnloop::{Actor, Scope, check_scopes};
///
/// const SCOPES: &[Scope] = &[Scope::new("orders:read")];
/// assert!(check_scopes(SCOPES, &Actor::new("a", &["orders:read"])).is_ok());
/// assert!(check_scopes(SCOPES, &Actor::new("a", &["orders:*", "all", "orders"])).is_err());
/// ```
pub fn check_scopes(required: &'static [Scope], actor: &Actor<'_>) -> Result<(), MissingScopes> {
    // More than 64 cannot be declared through a registry (rule 6); a hand-made list past
    // the limit is refused whole rather than checked in part.
    if required.len() > 64 {
        return Err(MissingScopes {
            required,
            mask: u64::MAX,
        });
    }
    let mut mask = 0u64;
    for (i, scope) in required.iter().enumerate() {
        if !actor.has_scope(scope.as_str()) {
            mask |= 1 << i;
        }
    }
    if mask == 0 {
        Ok(())
    } else {
        Err(MissingScopes { required, mask })
    }
}

/// Gates 2 and 3, in order: the scopes, then the policy (called only once the scopes pass).
pub(crate) fn check_access(
    required: &'static [Scope],
    actor: &Actor<'_>,
    authorize: impl FnOnce() -> Result<(), PolicyDenial>,
) -> Result<(), AccessDenied> {
    check_scopes(required, actor).map_err(AccessDenied::ScopeMissing)?;
    authorize().map_err(AccessDenied::PolicyDenied)
}

/// Why an actor may not use a tool: gates 2 and 3 of the pipeline, in that order.
///
/// ```
/// use cairnloop::{AccessDenied, PolicyDenial};
///
/// let denied = AccessDenied::PolicyDenied(PolicyDenial::NoPolicyDefined);
/// assert_eq!(denied.to_string(), "policy denied: no policy defined");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum AccessDenied {
    /// A required scope is not granted.
    #[error("scope missing: {0}")]
    ScopeMissing(MissingScopes),
    /// The tool's policy refused.
    #[error("policy denied: {0}")]
    PolicyDenied(PolicyDenial),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;
    use std::vec::Vec;

    const TWO: &[Scope] = &[Scope::new("a:b"), Scope::new("c:d"), Scope::new("e:f")];

    #[test]
    fn missing_scopes_report_in_declared_order() {
        let missing = check_scopes(TWO, &Actor::new("x", &["c:d"])).unwrap_err();
        assert_eq!(missing.len(), 2);
        assert_eq!(format!("{missing}"), "a:b, e:f");
        assert_eq!(format!("{missing:?}"), r#"["a:b", "e:f"]"#);
        let one = check_scopes(TWO, &Actor::new("x", &["a:b", "c:d"])).unwrap_err();
        assert_eq!((one.len(), format!("{one}")), (1, "e:f".into()));
    }

    #[test]
    fn sixty_four_scopes_are_checked_and_more_are_refused_whole() {
        let names: Vec<&'static str> = (0..65)
            .map(|i| &*std::boxed::Box::leak(format!("s:{i}").into_boxed_str()))
            .collect();
        let scopes: &'static [Scope] = std::boxed::Box::leak(
            names
                .iter()
                .map(|n| Scope::new(n))
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let all = Actor::new("x", &names);
        assert_eq!(check_scopes(&scopes[..64], &all), Ok(()));
        let refused = check_scopes(scopes, &all).unwrap_err();
        assert_eq!(refused.len(), 64);
    }
}
