#[cfg(feature = "alloc")]
use alloc::string::String;
use core::fmt;
use core::str::FromStr;

use crate::declare::ParseError;

/// The identity of one call: the lowercase hex SHA-256 of the RFC 8785 canonical JSON of
/// `{account_id, actor_id, dedupe_token, input, tool_ref}`, absent parts as `null`.
///
/// Key order and whitespace in the arguments never change the key; any change of input,
/// tool, actor, account or dedupe token does. Conversation and routing ids are not part of
/// it, so the same call retried in another turn is recognised.
///
/// ```
/// use cairnloop::IdempotencyKey;
///
/// let key: IdempotencyKey = "00".repeat(32).parse()?;
/// assert_eq!(key.as_bytes(), &[0; 32]);
/// # Ok::<(), cairnloop::declare::ParseError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdempotencyKey([u8; 32]);

impl IdempotencyKey {
    /// A key from its 32 bytes, as a host stored them.
    ///
    /// ```
    /// let key = cairnloop::IdempotencyKey::from_bytes([0xab; 32]);
    /// assert!(key.to_string().starts_with("abab"));
    /// ```
    #[must_use]
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The 32 bytes of the digest.
    ///
    /// ```
    /// # use cairnloop::IdempotencyKey;
    /// let key = IdempotencyKey::from_bytes([7; 32]);
    /// assert_eq!(key.as_bytes(), &[7; 32]);
    /// ```
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits.
    ///
    /// ```
    /// # use cairnloop::IdempotencyKey;
    /// let key = IdempotencyKey::from_bytes([0x5a; 32]);
    /// assert_eq!(&key.to_hex()[..4], "5a5a");
    /// assert!(key.to_hex().bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    /// ```
    #[cfg(feature = "alloc")]
    #[must_use]
    pub fn to_hex(&self) -> String {
        let mut hex = String::with_capacity(64);
        for byte in self.0 {
            hex.push(char::from(HEX[usize::from(byte >> 4)]));
            hex.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
        hex
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            let pair = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]];
            // Both bytes are ASCII hex digits.
            f.write_str(core::str::from_utf8(&pair).map_err(|_| fmt::Error)?)?;
        }
        Ok(())
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({self})")
    }
}

impl FromStr for IdempotencyKey {
    type Err = ParseError;

    /// Exactly 64 lowercase hex digits.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return Err(ParseError::IDEMPOTENCY_KEY);
        }
        let digit = |b: u8| {
            HEX.iter()
                .position(|&h| h == b)
                .ok_or(ParseError::IDEMPOTENCY_KEY)
        };
        let mut key = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            #[allow(clippy::cast_possible_truncation, reason = "hex digits are below 16")]
            let byte = (digit(pair[0])? << 4 | digit(pair[1])?) as u8;
            key[i] = byte;
        }
        Ok(Self(key))
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for IdempotencyKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for IdempotencyKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
