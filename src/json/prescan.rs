//! One pass over argument text that says whether it certainly passes the strict parse:
//! then the input is decoded straight from the text, with no intermediate tree. Anything
//! it is unsure of goes the slow way, which finds and names every error.

use crate::declare::InputLimits;

/// The largest integer kept exact: 2^53 − 1 (as in the strict parse).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Objects with more keys than this go the slow way (duplicates are found by a linear
/// search here).
const MAX_KEYS_SCANNED: usize = 32;

/// Keys of the open objects, as byte ranges of `text`, for the duplicate check.
struct Keys {
    ranges: [(u32, u32); KEYS_CAPACITY],
    len: usize,
}

/// How many keys all open objects may hold together before the scan gives up.
const KEYS_CAPACITY: usize = 64;

/// Whether `text` is certainly a JSON object the strict parse accepts within `limits`:
/// no duplicate keys, no key or string longer than allowed, nesting within the limit,
/// every number exact. `false` means "not certain", never "invalid": the caller then takes
/// the slow path, which decides. Syntax is left to the decoder that follows.
pub(crate) fn plainly_valid(text: &str, limits: &InputLimits) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() > limits.max_bytes() || bytes.len() > u32::MAX as usize {
        return false;
    }
    let mut keys = Keys {
        ranges: [(0, 0); KEYS_CAPACITY],
        len: 0,
    };
    // Per open container: is it an object, where its keys start in `keys`.
    let mut open: [(bool, usize); 128] = [(false, 0); 128];
    let mut depth = 0usize;
    let mut expecting_key = false;
    let mut at = 0usize;
    // The first thing must be an object.
    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
        at += 1;
    }
    if bytes.get(at) != Some(&b'{') {
        return false;
    }
    while at < bytes.len() {
        match bytes[at] {
            b'{' | b'[' => {
                depth += 1;
                if depth > limits.max_depth() || depth > open.len() {
                    return false;
                }
                let object = bytes[at] == b'{';
                open[depth - 1] = (object, keys.len);
                expecting_key = object;
                at += 1;
            }
            b'}' | b']' => {
                let Some(level) = depth.checked_sub(1) else {
                    return false;
                };
                keys.len = open[level].1;
                depth = level;
                expecting_key = false;
                at += 1;
            }
            b',' => {
                expecting_key = depth > 0 && open[depth - 1].0;
                at += 1;
            }
            b'"' => {
                let start = at + 1;
                let mut end = start;
                let mut escaped = false;
                while end < bytes.len() && bytes[end] != b'"' {
                    if bytes[end] == b'\\' {
                        escaped = true;
                        end += 1;
                    }
                    end += 1;
                }
                if end >= bytes.len() || end - start > limits.max_string_bytes() {
                    return false;
                }
                if expecting_key {
                    // Escapes could make two different texts the same key.
                    if escaped || !keys.add(bytes, start, end, open[depth - 1].1) {
                        return false;
                    }
                    expecting_key = false;
                }
                at = end + 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while at < bytes.len()
                    && matches!(bytes[at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    at += 1;
                }
                if !exact_number(&text[start..at]) {
                    return false;
                }
            }
            _ => at += 1,
        }
    }
    depth == 0
}

impl Keys {
    /// Adds the key `bytes[start..end]` to the object whose keys start at `first`; false
    /// when it is already there, or when there is no room to be sure.
    fn add(&mut self, bytes: &[u8], start: usize, end: usize, first: usize) -> bool {
        let key = &bytes[start..end];
        if self.len - first >= MAX_KEYS_SCANNED || self.len >= KEYS_CAPACITY {
            return false;
        }
        let seen = self.ranges[first..self.len]
            .iter()
            .any(|&(from, to)| &bytes[from as usize..to as usize] == key);
        if seen {
            return false;
        }
        #[allow(
            clippy::cast_possible_truncation,
            reason = "the text is shorter than u32::MAX"
        )]
        {
            self.ranges[self.len] = (start as u32, end as u32);
        }
        self.len += 1;
        true
    }
}

/// Whether a number token stays exact: an integer within ±(2^53 − 1), or a finite float
/// of at most that size.
fn exact_number(token: &str) -> bool {
    let digits = token.strip_prefix('-').unwrap_or(token);
    if digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return digits.len() <= 16 && digits.parse::<u64>().is_ok_and(|n| n <= MAX_SAFE_INTEGER);
    }
    #[allow(clippy::cast_precision_loss, reason = "2^53 - 1 is exact in f64")]
    let limit = MAX_SAFE_INTEGER as f64;
    token
        .parse::<f64>()
        .is_ok_and(|n| n.is_finite() && n.abs() <= limit)
}

