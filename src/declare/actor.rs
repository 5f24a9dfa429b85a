/// Who a call is made for: an id, the account it acts in, and the scopes granted to it.
///
/// Everything is borrowed, so an `Actor` costs nothing to build in a no_std agent. Granted
/// scopes are plain strings from the host's session or token: they are compared with a
/// tool's required [`Scope`](crate::Scope)s by exact byte equality and never interpreted,
/// so `*`, `all` or a prefix grant nothing beyond themselves.
///
/// ```
/// use cairnloop::Actor;
///
/// let actor = Actor::new("agent-7", &["orders:read"]).with_account("acme");
/// assert_eq!(actor.id(), "agent-7");
/// assert_eq!(actor.account(), Some("acme"));
/// assert!(actor.has_scope("orders:read"));
/// assert!(!actor.has_scope("orders"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Actor<'a> {
    id: &'a str,
    account: Option<&'a str>,
    scopes: &'a [&'a str],
}

impl<'a> Actor<'a> {
    /// An actor with an id and granted scopes, in no account.
    ///
    /// ```
    /// let actor = cairnloop::Actor::new("ops-1", &[]);
    /// assert!(actor.scopes().is_empty());
    /// ```
    #[must_use]
    pub const fn new(id: &'a str, scopes: &'a [&'a str]) -> Self {
        Self {
            id,
            account: None,
            scopes,
        }
    }

    /// The same actor, acting in `account` (a tenant, an organisation).
    ///
    /// ```
    /// let actor = cairnloop::Actor::new("ops-1", &[]).with_account("acme");
    /// assert_eq!(actor.account(), Some("acme"));
    /// ```
    #[must_use]
    pub const fn with_account(self, account: &'a str) -> Self {
        Self {
            account: Some(account),
            ..self
        }
    }

    /// The actor's id.
    ///
    /// ```
    /// assert_eq!(cairnloop::Actor::new("ops-1", &[]).id(), "ops-1");
    /// ```
    #[must_use]
    pub const fn id(&self) -> &'a str {
        self.id
    }

    /// The account the actor acts in, if any.
    ///
    /// ```
    /// assert_eq!(cairnloop::Actor::new("ops-1", &[]).account(), None);
    /// ```
    #[must_use]
    pub const fn account(&self) -> Option<&'a str> {
        self.account
    }

    /// The granted scopes, as given.
    ///
    /// ```
    /// assert_eq!(cairnloop::Actor::new("a", &["x:y"]).scopes(), &["x:y"]);
    /// ```
    #[must_use]
    pub const fn scopes(&self) -> &'a [&'a str] {
        self.scopes
    }

    /// Whether `scope` is granted, by exact byte equality.
    ///
    /// ```
    /// let actor = cairnloop::Actor::new("a", &["notes:write"]);
    /// assert!(actor.has_scope("notes:write"));
    /// assert!(!actor.has_scope("Notes:Write"));
    /// ```
    #[must_use]
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|g| g.as_bytes() == scope.as_bytes())
    }
}
