//! Governed tools served remotely (feature `remote`): MCP over Streamable HTTP, with the
//! server an OAuth 2.1 resource server.
//!
//! A request needs a bearer access token: a JWT from the configured authorization
//! server, for this resource (RFC 8707), checked against its keys ([`TokenVerifier`]).
//! The token's subject and client become the actor, its `scope` claim the granted
//! scopes (matched exactly, as everywhere in this crate), and a configured claim the
//! account. The protected-resource metadata (RFC 9728) is published at
//! `/.well-known/oauth-protected-resource`, and a refused request points to it in its
//! `WWW-Authenticate` header. The client's token is never sent anywhere.
//!
//! [`RemoteMcp`] builds the axum router: rmcp's Streamable HTTP service (sessions,
//! `DELETE`, resumable streams, the stateless form of newer protocol versions) behind
//! the token check, the `Origin` and `Host` checks and the limits of [`HttpLimits`]. A
//! session is bound to the caller who opened it (the token's subject and client): its id
//! with another caller's token, or an id this server did not open, is answered `404`, so
//! the client opens a session of its own.

mod limits;
mod server;
mod sessions;
mod token;

pub use limits::HttpLimits;
pub use server::RemoteMcp;
pub use token::{KeySetError, Principal, TokenError, TokenVerifier};