#[cfg(test)]
mod tests {
    use alloc::format;
    use alloc::string::ToString;
    use alloc::vec;

    use super::plainly_valid;
    use crate::declare::InputLimits;

    fn plain(text: &str) -> bool {
        plainly_valid(text, &InputLimits::new())
    }

    #[test]
    fn ordinary_objects_are_plain() {
        assert!(plain(
            r#"{"order": 1001, "carrier": "DHL", "tags": ["a", "b"], "x": {"y": -2.5e3}}"#
        ));
        assert!(plain(
            r#" {"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]} "#
        ));
        assert!(plain(r#"{"n": 9007199254740991, "m": -9007199254740991}"#));
    }

    #[test]
    fn what_the_strict_parse_refuses_is_never_plain() {
        for text in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"x": {"a": 1, "b": 2, "a": 3}}"#,
            r#"{"a": 1, "\u0061": 2}"#,
            r#"{"n": 9007199254740992}"#,
            r#"{"n": -9007199254740992}"#,
            r#"{"n": 1e300}"#,
            r#"{"n": 12345678901234567890123}"#,
            "[1, 2]",
            "\"text\"",
            "{\"a\": \"unterminated}",
            "{\"a\": [[[[",
            "}{",
        ] {
            assert!(!plain(text), "{text}");
        }
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(40), "]".repeat(40));
        assert!(!plain(&deep));
        let long = format!("{{\"a\": \"{}\"}}", "x".repeat(17 * 1024));
        assert!(!plain(&long));
    }

    /// A JSON text with room for what the strict parse refuses: repeated keys, escaped
    /// keys, numbers past 2^53, deep nesting, long strings.
    fn text() -> impl proptest::prelude::Strategy<Value = alloc::string::String> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("\\u0061".to_string()),
            "[a-c]{1,3}",
        ];
        let leaf = prop_oneof![
            Just("1".to_string()),
            Just("-0".to_string()),
            Just("2.5e3".to_string()),
            Just("9007199254740991".to_string()),
            Just("9007199254740992".to_string()),
            Just("1e400".to_string()),
            Just("123456789012345678901234".to_string()),
            Just("true".to_string()),
            Just("null".to_string()),
            "\"[a-z\\\\\"]{0,6}\"".prop_map(|s| s),
            (1usize..40).prop_map(|n| format!("\"{}\"", "x".repeat(n * 500))),
        ];
        let node = leaf.prop_recursive(6, 48, 5, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                proptest::collection::vec((key.clone(), inner), 0..5).prop_map(|fields| {
                    let fields: alloc::vec::Vec<_> =
                        fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", fields.join(","))
                }),
            ]
        });
        proptest::collection::vec(node, 0..4).prop_map(|values| {
            let fields: alloc::vec::Vec<_> = values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("\"f{}\":{v}", i % 3))
                .collect();
            format!("{{{}}}", fields.join(","))
        })
    }

    proptest::proptest! {
        /// The scan's "plain" is a promise: the strict parse accepts every such text
        /// that is JSON at all.
        #[test]
        fn plain_text_always_passes_the_strict_parse(text in text()) {
            let limits = InputLimits::new().with_max_depth(5).with_max_string_bytes(8 * 1024);
            if plainly_valid(&text, &limits) && serde_json::from_str::<serde_json::Value>(&text).is_ok() {
                let parsed = crate::json::strict::parse_arguments(&text, &limits);
                proptest::prop_assert!(parsed.is_ok(), "{} -> {:?}", text, parsed.err());
            }
        }

        /// Both ways give the same input, or the fast way declines.
        #[test]
        fn the_fast_way_decodes_what_the_slow_way_decodes(text in text()) {
            let limits = InputLimits::new();
            let slow = crate::json::strict::parse_arguments(&text, &limits)
                .map_err(|_| ())
                .and_then(|object| crate::json::strict::decode::<serde_json::Value>(serde_json::Value::Object(object)).map_err(|_| ()));
            let fast = crate::json::strict::decode_text::<serde_json::Value>(&text, &limits).map_err(|_| ());
            proptest::prop_assert_eq!(fast, slow, "{}", text);
        }
    }
}
