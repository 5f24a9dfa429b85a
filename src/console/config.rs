use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::declare::RiskTier;

/// How an operator proves who they are when signing in.
///
/// ```
/// use cairnloop::console::Credential;
///
/// let hash = Credential::hash_password("correct horse battery staple")?;
/// assert!(hash.starts_with("$argon2id$"));
/// let credential = Credential::PasswordHash(hash);
/// # Ok::<(), cairnloop::console::ConsoleError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// An Argon2 password hash in PHC form (`$argon2id$v=19$...`), as
    /// [`Credential::hash_password`] makes it.
    PasswordHash(String),
    /// A long random token from the host's configuration, given in the password field.
    /// Only its SHA-256 is kept.
    Token(TokenDigest),
}

/// The SHA-256 of a sign-in token: the token itself is not kept in memory.
///
/// ```
/// use cairnloop::console::TokenDigest;
/// assert_eq!(TokenDigest::of("s3cret"), TokenDigest::of("s3cret"));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TokenDigest([u8; 32]);

impl TokenDigest {
    /// The digest of `token`.
    ///
    /// ```
    /// use cairnloop::console::TokenDigest;
    /// assert_ne!(TokenDigest::of("a"), TokenDigest::of("b"));
    /// ```
    #[must_use]
    pub fn of(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }
}

impl core::fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("TokenDigest(..)")
    }
}

impl Credential {
    /// A token credential: only the token's SHA-256 is kept.
    ///
    /// ```
    /// use cairnloop::console::Credential;
    /// let credential = Credential::token("a-long-random-token-from-the-vault");
    /// ```
    #[must_use]
    pub fn token(token: &str) -> Self {
        Self::Token(TokenDigest::of(token))
    }

    /// The Argon2id hash (PHC form, a fresh random salt) of `password`, for the host's
    /// configuration.
    ///
    /// # Errors
    ///
    /// [`ConsoleError::Password`] when no random salt could be had or hashing failed.
    ///
    /// ```
    /// use cairnloop::console::Credential;
    /// let one = Credential::hash_password("pw")?;
    /// let two = Credential::hash_password("pw")?;
    /// assert_ne!(one, two); // salted
    /// # Ok::<(), cairnloop::console::ConsoleError>(())
    /// ```
    pub fn hash_password(password: &str) -> Result<String, ConsoleError> {
        use argon2::password_hash::{PasswordHasher, SaltString};
        let mut salt = [0u8; 16];
        getrandom::fill(&mut salt).map_err(|error| ConsoleError::Password(error.to_string()))?;
        let salt = SaltString::encode_b64(&salt)
            .map_err(|error| ConsoleError::Password(error.to_string()))?;
        argon2::Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|error| ConsoleError::Password(error.to_string()))
    }

    /// Whether `given` proves the credential of the operator a sign-in names (`None`:
    /// no such operator). Every attempt costs one Argon2 verification, whether the name
    /// is unknown, holds a token or holds a password hash: the time a wrong sign-in takes
    /// does not tell who the operators are.
    pub(crate) fn sign_in(credential: Option<&Self>, given: &str) -> bool {
        // Only a password hash costs an Argon2 verification of its own; any other
        // sign-in makes the same one against the decoy.
        if !matches!(credential, Some(Self::PasswordHash(_))) {
            let _ = verify_password(decoy_hash(), given);
        }
        credential.is_some_and(|credential| credential.accepts(given))
    }

    /// Whether `given` proves this credential. A malformed stored hash proves nothing.
    pub(crate) fn accepts(&self, given: &str) -> bool {
        match self {
            Self::PasswordHash(hash) => verify_password(hash, given),
            Self::Token(digest) => {
                // Digests compared whole: the time taken says nothing about the token.
                let given = TokenDigest::of(given);
                given
                    .0
                    .iter()
                    .zip(digest.0.iter())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
            }
        }
    }
}

/// One Argon2 verification of `given` against `hash` (PHC form); a malformed hash
/// proves nothing.
fn verify_password(hash: &str, given: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    #[cfg(test)]
    VERIFICATIONS.with(|count| count.set(count.get() + 1));
    PasswordHash::new(hash).is_ok_and(|hash| {
        argon2::Argon2::default()
            .verify_password(given.as_bytes(), &hash)
            .is_ok()
    })
}

