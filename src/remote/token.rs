//! Access tokens: JWTs checked against the authorization server's keys, read into the
//! caller of a request.

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::approvals::{IdentityError, check_id};

/// Why an access token was refused. Every case is a `401` with
/// `error="invalid_token"`; nothing the request asked for is done.
///
/// ```
/// use cairnloop::remote::TokenError;
/// assert_eq!(TokenError::Expired.to_string(), "the token has expired");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// No `Authorization: Bearer` header.
    #[error("no bearer token")]
    Missing,
    /// Not a JWT, or its header or claims cannot be read.
    #[error("the token is malformed: {0}")]
    Malformed(String),
    /// An algorithm this server does not accept (`none`, a shared-secret `HS*`), or not
    /// the one its key is for.
    #[error("the token's algorithm is not accepted")]
    Algorithm,
    /// The token names no key (`kid`), or one the key set does not hold.
    #[error("the token's key is unknown")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    Signature,
    /// Past `exp` (beyond the leeway).
    #[error("the token has expired")]
    Expired,
    /// Before `nbf` (beyond the leeway).
    #[error("the token is not valid yet")]
    NotYetValid,
    /// `aud` does not name this server.
    #[error("the token was issued for another resource")]
    Audience,
    /// `iss` is not the configured authorization server.
    #[error("the token's issuer is not trusted")]
    Issuer,
    /// A required claim is missing or has the wrong type.
    #[error("the token's claims are incomplete: {0}")]
    Claims(String),
    /// An identity claim (`sub`, the client's `azp` or `client_id`, the account claim)
    /// breaks the identity rule (see [`check_id`]): empty, edge whitespace, a control or
    /// an invisible character.
    #[error("the token's {claim} claim is refused: {error}")]
    Identity {
        /// Which claim: `sub`, `client` or `account`.
        claim: &'static str,
        /// Why it is refused.
        error: IdentityError,
    },
    /// The `scope` claim is not a plain space-separated list of scope tokens (odd
    /// whitespace, a wildcard, a character outside RFC 6749's scope syntax).
    #[error("the token's scope claim is not accepted: {0}")]
    Scope(String),
}

/// What a key set could not be read for.
///
/// ```
/// use cairnloop::remote::TokenVerifier;
/// let error = TokenVerifier::new("https://issuer", "https://mcp.example", "{").unwrap_err();
/// assert!(error.to_string().starts_with("the key set is not a JWKS"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeySetError {
    /// Not a JSON Web Key Set.
    #[error("the key set is not a JWKS: {0}")]
    NotJwks(String),
    /// A key without a `kid`, a shared-secret key, or a key of a kind not supported.
    #[error("key {kid:?} cannot be used: {why}")]
    Key {
        /// The key's id, if it has one.
        kid: Option<String>,
        /// Why not.
        why: String,
    },
}

/// Who a verified token says is calling.
///
/// ```
/// # fn f(principal: &cairnloop::remote::Principal) {
/// println!("{} for {:?}, scopes {:?}", principal.subject(), principal.client(), principal.scopes());
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    subject: String,
    client: Option<String>,
    scopes: Vec<String>,
    account: Option<String>,
}

impl Principal {
    /// The `sub` claim: the person (or service) the token was issued to.
    ///
    /// ```
    /// # fn f(p: &cairnloop::remote::Principal) -> &str {
    /// p.subject()
    /// # }
    /// ```
    #[must_use]
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The client acting for the subject (`azp`, else `client_id`), if the token says.
    ///
    /// ```
    /// # fn f(p: &cairnloop::remote::Principal) -> Option<&str> {
    /// p.client()
    /// # }
    /// ```
    #[must_use]
    pub fn client(&self) -> Option<&str> {
        self.client.as_deref()
    }

    /// The granted scopes, from the `scope` claim.
    ///
    /// ```
    /// # fn f(p: &cairnloop::remote::Principal) -> &[String] {
    /// p.scopes()
    /// # }
    /// ```
    #[must_use]
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The account, from the configured claim.
    ///
    /// ```
    /// # fn f(p: &cairnloop::remote::Principal) -> Option<&str> {
    /// p.account()
    /// # }
    /// ```
    #[must_use]
    pub fn account(&self) -> Option<&str> {
        self.account.as_deref()
    }

