use core::fmt;

#[cfg(feature = "alloc")]
use alloc::{string::String, vec::Vec};

/// Text that is static in the core and may be owned under `alloc` (a JSON path, a decoder
/// message).
#[derive(Clone, PartialEq, Eq, Hash)]
enum Text {
    Static(&'static str),
    #[cfg(feature = "alloc")]
    Owned(String),
    /// A short path built without `alloc` (a device naming an unknown field); the bytes
    /// are always a whole `str`. Only where a device has no `alloc`: it makes every field
    /// error larger.
    #[cfg(all(feature = "device", not(feature = "alloc")))]
    Inline {
        bytes: [u8; INLINE_TEXT],
        len: u8,
    },
}

/// Longest path a device's field error holds (with `alloc` or without): a length byte and
/// 15 bytes keep the inline text as small as a `&str`.
#[cfg(feature = "device")]
pub(crate) const INLINE_TEXT: usize = 15;

impl Text {
    fn as_str(&self) -> &str {
        match self {
            Self::Static(s) => s,
            #[cfg(feature = "alloc")]
            Self::Owned(s) => s,
            #[cfg(all(feature = "device", not(feature = "alloc")))]
            Self::Inline { bytes, len } => {
                core::str::from_utf8(bytes.get(..usize::from(*len)).unwrap_or(&[])).unwrap_or("")
            }
        }
    }
}

/// One problem with one field of a tool's input: where (a JSON-pointer-like path such as
/// `/items/3/sku`, empty for the whole input), a stable machine code, and a message a model
/// can act on.
///
/// ```
/// use cairnloop::FieldError;
///
/// const NEGATIVE: FieldError = FieldError::new("/amount", "out_of_range", "must be greater than zero");
/// assert_eq!(NEGATIVE.path(), "/amount");
/// assert_eq!(NEGATIVE.code(), "out_of_range");
/// assert_eq!(NEGATIVE.to_string(), "/amount: must be greater than zero (out_of_range)");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct FieldError {
    path: Text,
    code: &'static str,
    message: Text,
}

impl FieldError {
    /// A field error from static parts, usable in `const` items.
    ///
    /// ```
    /// let err = cairnloop::FieldError::new("/email", "invalid_format", "is not an email address");
    /// assert_eq!(err.message(), "is not an email address");
    /// ```
    #[must_use]
    pub const fn new(path: &'static str, code: &'static str, message: &'static str) -> Self {
        Self {
            path: Text::Static(path),
            code,
            message: Text::Static(message),
        }
    }

    /// A field error whose path and message are built at run time.
    ///
    /// ```
    /// let err = cairnloop::FieldError::owned(format!("/items/{}", 3), "required", "sku is required".into());
    /// assert_eq!(err.path(), "/items/3");
    /// ```
    #[cfg(feature = "alloc")]
    #[must_use]
    pub fn owned(path: String, code: &'static str, message: String) -> Self {
        Self {
            path: Text::Owned(path),
            code,
            message: Text::Owned(message),
        }
    }

    /// A field error at the field `name` of the input: its path is `/` and the name (JSON
    /// Pointer escapes applied). Without `alloc` the path is kept inline, and `None` says
    /// it is longer than [`INLINE_TEXT`] bytes.
    #[cfg(feature = "device")]
    pub(crate) fn for_named_field(
        name: &str,
        code: &'static str,
        message: &'static str,
    ) -> Option<Self> {
        let mut bytes = [0_u8; INLINE_TEXT];
        let mut len = 0;
        let mut push = |part: &[u8]| -> Option<()> {
            bytes.get_mut(len..len + part.len())?.copy_from_slice(part);
            len += part.len();
            Some(())
        };
        push(b"/")?;
        for byte in name.bytes() {
            match byte {
                b'~' => push(b"~0")?,
                b'/' => push(b"~1")?,
                other => push(&[other])?,
            }
        }
        let path = core::str::from_utf8(bytes.get(..len)?).ok()?;
        #[cfg(feature = "alloc")]
        let path = Text::Owned(String::from(path));
        #[cfg(not(feature = "alloc"))]
        let path = {
            let _ = path;
            Text::Inline {
                bytes,
                len: u8::try_from(len).ok()?,
            }
        };
        Some(Self {
            path,
            code,
            message: Text::Static(message),
        })
    }

