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
        let mut canonical = String::with_capacity(128);
        let _ = crate::json::canonical::write_object(&mut canonical, input);
        Self::fallback_of_canonical(spec, scopes, mode, &canonical)
    }

    /// [`Preview::fallback`] of an input already written as canonical JSON (a proposal
    /// writes it once, for its snapshot, its key and this): each row's value is shown as
    /// that text shows it. An input that is not an object shows as one row, `value`.
    pub(crate) fn fallback_of_canonical(
        spec: &ToolSpec,
        scopes: &[Scope],
        mode: &ModeResolution,
        canonical: &str,
    ) -> Self {
        let text = Self::fallback_head(spec, scopes, mode);
        // Each row is written where it will be shown, `\n  path: value`: rows come in
        // canonical order, which is nearly always path order too.
        let first = text.len();
        let mut rows = Rows {
            text,
            first,
            keep: false,
            rows: Vec::new(),
            count: 0,
            last: 0..0,
            unordered: false,
            path: String::new(),
            // Every invisible character is outside ASCII: most inputs cannot hold one.
            invisible: !canonical.is_ascii(),
        };
        rows.read(canonical);
        let mut text = if rows.unordered || rows.count > MAX_ROWS {
            // Out of path order, or more than are shown: once more, each row kept, then
            // sorted.
            rows.text.truncate(first);
            rows.path.clear();
            rows.keep = true;
            rows.count = 0;
            rows.read(canonical);
            rows.in_path_order()
        } else {
            rows.text
        };
        if text.len() == first {
            text.push_str(" none");
        }
        Self::new(text, PreviewSource::Fallback)
    }

    /// What the fallback shows before the input's rows: title, tier and mode labels,
    /// required scopes, then `input:`.
    pub(crate) fn fallback_head(
        spec: &ToolSpec,
        scopes: &[Scope],
        mode: &ModeResolution,
    ) -> String {
        let mut text = String::with_capacity(256);
        text.push_str(spec.title());
        text.push_str("\nrisk: ");
        text.push_str(mode.tier().as_str());
        text.push_str(", approval: ");
        text.push_str(mode.resolved().as_str());
        text.push_str("\nscopes: ");
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
        text
    }
}

/// The fallback preview of an input, written by the canonical writer as it puts the
/// input's fields in order: the head ([`Preview::fallback_head`]), then a row for each
/// field. Only for an object whose keys are plain names and whose values have no rows of
/// their own, at most [`MAX_ROWS`] of them: its rows in key order are then in path order,
/// all shown. Any other input is left to [`Preview::fallback_of_canonical`].
pub(crate) struct FlatRows {
    text: String,
    count: usize,
}

impl FlatRows {
    /// Rows to be written after `head`.
    pub(crate) fn after(head: String) -> Self {
        Self {
            text: head,
            count: 0,
        }
    }

    /// The fallback's text: the same [`Preview::fallback_of_canonical`] makes of the
    /// input.
    pub(crate) fn into_preview(self) -> String {
        let mut text = self.text;
        if self.count == 0 {
            text.push_str(" none");
        }
        text
    }

