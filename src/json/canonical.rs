use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use serde_json::Value;

pub(crate) use crate::declare::text::{needs_escape, write_string};

/// The RFC 8785 (JSON Canonicalization Scheme) text of `value`: object keys sorted by their
/// UTF-16 code units, no whitespace, numbers as ECMAScript prints IEEE 754 doubles, strings
/// with the minimal escapes.
///
/// Two JSON texts that differ only in key order, whitespace or number spelling (`1.0`,
/// `1`, `1e0`) have one canonical text; this is what idempotency keys hash.
///
/// ```
/// use serde_json::json;
///
/// let value = json!({"b": [1.0, 1e30, "€\n"], "a": null});
/// assert_eq!(cairnloop::json::canonical_json(&value), r#"{"a":null,"b":[1,1e+30,"€\n"]}"#);
/// ```
#[must_use]
pub fn canonical_json(value: &Value) -> String {
    // Most call inputs fit; a larger one grows a few times instead of many.
    let mut out = String::with_capacity(256);
    // Writing to a `String` cannot fail.
    let _ = write_canonical(&mut out, value);
    out
}

/// Writes the canonical text of `value` to `out`: to a `String`, or straight into a
/// hasher, so that a key needs no intermediate text.
pub(crate) fn write_canonical<W: Write + ?Sized>(out: &mut W, value: &Value) -> fmt::Result {
    write_value(out, value)
}

fn write_value<W: Write + ?Sized>(out: &mut W, value: &Value) -> fmt::Result {
    match value {
        Value::Null => out.write_str("null"),
        Value::Bool(true) => out.write_str("true"),
        Value::Bool(false) => out.write_str("false"),
        Value::Number(number) => {
            // An integer a double holds exactly prints as its decimal digits in ECMAScript
            // (every one below 10^21); only the others need the shortest-double printer.
            if let Some(int) = number.as_i64().filter(|int| int.unsigned_abs() <= EXACT) {
                return out.write_str(itoa::Buffer::new().format(int));
            }
            if let Some(int) = number.as_u64().filter(|int| *int <= EXACT) {
                return out.write_str(itoa::Buffer::new().format(int));
            }
            // serde_json numbers are finite; every one is a double in RFC 8785.
            let double = number.as_f64().unwrap_or(0.0);
            if double == 0.0 {
                out.write_str("0") // ECMAScript prints -0 as 0
            } else {
                out.write_str(ryu_js::Buffer::new().format_finite(double))
            }
        }
        Value::String(string) => write_string(out, string),
        Value::Array(items) => {
            out.write_str("[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_str(",")?;
                }
                write_value(out, item)?;
            }
            out.write_str("]")
        }
        Value::Object(object) => write_object(out, object),
    }
}

/// Writes the canonical text of an object.
pub(crate) fn write_object<W: Write + ?Sized>(
    out: &mut W,
    object: &serde_json::Map<String, Value>,
) -> fmt::Result {
    if in_utf16_order(object) {
        write_entries(out, object.iter())
    } else {
        let mut entries: Vec<(&String, &Value)> = object.iter().collect();
        entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
        write_entries(out, entries.into_iter())
    }
}

/// 2^53: every integer up to it in size is exactly a double.
const EXACT: u64 = 1 << 53;

/// Whether the map already iterates in RFC 8785's order (UTF-16 code units). Byte order
/// is code point order, and the two orders differ only where a character beyond the Basic
/// Multilingual Plane (a four-byte one, lead byte `0xF0` or more) is compared: most maps
/// have none, and need no sorted copy.
fn in_utf16_order(object: &serde_json::Map<String, Value>) -> bool {
    let mut keys = object.keys();
    let Some(mut previous) = keys.next() else {
        return true;
    };
    let basic = |key: &str| key.bytes().all(|byte| byte < 0xF0);
    if !basic(previous) {
        return false;
    }
    for key in keys {
        if !basic(key) || previous.as_bytes() >= key.as_bytes() {
            return false;
        }
        previous = key;
    }
    true
}

fn write_entries<'v, W: Write + ?Sized>(
    out: &mut W,
    entries: impl Iterator<Item = (&'v String, &'v Value)>,
) -> fmt::Result {
    out.write_str("{")?;
    for (i, (key, item)) in entries.enumerate() {
        if i > 0 {
            out.write_str(",")?;
        }
        write_string(out, key)?;
        out.write_str(":")?;
        write_value(out, item)?;
    }
    out.write_str("}")
}
