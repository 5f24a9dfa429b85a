//! A strict JSON reader over bytes that allocates nothing and never recurses: nesting is
//! a bit stack whose depth is checked before each descent, so a deeply nested text ends
//! in a refusal, not in a stack overflow.

/// Where a syntax or limit problem was found, as a field error code and a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Syntax {
    pub(crate) code: &'static str,
    pub(crate) message: &'static str,
}

const fn syntax(message: &'static str) -> Syntax {
    Syntax {
        code: "invalid_json",
        message,
    }
}

pub(crate) const TOO_DEEP: Syntax = Syntax {
    code: "too_deep",
    message: "nested deeper than the limit of arrays and objects",
};

/// The kind of a JSON value, as a type error names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

/// A string token: the text between its quotes, escapes not yet resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawString<'a> {
    pub(crate) raw: &'a [u8],
    pub(crate) escaped: bool,
}

impl RawString<'_> {
    /// The string with its escapes resolved into `out`: its length, or `None` when it
    /// does not fit (the reader has already checked every escape).
    pub(crate) fn decode_into(&self, out: &mut [u8]) -> Option<usize> {
        if !self.escaped {
            out.get_mut(..self.raw.len())?.copy_from_slice(self.raw);
            return Some(self.raw.len());
        }
        let mut written = 0;
        let mut i = 0;
        while let Some(&byte) = self.raw.get(i) {
            let mut utf8 = [0_u8; 4];
            let piece: &[u8] = if byte == b'\\' {
                let escape = *self.raw.get(i + 1)?;
                i += 2;
                match escape {
                    b'b' => b"\x08",
                    b'f' => b"\x0c",
                    b'n' => b"\n",
                    b'r' => b"\r",
                    b't' => b"\t",
                    b'u' => {
                        let (c, used) = unicode_escape(self.raw.get(i - 2..)?)?;
                        i += used - 2;
                        c.encode_utf8(&mut utf8).as_bytes()
                    }
                    other => {
                        utf8[0] = other;
                        &utf8[..1]
                    }
                }
            } else {
                i += 1;
                core::slice::from_ref(self.raw.get(i - 1)?)
            };
            out.get_mut(written..written + piece.len())?
                .copy_from_slice(piece);
            written += piece.len();
        }
        Some(written)
    }
}

/// The character of a `\uXXXX` escape (or a surrogate pair of two) at the start of
/// `text`, and how many bytes it took; `None` for a lone or reversed surrogate.
fn unicode_escape(text: &[u8]) -> Option<(char, usize)> {
    let first = hex4(text.get(2..6)?)?;
    match first {
        0xd800..=0xdbff => {
            if text.get(6..8)? != b"\\u" {
                return None;
            }
            let second = hex4(text.get(8..12)?)?;
            if !(0xdc00..=0xdfff).contains(&second) {
                return None;
            }
            let c = 0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00);
            Some((char::from_u32(c)?, 12))
        }
        0xdc00..=0xdfff => None,
        _ => Some((char::from_u32(first)?, 6)),
    }
}

fn hex4(digits: &[u8]) -> Option<u32> {
    let mut value = 0;
    for &d in digits {
        value = value * 16 + char::from(d).to_digit(16)?;
    }
    Some(value)
}

/// A number token: its text, and whether it has a fraction or an exponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawNumber<'a> {
    pub(crate) text: &'a [u8],
    pub(crate) integral: bool,
}

impl RawNumber<'_> {
    /// The integer, when it is one and lies within ±(2^53 − 1); `Err(true)` when it is an
    /// integer past that bound, `Err(false)` when it is not an integer.
    pub(crate) fn exact_integer(&self) -> Result<i64, bool> {
        if !self.integral {
            return Err(false);
        }
        let (negative, digits) = match self.text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, self.text),
        };
        let mut value: i64 = 0;
        for &d in digits {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(i64::from(d - b'0')))
                .filter(|v| *v <= MAX_EXACT)
                .ok_or(true)?;
        }
        Ok(if negative { -value } else { value })
    }
}

/// The largest integer a double holds exactly: what every JSON reader agrees on.
pub(crate) const MAX_EXACT: i64 = (1 << 53) - 1;

/// The reader: a position in the text and the depth it may still descend.
pub(crate) struct Reader<'a> {
    text: &'a [u8],
    at: usize,
    max_depth: usize,
}

impl<'a> Reader<'a> {
    pub(crate) const fn new(text: &'a [u8], max_depth: usize) -> Self {
        Self {
            text,
            at: 0,
            max_depth,
        }
    }