    /// Adds the row of a field, `key` and its `value` as canonical text; `false`, with
    /// nothing written, when the field does not fit a flat input's rows.
    pub(crate) fn push(&mut self, key: &str, value: &str) -> bool {
        let plain = !key.is_empty() && key.bytes().all(|byte| class(byte) & PLAIN != 0);
        let nested = matches!(value.as_bytes(), [b'{' | b'[', _, _, ..]);
        if !plain || nested || self.count == MAX_ROWS {
            return false;
        }
        self.text.push_str(ROW_START);
        self.text.push_str(key);
        self.text.push_str(": ");
        write_value(
            &mut self.text,
            value,
            is_secret_name(key),
            !value.is_ascii(),
        );
        self.count += 1;
        true
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
/// The words that make a field's name secret, as the fallback's documentation lists them:
/// the oracle [`is_secret_name`] is tested against.
#[cfg(test)]
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
    // Names are short: each place whose letter begins a word is looked at with the byte
    // after it, and compared whole only with the words those two letters begin (`| 0x20`
    // lowers an ASCII letter, and turns no other byte into one). The words are
    // `SECRET_WORDS`; a test holds the two lists together.
    let name = name.as_bytes();
    let word_at = |at: usize, word: &[u8]| {
        name.get(at..at + word.len())
            .is_some_and(|here| here.eq_ignore_ascii_case(word))
    };
    name.windows(2).enumerate().any(|(at, pair)| {
        class(pair[0]) & BEGINS_SECRET != 0
            && match [pair[0] | 0x20, pair[1] | 0x20] {
                [b'p', b'a'] => word_at(at, b"password") || word_at(at, b"passwd"),
                [b's', b'e'] => word_at(at, b"secret"),
                [b't', b'o'] => word_at(at, b"token"),
                [b'k', b'e'] => word_at(at, b"key"),
                [b'c', b'r'] => word_at(at, b"credential"),
                [b'c', b'o'] => word_at(at, b"cookie"),
                [b'a', b'u'] => word_at(at, b"authorization"),
                _ => false,
            }
    })
}

/// A byte that may be part of a key shown bare: `[A-Za-z0-9_-]`.
const PLAIN: u8 = 1;
/// A byte that ends a string's plain run: its closing quote or an escape.
const ENDS_RUN: u8 = 2;
/// A byte that ends a number or literal in canonical text.
const ENDS_SCALAR: u8 = 4;
/// A letter a secret word begins with, in either case.
const BEGINS_SECRET: u8 = 8;

/// What each byte is to the scanner: one load per byte, where comparisons would be
/// several.
const CLASSES: [u8; 256] = {
    let mut classes = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        #[allow(clippy::cast_possible_truncation, reason = "below 256")]
        let b = byte as u8;
        let mut class = 0;
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            class |= PLAIN;
        }
        if b == b'"' || b == b'\\' {
            class |= ENDS_RUN;
        }
        if b == b',' || b == b'}' || b == b']' {
            class |= ENDS_SCALAR;
        }
        if matches!(b | 0x20, b'p' | b's' | b't' | b'k' | b'c' | b'a') && b.is_ascii_alphabetic() {
            class |= BEGINS_SECRET;
        }
        classes[byte] = class;
        byte += 1;
    }
    classes
};

fn class(byte: u8) -> u8 {
    CLASSES[usize::from(byte)]
}

/// The rows of a preview, written into one text: a row is two ranges of it, so that
/// a row costs no allocation of its own.
/// The preview's rows, written into its text, `\n  path: value` each.
struct Rows {
    text: String,
    /// Where the first row begins.
    first: usize,
    /// Whether each row is kept in `rows`, to be sorted; otherwise only counted, and
    /// watched for order.
    keep: bool,
    rows: Vec<Row>,
    count: usize,
    /// The last row's path, and whether a row came before the one it follows.
    last: Range<usize>,
    unordered: bool,
    /// The path of the container being flattened (the last part of a value's path is
    /// written straight into its row: a flat input never fills this).
    path: String,
    /// Whether the text may hold a character to spell out ([`escape_invisible`]).
    invisible: bool,
}

/// The last part of a value's path: the key or index it has in its container.
#[derive(Clone, Copy)]
enum Part<'t> {
    /// The whole input, or the root of a non-object input (whose path is `value`).
    Root,
    /// A key as canonical text, and whether it is shown quoted (anything but
    /// `[A-Za-z0-9_-]+`; then its invisible characters are spelled out).
    Key(&'t str, bool),
    Index(usize),
}

/// A row's path and value in the text (the row itself begins three bytes before its
/// path, at its `\n  `).
struct Row {
    path: Range<usize>,
    value: Range<usize>,
}

/// The `\n  ` before each row's path.
const ROW_START: &str = "\n  ";

