use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;
use core::ops::Range;

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
        // Sized for a handful of short fields, so that a typical input grows nothing.
        let mut rows = Rows {
            text: String::with_capacity(256),
            rows: Vec::with_capacity(input.len().min(MAX_ROWS)),
            path: String::with_capacity(64),
        };
        // An empty input has no rows; flattened, it would show as one row with no path.
        rows.fields(input, false);
        // Paths are unique (keys of one object, indices of one array): by path alone.
        let Rows {
            text: all,
            mut rows,
            ..
        } = rows;
        rows.sort_unstable_by(|a, b| all[a.path.clone()].cmp(&all[b.path.clone()]));
        if rows.is_empty() {
            text.push_str(" none");
        }
        let shown = rows.len().min(MAX_ROWS);
        for row in &rows[..shown] {
            text.push_str("\n  ");
            text.push_str(&all[row.path.clone()]);
            text.push_str(": ");
            text.push_str(&all[row.value.clone()]);
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

pub(crate) fn is_secret_name(name: &str) -> bool {
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

/// The rows of a preview, written into one text: a row is two ranges of it, so that
/// a row costs no allocation of its own.
struct Rows {
    text: String,
    rows: Vec<Row>,
    /// The path of the value being flattened.
    path: String,
}

struct Row {
    path: Range<usize>,
    value: Range<usize>,
}

impl Rows {
    /// The rows under `object`, whose own path is the current one.
    fn fields(&mut self, object: &Map<String, Value>, masked: bool) {
        let parent = self.path.len();
        for (key, item) in object {
            if parent > 0 {
                self.path.push('.');
            }
            self.key(key);
            self.value(item, masked || is_secret_name(key));
            self.path.truncate(parent);
        }
    }

    /// A key as a path shows it: as it is when plain, else quoted with its escapes.
    fn key(&mut self, key: &str) {
        let plain = !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if plain {
            self.path.push_str(key);
        } else {
            let start = self.path.len();
            let _ = crate::json::canonical::write_string(&mut self.path, key);
            escape_invisible(&mut self.path, start);
        }
    }

    fn value(&mut self, value: &Value, masked: bool) {
        match value {
            Value::Object(object) if !object.is_empty() => self.fields(object, masked),
            Value::Array(items) if !items.is_empty() => {
                let parent = self.path.len();
                for (i, item) in items.iter().enumerate() {
                    let _ = write!(self.path, "[{i}]");
                    self.value(item, masked);
                    self.path.truncate(parent);
                }
            }
            _ => {
                let path_start = self.text.len();
                self.text.push_str(&self.path);
                let start = self.text.len();
                if masked {
                    self.text.push_str(MASK);
                } else {
                    match value {
                        Value::String(text) => {
                            let _ = crate::json::canonical::write_string(&mut self.text, text);
                        }
                        // Numbers, booleans, null, and an empty object or array.
                        other => {
                            let _ = write!(self.text, "{other}");
                        }
                    }
                    escape_invisible(&mut self.text, start);
                    self.shorten(start);
                }
                self.rows.push(Row {
                    path: path_start..start,
                    value: start..self.text.len(),
                });
            }
        }
    }

    /// Cuts the text written from `start` to at most `MAX_VALUE_CHARS` characters.
    fn shorten(&mut self, start: usize) {
        // A text of at most MAX_VALUE_CHARS bytes has at most as many characters.
        if self.text.len() - start > MAX_VALUE_CHARS
            && let Some((cut, _)) = self.text[start..].char_indices().nth(MAX_VALUE_CHARS)
        {
            self.text.truncate(start + cut);
            self.text.push('…');
        }
    }
}

/// Spells out, in what was written to `text` from `start`, the characters that would
/// hide or reorder what an operator reads.
fn escape_invisible(text: &mut String, start: usize) {
    let written = &text[start..];
    // Most text has none of them (they are all outside ASCII): keep it as it is.
    if written.is_ascii() || !written.chars().any(invisible) {
        return;
    }
    let written = text.split_off(start);
    for c in written.chars() {
        if invisible(c) {
            let _ = write!(text, "\\u{:04x}", u32::from(c));
        } else {
            text.push(c);
        }
    }
}

fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{2028}'
            | '\u{2029}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200b}'..='\u{200f}'
            | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declare::{Actor, RiskTier};
    use crate::gate::ModePolicy;
    use alloc::format;
    use alloc::string::ToString;

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

    #[test]
    fn long_values_are_cut_and_odd_keys_quoted_in_every_path() {
        let long = "é".repeat(500);
        let text = rows(serde_json::json!({"n\u{202e}ote": [{"body": long}]}));
        let expected = format!(
            "\n  \"n\\u202eote\"[0].body: \"{}…",
            "é".repeat(MAX_VALUE_CHARS - 1)
        );
        assert_eq!(text, expected);
    }
}