#[cfg(test)]
std::thread_local! {
    /// Argon2 verifications made on this thread (tests count the work of a sign-in).
    static VERIFICATIONS: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// A hash no password matches in practice, made once with the parameters
/// [`Credential::hash_password`] uses, for sign-ins that have no hash of their own to
/// verify.
fn decoy_hash() -> &'static str {
    use argon2::password_hash::{PasswordHasher, SaltString};
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| {
        // A fixed salt: the decoy proves nothing, it only costs what a real check costs.
        SaltString::encode_b64(b"cairnloop-decoy!")
            .ok()
            .and_then(|salt| {
                argon2::Argon2::default()
                    .hash_password(b"decoy: no operator has this password", &salt)
                    .ok()
                    .map(|hash| hash.to_string())
            })
            .unwrap_or_default()
    })
}

/// Which accounts' proposals an operator sees and decides.
///
/// ```
/// use cairnloop::console::Accounts;
/// assert!(Accounts::All.includes(None));
/// let some = Accounts::only(["acme"]);
/// assert!(some.includes(Some("acme")) && !some.includes(Some("globex")) && !some.includes(None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Accounts {
    /// Every proposal, with an account or without.
    All,
    /// Only proposals made in one of these accounts (none without an account).
    Only(Vec<String>),
}

impl Accounts {
    /// Only these accounts.
    ///
    /// ```
    /// use cairnloop::console::Accounts;
    /// assert!(Accounts::only(["a", "b"]).includes(Some("b")));
    /// ```
    pub fn only<I: IntoIterator<Item = T>, T: Into<String>>(accounts: I) -> Self {
        Self::Only(accounts.into_iter().map(Into::into).collect())
    }

    /// Whether a proposal made in `account` is one of these.
    ///
    /// ```
    /// use cairnloop::console::Accounts;
    /// assert!(!Accounts::only(["a"]).includes(Some("A")));
    /// ```
    #[must_use]
    pub fn includes(&self, account: Option<&str>) -> bool {
        match (self, account) {
            (Self::All, _) => true,
            (Self::Only(list), Some(account)) => list.iter().any(|one| one == account),
            (Self::Only(_), None) => false,
        }
    }
}

/// A person who may sign in to the console.
///
/// ```
/// use cairnloop::console::{Accounts, Credential, Operator};
/// let lead = Operator::new("ops-lead", Credential::token("t0k3n"), Accounts::All);
/// assert_eq!(lead.id(), "ops-lead");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operator {
    id: String,
    credential: Credential,
    accounts: Accounts,
    /// The risk tiers whose proposals the operator may decide; `None`: every tier.
    tiers: Option<Vec<RiskTier>>,
}

impl Operator {
    /// An operator with an id (their name in every decision they make), a credential and
    /// the accounts they see. An id that breaks the identity rule (edge whitespace, a
    /// control or an invisible character: see
    /// [`check_id`](crate::approvals::check_id)) cannot sign in.
    ///
    /// ```
    /// use cairnloop::console::{Accounts, Credential, Operator};
    /// let op = Operator::new("bea", Credential::token("x"), Accounts::only(["acme"]));
    /// assert_eq!(op.accounts(), &Accounts::only(["acme"]));
    /// ```
    pub fn new(id: impl Into<String>, credential: Credential, accounts: Accounts) -> Self {
        Self {
            id: id.into(),
            credential,
            accounts,
            tiers: None,
        }
    }

    /// Limits the operator to deciding proposals of these risk tiers (a junior operator
    /// approves low-write calls only). They still see every proposal of their accounts;
    /// one of another tier shows why they cannot decide it. By default an operator may
    /// decide every tier.
    ///
    /// ```
    /// use cairnloop::RiskTier;
    /// use cairnloop::console::{Accounts, Credential, Operator};
    /// let junior = Operator::new("cy", Credential::token("x"), Accounts::All)
    ///     .deciding_only([RiskTier::ReadOnly, RiskTier::LowWrite]);
    /// assert!(junior.may_decide(RiskTier::LowWrite));
    /// assert!(!junior.may_decide(RiskTier::HighWrite));
    /// ```
    #[must_use]
    pub fn deciding_only(mut self, tiers: impl IntoIterator<Item = RiskTier>) -> Self {
        self.tiers = Some(tiers.into_iter().collect());
        self
    }