/// A reader of canonical JSON text (which the pipeline wrote itself: no whitespace, keys
/// quoted). It never panics on other text: it stops.
struct Scan<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Scan<'t> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Steps over `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        if next {
            self.at += 1;
        }
        next
    }

    /// The string starting here, quotes included, and whether it is a plain name (not
    /// empty, every byte [`PLAIN`]).
    fn string(&mut self) -> (&'t str, bool) {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let mut at = start + 1;
        let mut plain = true;
        while let Some(&byte) = bytes.get(at) {
            let class = class(byte);
            if class & ENDS_RUN != 0 {
                if byte == b'"' {
                    at += 1;
                    break;
                }
                plain = false;
                at += 2;
            } else {
                plain &= class & PLAIN != 0;
                at += 1;
            }
        }
        self.at = at.min(bytes.len());
        let plain = plain && self.at > start + 2;
        (self.text.get(start..self.at).unwrap_or_default(), plain)
    }

    /// A value without rows of its own (a string, number, literal, `{}` or `[]`).
    fn scalar(&mut self) -> &'t str {
        if self.peek() == Some(b'"') {
            return self.string().0;
        }
        let start = self.at;
        let bytes = self.text.as_bytes();
        let mut at = start;
        if matches!(bytes.get(at), Some(b'{' | b'[')) {
            at += 2;
        }
        while let Some(&byte) = bytes.get(at) {
            if class(byte) & ENDS_SCALAR != 0 {
                break;
            }
            at += 1;
        }
        self.at = at.min(bytes.len());
        self.text.get(start..self.at).unwrap_or_default()
    }
}

impl Rows {
    /// A row for each value of the input written as `canonical`.
    fn read(&mut self, canonical: &str) {
        let mut scan = Scan {
            text: canonical,
            at: 0,
        };
        if canonical.starts_with('{') {
            // An empty input has no rows; flattened, it would show as one row with no
            // path.
            if canonical != "{}" {
                self.value(&mut scan, false, Part::Root);
            }
        } else {
            self.path.push_str("value");
            self.value(&mut scan, false, Part::Root);
        }
    }

    fn value(&mut self, scan: &mut Scan<'_>, masked: bool, part: Part<'_>) {
        let bytes = scan.text.as_bytes();
        let opens = |close| bytes.get(scan.at + 1).is_some_and(|next| *next != close);
        match scan.peek() {
            Some(b'{') if opens(b'}') => {
                scan.at += 1;
                let parent = self.path.len();
                let first = self.path.is_empty();
                push_part(&mut self.path, part, first, self.invisible);
                loop {
                    let (quoted, plain) = scan.string();
                    if !scan.eat(b':') {
                        break;
                    }
                    let (key, secret) = key_part(quoted, plain);
                    self.value(scan, masked || secret, key);
                    if !scan.eat(b',') {
                        scan.eat(b'}');
                        break;
                    }
                }
                self.path.truncate(parent);
            }
            Some(b'[') if opens(b']') => {
                scan.at += 1;
                let parent = self.path.len();
                let first = self.path.is_empty();
                push_part(&mut self.path, part, first, self.invisible);
                for i in 0.. {
                    self.value(scan, masked, Part::Index(i));
                    if !scan.eat(b',') {
                        scan.eat(b']');
                        break;
                    }
                }
                self.path.truncate(parent);
            }
            Some(_) => {
                let value = scan.scalar();
                self.text.push_str(ROW_START);
                let path_start = self.text.len();
                match part {
                    // A field of a flat input: its path is its plain key.
                    Part::Key(key, false) if self.path.is_empty() => self.text.push_str(key),
                    _ => {
                        self.text.push_str(&self.path);
                        push_part(&mut self.text, part, self.path.is_empty(), self.invisible);
                    }
                }
                let path_end = self.text.len();
                self.text.push_str(": ");
                let start = self.text.len();
                write_value(&mut self.text, value, masked, self.invisible);
                let row = Row {
                    path: path_start..path_end,
                    value: start..self.text.len(),
                };
                if self.keep {
                    self.rows.push(row);
                } else {
                    if self.count > 0
                        && self.text.get(row.path.clone()) <= self.text.get(self.last.clone())
                    {
                        self.unordered = true;
                    }
                    self.last = row.path;
                }
                self.count += 1;
            }
            None => {}
        }
    }

