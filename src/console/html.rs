//! The pieces every page is made of. Pages are `maud` templates, which escape every value
//! they splice in unless it is marked as markup; the types here splice outside text in
//! with more than escaping: [`Text`] also shows invisible characters by their code
//! points, [`Person`] flags mixed-script ids, [`Shortened`] cuts long values. Each renders
//! through `Display`, escaped by its own code.

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use std::fmt::{self, Write as _};

use maud::{DOCTYPE, Markup, Render, html};

use crate::approvals::{is_invisible, is_mixed_script};

/// The most characters of one value a page shows; the rest is counted, and the whole
/// input can be downloaded as JSON.
pub(crate) const MAX_SHOWN_CHARS: usize = 2_000;

/// Text shown as text: `&`, `<`, `>`, `"` and `'` escaped, and the characters that hide
/// or reorder what a person reads (controls, bidirectional overrides, zero-width and
/// every other invisible character, found by their Unicode properties) shown as their
/// code points.
pub(crate) struct Text<'a>(pub(crate) &'a str);

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut plain = 0;
        let text = self.0;
        for (i, c) in text.char_indices() {
            let escape = match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' => "&quot;",
                '\'' => "&#39;",
                c if hidden(c) => "",
                _ => continue,
            };
            f.write_str(&text[plain..i])?;
            if escape.is_empty() {
                write!(f, "<span class=\"cp\">U+{:04X}</span>", u32::from(c))?;
            } else {
                f.write_str(escape)?;
            }
            plain = i + c.len_utf8();
        }
        f.write_str(&text[plain..])
    }
}

/// An attribute value: escaped like [`Text`], but hidden characters become their code
/// point in plain text (an attribute cannot hold markup).
pub(crate) struct Attr<'a>(pub(crate) &'a str);

impl fmt::Display for Attr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '&' => f.write_str("&amp;")?,
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '"' => f.write_str("&quot;")?,
                '\'' => f.write_str("&#39;")?,
                c if hidden(c) || c.is_control() => write!(f, "U+{:04X}", u32::from(c))?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// A long text cut to [`MAX_SHOWN_CHARS`] characters, with how much was left out.
pub(crate) fn shortened(text: &str) -> (&str, usize) {
    match text.char_indices().nth(MAX_SHOWN_CHARS) {
        Some((cut, _)) => (&text[..cut], text[cut..].chars().count()),
        None => (text, 0),
    }
}

/// A text shown in full up to the limit, then a note of how many characters follow.
pub(crate) struct Shortened<'a>(pub(crate) &'a str);

impl fmt::Display for Shortened<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (shown, left) = shortened(self.0);
        write!(f, "{}", Text(shown))?;
        if left > 0 {
            write!(f, "<span class=\"cut\">… and {left} more characters</span>")?;
        }
        Ok(())
    }
}

/// A character that would hide or reorder what a person reads: every control but a line
/// break or a tab, and every invisible code point by its Unicode properties
/// ([`is_invisible`]: default-ignorable, format, separators, private-use, unassigned).
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_invisible(c)
}

/// A person's id (an actor, an approver, an operator) as text, flagged when it mixes
/// scripts, as a look-alike of another person's id often does.
pub(crate) struct Person<'a>(pub(crate) &'a str);

impl fmt::Display for Person<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Text(self.0))?;
        if is_mixed_script(self.0) {
            f.write_str(
                " <span class=\"mixed\" title=\"This id mixes letters of different scripts: \
                 it may imitate another person's id.\">mixed scripts</span>",
            )?;
        }
        Ok(())
    }
}

/// A query string value: everything but unreserved characters percent-encoded.
pub(crate) struct Query<'a>(pub(crate) &'a str);

impl fmt::Display for Query<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0.bytes() {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
                f.write_char(char::from(byte))?;
            } else {
                write!(f, "%{byte:02X}")?;
            }
        }
        Ok(())
    }
}

/// Each of these escapes what it shows itself (see its `Display`): a template splices
/// its output as it is.
macro_rules! render_by_display {
    ($($kind:ident),*) => {
        $(
            impl Render for $kind<'_> {
                fn render_to(&self, buffer: &mut String) {
                    let _ = write!(buffer, "{self}");
                }
            }
        )*
    };
}

render_by_display!(Text, Attr, Person, Shortened, Query);

/// A whole page: the layout around `body`, for a signed-in operator or none.
pub(crate) fn page(title: &str, operator: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (Text(title)) " · cairnloop console" }
                link rel="stylesheet" href="/assets/console.css";
                script src="/assets/console.js" defer {}
            }
            body {
                header {
                    a.brand href="/queue" { "cairnloop console" }
                    @if let Some(operator) = operator {
                        nav aria-label="Console" {
                            a href="/queue" { "Queue" }
                            a href="/reconcile" { "Reconcile" }
                            a href="/audit" { "Audit" }
                        }
                        span.who { (Person(operator)) }
                    }
                }
                main { (body) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_hidden_characters_are_inert() {
        let shown = Text("<script>\"x\"</script>&'\u{202e}").to_string();
        assert_eq!(
            shown,
            "&lt;script&gt;&quot;x&quot;&lt;/script&gt;&amp;&#39;<span class=\"cp\">U+202E</span>"
        );
        assert_eq!(
            Attr("\"><img onerror=x>\u{200b}").to_string(),
            "&quot;&gt;&lt;img onerror=x&gt;U+200B"
        );
    }

    #[test]
    fn every_invisible_character_and_control_in_text_is_shown_by_its_code_point() {
        // Each hides in a value a person reads; none is in a list of ours.
        for (c, code) in [
            ('\u{AD}', "U+00AD"),     // soft hyphen: DE89\u{AD}3704 read as DE893704
            ('\u{3164}', "U+3164"),   // Hangul filler
            ('\u{180E}', "U+180E"),   // Mongolian vowel separator
            ('\u{E0041}', "U+E0041"), // tag letter
            ('\u{34F}', "U+034F"),    // combining grapheme joiner
            ('\u{2800}', "U+2800"),   // braille blank
            ('\u{1}', "U+0001"),      // C0 control
            ('\u{85}', "U+0085"),     // C1 control
            ('\r', "U+000D"),
            ('\u{FFA0}', "U+FFA0"), // halfwidth Hangul filler
            ('\u{E000}', "U+E000"), // private use
        ] {
            let text = format!("DE89{c}3704");
            let shown = Text(&text).to_string();
            assert_eq!(
                shown,
                format!("DE89<span class=\"cp\">{code}</span>3704"),
                "{code}"
            );
            assert_eq!(Attr(&text).to_string(), format!("DE89{code}3704"), "{code}");
        }
        // What a person reads as it is stays as it is.
        for plain in ["émile", "line\nbreak", "tab\there", "日本語", "a b", "€ 5"] {
            assert_eq!(Text(plain).to_string(), plain);
        }
    }

    #[test]
    fn a_mixed_script_person_is_flagged() {
        assert_eq!(Person("agent-7").to_string(), "agent-7");
        assert_eq!(Person("агент-7").to_string(), "агент-7");
        let flagged = Person("аgent-7").to_string(); // a Cyrillic а
        assert!(
            flagged.starts_with("аgent-7 <span class=\"mixed\""),
            "{flagged}"
        );
    }

    #[test]
    fn long_text_is_cut_and_counted() {
        let long = "é".repeat(MAX_SHOWN_CHARS + 5);
        let shown = Shortened(&long).to_string();
        assert!(shown.ends_with("… and 5 more characters</span>"), "{shown}");
        assert_eq!(Query("a b&c=d/é").to_string(), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