    /// Whether the operator may decide a proposal of this risk tier.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, console::{Accounts, Credential, Operator}};
    /// assert!(Operator::new("bea", Credential::token("x"), Accounts::All).may_decide(RiskTier::Destructive));
    /// ```
    #[must_use]
    pub fn may_decide(&self, tier: RiskTier) -> bool {
        self.tiers
            .as_ref()
            .is_none_or(|tiers| tiers.contains(&tier))
    }

    /// The operator's id.
    ///
    /// ```
    /// # use cairnloop::console::{Accounts, Credential, Operator};
    /// assert_eq!(Operator::new("bea", Credential::token("x"), Accounts::All).id(), "bea");
    /// ```
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The accounts the operator sees.
    ///
    /// ```
    /// # use cairnloop::console::{Accounts, Credential, Operator};
    /// assert_eq!(Operator::new("bea", Credential::token("x"), Accounts::All).accounts(), &Accounts::All);
    /// ```
    #[must_use]
    pub const fn accounts(&self) -> &Accounts {
        &self.accounts
    }

    pub(crate) const fn credential(&self) -> &Credential {
        &self.credential
    }
}

/// What the host configures: the operators, how long a session lasts, the login limit,
/// an optional trusted header from a reverse proxy, and where to listen.
///
/// ```
/// use std::time::Duration;
/// use cairnloop::console::{Accounts, ConsoleConfig, Credential, Operator};
///
/// let config = ConsoleConfig::new()
///     .with_operator(Operator::new("ops-lead", Credential::token("t0k3n"), Accounts::All))
///     .with_session_ttl(Duration::from_secs(3_600));
/// assert_eq!(config.address().to_string(), "127.0.0.1:8377");
/// ```
#[derive(Clone, Debug)]
pub struct ConsoleConfig {
    pub(crate) operators: Vec<Operator>,
    pub(crate) session_ttl: Duration,
    pub(crate) login_attempts: u32,
    pub(crate) login_window: Duration,
    pub(crate) trusted_header: Option<String>,
    pub(crate) secure_cookie: bool,
    pub(crate) address: SocketAddr,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl ConsoleConfig {
    /// No operators; sessions of 8 hours; 5 failed sign-ins per name or address per
    /// minute; no trusted header; cookies without `Secure` (the console listens on
    /// plain HTTP on 127.0.0.1:8377 unless told otherwise).
    ///
    /// ```
    /// use cairnloop::console::ConsoleConfig;
    /// assert!(ConsoleConfig::new().address().ip().is_loopback());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self {
            operators: Vec::new(),
            session_ttl: Duration::from_secs(8 * 3_600),
            login_attempts: 5,
            login_window: Duration::from_secs(60),
            trusted_header: None,
            secure_cookie: false,
            address: SocketAddr::from((Ipv4Addr::LOCALHOST, 8377)),
        }
    }

    /// Adds an operator. A second operator with the same id replaces the first.
    ///
    /// ```
    /// # use cairnloop::console::{Accounts, ConsoleConfig, Credential, Operator};
    /// let config = ConsoleConfig::new().with_operator(Operator::new("a", Credential::token("t"), Accounts::All));
    /// ```
    #[must_use]
    pub fn with_operator(mut self, operator: Operator) -> Self {
        self.operators.retain(|one| one.id != operator.id);
        self.operators.push(operator);
        self
    }

    /// How long a session lasts after sign-in.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use cairnloop::console::ConsoleConfig;
    /// let config = ConsoleConfig::new().with_session_ttl(Duration::from_secs(900));
    /// ```
    #[must_use]
    pub const fn with_session_ttl(mut self, ttl: Duration) -> Self {
        self.session_ttl = ttl;
        self
    }

    /// At most `attempts` failed sign-ins per operator name, and per client address,
    /// within `window`; past it, `429 Too Many Requests` with `Retry-After`, and the
    /// credential is not even checked. The client's address is known when the router
    /// is served with connection info ([`Console::serve`](crate::console::Console::serve)
    /// does; so does axum's `into_make_service_with_connect_info`); otherwise only the
    /// name is counted.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use cairnloop::console::ConsoleConfig;
    /// let config = ConsoleConfig::new().with_login_limit(3, Duration::from_secs(300));
    /// ```
    #[must_use]
    pub const fn with_login_limit(mut self, attempts: u32, window: Duration) -> Self {
        self.login_attempts = attempts;
        self.login_window = window;
        self
    }

    /// Trusts a header set by the host's reverse proxy (say `X-Forwarded-User`) to name
    /// the operator: a request carrying it with a configured operator's id is signed in
    /// as them, without a password. Only for a console that nothing but that proxy can
    /// reach.
    ///
    /// ```
    /// # use cairnloop::console::ConsoleConfig;
    /// let config = ConsoleConfig::new().with_trusted_header("X-Forwarded-User");
    /// ```
    #[must_use]
    pub fn with_trusted_header(mut self, header: impl Into<String>) -> Self {
        self.trusted_header = Some(header.into());
        self
    }

    /// Marks the session cookie `Secure`: for a console served over HTTPS (directly or
    /// behind a proxy).
    ///
    /// ```
    /// # use cairnloop::console::ConsoleConfig;
    /// let config = ConsoleConfig::new().with_secure_cookie(true);
    /// ```
    #[must_use]
    pub const fn with_secure_cookie(mut self, secure: bool) -> Self {
        self.secure_cookie = secure;
        self
    }

    /// Where [`Console::serve`](crate::console::Console::serve) listens; 127.0.0.1:8377
    /// unless set.
    ///
    /// ```
    /// # use cairnloop::console::ConsoleConfig;
    /// let config = ConsoleConfig::new().with_address(([127, 0, 0, 1], 9000).into());
    /// assert_eq!(config.address().port(), 9000);
    /// ```
    #[must_use]
    pub const fn with_address(mut self, address: SocketAddr) -> Self {
        self.address = address;
        self
    }

    /// Where the console listens.
    ///
    /// ```
    /// # use cairnloop::console::ConsoleConfig;
    /// assert_eq!(ConsoleConfig::new().address().port(), 8377);
    /// ```
    #[must_use]
    pub const fn address(&self) -> SocketAddr {
        self.address
    }

    /// The operator with this id. One whose id breaks the identity rule (see
    /// [`check_id`](crate::approvals::check_id)) is never found: it cannot sign in.
    pub(crate) fn operator(&self, id: &str) -> Option<&Operator> {
        self.operators
            .iter()
            .find(|one| one.id == id)
            .filter(|one| crate::approvals::check_id(&one.id).is_ok())
    }
}