    /// The actor id a call is made under: the agent, that is the client acting for the
    /// subject (`alice via claude-desktop`), or the subject alone when the token names
    /// no client. The person who answers approval prompts is the subject: a different
    /// id, so whether their answer counts is the host's per-tier rule.
    ///
    /// ```
    /// # fn f(p: &cairnloop::remote::Principal) -> String {
    /// p.actor_id()
    /// # }
    /// ```
    #[must_use]
    pub fn actor_id(&self) -> String {
        match &self.client {
            Some(client) => format!("{} via {client}", self.subject),
            None => self.subject.clone(),
        }
    }
}

/// A key of the set, and the one algorithm it verifies.
struct Key {
    key: DecodingKey,
    algorithm: Algorithm,
}

/// Checks access tokens: a JWT signed by one of the authorization server's keys (RSA,
/// RSA-PSS, ECDSA or Ed25519, never a shared secret), from the configured issuer, for
/// this server (`aud` is its resource identifier, RFC 8707), within `exp` and `nbf` give
/// or take a leeway (60 s unless set).
///
/// The keys come from a JSON Web Key Set. Replace them when the authorization server
/// rotates its keys ([`TokenVerifier::replace_keys`]); this crate fetches nothing, so
/// the host chooses the HTTP client and the TLS stack.
///
/// ```
/// use cairnloop::remote::{TokenError, TokenVerifier};
///
/// let jwks = r#"{"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256",
///   "x": "WKn-ZIGevcwGIyyrzFoZNBdaq9_TsqzGl96oc0CWuis",
///   "y": "y77t-RvAHRKTsSGdIYUfweuOvwrvDD-Q3Hv5J0fSKbE"}]}"#;
/// let verifier = TokenVerifier::new("https://auth.example", "https://mcp.example/mcp", jwks)?
///     .with_account_claim("tenant");
/// assert_eq!(verifier.verify("not-a-jwt").unwrap_err().to_string().split(':').next(),
///            Some("the token is malformed"));
/// # Ok::<(), cairnloop::remote::KeySetError>(())
/// ```
pub struct TokenVerifier {
    keys: RwLock<HashMap<String, Key>>,
    issuer: String,
    audience: String,
    leeway: Duration,
    account_claim: Option<String>,
}