    /// The text with its kept rows sorted by path, and those past the limit counted.
    fn in_path_order(self) -> String {
        let Self {
            mut text,
            first,
            mut rows,
            ..
        } = self;
        // Paths are unique (keys of one object, indices of one array): by path alone.
        let all = text.split_off(first);
        rows.sort_unstable_by(|a, b| {
            all.get(a.path.start - first..a.path.end - first)
                .cmp(&all.get(b.path.start - first..b.path.end - first))
        });
        let shown = rows.len().min(MAX_ROWS);
        for row in &rows[..shown] {
            let whole = row.path.start - ROW_START.len() - first..row.value.end - first;
            text.push_str(all.get(whole).unwrap_or_default());
        }
        if rows.len() > shown {
            let _ = write!(text, "\n  … and {} more", rows.len() - shown);
        }
        text
    }
}

/// Writes a row's value, `value` as canonical text (which already writes a string as the
/// preview shows it): masked, or with its invisible characters spelled out (when
/// `invisible`: the text may hold one) and cut to [`MAX_VALUE_CHARS`] characters.
fn write_value(text: &mut String, value: &str, masked: bool, invisible: bool) {
    if masked {
        text.push_str(MASK);
        return;
    }
    let start = text.len();
    text.push_str(value);
    if invisible {
        escape_invisible(text, start);
    }
    // A text of at most MAX_VALUE_CHARS bytes has at most as many characters.
    if text.len() - start > MAX_VALUE_CHARS
        && let Some((cut, _)) = text[start..].char_indices().nth(MAX_VALUE_CHARS)
    {
        text.truncate(start + cut);
        text.push('…');
    }
}

/// The path part of `quoted` (a key as canonical text, `plain` if it is a plain name):
/// bare if it is plain; and whether it names a secret.
fn key_part(quoted: &str, plain: bool) -> (Part<'_>, bool) {
    let bare = quoted
        .strip_prefix('"')
        .and_then(|key| key.strip_suffix('"'))
        .unwrap_or(quoted);
    if plain {
        return (Part::Key(bare, false), is_secret_name(bare));
    }
    let secret = if bare.contains('\\') {
        // Escapes spell control characters, quotes and backslashes: the name is read as
        // the tool sees it. Text it cannot read is masked: the fallback errs on the side
        // of hiding.
        serde_json::from_str::<String>(quoted).map_or(true, |name| is_secret_name(&name))
    } else {
        is_secret_name(bare)
    };
    (Part::Key(quoted, true), secret)
}

/// Writes `part` of a path to `out`: a key after a `.` unless it is the `first` part.
/// `invisible`: whether a quoted key may hold a character to spell out.
fn push_part(out: &mut String, part: Part<'_>, first: bool, invisible: bool) {
    match part {
        Part::Root => {}
        Part::Key(key, quoted) => {
            if !first {
                out.push('.');
            }
            let start = out.len();
            out.push_str(key);
            if quoted && invisible {
                escape_invisible(out, start);
            }
        }
        Part::Index(i) => {
            let _ = write!(out, "[{i}]");
        }
    }
}