/// What can go wrong setting up or serving the console.
///
/// ```
/// use cairnloop::console::ConsoleError;
/// let error = ConsoleError::Password("no entropy".into());
/// assert_eq!(error.to_string(), "password hashing failed: no entropy");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsoleError {
    /// Hashing a password failed.
    #[error("password hashing failed: {0}")]
    Password(String),
    /// The listener could not be bound or the server stopped with an error.
    #[error("serving the console failed: {0}")]
    Serve(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Argon2 verifications one sign-in makes, and whether it was let in.
    fn work_of(credential: Option<&Credential>, given: &str) -> (usize, bool) {
        let before = VERIFICATIONS.with(core::cell::Cell::get);
        let accepted = Credential::sign_in(credential, given);
        (VERIFICATIONS.with(core::cell::Cell::get) - before, accepted)
    }

    #[test]
    fn every_sign_in_costs_one_argon2_verification_whoever_it_names() {
        let hash = Credential::PasswordHash(Credential::hash_password("right").unwrap());
        let token = Credential::token("a-long-token");
        assert_eq!(work_of(Some(&hash), "right"), (1, true));
        assert_eq!(work_of(Some(&hash), "wrong"), (1, false));
        assert_eq!(work_of(Some(&token), "a-long-token"), (1, true));
        assert_eq!(work_of(Some(&token), "wrong"), (1, false));
        assert_eq!(work_of(None, "anything"), (1, false));
        // The decoy is a real hash of the same kind, not an empty string that fails fast.
        assert!(decoy_hash().starts_with("$argon2id$"));
    }
}
