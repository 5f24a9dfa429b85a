use core::fmt;

use crate::declare::{FieldError, InputErrors, text};
use crate::device::reader::{Kind, Reader};

/// Most fields one device tool declares (which fields were seen is a 16-bit mask).
pub const MAX_FIELDS: usize = 16;

/// Bytes of string text one call's arguments may hold, every string field together.
pub const MAX_TEXT: usize = 64;

/// One field of a device tool's arguments: its name and what it holds. Every field is
/// required, as a plain (non-`Option`) field of a serde input type is on a host.
///
/// ```
/// use cairnloop::device::Field;
///
/// const POSITION: Field = Field::integer("position", 0, 100);
/// assert_eq!(POSITION.name(), "position");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    name: &'static str,
    kind: FieldKind,
}

/// What a [`Field`] holds.
///
/// ```
/// use cairnloop::device::{Field, FieldKind};
/// assert_eq!(Field::boolean("confirm").kind(), FieldKind::Bool);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// An integer within `min..=max` (and within ±(2^53 − 1), as on a host).
    Integer {
        /// The least value allowed.
        min: i64,
        /// The greatest value allowed.
        max: i64,
    },
    /// `true` or `false`.
    Bool,
    /// A string of at most `max_bytes` bytes of UTF-8.
    Text {
        /// The longest string allowed, in bytes.
        max_bytes: usize,
    },
}

impl Field {
    /// An integer field. A name is `[A-Za-z0-9_-]{1,14}` (short enough that a field
    /// error names it without `alloc`), checked at compile time where the tool is
    /// registered.
    ///
    /// ```
    /// assert_eq!(cairnloop::device::Field::integer("sensor", 0, 3).name(), "sensor");
    /// ```
    #[must_use]
    pub const fn integer(name: &'static str, min: i64, max: i64) -> Self {
        Self::new(name, FieldKind::Integer { min, max })
    }

    /// A boolean field.
    ///
    /// ```
    /// assert_eq!(cairnloop::device::Field::boolean("confirm").name(), "confirm");
    /// ```
    #[must_use]
    pub const fn boolean(name: &'static str) -> Self {
        Self::new(name, FieldKind::Bool)
    }

    /// A string field of at most `max_bytes` bytes.
    ///
    /// ```
    /// assert_eq!(cairnloop::device::Field::text("note", 16).name(), "note");
    /// ```
    #[must_use]
    pub const fn text(name: &'static str, max_bytes: usize) -> Self {
        Self::new(name, FieldKind::Text { max_bytes })
    }

    const fn new(name: &'static str, kind: FieldKind) -> Self {
        Self { name, kind }
    }

    /// The field's name.
    ///
    /// ```
    /// assert_eq!(cairnloop::device::Field::boolean("confirm").name(), "confirm");
    /// ```
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// What the field holds.
    ///
    /// ```
    /// use cairnloop::device::{Field, FieldKind};
    /// assert_eq!(Field::text("note", 8).kind(), FieldKind::Text { max_bytes: 8 });
    /// ```
    #[must_use]
    pub const fn kind(&self) -> FieldKind {
        self.kind
    }
}

/// One decoded value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    Absent,
    Integer(i64),
    Bool(bool),
    /// A range of the arguments' text buffer.
    Text {
        start: u8,
        len: u8,
    },
}

/// A call's arguments, decoded against a tool's fields: every value checked, every string
/// unescaped into a fixed buffer. What a [`DeviceTool`](crate::device::DeviceTool) builds
/// its input from.
///
/// ```
/// use cairnloop::device::{Args, Field};
///
/// const FIELDS: &[Field] = &[Field::boolean("confirm"), Field::integer("position", 0, 100)];
/// let args = Args::decode(br#"{"position": 40, "confirm": true}"#, FIELDS).unwrap();
/// assert_eq!(args.integer(1), Some(40));
/// assert_eq!(args.boolean(0), Some(true));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    values: [Value; MAX_FIELDS],
    text: [u8; MAX_TEXT],
    text_len: usize,
}

