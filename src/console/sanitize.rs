//! A host's markup for a custom view, cut down to an allow-list: text formatting,
//! lists, tables and definition lists, with `class` and `title` attributes only. No
//! element that loads, links, runs or navigates (`a`, `img`, `meta`, `form`, `script`,
//! `style`, `iframe`, …) survives: a custom view can show, never act.

use std::prelude::rust_2024::*;

use std::fmt::Write as _;

use super::html::{Attr, Text};

/// Elements kept (with their text).
const ELEMENTS: &[&str] = &[
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "h3",
    "h4",
    "hr",
    "i",
    "kbd",
    "li",
    "mark",
    "ol",
    "p",
    "pre",
    "s",
    "small",
    "span",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "u",
    "ul",
];

/// Elements that hold no content.
const VOID: &[&str] = &["br", "hr"];

/// Elements dropped with everything inside them: their content is code, or a document
/// of its own, never text for a person.
const DROPPED_WHOLE: &[&str] = &[
    "script", "style", "template", "iframe", "object", "embed", "noscript", "textarea", "title",
    "svg", "math", "select", "frameset", "noembed", "xmp",
];

/// Attributes kept on kept elements.
const ATTRIBUTES: &[&str] = &["class", "title"];

/// `markup` with only allowed elements and attributes, every text escaped again, and every
/// element left open closed at the end.
pub(crate) fn sanitize(markup: &str) -> String {
    let mut out = String::with_capacity(markup.len());
    let mut open: Vec<&'static str> = Vec::new();
    let mut rest = markup;
    while let Some(at) = rest.find('<') {
        push_text(&mut out, &rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let Some(tag) = Tag::read(rest) else {
            // A `<` that starts no tag is text.
            out.push_str("&lt;");
            rest = &rest[1..];
            continue;
        };
        rest = &rest[tag.length..];
        if !tag.closing && DROPPED_WHOLE.contains(&tag.name.as_str()) {
            rest = skip_past_end_of(rest, &tag.name);
            continue;
        }
        let Some(&name) = ELEMENTS.iter().find(|kept| **kept == tag.name) else {
            continue;
        };
        if tag.closing {
            // Closes the innermost open element of this name, and everything inside it.
            if let Some(depth) = open.iter().rposition(|kept| *kept == name) {
                for closed in open.drain(depth..).rev() {
                    let _ = write!(out, "</{closed}>");
                }
            }
            continue;
        }
        out.push('<');
        out.push_str(name);
        for (attribute, value) in &tag.attributes {
            if ATTRIBUTES.contains(&attribute.as_str()) {
                let _ = write!(out, " {attribute}=\"{}\"", Attr(value));
            }
        }
        out.push('>');
        if !VOID.contains(&name) {
            open.push(name);
        }
    }
    push_text(&mut out, rest);
    for closed in open.into_iter().rev() {
        let _ = write!(out, "</{closed}>");
    }
    out
}

/// Text between tags: character references are decoded only as far as to be escaped
/// again, so `&lt;` stays text and a bare `&` becomes `&amp;`.
fn push_text(out: &mut String, text: &str) {
    let decoded = decode_references(text);
    let _ = write!(out, "{}", Text(&decoded));
}

/// The few references a host's escaper writes (`&amp;`, `&lt;`, `&gt;`, `&quot;`,
/// `&#39;`, numeric ones); any other `&` is a plain ampersand.
fn decode_references(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest.find(';').filter(|end| *end <= 10);
        let decoded = end.and_then(|end| {
            let name = &rest[1..end];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                    .and_then(char::from_u32),
            }?;
            Some((c, end + 1))
        });
        match decoded {
            Some((c, length)) => {
                out.push(c);
                rest = &rest[length..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Past the end tag of `name` (ASCII case ignored), or the end of the text.
fn skip_past_end_of<'t>(text: &'t str, name: &str) -> &'t str {
    let mut rest = text;
    while let Some(at) = rest.find("</") {
        let after = &rest[at + 2..];
        let matches = after
            .get(..name.len())
            .is_some_and(|candidate| candidate.eq_ignore_ascii_case(name));
        if matches {
            return after.find('>').map_or("", |end| &after[end + 1..]);
        }
        rest = after;
    }
    ""
}

/// One tag as written: its lowercase name, whether it closes, its attributes, and how
/// many bytes it took.
struct Tag {
    name: String,
    closing: bool,
    attributes: Vec<(String, String)>,
    length: usize,
}

impl Tag {
    /// The tag at the start of `text` (which starts with `<`), if it is one.
    fn read(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        let mut at = 1;
        let closing = bytes.get(at) == Some(&b'/');
        if closing {
            at += 1;
        }
        let name_start = at;
        while bytes.get(at).is_some_and(u8::is_ascii_alphanumeric) {
            at += 1;
        }
        if at == name_start || !bytes[name_start].is_ascii_alphabetic() {
            return None;
        }
        let name = text[name_start..at].to_ascii_lowercase();
        let mut attributes = Vec::new();
        loop {
            // Between attributes: whitespace, a `/`, a stray `=`.
            while bytes
                .get(at)
                .is_some_and(|byte| byte.is_ascii_whitespace() || matches!(byte, b'/' | b'='))
            {
                at += 1;
            }
            match bytes.get(at) {
                None => return None,
                Some(b'>') => {
                    return Some(Self {
                        name,
                        closing,
                        attributes,
                        length: at + 1,
                    });
                }
                Some(_) => {}
            }
            // At least one byte: the one found above is none of those, nor `>`.
            let attribute_start = at;
            while bytes.get(at).is_some_and(|byte| {
                !byte.is_ascii_whitespace() && !matches!(byte, b'=' | b'>' | b'/')
            }) {
                at += 1;
            }
            let attribute = text[attribute_start..at].to_ascii_lowercase();
            let mut value = String::new();
            if bytes.get(at) == Some(&b'=') {
                at += 1;
                match bytes.get(at) {
                    Some(&quote @ (b'"' | b'\'')) => {
                        let end = text[at + 1..].find(char::from(quote))?;
                        value = decode_references(&text[at + 1..at + 1 + end]);
                        at += end + 2;
                    }
                    _ => {
                        let start = at;
                        while bytes
                            .get(at)
                            .is_some_and(|byte| !byte.is_ascii_whitespace() && *byte != b'>')
                        {
                            at += 1;
                        }
                        value = decode_references(&text[start..at]);
                    }
                }
            }
            attributes.push((attribute, value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn what_shows_stays_and_what_acts_goes() {
        let cases = [
            (
                "<p class=\"card\">Refund <strong>12.50 EUR</strong></p>",
                "<p class=\"card\">Refund <strong>12.50 EUR</strong></p>",
            ),
            (
                "<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example\">Hi",
                "Hi",
            ),
            ("<a href=\"https://evil.example\">click</a>", "click"),
            ("<img src=x onerror=alert(1)>", ""),
            ("<script>alert(1)</script>after", "after"),
            ("<SCRIPT>alert(1)</ScRiPt>after", "after"),
            ("<style>body{display:none}</style>x", "x"),
            (
                "<p onclick=\"steal()\" title='t'>x</p>",
                "<p title=\"t\">x</p>",
            ),
            (
                "<form action=/proposals/k/decide><button>Go</button></form>",
                "Go",
            ),
            ("<iframe src=//evil.example></iframe>shown", "shown"),
            ("a < b & c", "a &lt; b &amp; c"),
            ("&lt;script&gt; stays text", "&lt;script&gt; stays text"),
            // Every reference a host's escaper writes means its character, once.
            (
                "Tom &amp; Jerry&apos;s &quot;&#39;&#x27;&#X27;&#65;",
                "Tom &amp; Jerry&#39;s &quot;&#39;&#39;&#39;A",
            ),
            ("&unknown; &#xZZ; &", "&amp;unknown; &amp;#xZZ; &amp;"),
            // A closing tag closes where it stands.
            ("<b>bold</b> plain", "<b>bold</b> plain"),
            ("<p><b>x</p>y", "<p><b>x</b></p>y"),
            ("<b>unclosed", "<b>unclosed</b>"),
            (
                "<ul><li>one<li>two</ul>",
                "<ul><li>one<li>two</li></li></ul>",
            ),
            ("<!-- a comment -->kept", "kept"),
            (
                "<p title=\"&quot;><script>\">x</p>",
                "<p title=\"&quot;&gt;&lt;script&gt;\">x</p>",
            ),
            // An attribute of invisible characters is no allowed attribute.
            ("<div\u{200B}>x", "<div>x</div>"),
            ("<base href=//evil.example>x", "x"),
            ("<p style=\"position:fixed\">x</p>", "<p>x</p>"),
            ("<svg><a href=x>y</a></svg>z", "z"),
            ("<", "&lt;"),
            ("<p", "&lt;p"),
            ("<p = title=t / >x</p>", "<p title=\"t\">x</p>"),
            ("<br/>a<hr />", "<br>a<hr>"),
        ];
        for (markup, expected) in cases {
            assert_eq!(sanitize(markup), expected, "{markup}");
        }
    }

    proptest::proptest! {
        /// Whatever a host writes, every tag left is an allowed element with only `class`
        /// or `title` attributes (a `<` in text is always escaped, so each one left opens
        /// a tag the sanitizer wrote).
        #[test]
        fn no_markup_acts_after_sanitizing(markup in r#"[<>/="' a-zA-Z!&;#-]{0,80}"#) {
            let clean = sanitize(&markup);
            for piece in clean.split('<').skip(1) {
                let inside = piece.split('>').next().unwrap_or("");
                let inside = inside.strip_prefix('/').unwrap_or(inside);
                let (name, mut attributes) = inside.split_once(' ').unwrap_or((inside, ""));
                proptest::prop_assert!(super::ELEMENTS.contains(&name), "{name} in {clean}");
                while !attributes.is_empty() {
                    let (attribute, rest) = attributes.split_once("=\"").unwrap_or((attributes, ""));
                    proptest::prop_assert!(
                        super::ATTRIBUTES.contains(&attribute),
                        "{attribute} in {clean} from {markup}"
                    );
                    let (_, rest) = rest.split_once('"').unwrap_or(("", ""));
                    attributes = rest.trim_start();
                }
            }
        }
    }
}