impl core::fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TokenVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("leeway", &self.leeway)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    scope: Option<Value>,
    #[serde(default)]
    azp: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl TokenVerifier {
    /// A verifier for tokens from `issuer`, for the resource `audience`, checked
    /// against the keys of `jwks` (a JSON Web Key Set, as the authorization server
    /// publishes it).
    ///
    /// # Errors
    ///
    /// [`KeySetError`] for a set that is not JSON, a key without a `kid`, a shared-secret
    /// (`oct`) key, or a key of an unsupported kind.
    ///
    /// ```
    /// use cairnloop::remote::TokenVerifier;
    /// let secret = r#"{"keys": [{"kty": "oct", "kid": "s", "k": "c2VjcmV0"}]}"#;
    /// assert!(TokenVerifier::new("https://auth", "https://mcp", secret).is_err());
    /// ```
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks: &str,
    ) -> Result<Self, KeySetError> {
        // The pure-Rust crypto, chosen here so that a build which also enables another
        // provider does not leave the choice to chance (or to a panic).
        let _ = jsonwebtoken::crypto::CryptoProvider::install_default(
            &jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER,
        );
        Ok(Self {
            keys: RwLock::new(read_keys(jwks)?),
            issuer: issuer.into(),
            audience: audience.into(),
            leeway: Duration::from_secs(60),
            account_claim: None,
        })
    }

    /// The clock skew allowed on `exp` and `nbf`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use cairnloop::remote::TokenVerifier;
    /// # let jwks = r#"{"keys": []}"#;
    /// let verifier = TokenVerifier::new("https://auth", "https://mcp", jwks)?
    ///     .with_leeway(Duration::from_secs(10));
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub const fn with_leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The claim that names the caller's account (a string claim, say `tenant`).
    ///
    /// ```
    /// # use cairnloop::remote::TokenVerifier;
    /// # let jwks = r#"{"keys": []}"#;
    /// let verifier = TokenVerifier::new("https://auth", "https://mcp", jwks)?.with_account_claim("org");
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub fn with_account_claim(mut self, claim: impl Into<String>) -> Self {
        self.account_claim = Some(claim.into());
        self
    }

    /// The resource identifier tokens must name in `aud`.
    ///
    /// ```
    /// # use cairnloop::remote::TokenVerifier;
    /// # let jwks = r#"{"keys": []}"#;
    /// let verifier = TokenVerifier::new("https://auth", "https://mcp/mcp", jwks)?;
    /// assert_eq!(verifier.audience(), "https://mcp/mcp");
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The trusted issuer.
    ///
    /// ```
    /// # use cairnloop::remote::TokenVerifier;
    /// # let jwks = r#"{"keys": []}"#;
    /// assert_eq!(TokenVerifier::new("https://auth", "https://mcp", jwks)?.issuer(), "https://auth");
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    #[must_use]
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Replaces the key set (after the authorization server rotated its keys). A set
    /// that cannot be read leaves the old one in place.
    ///
    /// # Errors
    ///
    /// As [`TokenVerifier::new`].
    ///
    /// ```
    /// # use cairnloop::remote::TokenVerifier;
    /// let verifier = TokenVerifier::new("https://auth", "https://mcp", r#"{"keys": []}"#)?;
    /// assert!(verifier.replace_keys("nonsense").is_err());
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    pub fn replace_keys(&self, jwks: &str) -> Result<(), KeySetError> {
        let keys = read_keys(jwks)?;
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = keys;
        Ok(())
    }

    /// Verifies `token` and reads who it names.
    ///
    /// # Errors
    ///
    /// [`TokenError`], naming the first check that failed.
    ///
    /// ```
    /// # use cairnloop::remote::{TokenError, TokenVerifier};
    /// let verifier = TokenVerifier::new("https://auth", "https://mcp", r#"{"keys": []}"#)?;
    /// // An unsigned token (`alg: none`) is never accepted.
    /// let unsigned = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJtYWxsb3J5In0.";
    /// assert!(verifier.verify(unsigned).is_err());
    /// # Ok::<(), cairnloop::remote::KeySetError>(())
    /// ```
    pub fn verify(&self, token: &str) -> Result<Principal, TokenError> {
        if names_no_signature(token) {
            return Err(TokenError::Algorithm);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|error| match error.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidAlgorithmName => TokenError::Algorithm,
            _ => TokenError::Malformed(error.to_string()),
        })?;
        if !matches!(
            header.alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
                | Algorithm::EdDSA
        ) {
            return Err(TokenError::Algorithm);
        }
        let kid = header.kid.ok_or(TokenError::UnknownKey)?;
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        let key = keys.get(&kid).ok_or(TokenError::UnknownKey)?;
        if key.algorithm != header.alg {
            return Err(TokenError::Algorithm);
        }
        let mut validation = Validation::new(key.algorithm);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway.as_secs();
        let data =
            jsonwebtoken::decode::<Claims>(token, &key.key, &validation).map_err(|error| {
                use jsonwebtoken::errors::ErrorKind;
                match error.kind() {
                    ErrorKind::InvalidSignature => TokenError::Signature,
                    ErrorKind::ExpiredSignature => TokenError::Expired,
                    ErrorKind::ImmatureSignature => TokenError::NotYetValid,
                    ErrorKind::InvalidAudience => TokenError::Audience,
                    ErrorKind::InvalidIssuer => TokenError::Issuer,
                    ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => {
                        TokenError::Algorithm
                    }
                    ErrorKind::MissingRequiredClaim(claim) => {
                        TokenError::Claims(format!("no {claim} claim"))
                    }
                    _ => TokenError::Malformed(error.to_string()),
                }
            })?;
        let claims = data.claims;
        let subject = claims
            .sub
            .ok_or_else(|| TokenError::Claims("no sub claim".into()))?;
        check_id(&subject).map_err(|error| TokenError::Identity {
            claim: "sub",
            error,
        })?;
        let scopes = match claims.scope {
            None => Vec::new(),
            Some(Value::String(scope)) => scopes_of(&scope)?,
            Some(_) => return Err(TokenError::Scope("the scope claim is not a string".into())),
        };
        let account = match &self.account_claim {
            None => None,
            Some(name) => match claims.rest.get(name) {
                None => None,
                Some(Value::String(account)) => {
                    check_id(account).map_err(|error| TokenError::Identity {
                        claim: "account",
                        error,
                    })?;
                    Some(account.clone())
                }
                Some(_) => {
                    return Err(TokenError::Claims(format!(
                        "the {name} claim is not a name"
                    )));
                }
            },
        };
        Ok(Principal {
            subject,
            client: match claims.azp.or(claims.client_id) {
                Some(client) if client.is_empty() => None,
                Some(client) => {
                    check_id(&client).map_err(|error| TokenError::Identity {
                        claim: "client",
                        error,
                    })?;
                    Some(client)
                }
                None => None,
            },
            scopes,
            account,
        })
    }
}

