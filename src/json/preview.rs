use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write as _;

use serde_json::{Map, Value};

use crate::declare::{Scope, ToolSpec};
use crate::gate::ModeResolution;

/// What the person asked to approve a call reads: the tool's own summary when it writes
/// one ([`Tool::preview`](crate::Tool::preview)), else a structured fallback built from the
/// spec and the input, with secret-looking values masked.
///
/// ```
/// use cairnloop::json::{Preview, PreviewSource};
///
/// let preview = Preview::new("Refund 12.50 EUR to order 7", PreviewSource::Tool);
/// assert_eq!(preview.text(), "Refund 12.50 EUR to order 7");
/// assert_eq!(preview.source(), PreviewSource::Tool);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Preview {
    text: String,
    source: PreviewSource,
}

/// Who wrote a [`Preview`].
///
/// ```
/// assert_eq!(cairnloop::json::PreviewSource::Fallback, cairnloop::json::PreviewSource::Fallback);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreviewSource {
    /// The tool's own [`Tool::preview`](crate::Tool::preview).
    Tool,
    /// The structured fallback.
    Fallback,
}

impl Preview {
    /// A preview with the given text.
    ///
    /// ```
    /// let preview = cairnloop::json::Preview::new("Delete 3 files", cairnloop::json::PreviewSource::Tool);
    /// assert_eq!(preview.to_string(), "Delete 3 files");
    /// ```
    #[must_use]
    pub fn new(text: impl Into<String>, source: PreviewSource) -> Self {
        Self {
            text: text.into(),
            source,
        }
    }

    /// The text.
    ///
    /// ```
    /// assert_eq!(cairnloop::json::Preview::new("x", cairnloop::json::PreviewSource::Tool).text(), "x");
    /// ```
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Who wrote it.
    ///
    /// ```
    /// use cairnloop::json::{Preview, PreviewSource};
    /// assert_eq!(Preview::new("x", PreviewSource::Fallback).source(), PreviewSource::Fallback);
    /// ```
    #[must_use]
    pub const fn source(&self) -> PreviewSource {
        self.source
    }

    /// The structured fallback: title, tier and mode labels, required scopes, then one row
    /// per input value sorted by path, with the values of secret-looking fields (names
    /// containing password, passwd, secret, token, key, credential, authorization or
    /// cookie, in any case) masked.
    ///
    /// ```
    /// use cairnloop::{Actor, ModePolicy, RiskTier, Scope, ToolSpec, json::Preview};
    /// use serde_json::json;
    ///
    /// let spec = ToolSpec::new("rotate", "Rotate credentials", "Rotates.", RiskTier::HighWrite);
    /// let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
    /// let input = json!({"service": "billing", "api_key": "sk-live-123"});
    /// let preview = Preview::fallback(&spec, &[Scope::new("keys:write")], &mode, input.as_object().unwrap());
    /// assert_eq!(preview.text(), "Rotate credentials\n\
    ///     risk: high_write, approval: requires_approval\n\
    ///     scopes: keys:write\n\
    ///     input:\n  api_key: ******\n  service: \"billing\"");
    /// ```
    #[must_use]
    pub fn fallback(
        spec: &ToolSpec,
        scopes: &[Scope],
        mode: &ModeResolution,
        input: &Map<String, Value>,
    ) -> Self {
        let mut text = String::with_capacity(256);
        let _ = write!(
            text,
            "{}\nrisk: {}, approval: {}\nscopes: ",
            spec.title(),
            spec.risk_tier(),
            mode.resolved()
        );
        if scopes.is_empty() {
            text.push_str("none");
        }
        for (i, scope) in scopes.iter().enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            text.push_str(scope.as_str());
        }
        text.push_str("\ninput:");
        let mut rows = Vec::new();
        // An empty input has no rows; flattened, it would show as one row with no path.
        flatten_fields(&mut rows, "", input, false);
        // Paths are unique (keys of one object, indices of one array): by path alone.
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if rows.is_empty() {
            text.push_str(" none");
        }
        let shown = rows.len().min(MAX_ROWS);
        for (path, value) in &rows[..shown] {
            text.push_str("\n  ");
            text.push_str(path);
            text.push_str(": ");
            text.push_str(value);
        }
        if rows.len() > shown {
            let _ = write!(text, "\n  … and {} more", rows.len() - shown);
        }
        Self::new(text, PreviewSource::Fallback)
    }
}

impl core::fmt::Display for Preview {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.text)
    }
}

const MAX_ROWS: usize = 40;
const MAX_VALUE_CHARS: usize = 120;
const MASK: &str = "******";
const SECRET_WORDS: [&str; 8] = [
    "password",
    "passwd",
    "secret",
    "token",
    "key",
    "credential",
    "authorization",
    "cookie",
];

fn is_secret_name(name: &str) -> bool {
    // Names are short: a window compare beats building a lowercase copy and a searcher.
    let name = name.as_bytes();
    SECRET_WORDS.iter().any(|word| {
        let word = word.as_bytes();
        name.windows(word.len()).any(|window| {
            // The first letter rules out most places before a whole compare.
            window[0].to_ascii_lowercase() == word[0] && window.eq_ignore_ascii_case(word)
        })
    })
}

