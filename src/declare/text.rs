//! Byte-level string checks usable in `const fn`.
//!
//! `str` methods like `chars` or `eq_ignore_ascii_case` are not `const`, so the
//! declaration rules are written here as plain loops over UTF-8 bytes.

/// Longest tool name every model vendor and MCP client accepts.
pub(crate) const MAX_NAME_LEN: usize = 64;

/// Most scopes one tool may require (a missing-scope report is a 64-bit mask).
pub(crate) const MAX_SCOPES: usize = 64;

/// Whether every byte of `$s` passes `$ok`: a loop, because a `const fn` takes no closure.
macro_rules! every_byte {
    ($s:expr, |$c:ident| $ok:expr) => {{
        let b = $s.as_bytes();
        let mut i = 0;
        let mut all = true;
        while all && i < b.len() {
            let $c = b[i];
            all = $ok;
            i += 1;
        }
        all
    }};
}

/// `[A-Za-z0-9_-]{1,64}`.
pub(crate) const fn is_tool_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NAME_LEN
        && every_byte!(s, |c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// Empty or only ASCII whitespace.
pub(crate) const fn is_blank(s: &str) -> bool {
    every_byte!(s, |c| c.is_ascii_whitespace())
}

/// Whether `s` holds a control character: C0, DEL, C1, or the Unicode line and paragraph
/// separators (U+2028, U+2029), which render as line breaks. `\n` and `\t` pass when
/// `allow_newline_tab` is set.
pub(crate) const fn has_control(s: &str, allow_newline_tab: bool) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c < 0x20 || c == 0x7f {
            if !(allow_newline_tab && (c == b'\n' || c == b'\t')) {
                return true;
            }
        } else if c == 0xc2 && i + 1 < b.len() && b[i + 1] >= 0x80 && b[i + 1] <= 0x9f {
            return true; // U+0080..=U+009F
        } else if c == 0xe2
            && i + 2 < b.len()
            && b[i + 1] == 0x80
            && (b[i + 2] == 0xa8 || b[i + 2] == 0xa9)
        {
            return true; // U+2028, U+2029
        }
        i += 1;
    }
    false
}

/// `[a-z0-9_]+`.
pub(crate) const fn is_result_state(s: &str) -> bool {
    !s.is_empty()
        && every_byte!(s, |c| c.is_ascii_lowercase()
            || c.is_ascii_digit()
            || c == b'_')
}

/// An RFC 6749 `scope-token`: printable ASCII without space, `"` and `\`.
pub(crate) const fn is_scope_token(s: &str) -> bool {
    !s.is_empty() && every_byte!(s, |c| c >= 0x21 && c <= 0x7e && c != b'"' && c != b'\\')
}

/// A scope that reads as "everything": any `*`, or `all` in any case.
pub(crate) const fn is_wildcard_scope(s: &str) -> bool {
    !every_byte!(s, |c| c != b'*') || eq_ignore_ascii_case(s, "all")
}

