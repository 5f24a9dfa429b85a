use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::declare::Scope;

/// The scope names a [`Proposal`](crate::json::Proposal) records: those its tool requires
/// and those its proposer held.
///
/// A proposal made in this process borrows its tool's declared scopes and keeps the
/// proposer's in one string; one read back from a store owns a list. The two compare,
/// print and serialise alike: a JSON array of strings.
///
/// ```
/// # fn f(p: &cairnloop::json::Proposal) {
/// let required = p.required_scopes();
/// println!("{} scopes: {}", required.len(), required.join(", "));
/// for name in required.iter() {
///     assert!(!name.is_empty());
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct ScopeNames {
    names: Names,
}

#[derive(Clone)]
enum Names {
    /// A tool's own declaration.
    Declared(&'static [Scope]),
    /// Names joined by [`SEPARATOR`], none of which holds it: one allocation for any
    /// number of names (never empty: an empty list is `Listed`).
    Joined(String),
    /// Read back, or names that hold the separator.
    Listed(Vec<String>),
}

/// A character no scope token holds (RFC 6749 allows printable ASCII only), so names
/// joined by it split back into the same names.
const SEPARATOR: char = '\n';

impl ScopeNames {
    /// A tool's declared scopes, borrowed.
    pub(crate) const fn declared(scopes: &'static [Scope]) -> Self {
        Self {
            names: Names::Declared(scopes),
        }
    }

    /// Copies of `names` (a proposer's granted scopes, which the host may spell any way).
    pub(crate) fn copied(names: &[&str]) -> Self {
        let joinable = !names.is_empty() && !names.iter().any(|name| name.contains(SEPARATOR));
        let names = if joinable {
            let mut joined = String::with_capacity(names.iter().map(|name| name.len() + 1).sum());
            for (i, name) in names.iter().enumerate() {
                if i > 0 {
                    joined.push(SEPARATOR);
                }
                joined.push_str(name);
            }
            Names::Joined(joined)
        } else {
            Names::Listed(names.iter().map(|&name| name.into()).collect())
        };
        Self { names }
    }

    /// How many names.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> usize {
    /// p.required_scopes().len()
    /// # }
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.names {
            Names::Declared(scopes) => scopes.len(),
            Names::Joined(joined) => joined.matches(SEPARATOR).count() + 1,
            Names::Listed(names) => names.len(),
        }
    }

    /// Whether there is no name.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> bool {
    /// p.granted_scopes().is_empty()
    /// # }
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The names, in order.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> bool {
    /// p.granted_scopes().iter().any(|name| name == "orders:read")
    /// # }
    /// ```
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        let (declared, joined, listed) = match &self.names {
            Names::Declared(scopes) => (*scopes, None, &[][..]),
            Names::Joined(joined) => (&[][..], Some(joined.split(SEPARATOR)), &[][..]),
            Names::Listed(names) => (&[][..], None, names.as_slice()),
        };
        declared
            .iter()
            .map(|scope| scope.as_str())
            .chain(joined.into_iter().flatten())
            .chain(listed.iter().map(String::as_str))
    }

    /// The names with `separator` between them.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> String {
    /// p.required_scopes().join(" ")
    /// # }
    /// ```
    #[must_use]
    pub fn join(&self, separator: &str) -> String {
        let mut joined = String::new();
        for (i, name) in self.iter().enumerate() {
            if i > 0 {
                joined.push_str(separator);
            }
            joined.push_str(name);
        }
        joined
    }
}

impl PartialEq for ScopeNames {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for ScopeNames {}

impl<const N: usize> PartialEq<[&str; N]> for ScopeNames {
    fn eq(&self, other: &[&str; N]) -> bool {
        self.iter().eq(other.iter().copied())
    }
}

/// So that `assert_eq!(proposal.required_scopes(), ["orders:read"])` reads as with a slice.
impl<const N: usize> PartialEq<[&str; N]> for &ScopeNames {
    fn eq(&self, other: &[&str; N]) -> bool {
        (*self).eq(other)
    }
}

impl PartialEq<[&str]> for ScopeNames {
    fn eq(&self, other: &[&str]) -> bool {
        self.iter().eq(other.iter().copied())
    }
}

impl fmt::Debug for ScopeNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl serde::Serialize for ScopeNames {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for ScopeNames {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(deserializer).map(|names| Self {
            names: Names::Listed(names),
        })
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::String;
    use alloc::vec;
    use alloc::vec::Vec;

    use super::ScopeNames;
    use crate::declare::Scope;

    static DECLARED: [Scope; 2] = [Scope::new("orders:read"), Scope::new("refunds:write")];

    fn names(names: &ScopeNames) -> Vec<&str> {
        names.iter().collect()
    }

    #[test]
    fn each_kind_gives_back_the_names_it_was_made_of() {
        let declared = ScopeNames::declared(&DECLARED);
        assert_eq!(names(&declared), ["orders:read", "refunds:write"]);
        for list in [
            vec![],
            vec![""],
            vec!["a"],
            vec!["a", ""],
            vec!["", ""],
            vec!["orders:read", "tickets:write", "x y"],
            // A host may grant a name no declaration could hold: kept as it is.
            vec!["a\nb", "c"],
        ] {
            let copied = ScopeNames::copied(&list);
            assert_eq!(names(&copied), list, "{list:?}");
            assert_eq!(copied.len(), list.len(), "{list:?}");
            assert_eq!(copied.is_empty(), list.is_empty(), "{list:?}");
            assert_eq!(copied.join(", "), list.join(", "), "{list:?}");
            let reversed: Vec<&str> = copied.iter().rev().collect();
            assert_eq!(reversed, list.iter().rev().copied().collect::<Vec<_>>());
        }
    }

    #[test]
    fn kinds_with_the_same_names_are_equal_and_serialise_alike() {
        let declared = ScopeNames::declared(&DECLARED);
        let copied = ScopeNames::copied(&["orders:read", "refunds:write"]);
        let text = serde_json::to_string(&declared).unwrap();
        assert_eq!(text, r#"["orders:read","refunds:write"]"#);
        assert_eq!(serde_json::to_string(&copied).unwrap(), text);
        let read: ScopeNames = serde_json::from_str(&text).unwrap();
        assert_eq!(read, declared);
        assert_eq!(copied, declared);
        assert_eq!(read, ["orders:read", "refunds:write"]);
        assert_ne!(read, ScopeNames::copied(&["orders:read"]));
        assert_ne!(
            declared,
            ScopeNames::copied(&["orders:read", "refunds:read"])
        );
        assert_ne!(ScopeNames::copied(&[]), ScopeNames::copied(&[""]));
        assert_eq!(
            alloc::format!("{declared:?}"),
            r#"["orders:read", "refunds:write"]"#
        );
        let empty: ScopeNames = serde_json::from_str("[]").unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.join(" "), String::new());
    }
}