impl Args {
    /// Decodes `arguments` (a JSON object's text) against `fields`, strictly: unknown
    /// fields, duplicate keys, wrong types, integers that are not exact or out of their
    /// range and strings too long are field errors, and every missing field is one too;
    /// every error is reported (as many as [`InputErrors`] keeps), never only the first.
    /// Depth and size limits are those of the host decoder, checked before descending.
    ///
    /// ```
    /// use cairnloop::device::{Args, Field};
    ///
    /// const FIELDS: &[Field] = &[Field::integer("a", 0, 9), Field::integer("b", 0, 9)];
    /// let errors = Args::decode(br#"{"a":"7","zzz":1}"#, FIELDS).unwrap_err();
    /// let found: Vec<_> = errors.iter().map(|e| (e.path(), e.code())).collect();
    /// assert_eq!(found, [("/a", "invalid_type"), ("/zzz", "unknown_field"), ("/b", "required")]);
    /// ```
    pub fn decode(arguments: &[u8], fields: &[Field]) -> Result<Self, InputErrors> {
        let limits = crate::declare::InputLimits::new();
        if arguments.len() > limits.max_bytes() {
            return Err(InputErrors::one(FieldError::new(
                "",
                "too_large",
                "arguments are larger than the limit",
            )));
        }
        let mut reader = Reader::new(arguments, limits.max_depth());
        let mut args = Self {
            values: [Value::Absent; MAX_FIELDS],
            text: [0; MAX_TEXT],
            text_len: 0,
        };
        let mut errors = InputErrors::new();
        match args.read_object(&mut reader, fields, &mut errors) {
            Ok(()) => {}
            Err(syntax) => {
                return Err(InputErrors::one(FieldError::new(
                    "",
                    syntax.code,
                    syntax.message,
                )));
            }
        }
        if let Err(syntax) = reader.end() {
            return Err(InputErrors::one(FieldError::new(
                "",
                syntax.code,
                syntax.message,
            )));
        }
        if errors.is_empty() {
            Ok(args)
        } else {
            Err(errors)
        }
    }

    fn read_object(
        &mut self,
        reader: &mut Reader<'_>,
        fields: &[Field],
        errors: &mut InputErrors,
    ) -> Result<(), crate::device::reader::Syntax> {
        if reader.next_kind()? != Kind::Object {
            let kind = reader.skip_value(1)?;
            errors.push(FieldError::new("", "not_an_object", not_an_object(kind)));
            return Ok(());
        }
        reader.open_object(1)?;
        let mut seen: u16 = 0;
        let mut failed: u16 = 0;
        let mut first = true;
        let mut name = [0_u8; text::MAX_NAME_LEN];
        while let Some(key) = reader.next_key(first)? {
            first = false;
            let index = key
                .decode_into(&mut name)
                .and_then(|len| {
                    let name = name.get(..len)?;
                    fields.iter().position(|f| f.name.as_bytes() == name)
                })
                .filter(|&i| i < MAX_FIELDS);
            let Some(index) = index else {
                reader.skip_value(2)?;
                errors.push(unknown_field(&key));
                continue;
            };
            let bit = 1_u16 << index;
            let field = &fields[index];
            if seen & bit != 0 {
                reader.skip_value(2)?;
                errors.push(at_field(
                    field,
                    "duplicate_key",
                    "the key appears more than once",
                ));
                failed |= bit;
                continue;
            }
            seen |= bit;
            if let Err(error) = self.read_value(reader, index, field)? {
                errors.push(error);
                failed |= bit;
            }
        }
        for (index, field) in fields.iter().enumerate().take(MAX_FIELDS) {
            if seen & (1 << index) == 0 && failed & (1 << index) == 0 {
                errors.push(at_field(field, "required", "is required"));
            }
        }
        Ok(())
    }

    /// One field's value: `Ok(Err(_))` for a field error (the value was read over),
    /// `Err(_)` for a syntax error that ends the decoding.
    fn read_value(
        &mut self,
        reader: &mut Reader<'_>,
        index: usize,
        field: &Field,
    ) -> Result<Result<(), FieldError>, crate::device::reader::Syntax> {
        let kind = reader.next_kind()?;
        let value = match (field.kind, kind) {
            (FieldKind::Integer { min, max }, Kind::Number) => {
                match reader.number()?.exact_integer() {
                    Ok(n) if n >= min && n <= max => Value::Integer(n),
                    Ok(_) => {
                        return Ok(Err(at_field(
                            field,
                            "invalid_value",
                            "is outside the range the tool allows",
                        )));
                    }
                    Err(true) => {
                        return Ok(Err(at_field(
                            field,
                            "number_out_of_range",
                            "numbers must lie within ±9007199254740991 (2^53 - 1) to stay exact",
                        )));
                    }
                    Err(false) => {
                        return Ok(Err(at_field(
                            field,
                            "invalid_type",
                            "expected an integer, found a fraction or an exponent",
                        )));
                    }
                }
            }
            (FieldKind::Bool, Kind::Bool) => Value::Bool(reader.literal()? == Some(true)),
            (FieldKind::Text { max_bytes }, Kind::String) => {
                let raw = reader.string()?;
                let free = self.text.get_mut(self.text_len..).unwrap_or(&mut []);
                let limit = free.len().min(max_bytes);
                let Some(len) = raw.decode_into(free.get_mut(..limit).unwrap_or(&mut [])) else {
                    return Ok(Err(at_field(
                        field,
                        "string_too_long",
                        "is longer than the tool allows",
                    )));
                };
                let (Ok(start), Ok(len8)) = (u8::try_from(self.text_len), u8::try_from(len)) else {
                    return Ok(Err(at_field(
                        field,
                        "string_too_long",
                        "is longer than the tool allows",
                    )));
                };
                self.text_len += len;
                Value::Text { start, len: len8 }
            }
            (expected, found) => {
                reader.skip_value(2)?;
                return Ok(Err(at_field(
                    field,
                    "invalid_type",
                    type_message(expected, found),
                )));
            }
        };
        if let Some(slot) = self.values.get_mut(index) {
            *slot = value;
        }
        Ok(Ok(()))
    }