    /// Where in the input: a JSON-pointer-like path, empty for the input as a whole.
    ///
    /// ```
    /// assert_eq!(cairnloop::FieldError::new("", "not_an_object", "expected an object").path(), "");
    /// ```
    #[must_use]
    pub fn path(&self) -> &str {
        self.path.as_str()
    }

    /// A stable, machine-readable code such as `required` or `unknown_field`.
    ///
    /// ```
    /// assert_eq!(cairnloop::FieldError::new("/a", "required", "is required").code(), "required");
    /// ```
    #[must_use]
    pub const fn code(&self) -> &'static str {
        self.code
    }

    /// What is wrong, for the model and the operator.
    ///
    /// ```
    /// assert_eq!(cairnloop::FieldError::new("/a", "required", "is required").message(), "is required");
    /// ```
    #[must_use]
    pub fn message(&self) -> &str {
        self.message.as_str()
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path().is_empty() {
            write!(f, "{} ({})", self.message(), self.code)
        } else {
            write!(f, "{}: {} ({})", self.path(), self.message(), self.code)
        }
    }
}

impl fmt::Debug for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FieldError")
            .field("path", &self.path())
            .field("code", &self.code)
            .field("message", &self.message())
            .finish()
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for FieldError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("FieldError", 3)?;
        s.serialize_field("path", self.path())?;
        s.serialize_field("code", self.code)?;
        s.serialize_field("message", self.message())?;
        s.end()
    }
}

/// How many field errors the core keeps without `alloc`; past it they are counted. A
/// device (which decodes calls by name) keeps four.
#[cfg(all(not(feature = "alloc"), not(feature = "device")))]
const INLINE_CAPACITY: usize = 2;
#[cfg(all(not(feature = "alloc"), feature = "device"))]
const INLINE_CAPACITY: usize = 4;

/// Every problem found with a tool's input.
///
/// With `alloc` it keeps every error. Without it, it keeps the first two (four with the
/// `device` feature) and counts the
/// rest in [`omitted`](InputErrors::omitted), so a no_std agent still reports that more
/// were found.
///
/// ```
/// use cairnloop::{FieldError, InputErrors};
///
/// let mut errors = InputErrors::new();
/// errors.push(FieldError::new("/amount", "out_of_range", "must be greater than zero"));
/// errors.push(FieldError::new("/currency", "unsupported", "must be EUR or USD"));
/// assert_eq!(errors.len(), 2);
/// assert_eq!(errors.iter().map(|e| e.code()).collect::<Vec<_>>(), ["out_of_range", "unsupported"]);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct InputErrors {
    #[cfg(feature = "alloc")]
    errors: Vec<FieldError>,
    #[cfg(not(feature = "alloc"))]
    errors: [Option<FieldError>; INLINE_CAPACITY],
    #[cfg(not(feature = "alloc"))]
    kept: usize,
    omitted: usize,
}

