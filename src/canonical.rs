use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

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
/// assert_eq!(cairnloop::canonical_json(&value), r#"{"a":null,"b":[1,1e+30,"€\n"]}"#);
/// ```
#[must_use]
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => {
            // serde_json numbers are finite; every one is a double in RFC 8785.
            let double = number.as_f64().unwrap_or(0.0);
            if double == 0.0 {
                out.push('0'); // ECMAScript prints -0 as 0
            } else {
                out.push_str(ryu_js::Buffer::new().format_finite(double));
            }
        }
        Value::String(string) => write_string(out, string),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(object) => {
            let mut entries: Vec<(&String, &Value)> = object.iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, string: &str) {
    out.push('"');
    for c in string.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
