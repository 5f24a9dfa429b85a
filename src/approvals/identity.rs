//! One rule for every identity: an actor, an operator, an approver, a token's subject,
//! an account. [`check_id`] says which ids are refused, [`same_person`] which two ids
//! name one person for four eyes, [`is_mixed_script`] which are flagged where a person
//! reads them.

use std::prelude::rust_2024::*;

use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory, WhiteSpace};
use icu_properties::{CodePointMapData, CodePointSetData};
use unicode_normalization::UnicodeNormalization;
use unicode_security::MixedScript;

/// The longest id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// Why an id is refused.
///
/// ```
/// use cairnloop::approvals::{IdentityError, check_id};
/// assert_eq!(check_id("agent-7 "), Err(IdentityError::EdgeWhitespace));
/// assert_eq!(check_id("agent\u{200B}7"), Err(IdentityError::Invisible(0x200B)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// The id is empty.
    #[error("the id is empty")]
    Empty,
    /// The id is longer than [`MAX_ID_BYTES`].
    #[error("the id is longer than {MAX_ID_BYTES} bytes")]
    TooLong,
    /// The id begins or ends with whitespace.
    #[error("the id begins or ends with whitespace")]
    EdgeWhitespace,
    /// The id holds a space or separator other than the ASCII space (its code point),
    /// anywhere: a no-break, em or ideographic space reads as a plain one.
    #[error("the id holds the space U+{0:04X}, which is not the ASCII space")]
    Space(u32),
    /// The id holds a control character (its code point).
    #[error("the id holds the control character U+{0:04X}")]
    Control(u32),
    /// The id holds an invisible character (its code point).
    #[error("the id holds the invisible character U+{0:04X}")]
    Invisible(u32),
}

/// Checks `id` against the identity rule that every identity follows (an actor, an
/// operator, an approver, a token's subject, an account).
///
/// An id is **refused** when it is empty, longer than [`MAX_ID_BYTES`], begins or ends
/// with whitespace, holds whitespace other than the ASCII space anywhere (a no-break,
/// narrow no-break, em or ideographic space, …: each reads as a plain space, so two ids
/// that differ by one would look alike), or holds a control character or an invisible
/// one: a default-ignorable
/// code point (zero-width spaces and joiners, the byte-order mark, soft hyphen, variation
/// selectors, tag characters, Hangul fillers, …), a format character, a line or paragraph
/// separator, a private-use, surrogate or unassigned code point, or the one blank that
/// Unicode files as a symbol (U+2800 BRAILLE PATTERN BLANK). All of these come from the
/// Unicode Character Database (through `icu_properties`), not from a list of our own, save
/// that last one. The ASCII space inside an id is allowed (`alice via desktop`).
///
/// # Errors
///
/// The first reason the id is refused.
///
/// ```
/// use cairnloop::approvals::{IdentityError, check_id};
/// assert_eq!(check_id("émile@acme"), Ok(()));
/// assert_eq!(check_id(""), Err(IdentityError::Empty));
/// assert_eq!(check_id("\u{FEFF}agent-7"), Err(IdentityError::Invisible(0xFEFF)));
/// assert_eq!(check_id("agent\u{7}"), Err(IdentityError::Control(7)));
/// assert_eq!(check_id("agent\u{A0}7"), Err(IdentityError::Space(0xA0)));
/// assert_eq!(check_id("alice via desktop"), Ok(()));
/// ```
pub fn check_id(id: &str) -> Result<(), IdentityError> {
    if id.is_empty() {
        return Err(IdentityError::Empty);
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdentityError::TooLong);
    }
    if id.is_ascii() {
        // Most ids: a few comparisons per byte, no Unicode tables.
        if let Some(&control) = id.as_bytes().iter().find(|byte| byte.is_ascii_control()) {
            return Err(IdentityError::Control(u32::from(control)));
        }
        let edges = [id.as_bytes()[0], id.as_bytes()[id.len() - 1]];
        if edges.iter().any(u8::is_ascii_whitespace) {
            return Err(IdentityError::EdgeWhitespace);
        }
        return Ok(());
    }
    let white = CodePointSetData::new::<WhiteSpace>();
    let edges = [id.chars().next(), id.chars().next_back()];
    if edges.into_iter().flatten().any(|c| white.contains(c)) {
        return Err(IdentityError::EdgeWhitespace);
    }
    for c in id.chars() {
        if c.is_control() {
            return Err(IdentityError::Control(u32::from(c)));
        }
        if c != ' ' && white.contains(c) {
            return Err(IdentityError::Space(u32::from(c)));
        }
        if is_invisible(c) {
            return Err(IdentityError::Invisible(u32::from(c)));
        }
    }
    Ok(())
}

