use alloc::string::String;
use alloc::vec::Vec;

/// Who makes a call, as a transport that authenticates each request says: the actor (the
/// agent), its account and scopes, and the person who answers approval prompts for it.
///
/// A server made with [`McpServer::for_callers`](crate::mcp::McpServer::for_callers)
/// takes the caller from each request (an HTTP transport puts it in the request's
/// extensions after checking the access token) and refuses a request that has none.
///
/// ```
/// use cairnloop::mcp::Caller;
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
    /// let caller = cairnloop::mcp::Caller::new("agent-7", ["orders:read"]);
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
    /// let caller = cairnloop::mcp::Caller::new("a", ["s"]).with_account("acme");
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
    /// let caller = cairnloop::mcp::Caller::new("a", ["s"]).with_person("alice");
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
    /// assert_eq!(cairnloop::mcp::Caller::new("a", ["s"]).id(), "a");
    /// ```
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The account, if any.
    ///
    /// ```
    /// assert_eq!(cairnloop::mcp::Caller::new("a", ["s"]).account(), None);
    /// ```
    #[must_use]
    pub fn account(&self) -> Option<&str> {
        self.account.as_deref()
    }

    /// The granted scopes.
    ///
    /// ```
    /// assert_eq!(cairnloop::mcp::Caller::new("a", ["s"]).scopes(), ["s"]);
    /// ```
    #[must_use]
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The person who answers prompts, if the transport knows one.
    ///
    /// ```
    /// assert_eq!(cairnloop::mcp::Caller::new("a", ["s"]).person(), None);
    /// ```
    #[must_use]
    pub fn person(&self) -> Option<&str> {
        self.person.as_deref()
    }
}
