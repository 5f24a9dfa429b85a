use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use serde_json::Value;

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
        Value::Object(object) => {
            let mut entries: Vec<(&String, &Value)> = object.iter().collect();
            // serde_json's map keeps keys in byte order; RFC 8785 wants UTF-16 order,
            // which differs only for characters beyond the Basic Multilingual Plane.
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.write_str("{")?;
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.write_str(",")?;
                }
                write_string(out, key)?;
                out.write_str(":")?;
                write_value(out, item)?;
            }
            out.write_str("}")
        }
    }
}

pub(crate) fn write_string<W: Write + ?Sized>(out: &mut W, string: &str) -> fmt::Result {
    out.write_str("\"")?;
    // Runs of characters that need no escape are written as one slice.
    let mut plain = 0;
    for (i, c) in string.char_indices() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if c < ' ' => "",
            _ => continue,
        };
        out.write_str(&string[plain..i])?;
        if escape.is_empty() {
            write!(out, "\\u{:04x}", u32::from(c))?;
        } else {
            out.write_str(escape)?;
        }
        plain = i + c.len_utf8();
    }
    out.write_str(&string[plain..])?;
    out.write_str("\"")
}