/// Where `name` stands in `names`, byte for byte: how a sealed enum reads its wire name.
pub(crate) const fn position(name: &str, names: &[&str]) -> Option<usize> {
    let mut i = 0;
    while i < names.len() {
        if eq(name, names[i]) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Whether `a` and `b` are as long and every two bytes at one index pass `$same`.
macro_rules! bytes_pairwise {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $same:expr) => {{
        let (a, b) = ($a.as_bytes(), $b.as_bytes());
        let mut all = a.len() == b.len();
        let mut i = 0;
        while all && i < a.len() {
            let ($x, $y) = (a[i], b[i]);
            all = $same;
            i += 1;
        }
        all
    }};
}

/// Byte equality.
pub(crate) const fn eq(a: &str, b: &str) -> bool {
    bytes_pairwise!(a, b, |x, y| x == y)
}

/// Byte equality after ASCII lowercasing.
pub(crate) const fn eq_ignore_ascii_case(a: &str, b: &str) -> bool {
    bytes_pairwise!(a, b, |x, y| x.eq_ignore_ascii_case(&y))
}

/// `string` as a JSON string with the minimal escapes of RFC 8785: the canonical form that
/// idempotency keys hash, on a host and on a device alike.
#[cfg_attr(not(any(feature = "serde", feature = "device")), allow(dead_code))]
pub(crate) fn write_string<W: core::fmt::Write + ?Sized>(
    out: &mut W,
    string: &str,
) -> core::fmt::Result {
    if !needs_escape(string) {
        // Most strings: one pass that the compiler can widen, and three writes.
        out.write_str("\"")?;
        out.write_str(string)?;
        return out.write_str("\"");
    }
    out.write_str("\"")?;
    // Runs of characters that need no escape are written as one slice. Every character
    // to escape is ASCII, and no byte of a multi-byte character is: bytes will do.
    let mut plain = 0;
    for (i, &byte) in string.as_bytes().iter().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            byte if byte < b' ' => "",
            _ => continue,
        };
        // `plain` and `i` lie on character boundaries (the byte at `i` is ASCII): `get`
        // never fails, and keeps a panic's formatting out of a device's code.
        out.write_str(string.get(plain..i).unwrap_or_default())?;
        if escape.is_empty() {
            write!(out, "\\u{byte:04x}")?;
        } else {
            out.write_str(escape)?;
        }
        plain = i + 1;
    }
    out.write_str(string.get(plain..).unwrap_or_default())?;
    out.write_str("\"")
}

/// Whether any byte of `string` is escaped in JSON text: a quote, a backslash or a
/// control character. No early exit, so that the check runs over many bytes at a time.
#[cfg_attr(not(any(feature = "serde", feature = "device")), allow(dead_code))]
pub(crate) fn needs_escape(string: &str) -> bool {
    string.bytes().fold(false, |found, byte| {
        found | (byte < b' ') | (byte == b'"') | (byte == b'\\')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        assert!(is_tool_name("delete_customer"));
        assert!(is_tool_name("a-B_9"));
        assert!(is_tool_name(&"x".repeat(64)));
        assert!(!is_tool_name(&"x".repeat(65)));
        for bad in ["", "a b", "a.b", "a/b", "dеlete", "a\u{200b}b", "a\0", "é"] {
            assert!(!is_tool_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn control_characters() {
        assert!(!has_control("Look up an order", false));
        assert!(has_control("a\nb", false));
        assert!(!has_control("a\nb\tc", true));
        assert!(has_control("a\rb", true));
        assert!(has_control("a\u{7f}", true));
        assert!(has_control("a\u{85}", true));
        assert!(has_control("a\u{2028}", true));
        assert!(has_control("a\u{2029}", true));
        assert!(!has_control("café — ok ✓", false));
        // Neighbours of the ranges: Latin-1 after C1, and the code points around U+2028/9.
        for text in [
            "\u{a0}",
            "¡",
            "a©b",
            "\u{ff}",
            "\u{2027}",
            "\u{202a}",
            "x\u{2030}",
            "\u{1fff}",
        ] {
            assert!(!has_control(text, false), "{text:?}");
        }
        assert!(has_control("\u{80}", false));
        assert!(has_control("\u{9f}x", false));
    }

    #[test]
    fn scopes_and_states() {
        assert!(is_scope_token("orders:read"));
        // The ends of the RFC 6749 range are in; space, DEL, `"` and `\` are out.
        assert!(is_scope_token("!"));
        assert!(is_scope_token("~"));
        for bad in ["a b", "a\u{7f}", "a\"b", "a\\b", "\"", "\\"] {
            assert!(!is_scope_token(bad), "{bad:?}");
        }
        assert!(!is_scope_token("orders read"));
        assert!(!is_scope_token("ordérs"));
        assert!(is_wildcard_scope("*"));
        assert!(is_wildcard_scope("orders:*"));
        assert!(is_wildcard_scope("ALL"));
        assert!(!is_wildcard_scope("allow"));
        assert!(is_result_state("not_found"));
        assert!(!is_result_state("NotFound"));
        assert!(!is_result_state(""));
    }

    #[test]
    fn equality() {
        assert!(eq("a", "a"));
        assert!(!eq("a", "A"));
        assert!(eq_ignore_ascii_case("Delete", "dELETE"));
        assert!(!eq_ignore_ascii_case("ab", "abc"));
    }
}