    /// The integer of field `index` (in the tool's field order).
    ///
    /// ```
    /// # use cairnloop::device::{Args, Field};
    /// let args = Args::decode(br#"{"n":3}"#, &[Field::integer("n", 0, 9)]).unwrap();
    /// assert_eq!(args.integer(0), Some(3));
    /// assert_eq!(args.boolean(0), None);
    /// ```
    #[must_use]
    pub fn integer(&self, index: usize) -> Option<i64> {
        match self.values.get(index)? {
            Value::Integer(n) => Some(*n),
            _ => None,
        }
    }

    /// The boolean of field `index`.
    ///
    /// ```
    /// # use cairnloop::device::{Args, Field};
    /// let args = Args::decode(br#"{"on":false}"#, &[Field::boolean("on")]).unwrap();
    /// assert_eq!(args.boolean(0), Some(false));
    /// ```
    #[must_use]
    pub fn boolean(&self, index: usize) -> Option<bool> {
        match self.values.get(index)? {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The string of field `index`, unescaped.
    ///
    /// ```
    /// # use cairnloop::device::{Args, Field};
    /// let args = Args::decode(br#"{"note":"a\nb"}"#, &[Field::text("note", 8)]).unwrap();
    /// assert_eq!(args.text(0), Some("a\nb"));
    /// ```
    #[must_use]
    pub fn text(&self, index: usize) -> Option<&str> {
        match self.values.get(index)? {
            Value::Text { start, len } => {
                let start = usize::from(*start);
                let bytes = self.text.get(start..start + usize::from(*len))?;
                core::str::from_utf8(bytes).ok()
            }
            _ => None,
        }
    }

    /// Writes the arguments as RFC 8785 canonical JSON: the text a host writes for the
    /// same input, so the idempotency key is the same on both. `fields` must be the ones
    /// the arguments were decoded with, listed in canonical (sorted) order, which the
    /// registry checks at compile time.
    pub(crate) fn write_canonical(
        &self,
        fields: &[Field],
        out: &mut dyn fmt::Write,
    ) -> fmt::Result {
        out.write_str("{")?;
        for (index, field) in fields.iter().enumerate() {
            if index > 0 {
                out.write_str(",")?;
            }
            text::write_string(out, field.name)?;
            out.write_str(":")?;
            match self.values.get(index) {
                Some(Value::Integer(n)) => write!(out, "{n}")?,
                Some(Value::Bool(b)) => out.write_str(if *b { "true" } else { "false" })?,
                Some(Value::Text { .. }) => {
                    text::write_string(out, self.text(index).unwrap_or(""))?
                }
                Some(Value::Absent) | None => out.write_str("null")?,
            }
        }
        out.write_str("}")
    }
}

/// A field error at a declared field: its path is `/` and the name, which fits inline
/// (the registry checks every name's length at compile time).
fn at_field(field: &Field, code: &'static str, message: &'static str) -> FieldError {
    FieldError::for_named_field(field.name, code, message)
        .unwrap_or(FieldError::new("", code, message))
}

fn unknown_field(key: &crate::device::reader::RawString<'_>) -> FieldError {
    const MESSAGE: &str = "is not a field of this tool";
    let mut name = [0_u8; crate::declare::INLINE_TEXT];
    key.decode_into(&mut name)
        .and_then(|len| core::str::from_utf8(name.get(..len)?).ok())
        .and_then(|name| FieldError::for_named_field(name, "unknown_field", MESSAGE))
        .unwrap_or(FieldError::new(
            "",
            "unknown_field",
            "holds a field whose name is too long to show, which is not a field of this tool",
        ))
}

const fn not_an_object(kind: Kind) -> &'static str {
    match kind {
        Kind::Array => "expected an object, found an array",
        Kind::String => "expected an object, found a string",
        Kind::Number => "expected an object, found a number",
        Kind::Bool => "expected an object, found a boolean",
        Kind::Null | Kind::Object => "expected an object, found null",
    }
}

const fn type_message(expected: FieldKind, found: Kind) -> &'static str {
    match (expected, found) {
        (FieldKind::Integer { .. }, Kind::String) => "expected an integer, found a string",
        (FieldKind::Integer { .. }, _) => "expected an integer",
        (FieldKind::Bool, Kind::String) => "expected a boolean, found a string",
        (FieldKind::Bool, _) => "expected a boolean",
        (FieldKind::Text { .. }, Kind::Number) => "expected a string, found a number",
        (FieldKind::Text { .. }, _) => "expected a string",
    }
}
