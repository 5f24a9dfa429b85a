use core::fmt;

use crate::declare::{Actor, Scope};

/// The required scopes an actor was not granted, in declared order.
///
/// ```
/// use cairnloop::{Actor, Scope, gate::check_scopes};
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
    /// # use cairnloop::{Actor, Scope, gate::check_scopes};
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
    /// # use cairnloop::{Actor, Scope, gate::check_scopes};
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
/// This is gate 2 of the pipeline; it is public so that a host can explain a decision
/// with the very same check.
///
/// ```
/// use cairnloop::{Actor, Scope, gate::check_scopes};
///
/// const SCOPES: &[Scope] = &[Scope::new("orders:read")];
/// assert!(check_scopes(SCOPES, &Actor::new("a", &["orders:read"])).is_ok());
/// assert!(check_scopes(SCOPES, &Actor::new("a", &["orders:*", "all", "orders"])).is_err());
/// ```
#[inline]
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
