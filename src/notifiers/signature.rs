//! The webhook's signature: HMAC-SHA256 over the send time and the body, so a receiver
//! refuses a body that was changed, signed with another secret, or sent again later.

use std::string::String;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The header that carries the signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>">`.
///
/// ```
/// assert_eq!(cairnloop::notifiers::SIGNATURE_HEADER, "Cairnloop-Signature");
/// ```
pub const SIGNATURE_HEADER: &str = "Cairnloop-Signature";

/// Why a signature was refused.
///
/// ```
/// use cairnloop::notifiers::{SignatureError, verify};
/// use std::time::Duration;
///
/// let refused = verify(b"secret", "v1=00", b"{}", 1_700_000_000, Duration::from_secs(300));
/// assert_eq!(refused, Err(SignatureError::Malformed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The header is not `t=<seconds>,v1=<hex>`.
    #[error("the signature header is not t=<seconds>,v1=<hex>")]
    Malformed,
    /// Signed too long ago or too far ahead: a replay, or a clock far off.
    #[error("the signature's time is outside the tolerance")]
    Stale,
    /// The body or the secret is not the one signed.
    #[error("the signature does not match the body")]
    Mismatch,
}

/// The header value for `body` sent at `unix_seconds`, signed with `secret`.
///
/// ```
/// use cairnloop::notifiers::{sign, verify};
/// use std::time::Duration;
///
/// let header = sign(b"secret", 1_700_000_000, b"{\"key\":1}");
/// assert!(header.starts_with("t=1700000000,v1="));
/// assert_eq!(verify(b"secret", &header, b"{\"key\":1}", 1_700_000_030, Duration::from_secs(300)), Ok(()));
/// ```
pub fn sign(secret: &[u8], unix_seconds: u64, body: &[u8]) -> String {
    let mac = mac(secret, unix_seconds, body).finalize().into_bytes();
    let mut header = std::format!("t={unix_seconds},v1=");
    for byte in mac {
        header.push_str(&std::format!("{byte:02x}"));
    }
    header
}

/// Checks a signature header as a receiver does: well formed, signed within `tolerance`
/// of `now_seconds`, and over this `body` with this `secret` (compared in constant
/// time).
///
/// # Errors
///
/// The [`SignatureError`] that says why it is refused.
///
/// ```
/// use cairnloop::notifiers::{SignatureError, sign, verify};
/// use std::time::Duration;
///
/// let header = sign(b"secret", 1_700_000_000, b"{}");
/// let day = Duration::from_secs(86_400);
/// assert_eq!(verify(b"other", &header, b"{}", 1_700_000_000, day), Err(SignatureError::Mismatch));
/// assert_eq!(verify(b"secret", &header, b"{ }", 1_700_000_000, day), Err(SignatureError::Mismatch));
/// assert_eq!(
///     verify(b"secret", &header, b"{}", 1_700_000_000 + 3_600, Duration::from_secs(300)),
///     Err(SignatureError::Stale)
/// );
/// ```
pub fn verify(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now_seconds: u64,
    tolerance: Duration,
) -> Result<(), SignatureError> {
    let (mut at, mut hex) = (None, None);
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => at = value.parse::<u64>().ok(),
            Some(("v1", value)) => hex = decode_hex(value),
            _ => {}
        }
    }
    let (Some(at), Some(signature)) = (at, hex) else {
        return Err(SignatureError::Malformed);
    };
    if now_seconds.abs_diff(at) > tolerance.as_secs() {
        return Err(SignatureError::Stale);
    }
    mac(secret, at, body)
        .verify_slice(&signature)
        .map_err(|_| SignatureError::Mismatch)
}

fn mac(secret: &[u8], unix_seconds: u64, body: &[u8]) -> Hmac<Sha256> {
    // Any key length is valid for HMAC: this cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(std::format!("{unix_seconds}.").as_bytes());
    mac.update(body);
    mac
}

fn decode_hex(text: &str) -> Option<std::vec::Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}