/// The rows of an object's fields, under `path`.
fn flatten_fields(
    rows: &mut Vec<(String, String)>,
    path: &str,
    object: &Map<String, Value>,
    masked: bool,
) {
    for (key, item) in object {
        let key_shown = display_key(key);
        let child = if path.is_empty() {
            key_shown
        } else {
            format!("{path}.{key_shown}")
        };
        flatten(rows, child, item, masked || is_secret_name(key));
    }
}

fn flatten(rows: &mut Vec<(String, String)>, path: String, value: &Value, masked: bool) {
    match value {
        Value::Object(object) if !object.is_empty() => flatten_fields(rows, &path, object, masked),
        Value::Array(items) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                flatten(rows, format!("{path}[{i}]"), item, masked);
            }
        }
        _ if masked => rows.push((path, MASK.to_string())),
        _ => {
            let text = match value {
                Value::String(text) => {
                    let mut quoted = String::with_capacity(text.len() + 2);
                    let _ = crate::json::canonical::write_string(&mut quoted, text);
                    quoted
                }
                Value::Number(number) => number.to_string(),
                Value::Bool(true) => "true".to_string(),
                Value::Bool(false) => "false".to_string(),
                // Null, and an empty object or array.
                other => other.to_string(),
            };
            let mut shown = escape_invisible(text);
            // A text of at most MAX_VALUE_CHARS bytes has at most as many characters.
            if shown.len() > MAX_VALUE_CHARS
                && let Some((cut, _)) = shown.char_indices().nth(MAX_VALUE_CHARS)
            {
                shown.truncate(cut);
                shown.push('…');
            }
            rows.push((path, shown));
        }
    }
}

/// A key as typed when it is plain, else as a JSON string, so that a key cannot forge rows.
fn display_key(key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        key.to_string()
    } else {
        escape_invisible(Value::String(key.to_string()).to_string())
    }
}

/// Escapes what JSON leaves raw but a reader cannot see or that moves text: line and
/// paragraph separators and bidirectional controls.
fn escape_invisible(text: String) -> String {
    let invisible = |c: char| {
        matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200b}'..='\u{200f}'
                | '\u{feff}'
        )
    };
    // Most text has none of them (they are all outside ASCII): keep it as it is.
    if text.is_ascii() || !text.chars().any(invisible) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if invisible(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declare::{Actor, RiskTier};
    use crate::gate::ModePolicy;

    fn rows(input: Value) -> String {
        let spec = ToolSpec::new("t", "T", "D.", RiskTier::LowWrite);
        let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
        let preview = Preview::fallback(&spec, &[], &mode, input.as_object().unwrap());
        preview.text().split_once("input:").unwrap().1.to_string()
    }

    #[test]
    fn keys_cannot_forge_rows() {
        let text = rows(serde_json::json!({"a\n  amount": 1}));
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.contains("\"a\\n  amount\": 1"), "{text}");
    }

    #[test]
    fn secrets_are_masked_below_their_field() {
        let text = rows(
            serde_json::json!({"auth": {"Password": "hunter2"}, "headers": {"X-Api-Key": ["k"]}}),
        );
        assert!(
            !text.contains("hunter2") && !text.contains("\"k\""),
            "{text}"
        );
    }

    #[test]
    fn nesting_flattens_to_paths_and_empty_containers_keep_a_row() {
        let text = rows(serde_json::json!({
            "tags": ["a", "b"], "meta": {}, "list": [], "order": {"id": 7}
        }));
        assert_eq!(
            text,
            "\n  list: []\n  meta: {}\n  order.id: 7\n  tags[0]: \"a\"\n  tags[1]: \"b\""
        );
        assert_eq!(rows(serde_json::json!({})), " none");
    }

    #[test]
    fn scopes_are_listed_and_rows_past_the_limit_are_counted() {
        let spec = ToolSpec::new("t", "T", "D.", RiskTier::LowWrite);
        let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
        let input: Map<String, Value> = (0..MAX_ROWS + 3)
            .map(|i| (format!("f{i:02}"), Value::from(i)))
            .collect();
        let scopes = [Scope::new("a:read"), Scope::new("b:write")];
        let preview = Preview::fallback(&spec, &scopes, &mode, &input);
        let text = preview.to_string();
        assert_eq!(text, preview.text());
        assert!(text.contains("\nscopes: a:read, b:write\n"), "{text}");
        assert!(text.contains("\n  f39: 39\n  … and 3 more"), "{text}");
        assert!(!text.contains("f40"), "{text}");
        let exact: Map<String, Value> = (0..MAX_ROWS)
            .map(|i| (format!("f{i:02}"), Value::from(i)))
            .collect();
        let text = Preview::fallback(&spec, &[], &mode, &exact).to_string();
        assert!(text.contains("\nscopes: none\n"), "{text}");
        assert!(text.ends_with("f39: 39"), "{text}");
    }

    #[test]
    fn invisible_characters_are_escaped() {
        let text = rows(serde_json::json!({"note": "a\u{2028}b\u{202e}c"}));
        assert!(text.contains("a\\u2028b\\u202ec"), "{text}");
    }
}