/// Whether `c` shows nothing where it stands (controls aside): a default-ignorable code
/// point, a format character, a line or paragraph separator, a private-use, surrogate or
/// unassigned code point, or U+2800 BRAILLE PATTERN BLANK (a blank that Unicode files as a
/// symbol, so no property names it).
///
/// ```
/// use cairnloop::approvals::is_invisible;
/// assert!(is_invisible('\u{AD}') && is_invisible('\u{3164}') && is_invisible('\u{2800}'));
/// assert!(!is_invisible('a') && !is_invisible(' ') && !is_invisible('é'));
/// ```
#[must_use]
pub fn is_invisible(c: char) -> bool {
    if c.is_ascii() {
        return false;
    }
    if c == '\u{2800}' || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c) {
        return true;
    }
    matches!(
        CodePointMapData::<GeneralCategory>::new().get(c),
        GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
            | GeneralCategory::Unassigned
    )
}

/// Whether the id mixes scripts (UTS #39: no one script covers every letter), as a
/// look-alike name often does. Digits, punctuation and symbols belong to every script.
/// A mixed-script id is allowed, and flagged where a person reads it.
///
/// ```
/// use cairnloop::approvals::is_mixed_script;
/// assert!(!is_mixed_script("agent-7") && !is_mixed_script("агент-7"));
/// assert!(is_mixed_script("аgent-7")); // a Cyrillic а among Latin letters
/// ```
#[must_use]
pub fn is_mixed_script(id: &str) -> bool {
    !id.is_single_script()
}

/// The form two ids are compared in for four eyes: NFKC, case-folded (full folding, also
/// where it changes length), stripped of combining marks that sit on another letter, and
/// reduced to its confusable skeleton.
///
/// ```
/// use cairnloop::approvals::comparison_form;
/// assert_eq!(comparison_form("ÉMILE"), comparison_form("émile"));
/// assert_eq!(comparison_form("ａｇｅｎｔ"), comparison_form("agent"));
/// assert_eq!(comparison_form("ALİCE"), comparison_form("alice")); // U+0130 folds to i + U+0307
/// ```
#[must_use]
pub fn comparison_form(id: &str) -> String {
    let compatible: String = id.nfkc().collect();
    let marks = CodePointMapData::<GeneralCategory>::new();
    // Folding can lengthen a letter into a base and a mark (`İ` → `i̇`), and a reader
    // sees a letter with a dot, an accent or a ring as that letter: the marks go.
    let bare: String = caseless::default_case_fold_str(&compatible)
        .nfkd()
        .filter(|&c| {
            !matches!(
                marks.get(c),
                GeneralCategory::NonspacingMark | GeneralCategory::EnclosingMark
            )
        })
        .collect();
    unicode_security::skeleton(&bare.nfkc().collect::<String>()).collect()
}

/// Whether two ids name the same person for four eyes.
///
/// Two ids are the same person when their [`comparison_form`]s are equal: the id
/// compatibility-normalised (NFKC: fullwidth `ａ` is `a`), case-folded with the full
/// folding (`ÉMILE` is `émile`, `STRASSE` is `straße`, `ALİCE` is `alice`), stripped of
/// its combining marks (`émile` is `emile`), then reduced to its UTS #39 confusable
/// skeleton (a Cyrillic `а` is a Latin `a`, and so is an all-Cyrillic spelling of a Latin
/// name). The comparison errs towards "the same": `op1` and `opl` count as one person, and
/// so do `José` and `Jose`, so the one cannot approve the other's call. Refusing a genuine
/// second person is safe; letting a proposer approve under a look-alike name is not.
///
/// ```
/// use cairnloop::approvals::same_person;
/// assert!(same_person("agent-7", "AGENT-7"));
/// assert!(same_person("paypal", "раураl")); // Cyrillic look-alikes
/// assert!(same_person("alice", "ALİCE")); // the dotted capital I
/// assert!(!same_person("agent-7", "agent-8"));
/// ```
#[must_use]
pub fn same_person(one: &str, other: &str) -> bool {
    one == other || comparison_form(one) == comparison_form(other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_may_be_as_long_as_the_bound_and_no_longer() {
        let at_bound = "a".repeat(MAX_ID_BYTES);
        assert_eq!(check_id(&at_bound), Ok(()));
        assert_eq!(
            check_id(&"a".repeat(MAX_ID_BYTES + 1)),
            Err(IdentityError::TooLong)
        );
        assert_eq!(
            check_id(&"é".repeat(MAX_ID_BYTES)),
            Err(IdentityError::TooLong)
        );
    }

    #[test]
    fn mixed_scripts_are_told_apart_from_one_script_with_digits_and_marks() {
        for one_script in [
            "agent-7",
            "агент-7",
            "émile",
            "user:alice",
            "日本語-1",
            "Ωμέγα",
        ] {
            assert!(!is_mixed_script(one_script), "{one_script}");
        }
        // Latin with a Cyrillic а, Latin with a Greek ο, Cyrillic with a Latin p.
        for mixed in ["аgent-7", "gοogle", "аpp"] {
            assert!(is_mixed_script(mixed), "{mixed}");
        }
    }
}
