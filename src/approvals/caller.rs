use alloc::string::String;
use alloc::vec::Vec;

use crate::declare::Actor;

/// Who makes a call, as a transport that authenticates each request says: the actor (the
/// agent), its account and scopes, and the person who answers approval prompts for it.
///
/// An MCP server made with `McpServer::for_callers` takes the caller from each request
/// (an HTTP transport puts it in the request's extensions after checking the access
/// token) and refuses a request that has none; an agent framework's adapter holds one.
///
/// ```
/// use cairnloop::approvals::Caller;
/// let caller = Caller::new("claude-desktop:alice", ["orders:read"])
///     .with_account("acme")
///     .with_person("alice");
/// assert_eq!(caller.person(), Some("alice"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    id: String,
    account: Option<String>,
    scopes: Vec<String>,
    person: Option<String>,
}

impl Caller {
    /// A caller with an id and its granted scopes.
    ///
    /// ```
    /// let caller = cairnloop::approvals::Caller::new("agent-7", ["orders:read"]);
    /// assert_eq!(caller.id(), "agent-7");
    /// ```
    pub fn new<I: IntoIterator<Item = T>, T: Into<String>>(
        id: impl Into<String>,
        scopes: I,
    ) -> Self {
        Self {
            id: id.into(),
            account: None,
            scopes: scopes.into_iter().map(Into::into).collect(),
            person: None,
        }
    }

    /// The account it acts in.
    ///
    /// ```
    /// let caller = cairnloop::approvals::Caller::new("a", ["s"]).with_account("acme");
    /// assert_eq!(caller.account(), Some("acme"));
    /// ```
    #[must_use]
    pub fn with_account(mut self, account: impl Into<String>) -> Self {
        self.account = Some(account.into());
        self
    }

    /// The person at the client, who answers approval prompts.
    ///
    /// ```
    /// let caller = cairnloop::approvals::Caller::new("a", ["s"]).with_person("alice");
    /// assert_eq!(caller.person(), Some("alice"));
    /// ```
    #[must_use]
    pub fn with_person(mut self, person: impl Into<String>) -> Self {
        self.person = Some(person.into());
        self
    }

    /// The actor's id.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::Caller::new("a", ["s"]).id(), "a");
    /// ```
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The account, if any.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::Caller::new("a", ["s"]).account(), None);
    /// ```
    #[must_use]
    pub fn account(&self) -> Option<&str> {
        self.account.as_deref()
    }

    /// The granted scopes.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::Caller::new("a", ["s"]).scopes(), ["s"]);
    /// ```
    #[must_use]
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The person who answers prompts, if the transport knows one.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::Caller::new("a", ["s"]).person(), None);
    /// ```
    #[must_use]
    pub fn person(&self) -> Option<&str> {
        self.person.as_deref()
    }

    /// The scopes as the borrowed list an [`Actor`] takes.
    #[cfg_attr(not(any(feature = "rmcp", feature = "rig")), allow(dead_code))]
    pub(crate) fn scope_refs(&self) -> ScopeRefs<'_> {
        if self.scopes.len() <= FEW_SCOPES {
            let mut few = [""; FEW_SCOPES];
            for (slot, scope) in few.iter_mut().zip(&self.scopes) {
                *slot = scope;
            }
            ScopeRefs::Few(few, self.scopes.len())
        } else {
            ScopeRefs::Many(self.scopes.iter().map(String::as_str).collect())
        }
    }

    /// The actor this caller is, with `scopes` from [`Caller::scope_refs`].
    #[cfg_attr(not(any(feature = "rmcp", feature = "rig")), allow(dead_code))]
    pub(crate) fn actor<'a>(&'a self, scopes: &'a [&'a str]) -> Actor<'a> {
        let actor = Actor::new(&self.id, scopes);
        match &self.account {
            Some(account) => actor.with_account(account),
            None => actor,
        }
    }
}

/// How many scopes [`Caller::scope_refs`] lists without allocating: most callers have a
/// few, and each call lists them.
const FEW_SCOPES: usize = 8;

/// A caller's scopes, borrowed: in place when they are few.
#[cfg_attr(not(any(feature = "rmcp", feature = "rig")), allow(dead_code))]
pub(crate) enum ScopeRefs<'a> {
    Few([&'a str; FEW_SCOPES], usize),
    Many(Vec<&'a str>),
}

impl<'a> core::ops::Deref for ScopeRefs<'a> {
    type Target = [&'a str];

    fn deref(&self) -> &[&'a str] {
        match self {
            Self::Few(few, len) => few.get(..*len).unwrap_or_default(),
            Self::Many(many) => many,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scopes_are_listed_as_granted_few_or_many() {
        for count in [0, 1, FEW_SCOPES, FEW_SCOPES + 1, 3 * FEW_SCOPES] {
            let granted: Vec<String> = (0..count).map(|n| alloc::format!("scope-{n}")).collect();
            let caller = Caller::new("agent", granted.iter().map(String::as_str));
            let listed: Vec<&str> = caller.scope_refs().to_vec();
            assert_eq!(listed, granted, "{count} scopes");
        }
    }
}