/// Spells out, in what was written to `text` from `start`, the characters that would
/// hide or reorder what an operator reads.
fn escape_invisible(text: &mut String, start: usize) {
    let written = text.get(start..).unwrap_or_default();
    // Most text has none of them: they are all outside ASCII, and each begins in UTF-8
    // with the byte 0xE2 or 0xEF. Text that cannot hold one is kept as it is.
    if written.is_ascii() || !written.bytes().any(|byte| byte == 0xE2 || byte == 0xEF) {
        return;
    }
    if !written.chars().any(invisible) {
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

    proptest::proptest! {
        #[test]
        fn a_secret_name_is_one_holding_a_secret_word_in_any_case(
            name in "[a-zA-Z_ -]{0,6}(?:PassWord|passwd|SECRET|token|Key|credential|authorization|cookie)?[a-zA-Z_é-]{0,6}",
        ) {
            // Told apart by another means: a lowercase copy searched for each word.
            let lower = name.to_lowercase();
            let expected = SECRET_WORDS.iter().any(|word| lower.contains(word));
            proptest::prop_assert_eq!(is_secret_name(&name), expected, "{}", name);
        }
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
        // Canonical order puts "a" before "a-x"; path order puts "a-x" before "a.b".
        assert_eq!(
            rows(serde_json::json!({"a": {"b": 1}, "a-x": 2})),
            "\n  a-x: 2\n  a.b: 1"
        );
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

    /// The rows of a preview as its documentation describes them, written the slow way
    /// from a tree: every value flattened to a path, sorted by path, the first
    /// `MAX_ROWS` shown.
    fn oracle_rows(input: &Map<String, Value>) -> String {
        fn escaped(text: &str) -> String {
            text.chars()
                .map(|c| {
                    if invisible(c) {
                        format!("\\u{:04x}", u32::from(c))
                    } else {
                        c.to_string()
                    }
                })
                .collect()
        }
        fn secret(name: &str) -> bool {
            let lower = name.to_ascii_lowercase();
            SECRET_WORDS.iter().any(|word| lower.contains(word))
        }
        fn flatten(value: &Value, path: String, masked: bool, rows: &mut Vec<(String, String)>) {
            match value {
                Value::Object(map) if !map.is_empty() => {
                    for (key, value) in map {
                        let plain = !key.is_empty()
                            && key
                                .bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                        let name = if plain {
                            key.clone()
                        } else {
                            escaped(&serde_json::to_string(key).unwrap())
                        };
                        let path = if path.is_empty() {
                            name
                        } else {
                            format!("{path}.{name}")
                        };
                        flatten(value, path, masked || secret(key), rows);
                    }
                }
                Value::Array(items) if !items.is_empty() => {
                    for (i, item) in items.iter().enumerate() {
                        flatten(item, format!("{path}[{i}]"), masked, rows);
                    }
                }
                _ => {
                    let shown = if masked {
                        MASK.to_string()
                    } else {
                        let text = escaped(&serde_json::to_string(value).unwrap());
                        if text.chars().count() > MAX_VALUE_CHARS {
                            let mut cut: String = text.chars().take(MAX_VALUE_CHARS).collect();
                            cut.push('…');
                            cut
                        } else {
                            text
                        }
                    };
                    rows.push((path, shown));
                }
            }
        }
        let mut rows = Vec::new();
        for (key, value) in input {
            let mut one = Map::new();
            one.insert(key.clone(), value.clone());
            flatten(&Value::Object(one), String::new(), false, &mut rows);
        }
        rows.sort();
        let mut text: String = rows
            .iter()
            .take(MAX_ROWS)
            .map(|(path, value)| format!("\n  {path}: {value}"))
            .collect();
        if rows.len() > MAX_ROWS {
            text.push_str(&format!("\n  … and {} more", rows.len() - MAX_ROWS));
        }
        if text.is_empty() {
            text.push_str(" none");
        }
        text
    }

    /// Inputs whose canonical text `serde_json` writes too (integers within 2^53, no
    /// floats), with keys and strings that test every rule of the rows.
    fn input() -> impl proptest::strategy::Strategy<Value = Map<String, Value>> {
        use proptest::prelude::*;
        let value = leaf().prop_recursive(3, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map(TEXT, inner, 0..6)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        });
        proptest::collection::btree_map(TEXT, value, 0..50)
            .prop_map(|map| map.into_iter().collect())
    }

    proptest::proptest! {
        #[test]
        fn the_rows_are_what_the_documentation_says_of_any_input(input in input()) {
            let spec = ToolSpec::new("t", "T", "D.", RiskTier::LowWrite);
            let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
            let preview = Preview::fallback(&spec, &[], &mode, &input);
            let rows = preview.text().split_once("\ninput:").unwrap().1;
            proptest::prop_assert_eq!(rows, oracle_rows(&input));
        }
    }

    /// The fallback the canonical writer writes on its way, and the one read from its
    /// text; `None` where the writer leaves it to the text.
    fn both_ways<T: serde::Serialize>(input: &T) -> (Option<String>, String) {
        let spec = ToolSpec::new("t", "T", "D.", RiskTier::LowWrite);
        let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
        let scopes = [Scope::new("a:read")];
        let head = Preview::fallback_head(&spec, &scopes, &mode);
        let (canonical, written) =
            crate::json::canonical_writer::canonical_text_with_preview(input, Some(head)).unwrap();
        let read = Preview::fallback_of_canonical(&spec, &scopes, &mode, &canonical);
        (written, read.text().to_string())
    }

    /// Keys and strings that test every rule of the rows.
    const TEXT: &str = "(?:[a-z_.\\-]|Key|TOKEN|pass|word| |\"|\\\\|\n|\u{7f}|é|\u{202e}|\u{2028}|\u{feff}|\u{2060}|\u{1F600}){0,8}";

    /// A value without rows of its own, of any kind but a float.
    fn leaf() -> impl proptest::strategy::Strategy<Value = Value> + Clone {
        use proptest::prelude::*;
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-(1_i64 << 53)..(1_i64 << 53)).prop_map(Value::from),
            TEXT.prop_map(Value::String),
            (1_usize..4, "[aé\u{202e}]").prop_map(|(n, s)| Value::String(s.repeat(60 * n))),
        ]
    }

    /// Flat inputs: plain keys (some naming secrets), values without rows of their own.
    fn flat_input() -> impl proptest::strategy::Strategy<Value = Map<String, Value>> {
        use proptest::prelude::*;
        let key = "(?:[a-z0-9_-]|Key|TOKEN|pass|word){1,6}";
        let value = prop_oneof![
            leaf(),
            Just(Value::Object(Map::new())),
            Just(Value::Array(Vec::new())),
        ];
        proptest::collection::btree_map(key, value, 0..=MAX_ROWS)
            .prop_map(|map| map.into_iter().collect())
    }

    proptest::proptest! {
        #[test]
        fn a_flat_inputs_rows_written_with_its_text_are_the_rows_read_from_it(input in flat_input()) {
            let (written, read) = both_ways(&input);
            proptest::prop_assert_eq!(written.as_deref(), Some(read.as_str()));
        }

        #[test]
        fn any_other_input_is_left_to_the_text_or_written_alike(input in input()) {
            let (written, read) = both_ways(&input);
            if let Some(written) = written {
                proptest::prop_assert_eq!(written, read);
            }
        }
    }

    #[test]
    fn nested_odd_or_too_many_fields_are_left_to_the_text() {
        let left = |input: Value| both_ways(input.as_object().unwrap()).0.is_none();
        assert!(left(serde_json::json!({"a": {"b": 1}})));
        assert!(left(serde_json::json!({"a": [1]})));
        assert!(left(serde_json::json!({"a b": 1})));
        let many: Map<String, Value> = (0..=MAX_ROWS)
            .map(|i| (format!("f{i:02}"), Value::from(i)))
            .collect();
        assert!(both_ways(&many).0.is_none());
        assert!(!left(serde_json::json!({"a": {}, "b": [], "c": "x"})));
    }

    #[test]
    fn a_structs_fields_are_rows_in_key_order_whatever_their_order_in_the_struct() {
        #[derive(serde::Serialize)]
        struct Transfer {
            to: &'static str,
            cents: u32,
            api_token: &'static str,
            memo: Option<&'static str>,
        }
        let transfer = Transfer {
            to: "DE02 1203",
            cents: 5000,
            api_token: "sk-1",
            memo: None,
        };
        let (written, read) = both_ways(&transfer);
        assert_eq!(written.as_deref(), Some(read.as_str()));
        assert!(
            read.ends_with(
                "input:\n  api_token: ******\n  cents: 5000\n  memo: null\n  to: \"DE02 1203\""
            ),
            "{read}"
        );
    }

    #[test]
    fn every_invisible_character_begins_with_a_byte_the_quick_check_looks_for() {
        let mut buffer = [0; 4];
        for c in (0..=0x10_FFFF)
            .filter_map(char::from_u32)
            .filter(|c| invisible(*c))
        {
            let lead = c.encode_utf8(&mut buffer).as_bytes()[0];
            assert!(lead == 0xE2 || lead == 0xEF, "{c:?}");
        }
    }

    #[test]
    fn escaped_quotes_and_backslashes_end_no_value_early() {
        let text = rows(serde_json::json!({"a": "say \"hi\"", "b": "ends in \\", "c": "\\\""}));
        assert_eq!(
            text,
            "\n  a: \"say \\\"hi\\\"\"\n  b: \"ends in \\\\\"\n  c: \"\\\\\\\"\""
        );
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