    /// Where the reader stands, in bytes from the start of the text.
    pub(crate) const fn position(&self) -> usize {
        self.at
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    pub(crate) fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// After the value: only whitespace may follow.
    pub(crate) fn end(&mut self) -> Result<(), Syntax> {
        self.skip_whitespace();
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(syntax("trailing characters after the JSON value")),
        }
    }

    /// The kind of the next value, after whitespace.
    pub(crate) fn next_kind(&mut self) -> Result<Kind, Syntax> {
        self.skip_whitespace();
        Ok(match self.peek() {
            Some(b'{') => Kind::Object,
            Some(b'[') => Kind::Array,
            Some(b'"') => Kind::String,
            Some(b'-' | b'0'..=b'9') => Kind::Number,
            Some(b't' | b'f') => Kind::Bool,
            Some(b'n') => Kind::Null,
            Some(_) => return Err(syntax("expected a JSON value")),
            None => return Err(syntax("the text ends where a value was expected")),
        })
    }

    fn eat(&mut self, byte: u8, message: &'static str) -> Result<(), Syntax> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else if self.peek().is_none() {
            Err(syntax("the text ends in the middle of a value"))
        } else {
            Err(syntax(message))
        }
    }

    /// Opens an object at `depth` (the object's own nesting level, from 1).
    pub(crate) fn open_object(&mut self, depth: usize) -> Result<(), Syntax> {
        if depth > self.max_depth {
            return Err(TOO_DEEP);
        }
        self.eat(b'{', "expected an object")
    }

    /// The next key of an open object, or `None` at its end. `first` is whether no member
    /// was read yet.
    pub(crate) fn next_key(&mut self, first: bool) -> Result<Option<RawString<'a>>, Syntax> {
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(None);
        }
        if !first {
            self.eat(b',', "expected `,` or `}` after an object member")?;
            self.skip_whitespace();
        }
        if self.peek() != Some(b'"') {
            return Err(match self.peek() {
                None => syntax("the text ends in the middle of an object"),
                Some(_) => syntax("expected a string key"),
            });
        }
        let key = self.string()?;
        self.eat(b':', "expected `:` after an object key")?;
        Ok(Some(key))
    }

    /// A string token.
    pub(crate) fn string(&mut self) -> Result<RawString<'a>, Syntax> {
        self.eat(b'"', "expected a string")?;
        let start = self.at;
        let mut escaped = false;
        loop {
            match self.peek() {
                None => return Err(syntax("the text ends inside a string")),
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    let rest = self.text.get(self.at..).unwrap_or(&[]);
                    let used = match rest.get(1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                        Some(b'u') => match unicode_escape(rest) {
                            Some((_, used)) => used,
                            None => return Err(syntax("an invalid \\u escape in a string")),
                        },
                        _ => return Err(syntax("an invalid escape in a string")),
                    };
                    self.at += used;
                }
                Some(byte) if byte < b' ' => {
                    return Err(syntax("a control character inside a string"));
                }
                Some(_) => self.at += 1,
            }
        }
        let raw = self.text.get(start..self.at).unwrap_or(&[]);
        self.at += 1;
        Ok(RawString { raw, escaped })
    }

    /// A number token, by the JSON grammar.
    pub(crate) fn number(&mut self) -> Result<RawNumber<'a>, Syntax> {
        self.skip_whitespace();
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(syntax("a number needs a digit")),
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.required_digits()?;
            integral = false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.required_digits()?;
            integral = false;
        }
        let text = self.text.get(start..self.at).unwrap_or(&[]);
        Ok(RawNumber { text, integral })
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn required_digits(&mut self) -> Result<(), Syntax> {
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return Err(syntax("a number needs a digit"));
        }
        self.digits();
        Ok(())
    }

    /// `true`, `false` or `null`.
    pub(crate) fn literal(&mut self) -> Result<Option<bool>, Syntax> {
        self.skip_whitespace();
        let rest = self.text.get(self.at..).unwrap_or(&[]);
        let (value, len) = if rest.starts_with(b"true") {
            (Some(true), 4)
        } else if rest.starts_with(b"false") {
            (Some(false), 5)
        } else if rest.starts_with(b"null") {
            (None, 4)
        } else {
            return Err(syntax("expected `true`, `false` or `null`"));
        };
        self.at += len;
        Ok(value)
    }

    /// Reads over one value whose own nesting level would be `depth`, checking its syntax
    /// and depth without recursion: a bit per open level says object (1) or array (0).
    pub(crate) fn skip_value(&mut self, depth: usize) -> Result<Kind, Syntax> {
        let kind = self.next_kind()?;
        if !matches!(kind, Kind::Object | Kind::Array) {
            self.scalar(kind)?;
            return Ok(kind);
        }
        // At most 64 open levels fit the bit stack; deeper is refused as too deep.
        let mut open: u64 = 0;
        let mut levels = 0_usize;
        let mut expect_value = true;
        loop {
            self.skip_whitespace();
            if expect_value {
                match self.next_kind()? {
                    container @ (Kind::Object | Kind::Array) => {
                        if depth + levels > self.max_depth || levels >= 64 {
                            return Err(TOO_DEEP);
                        }
                        self.at += 1;
                        open = (open << 1) | u64::from(container == Kind::Object);
                        levels += 1;
                        self.skip_whitespace();
                        let closing = if container == Kind::Object {
                            b'}'
                        } else {
                            b']'
                        };
                        if self.peek() == Some(closing) {
                            self.at += 1;
                            levels -= 1;
                            open >>= 1;
                            expect_value = false;
                        } else if container == Kind::Object {
                            self.object_key()?;
                        }
                    }
                    scalar => {
                        self.scalar(scalar)?;
                        expect_value = false;
                    }
                }
            } else {
                if levels == 0 {
                    return Ok(kind);
                }
                let in_object = open & 1 == 1;
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        if in_object {
                            self.object_key()?;
                        }
                        expect_value = true;
                    }
                    Some(b'}') if in_object => self.close(&mut open, &mut levels),
                    Some(b']') if !in_object => self.close(&mut open, &mut levels),
                    None => return Err(syntax("the text ends in the middle of a value")),
                    Some(_) => return Err(syntax("expected `,` or the end of a container")),
                }
                if levels == 0 {
                    return Ok(kind);
                }
            }
        }
    }

    fn close(&mut self, open: &mut u64, levels: &mut usize) {
        self.at += 1;
        *open >>= 1;
        *levels -= 1;
    }

    fn object_key(&mut self) -> Result<(), Syntax> {
        self.skip_whitespace();
        if self.peek() != Some(b'"') {
            return Err(syntax("expected a string key"));
        }
        self.string()?;
        self.eat(b':', "expected `:` after an object key")
    }

    fn scalar(&mut self, kind: Kind) -> Result<(), Syntax> {
        match kind {
            Kind::String => self.string().map(drop),
            Kind::Number => self.number().map(drop),
            _ => self.literal().map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(text: &str, max_depth: usize) -> Result<Kind, Syntax> {
        let mut reader = Reader::new(text.as_bytes(), max_depth);
        let kind = reader.skip_value(1)?;
        reader.end()?;
        Ok(kind)
    }

    #[test]
    fn skips_what_json_allows_and_refuses_the_rest() {
        for good in [
            "{}",
            "[]",
            r#"{"a":[1,-2.5e3,{"b":null}],"c":"\u00e9\ud83d\ude00"}"#,
            " [ true , false , null ] ",
            "0",
            "-0.0",
        ] {
            assert!(skip(good, 8).is_ok(), "{good}");
        }
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\"}",
            "{\"a\":}",
            "01",
            "1.",
            "-",
            "[1 2]",
            "{\"a\":1,}",
            "\"\\ud800\"",
            "\"\\x\"",
            "\"a\u{1}\"",
            "tru",
            "[}",
            "{]",
            "\"open",
        ] {
            assert_eq!(
                skip(bad, 8).map_err(|s| s.code),
                Err("invalid_json"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn depth_is_checked_before_descending() {
        assert!(skip("[[[1]]]", 3).is_ok());
        assert_eq!(skip("[[[[1]]]]", 3), Err(TOO_DEEP));
        let deep = "[".repeat(10_000);
        assert_eq!(skip(&deep, 32), Err(TOO_DEEP));
    }

    #[test]
    fn integers_are_exact_or_refused() {
        fn number(text: &str) -> RawNumber<'_> {
            Reader::new(text.as_bytes(), 1).number().unwrap()
        }
        assert_eq!(number("9007199254740991").exact_integer(), Ok(MAX_EXACT));
        assert_eq!(number("-9007199254740991").exact_integer(), Ok(-MAX_EXACT));
        assert_eq!(number("9007199254740992").exact_integer(), Err(true));
        assert_eq!(number("99999999999999999999999").exact_integer(), Err(true));
        assert_eq!(number("1.0").exact_integer(), Err(false));
        assert_eq!(number("1e2").exact_integer(), Err(false));
        assert_eq!(number("-0").exact_integer(), Ok(0));
    }

    #[test]
    fn escapes_decode() {
        let mut reader = Reader::new(br#""a\n\u00e9\ud83d\ude00\/""#, 1);
        let raw = reader.string().unwrap();
        let mut out = [0_u8; 16];
        let len = raw.decode_into(&mut out).unwrap();
        assert_eq!(&out[..len], "a\né😀/".as_bytes());
        assert_eq!(raw.decode_into(&mut [0_u8; 3]), None);
    }
}