/// Whether the token's header says `alg: none` (in any case): an unsigned token is
/// refused as such, not as an unreadable one.
fn names_no_signature(token: &str) -> bool {
    use base64::Engine as _;
    let Some(header) = token.split('.').next() else {
        return false;
    };
    let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header) else {
        return false;
    };
    serde_json::from_slice::<Value>(&bytes).is_ok_and(|header| {
        header
            .get("alg")
            .and_then(Value::as_str)
            .is_some_and(|alg| alg.eq_ignore_ascii_case("none"))
    })
}

/// The scope claim as RFC 6749 §3.3 spells it: scope tokens separated by single
/// spaces. Anything else is refused rather than guessed at, and so is a wildcard: scopes
/// match exactly here, so a `*` could only be a mistake or an attack.
fn scopes_of(claim: &str) -> Result<Vec<String>, TokenError> {
    if claim.is_empty() {
        return Ok(Vec::new());
    }
    let mut scopes = Vec::new();
    for scope in claim.split(' ') {
        if scope.is_empty() {
            return Err(TokenError::Scope(
                "leading, trailing or repeated spaces".into(),
            ));
        }
        if let Some(bad) = scope
            .chars()
            .find(|&c| !matches!(c, '\u{21}' | '\u{23}'..='\u{5b}' | '\u{5d}'..='\u{7e}'))
        {
            return Err(TokenError::Scope(format!("{:?} in {scope:?}", bad)));
        }
        if scope.contains('*') {
            return Err(TokenError::Scope(format!("a wildcard in {scope:?}")));
        }
        scopes.push(scope.to_string());
    }
    Ok(scopes)
}

fn read_keys(jwks: &str) -> Result<HashMap<String, Key>, KeySetError> {
    let set: JwkSet =
        serde_json::from_str(jwks).map_err(|error| KeySetError::NotJwks(error.to_string()))?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        let kid = jwk.common.key_id.clone();
        let refuse = |why: &str| KeySetError::Key {
            kid: kid.clone(),
            why: why.to_string(),
        };
        let Some(id) = kid.clone() else {
            return Err(refuse("it has no kid"));
        };
        let named = jwk
            .common
            .key_algorithm
            .map(|algorithm| {
                Algorithm::try_from(algorithm).map_err(|_| refuse("its alg signs nothing"))
            })
            .transpose()?;
        let algorithm = match (&jwk.algorithm, named) {
            (AlgorithmParameters::OctetKey(_), _) => {
                return Err(refuse("a shared secret is never a verification key here"));
            }
            (_, Some(Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)) => {
                return Err(refuse("a shared-secret algorithm"));
            }
            (_, Some(algorithm)) => algorithm,
            (AlgorithmParameters::RSA(_), None) => Algorithm::RS256,
            (AlgorithmParameters::EllipticCurve(ec), None) => match ec.curve {
                EllipticCurve::P256 => Algorithm::ES256,
                EllipticCurve::P384 => Algorithm::ES384,
                _ => return Err(refuse("an unsupported curve")),
            },
            (AlgorithmParameters::OctetKeyPair(_), None) => Algorithm::EdDSA,
            _ => return Err(refuse("an unsupported key type")),
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|error| refuse(&error.to_string()))?;
        keys.insert(id, Key { key, algorithm });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_a_plain_list_or_refused() {
        assert_eq!(
            scopes_of("orders:read tickets:write").unwrap(),
            ["orders:read", "tickets:write"]
        );
        assert_eq!(scopes_of("").unwrap(), Vec::<String>::new());
        for bad in [
            " orders:read",
            "orders:read ",
            "a  b",
            "a\tb",
            "a\nb",
            "orders:*",
            "*",
            "a\"b",
            "a\\b",
            "é",
        ] {
            assert!(scopes_of(bad).is_err(), "{bad:?}");
        }
    }
}
