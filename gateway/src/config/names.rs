//! The names a gateway lists: an upstream's tool under the crate's name rule.
//!
//! MCP allows tool names of up to 128 characters with dots; cairnloop's rule is
//! `[A-Za-z0-9_-]{1,64}`. A listed name is the upstream's id, one underscore, then the
//! tool's name with every character outside `[A-Za-z0-9_]` written as `-` and its UTF-8
//! bytes in two lowercase hex digits each (`.` → `-2e`, `-` → `-2d`). An upstream's id
//! has no underscore, so the first underscore always ends it, and the mapping reads
//! back: [`upstream_tool`] gives the pair again. A name longer than 64 characters once
//! mapped is refused; the configuration can then give the tool a `name` of its own.

use std::fmt::Write as _;

/// The longest upstream id: short, so that tool names keep most of the 64.
pub const MAX_UPSTREAM_ID: usize = 16;

/// The longest tool name an upstream may use (MCP's limit).
pub const MAX_UPSTREAM_TOOL_NAME: usize = 128;

/// The longest name cairnloop lists (its rule 1: `[A-Za-z0-9_-]{1,64}`).
const MAX_LISTED_NAME: usize = 64;

/// Whether `id` can name an upstream: 1 to 16 of `[a-z0-9]`, starting with a letter.
///
/// ```
/// use cairnloop_gateway::config::is_upstream_id;
///
/// assert!(is_upstream_id("fs"));
/// assert!(is_upstream_id("github2"));
/// assert!(!is_upstream_id("my_fs"));
/// assert!(!is_upstream_id("2fs"));
/// ```
#[must_use]
pub fn is_upstream_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_UPSTREAM_ID
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit())
}

/// The name a gateway lists for `tool` of upstream `upstream`, or `None` when it would
/// be longer than 64 characters (or either part is empty).
///
/// ```
/// use cairnloop_gateway::config::listed_name;
///
/// assert_eq!(listed_name("fs", "read_file").as_deref(), Some("fs_read_file"));
/// assert_eq!(listed_name("gh", "issues.create").as_deref(), Some("gh_issues-2ecreate"));
/// assert_eq!(listed_name("gh", "get-me").as_deref(), Some("gh_get-2dme"));
/// assert_eq!(listed_name("fs", &"x".repeat(62)), None);
/// ```
#[must_use]
pub fn listed_name(upstream: &str, tool: &str) -> Option<String> {
    if upstream.is_empty() || tool.is_empty() {
        return None;
    }
    let mut name = String::with_capacity(upstream.len() + 1 + tool.len());
    name.push_str(upstream);
    name.push('_');
    for byte in tool.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'_' {
            name.push(char::from(byte));
        } else {
            let _ = write!(name, "-{byte:02x}");
        }
        if name.len() > MAX_LISTED_NAME {
            return None;
        }
    }
    Some(name)
}

/// The upstream and tool a listed name stands for, or `None` when it is not one
/// [`listed_name`] makes.
///
/// ```
/// use cairnloop_gateway::config::upstream_tool;
///
/// assert_eq!(upstream_tool("gh_issues-2ecreate"), Some(("gh".into(), "issues.create".into())));
/// assert_eq!(upstream_tool("gh_issues-2"), None);
/// assert_eq!(upstream_tool("nounderscore"), None);
/// ```
#[must_use]
pub fn upstream_tool(listed: &str) -> Option<(String, String)> {
    let (upstream, mapped) = listed.split_once('_')?;
    if !is_upstream_id(upstream) || mapped.is_empty() {
        return None;
    }
    let mut bytes = Vec::with_capacity(mapped.len());
    let mut rest = mapped.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte == b'-' {
            let hex = after.get(..2)?;
            let hex = std::str::from_utf8(hex).ok()?;
            if hex.bytes().any(|digit| digit.is_ascii_uppercase()) {
                return None;
            }
            let decoded = u8::from_str_radix(hex, 16).ok()?;
            // Only what `listed_name` escapes may be escaped: one text, one name.
            if decoded.is_ascii_alphanumeric() || decoded == b'_' {
                return None;
            }
            bytes.push(decoded);
            rest = &after[2..];
        } else if byte.is_ascii_alphanumeric() || byte == b'_' {
            bytes.push(byte);
            rest = after;
        } else {
            return None;
        }
    }
    Some((upstream.to_owned(), String::from_utf8(bytes).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_its_pair() {
        let tools = [
            "read_file",
            "a.b.c",
            "get-me",
            "x",
            "ünïcode",
            "with space",
            "-2e",
            "__init__",
            "UPPER.lower",
        ];
        for tool in tools {
            let listed = listed_name("up", tool).unwrap();
            assert!(
                cairnloop::declare::ToolSpecOf::try_new(
                    &listed,
                    "T",
                    "D",
                    cairnloop::RiskTier::ReadOnly
                )
                .is_ok(),
                "{listed}"
            );
            assert_eq!(
                upstream_tool(&listed),
                Some(("up".into(), tool.into())),
                "{listed}"
            );
        }
    }

    #[test]
    fn two_tools_never_share_a_listed_name() {
        // The escapes are written for the escape character itself, so `a-2eb` (a tool
        // named that) and `a.b` differ once listed.
        assert_ne!(listed_name("u", "a-2eb"), listed_name("u", "a.b"));
        assert_eq!(listed_name("u", "a-2eb").as_deref(), Some("u_a-2d2eb"));
    }

    #[test]
    fn only_names_listed_name_makes_read_back() {
        for listed in [
            "u_a-41", "u_a-2E", "U_a", "u_", "_a", "u_a-", "u_a-zz", "u_a.b",
        ] {
            assert_eq!(upstream_tool(listed), None, "{listed}");
        }
    }

    #[test]
    fn the_limit_is_64_once_mapped() {
        assert!(listed_name("fs", &"x".repeat(61)).is_some());
        assert!(listed_name("fs", &"x".repeat(62)).is_none());
        // Escapes count as written: 21 dots are 63 characters.
        assert!(listed_name("f", &".".repeat(20)).is_some());
        assert!(listed_name("f", &".".repeat(21)).is_none());
    }
}