impl InputErrors {
    /// No errors yet.
    ///
    /// ```
    /// assert!(cairnloop::InputErrors::new().is_empty());
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            #[cfg(feature = "alloc")]
            errors: Vec::new(),
            #[cfg(not(feature = "alloc"))]
            errors: [const { None }; INLINE_CAPACITY],
            #[cfg(not(feature = "alloc"))]
            kept: 0,
            omitted: 0,
        }
    }

    /// Just `error`: the usual way for [`Tool::validate`](crate::Tool::validate) to refuse.
    ///
    /// ```
    /// use cairnloop::{FieldError, InputErrors};
    ///
    /// let errors = InputErrors::one(FieldError::new("/id", "required", "is required"));
    /// assert_eq!(errors.len(), 1);
    /// ```
    #[must_use]
    pub fn one(error: FieldError) -> Self {
        let mut errors = Self::new();
        errors.push(error);
        errors
    }

    /// Adds an error (without `alloc`, past two it is only counted).
    ///
    /// ```
    /// let mut errors = cairnloop::InputErrors::new();
    /// errors.push(cairnloop::FieldError::new("/a", "required", "is required"));
    /// assert!(!errors.is_empty());
    /// ```
    pub fn push(&mut self, error: FieldError) {
        #[cfg(feature = "alloc")]
        self.errors.push(error);
        #[cfg(not(feature = "alloc"))]
        if self.kept < INLINE_CAPACITY {
            self.errors[self.kept] = Some(error);
            self.kept += 1;
        } else {
            self.omitted += 1;
        }
    }

    /// The kept errors, in the order they were found.
    ///
    /// ```
    /// let errors = cairnloop::InputErrors::one(cairnloop::FieldError::new("/a", "required", "is required"));
    /// assert_eq!(errors.iter().next().unwrap().path(), "/a");
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &FieldError> {
        #[cfg(feature = "alloc")]
        return self.errors.iter();
        #[cfg(not(feature = "alloc"))]
        return self.errors[..self.kept].iter().flatten();
    }

    /// How many errors are kept.
    ///
    /// ```
    /// assert_eq!(cairnloop::InputErrors::new().len(), 0);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        #[cfg(feature = "alloc")]
        return self.errors.len();
        #[cfg(not(feature = "alloc"))]
        return self.kept;
    }

    /// Whether no error was found (nothing kept and nothing omitted).
    ///
    /// ```
    /// assert!(cairnloop::InputErrors::default().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.omitted == 0
    }

    /// How many further errors were found but not kept (always 0 with `alloc`).
    ///
    /// ```
    /// assert_eq!(cairnloop::InputErrors::new().omitted(), 0);
    /// ```
    #[must_use]
    pub const fn omitted(&self) -> usize {
        self.omitted
    }
}

impl Default for InputErrors {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl fmt::Display for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            fmt::Display::fmt(error, f)?;
        }
        if self.omitted > 0 {
            write!(f, "; and {} more", self.omitted)?;
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for InputErrors {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_is_kept_or_counted() {
        let mut errors = InputErrors::new();
        for _ in 0..5 {
            errors.push(FieldError::new("/a", "required", "is required"));
        }
        assert_eq!(errors.len() + errors.omitted(), 5);
        assert_eq!(errors.iter().count(), errors.len());
        let kept = "/a: is required (required); /a: is required (required)";
        #[cfg(not(feature = "alloc"))]
        {
            assert_eq!((errors.len(), errors.omitted()), (2, 3));
            assert_display(&errors, &[kept, "; and 3 more"].concat());
        }
        #[cfg(feature = "alloc")]
        {
            assert_eq!((errors.len(), errors.omitted()), (5, 0));
            assert_display(
                &errors,
                &[kept, "; ", kept, "; /a: is required (required)"].concat(),
            );
        }
    }

    #[test]
    fn an_error_for_the_whole_input_reads_without_a_path() {
        let error = FieldError::new("", "not_an_object", "expected an object");
        assert_display(
            &InputErrors::one(error.clone()),
            "expected an object (not_an_object)",
        );
        assert!(!InputErrors::one(error).is_empty());
    }

    /// Compares `Display` output without allocating, so it also runs without `alloc`.
    fn assert_display(errors: &InputErrors, expected: &str) {
        struct Expect<'a>(&'a str);
        impl fmt::Write for Expect<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                match self.0.strip_prefix(s) {
                    Some(rest) => {
                        self.0 = rest;
                        Ok(())
                    }
                    None => Err(fmt::Error),
                }
            }
        }
        let mut expect = Expect(expected);
        let written = fmt::write(&mut expect, format_args!("{errors}"));
        assert!(
            written.is_ok() && expect.0.is_empty(),
            "{expected:?} not matched"
        );
    }
}
