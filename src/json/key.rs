use core::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::declare::IdempotencyKey;
use crate::json::canonical::{write_canonical, write_string};

/// Feeds canonical text straight into SHA-256: a key costs no intermediate string.
struct Hashing(Sha256);

impl fmt::Write for Hashing {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.update(s.as_bytes());
        Ok(())
    }
}

impl IdempotencyKey {
    /// The key of a call of `tool` with `input`, for an actor and account, with an optional
    /// caller-chosen dedupe token: the lowercase hex SHA-256 of the RFC 8785 canonical JSON
    /// of `{account_id, actor_id, dedupe_token, input, tool_ref}`, absent parts as `null`.
    ///
    /// Key order and whitespace in the input never change the key; any change of input,
    /// tool, actor, account or dedupe token does. Conversation and routing ids are not
    /// part of it, so the same call retried in another turn is recognised.
    ///
    /// ```
    /// use cairnloop::IdempotencyKey;
    /// use serde_json::json;
    ///
    /// let key = IdempotencyKey::for_call("lookup_order", &json!({"order": 1}), None, None, None);
    /// let again: IdempotencyKey = key.to_string().parse()?;
    /// assert_eq!(key, again);
    /// let reordered = IdempotencyKey::for_call("refund", &json!({"a": 1, "b": 2}), None, None, None);
    /// assert_eq!(reordered, IdempotencyKey::for_call("refund", &json!({"b": 2, "a": 1}), None, None, None));
    /// // A dedupe token makes a deliberate repeat a different call.
    /// let repeat = IdempotencyKey::for_call("lookup_order", &json!({"order": 1}), None, None, Some("2"));
    /// assert_ne!(key, repeat);
    /// # Ok::<(), cairnloop::declare::ParseError>(())
    /// ```
    #[must_use]
    pub fn for_call(
        tool: &str,
        input: &Value,
        actor_id: Option<&str>,
        account_id: Option<&str>,
        dedupe_token: Option<&str>,
    ) -> Self {
        let input = |out: &mut Hashing| write_canonical(out, input);
        hash_envelope(tool, &input, actor_id, account_id, dedupe_token)
    }

    /// [`IdempotencyKey::for_call`] of an input already written as canonical JSON (a
    /// proposal writes it once, for its snapshot and its key).
    pub(crate) fn for_canonical_call(
        tool: &str,
        canonical_input: &str,
        actor_id: Option<&str>,
        account_id: Option<&str>,
        dedupe_token: Option<&str>,
    ) -> Self {
        use fmt::Write as _;
        let input = |out: &mut Hashing| out.write_str(canonical_input);
        hash_envelope(tool, &input, actor_id, account_id, dedupe_token)
    }
}

fn hash_envelope(
    tool: &str,
    input: &dyn Fn(&mut Hashing) -> fmt::Result,
    actor_id: Option<&str>,
    account_id: Option<&str>,
    dedupe_token: Option<&str>,
) -> IdempotencyKey {
    let mut hashing = Hashing(Sha256::new());
    // The envelope's keys, written in their canonical (sorted) order.
    let _ = write_envelope(
        &mut hashing,
        tool,
        input,
        actor_id,
        account_id,
        dedupe_token,
    );
    IdempotencyKey::from_bytes(hashing.0.finalize().into())
}

fn write_envelope(
    out: &mut Hashing,
    tool: &str,
    input: &dyn Fn(&mut Hashing) -> fmt::Result,
    actor_id: Option<&str>,
    account_id: Option<&str>,
    dedupe_token: Option<&str>,
) -> fmt::Result {
    use fmt::Write as _;
    let text = |out: &mut Hashing, part: Option<&str>| match part {
        Some(part) => write_string(out, part),
        None => out.write_str("null"),
    };
    out.write_str("{\"account_id\":")?;
    text(out, account_id)?;
    out.write_str(",\"actor_id\":")?;
    text(out, actor_id)?;
    out.write_str(",\"dedupe_token\":")?;
    text(out, dedupe_token)?;
    out.write_str(",\"input\":")?;
    input(out)?;
    out.write_str(",\"tool_ref\":")?;
    write_string(out, tool)?;
    out.write_str("}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::declare::IdempotencyKey;
    use crate::json::canonical::canonical_json;

    #[test]
    fn a_key_from_canonical_text_is_the_key_of_the_value() {
        for input in [
            json!({"order": 1, "note": "a\u{2028}b", "nested": {"z": [1.5, null, true], "a": "é"}}),
            json!({}),
            json!({"x": -0.0, "y": 1e21}),
        ] {
            let text = canonical_json(&input);
            assert_eq!(
                IdempotencyKey::for_canonical_call("t", &text, Some("a"), None, Some("d")),
                IdempotencyKey::for_call("t", &input, Some("a"), None, Some("d")),
                "{text}"
            );
        }
    }
}
