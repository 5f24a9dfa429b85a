use core::fmt;

use sha2::{Digest, Sha256};

use crate::declare::{Actor, IdempotencyKey, text};

/// Feeds text straight into SHA-256: the key of a call costs no buffer.
struct Hashing(Sha256);

impl fmt::Write for Hashing {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.update(s.as_bytes());
        Ok(())
    }
}

/// The idempotency key of a call of `tool` by `actor` whose arguments' canonical JSON is
/// `canonical_input`: the SHA-256 of the same canonical envelope a host hashes
/// (`{account_id, actor_id, dedupe_token, input, tool_ref}`, no dedupe token), so a call
/// has one key on a device and on a host.
pub(crate) fn key_of(tool: &str, canonical_input: &str, actor: &Actor<'_>) -> IdempotencyKey {
    let mut out = Hashing(Sha256::new());
    // Writing into SHA-256 cannot fail.
    let _ = write_envelope(&mut out, tool, canonical_input, actor);
    IdempotencyKey::from_bytes(out.0.finalize().into())
}

fn write_envelope(
    out: &mut Hashing,
    tool: &str,
    canonical_input: &str,
    actor: &Actor<'_>,
) -> fmt::Result {
    // One instance of the string writer serves keys and canonical arguments alike.
    let out: &mut dyn fmt::Write = out;
    out.write_str("{\"account_id\":")?;
    match actor.account() {
        Some(account) => text::write_string(out, account)?,
        None => out.write_str("null")?,
    }
    out.write_str(",\"actor_id\":")?;
    text::write_string(out, actor.id())?;
    out.write_str(",\"dedupe_token\":null,\"input\":")?;
    out.write_str(canonical_input)?;
    out.write_str(",\"tool_ref\":")?;
    text::write_string(out, tool)?;
    out.write_str("}")
}

/// The short code of a key that a device shows an operator beside a proposal, and that
/// an approval must quote: the key's first four bytes. It ties the operator's press to
/// the exact call shown, not only to a slot.
pub(crate) fn code_of(key: &IdempotencyKey) -> u32 {
    let [a, b, c, d, ..] = *key.as_bytes();
    u32::from_be_bytes([a, b, c, d])
}
