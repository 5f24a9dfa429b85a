//! RFC 8785 text written straight from a typed value, without building a
//! `serde_json::Value` first: a proposal's snapshot and key, and a run key, cost one pass
//! over the input.
//!
//! The text must be byte for byte what [`canonical_json`] writes for
//! `serde_json::to_value(input)`, since keys already stored were hashed from that. So
//! whatever the value route treats in its own way (a repeated key, a key that is not a
//! string, a key that needs an escape, a non-finite or 32-bit float, a 128-bit integer,
//! serde_json's private number and raw-text types) makes this writer *unsure*, and the
//! value route writes the text instead.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;
use core::ops::Range;

use serde::Serialize;
use serde::ser::{
    self, Impossible, SerializeMap, SerializeSeq, SerializeStruct, SerializeStructVariant,
    SerializeTuple, SerializeTupleStruct, SerializeTupleVariant, Serializer,
};

use super::canonical::{canonical_json, needs_escape, write_string};
use super::preview::FlatRows;

/// The canonical text of `input`: written straight from it, or, where the direct writer
/// is unsure, through `serde_json::to_value` (whose error, if any, is returned).
pub(crate) fn canonical_text<T: Serialize + ?Sized>(input: &T) -> Result<String, String> {
    text_alone(canonical_text_with_preview(input, None))
}

/// [`canonical_text`], and, given the fallback preview's `head`, that preview when the
/// input is flat, its rows written as its fields are put in order ([`FlatRows`]): `None`
/// for any other input, whose preview is then read from the text.
///
/// Generic code here is compiled for every tool's input: what does not need the type is
/// in functions of its own.
pub(crate) fn canonical_text_with_preview<T: Serialize + ?Sized>(
    input: &T,
    head: Option<String>,
) -> Result<(String, Option<String>), String> {
    let mut state = State::new(head);
    if input.serialize(Canonical { state: &mut state }).is_ok() {
        return Ok(state.finish());
    }
    by_value(serde_json::to_value(input))
}

fn text_alone(written: Result<(String, Option<String>), String>) -> Result<String, String> {
    match written {
        Ok((text, _)) => Ok(text),
        Err(error) => Err(error),
    }
}

/// The text through `serde_json::to_value`, where the direct writer is unsure; its error,
/// if any.
fn by_value(
    value: Result<serde_json::Value, serde_json::Error>,
) -> Result<(String, Option<String>), String> {
    match value {
        Ok(value) => Ok((canonical_json(&value), None)),
        Err(error) => Err(error.to_string()),
    }
}

/// The writer could not vouch for the text (or the value's own `Serialize` failed): the
/// value route decides.
#[derive(Debug)]
struct Unsure;

impl fmt::Display for Unsure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to the value route")
    }
}

impl core::error::Error for Unsure {}

impl ser::Error for Unsure {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Unsure
    }
}

/// The text so far, and the entries of the objects being written (one stack for all of
/// them, so that nesting allocates nothing more).
struct State {
    out: String,
    entries: Entries,
    /// The preview's rows, while the input may still be flat.
    rows: Option<FlatRows>,
}

impl State {
    /// A text to be written, and a preview after `head` if one is given.
    fn new(head: Option<String>) -> Self {
        Self {
            out: String::with_capacity(128),
            entries: Entries::new(),
            rows: head.map(FlatRows::after),
        }
    }

    /// The text, and the preview of a flat input (rows are written when the outermost
    /// object closes: an input that is not an object has none).
    fn finish(self) -> (String, Option<String>) {
        let preview = self
            .rows
            .filter(|_| self.out.starts_with('{'))
            .map(FlatRows::into_preview);
        (self.out, preview)
    }
}

/// One entry of an object, by where it is in the text: its key (without the quotes),
/// then `":`, then its value, which ends at `value_end`.
#[derive(Clone, Copy)]
struct Entry {
    key_start: usize,
    key_end: usize,
    value_end: usize,
    /// The key's first eight bytes, big-endian, zero-padded: most keys are told apart
    /// by it alone (a key holds no zero byte: those need an escape).
    prefix: u64,
}

impl Entry {
    const EMPTY: Self = Self {
        key_start: 0,
        key_end: 0,
        value_end: 0,
        prefix: 0,
    };

    /// The key, in the whole text.
    fn key(self, text: &str) -> &[u8] {
        text.get(self.key_start..self.key_end)
            .unwrap_or_default()
            .as_bytes()
    }
}

/// How many bytes of an object's text wait on the stack while its entries are put in
/// order; a longer object's wait on the heap.
const ROOM: usize = 256;

/// How many entries are kept on the stack before they move to the heap: most inputs
/// have fewer, and then cost no allocation for them.
const INLINE: usize = 8;

/// The entries of the objects being written, one stack for all of them.
#[allow(
    clippy::large_enum_variant,
    reason = "on the stack on purpose: most inputs then allocate nothing for their entries"
)]
enum Entries {
    Inline { items: [Entry; INLINE], len: usize },
    Heap(Vec<Entry>),
}

impl Entries {
    fn new() -> Self {
        Self::Inline {
            items: [Entry::EMPTY; INLINE],
            len: 0,
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Inline { len, .. } => *len,
            Self::Heap(entries) => entries.len(),
        }
    }

    fn push(&mut self, entry: Entry) {
        match self {
            Self::Inline { items, len } => match items.get_mut(*len) {
                Some(free) => {
                    *free = entry;
                    *len += 1;
                }
                None => {
                    let mut heap = Vec::with_capacity(INLINE * 2);
                    heap.extend_from_slice(items);
                    heap.push(entry);
                    *self = Self::Heap(heap);
                }
            },
            Self::Heap(entries) => entries.push(entry),
        }
    }

    /// The entries from `base` on.
    fn from(&mut self, base: usize) -> &mut [Entry] {
        match self {
            Self::Inline { items, len } => items.get_mut(base..*len).unwrap_or_default(),
            Self::Heap(entries) => entries.get_mut(base..).unwrap_or_default(),
        }
    }

    fn truncate(&mut self, to: usize) {
        match self {
            Self::Inline { len, .. } => *len = (*len).min(to),
            Self::Heap(entries) => entries.truncate(to),
        }
    }
}

/// 2^53: every integer up to it in size is exactly a double, and prints as its digits.
const EXACT: u64 = 1 << 53;

struct Canonical<'s> {
    state: &'s mut State,
}

impl<'s> Canonical<'s> {
    fn push(self, text: &str) -> Result<(), Unsure> {
        self.state.out.push_str(text);
        Ok(())
    }

    /// A number the value route keeps as a double.
    fn double(self, double: f64) -> Result<(), Unsure> {
        if !double.is_finite() {
            // The value route turns it into `null`.
            return Err(Unsure);
        }
        if double == 0.0 {
            return self.push("0"); // ECMAScript prints -0 as 0
        }
        self.push(ryu_js::Buffer::new().format_finite(double))
    }

    fn unsigned(self, int: u64) -> Result<(), Unsure> {
        if int <= EXACT {
            self.push(itoa::Buffer::new().format(int))
        } else {
            #[allow(clippy::cast_precision_loss, reason = "RFC 8785 numbers are doubles")]
            self.double(int as f64)
        }
    }

    fn signed(self, int: i64) -> Result<(), Unsure> {
        if int.unsigned_abs() <= EXACT {
            self.push(itoa::Buffer::new().format(int))
        } else {
            #[allow(clippy::cast_precision_loss, reason = "RFC 8785 numbers are doubles")]
            self.double(int as f64)
        }
    }

    /// `{"variant":` before an enum variant's content; its compound closes it.
    fn open_variant(&mut self, variant: &str) -> Result<(), Unsure> {
        self.state.out.push('{');
        write_key(&mut self.state.out, variant)?;
        self.state.out.push(':');
        Ok(())
    }

    fn seq(self, closes_variant: bool) -> Seq<'s> {
        self.state.out.push('[');
        Seq {
            state: self.state,
            first: true,
            closes_variant,
        }
    }

    fn object(self, closes_variant: bool) -> Object<'s> {
        self.state.out.push('{');
        Object {
            start: self.state.out.len(),
            base: self.state.entries.len(),
            key: 0..0,
            prefix: 0,
            basic: true,
            state: self.state,
            closes_variant,
        }
    }
}

/// A key as canonical text, when it needs no escape (the value route's text for one that
/// does is left to it: the writer compares keys as written).
fn write_key(out: &mut String, key: &str) -> Result<(), Unsure> {
    if needs_escape(key) {
        return Err(Unsure);
    }
    out.push('"');
    out.push_str(key);
    out.push('"');
    Ok(())
}

/// serde_json's own types that serialise as a struct with a private name (its exact
/// numbers and raw text): left to the value route.
fn is_private(name: &str) -> bool {
    name.starts_with("$serde_json::private::")
}

impl<'s> Serializer for Canonical<'s> {
    type Ok = ();
    type Error = Unsure;
    type SerializeSeq = Seq<'s>;
    type SerializeTuple = Seq<'s>;
    type SerializeTupleStruct = Seq<'s>;
    type SerializeTupleVariant = Seq<'s>;
    type SerializeMap = Object<'s>;
    type SerializeStruct = Object<'s>;
    type SerializeStructVariant = Object<'s>;

    fn serialize_bool(self, v: bool) -> Result<(), Unsure> {
        self.push(if v { "true" } else { "false" })
    }

    fn serialize_i8(self, v: i8) -> Result<(), Unsure> {
        self.signed(v.into())
    }

    fn serialize_i16(self, v: i16) -> Result<(), Unsure> {
        self.signed(v.into())
    }

    fn serialize_i32(self, v: i32) -> Result<(), Unsure> {
        self.signed(v.into())
    }

    fn serialize_i64(self, v: i64) -> Result<(), Unsure> {
        self.signed(v)
    }

    fn serialize_u8(self, v: u8) -> Result<(), Unsure> {
        self.unsigned(v.into())
    }

    fn serialize_u16(self, v: u16) -> Result<(), Unsure> {
        self.unsigned(v.into())
    }

    fn serialize_u32(self, v: u32) -> Result<(), Unsure> {
        self.unsigned(v.into())
    }

    fn serialize_u64(self, v: u64) -> Result<(), Unsure> {
        self.unsigned(v)
    }

    fn serialize_f32(self, _: f32) -> Result<(), Unsure> {
        // The value route widens it in its own way.
        Err(Unsure)
    }

    fn serialize_f64(self, v: f64) -> Result<(), Unsure> {
        self.double(v)
    }

    fn serialize_char(self, v: char) -> Result<(), Unsure> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<(), Unsure> {
        write_string(&mut self.state.out, v).map_err(|_| Unsure)
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Unsure> {
        let out = &mut self.state.out;
        out.push('[');
        for (i, byte) in v.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(itoa::Buffer::new().format(*byte));
        }
        out.push(']');
        Ok(())
    }

    fn serialize_none(self) -> Result<(), Unsure> {
        self.push("null")
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Unsure> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Unsure> {
        self.push("null")
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Unsure> {
        self.push("null")
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Unsure> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Unsure> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Unsure> {
        self.open_variant(variant)?;
        value.serialize(Canonical {
            state: &mut *self.state,
        })?;
        self.push("}")
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'s>, Unsure> {
        Ok(self.seq(false))
    }

    fn serialize_tuple(self, _: usize) -> Result<Seq<'s>, Unsure> {
        Ok(self.seq(false))
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Seq<'s>, Unsure> {
        Ok(self.seq(false))
    }

    fn serialize_tuple_variant(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Seq<'s>, Unsure> {
        self.open_variant(variant)?;
        Ok(self.seq(true))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Object<'s>, Unsure> {
        Ok(self.object(false))
    }

    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Object<'s>, Unsure> {
        if is_private(name) {
            return Err(Unsure);
        }
        Ok(self.object(false))
    }

    fn serialize_struct_variant(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Object<'s>, Unsure> {
        self.open_variant(variant)?;
        Ok(self.object(true))
    }

    fn serialize_i128(self, _: i128) -> Result<(), Unsure> {
        Err(Unsure)
    }

    fn serialize_u128(self, _: u128) -> Result<(), Unsure> {
        Err(Unsure)
    }
}

/// An array, a tuple, or a tuple variant's content.
struct Seq<'s> {
    state: &'s mut State,
    first: bool,
    closes_variant: bool,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsure> {
        if !self.first {
            self.state.out.push(',');
        }
        self.first = false;
        value.serialize(Canonical {
            state: &mut *self.state,
        })
    }

    fn close(self) -> Result<(), Unsure> {
        self.state.out.push(']');
        if self.closes_variant {
            self.state.out.push('}');
        }
        Ok(())
    }
}

/// The sequence traits differ only in their element method's name.
macro_rules! seq_impl {
    ($($trait:ident :: $method:ident),* $(,)?) => {
        $(
            impl $trait for Seq<'_> {
                type Ok = ();
                type Error = Unsure;

                fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsure> {
                    self.element(value)
                }

                fn end(self) -> Result<(), Unsure> {
                    self.close()
                }
            }
        )*
    };
}

seq_impl!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

/// A map, a struct, or a struct variant's content. Entries are written where they come,
/// and their ranges kept: most inputs arrive in canonical order already, and need
/// nothing more; the others are put in order at the end.
struct Object<'s> {
    state: &'s mut State,
    /// Where the first entry begins (after the `{`).
    start: usize,
    /// This object's first entry on the shared stack.
    base: usize,
    /// The key just written, waiting for its value, and its prefix.
    key: Range<usize>,
    prefix: u64,
    /// No key so far holds a character beyond the Basic Multilingual Plane (a lead byte
    /// of 0xF0 or more): byte order is then RFC 8785's (UTF-16) order.
    basic: bool,
    closes_variant: bool,
}

impl Object<'_> {
    fn write_key_with(
        &mut self,
        write: impl FnOnce(&mut String) -> Result<(), Unsure>,
    ) -> Result<(), Unsure> {
        let out = &mut self.state.out;
        if self.state.entries.len() > self.base {
            out.push(',');
        }
        let quote = out.len();
        write(out)?;
        self.key = quote + 1..out.len() - 1;
        let key = out.as_bytes().get(self.key.clone()).unwrap_or_default();
        // Byte by byte: a copy of a length known only now would be a call.
        self.prefix = key.iter().take(8).enumerate().fold(0, |prefix, (i, byte)| {
            prefix | u64::from(*byte) << (56 - 8 * i)
        });
        if !key.is_ascii() && key.iter().any(|byte| *byte >= 0xF0) {
            self.basic = false;
        }
        out.push(':');
        Ok(())
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsure> {
        value.serialize(Canonical {
            state: &mut *self.state,
        })?;
        let end = self.state.out.len();
        self.state.entries.push(Entry {
            key_start: self.key.start,
            key_end: self.key.end,
            value_end: end,
            prefix: self.prefix,
        });
        Ok(())
    }

    fn close(self) -> Result<(), Unsure> {
        let State { out, entries, rows } = self.state;
        let mine = entries.from(self.base);
        let basic = self.basic;
        let key = |entry: &Entry| entry.key(out);
        let in_order = basic
            && mine
                .windows(2)
                .all(|pair| match pair[0].prefix.cmp(&pair[1].prefix) {
                    Ordering::Equal => key(&pair[0]) < key(&pair[1]),
                    order => order == Ordering::Less,
                });
        if !in_order {
            if basic {
                mine.sort_unstable_by(|a, b| {
                    a.prefix.cmp(&b.prefix).then_with(|| key(a).cmp(key(b)))
                });
            } else {
                let utf16 = |entry: &Entry| {
                    core::str::from_utf8(key(entry))
                        .unwrap_or_default()
                        .encode_utf16()
                };
                mine.sort_unstable_by(|a, b| utf16(a).cmp(utf16(b)));
            }
            let repeated =
                |pair: &[Entry]| pair[0].prefix == pair[1].prefix && key(&pair[0]) == key(&pair[1]);
            if mine.windows(2).any(repeated) {
                // The value route keeps the last of a repeated key.
                return Err(Unsure);
            }
        }
        // The outermost object (the only one that opens at the text's first byte): its
        // fields in order are the preview's rows, if each fits one.
        if self.start == 1
            && let Some(flat) = rows
        {
            let fits = |entry: &Entry| {
                let key = out.get(entry.key_start..entry.key_end);
                let value = out.get(entry.key_end + 2..entry.value_end);
                key.zip(value)
                    .is_some_and(|(key, value)| flat.push(key, value))
            };
            if !mine.iter().all(fits) {
                *rows = None;
            }
        }
        if !in_order {
            // The entries as they came wait on the stack (most objects are small) while
            // they are written back in order.
            let start = self.start;
            let mut room = [0_u8; ROOM];
            let mut spilled = String::new();
            let came = out.get(start..).unwrap_or_default();
            let came = match room.get_mut(..came.len()) {
                Some(room) => {
                    room.copy_from_slice(came.as_bytes());
                    core::str::from_utf8(room).map_err(|_| Unsure)?
                }
                None => {
                    spilled.push_str(came);
                    &spilled
                }
            };
            out.truncate(start);
            for (i, entry) in mine.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let whole = came
                    .get(entry.key_start - 1 - start..entry.value_end - start)
                    .ok_or(Unsure)?;
                out.push_str(whole);
            }
        }
        entries.truncate(self.base);
        out.push('}');
        if self.closes_variant {
            out.push('}');
        }
        Ok(())
    }
}

impl SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Unsure;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Unsure> {
        self.write_key_with(|out| key.serialize(MapKey { out }))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsure> {
        self.value(value)
    }

    fn end(self) -> Result<(), Unsure> {
        self.close()
    }
}

/// A struct and a struct variant's content are written alike.
macro_rules! struct_impl {
    ($($trait:ident),*) => {
        $(
            impl $trait for Object<'_> {
                type Ok = ();
                type Error = Unsure;

                fn serialize_field<T: Serialize + ?Sized>(
                    &mut self,
                    key: &'static str,
                    value: &T,
                ) -> Result<(), Unsure> {
                    self.write_key_with(|out| write_key(out, key))?;
                    self.value(value)
                }

                fn end(self) -> Result<(), Unsure> {
                    self.close()
                }
            }
        )*
    };
}

struct_impl!(SerializeStruct, SerializeStructVariant);

/// A map's key: a string (or a character, or a newtype of one). serde_json also turns
/// numbers and booleans into keys; those are left to it.
struct MapKey<'o> {
    out: &'o mut String,
}

macro_rules! unsure_keys {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {
        $(
            fn $method(self, $(_: $arg),*) -> Result<(), Unsure> {
                Err(Unsure)
            }
        )*
    };
}

impl Serializer for MapKey<'_> {
    type Ok = ();
    type Error = Unsure;
    type SerializeSeq = Impossible<(), Unsure>;
    type SerializeTuple = Impossible<(), Unsure>;
    type SerializeTupleStruct = Impossible<(), Unsure>;
    type SerializeTupleVariant = Impossible<(), Unsure>;
    type SerializeMap = Impossible<(), Unsure>;
    type SerializeStruct = Impossible<(), Unsure>;
    type SerializeStructVariant = Impossible<(), Unsure>;

    fn serialize_str(self, v: &str) -> Result<(), Unsure> {
        write_key(self.out, v)
    }

    fn serialize_char(self, v: char) -> Result<(), Unsure> {
        write_key(self.out, v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Unsure> {
        value.serialize(self)
    }

    unsure_keys!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Unsure> {
        Err(Unsure)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Unsure> {
        Err(Unsure)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsure> {
        Err(Unsure)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsure> {
        Err(Unsure)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsure> {
        Err(Unsure)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsure> {
        Err(Unsure)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsure> {
        Err(Unsure)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Unsure> {
        Err(Unsure)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsure> {
        Err(Unsure)
    }
}

#[cfg(test)]
mod tests {
    use alloc::collections::BTreeMap;
    use alloc::string::{String, ToString};
    use alloc::vec;
    use alloc::vec::Vec;

    use proptest::prelude::*;
    use serde::Serialize;
    use serde::ser::{SerializeMap, Serializer};

    use super::{Canonical, Entries, State, canonical_text};
    use crate::json::canonical_json;

    /// The direct writer alone: `None` where it leaves the text to the value route.
    fn direct<T: Serialize>(input: &T) -> Option<String> {
        let mut state = State {
            out: String::new(),
            entries: Entries::new(),
            rows: None,
        };
        input.serialize(Canonical { state: &mut state }).ok()?;
        Some(state.out)
    }

    /// The value route: what keys were always hashed from.
    fn by_value<T: Serialize>(input: &T) -> String {
        canonical_json(&serde_json::to_value(input).expect("serialisable"))
    }

    #[derive(Clone, Debug, Serialize)]
    enum Kind {
        Plain,
        Wrapped(u8),
        Pair(i32, bool),
        Shaped { zeta: u8, alpha: String },
    }

    /// Fields declared out of canonical order, nesting, every shape of enum.
    #[derive(Clone, Debug, Serialize)]
    struct Call {
        zulu: u64,
        alpha: i64,
        #[serde(rename = "é")]
        accented: f64,
        #[serde(rename = "😀")]
        astral: bool,
        #[serde(rename = "\u{ff61}")]
        beyond_astral_in_utf8: Option<String>,
        nested: BTreeMap<String, Vec<Kind>>,
        tuple: (char, ()),
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
    }

    fn kind() -> impl Strategy<Value = Kind> {
        prop_oneof![
            Just(Kind::Plain),
            any::<u8>().prop_map(Kind::Wrapped),
            (any::<i32>(), any::<bool>()).prop_map(|(a, b)| Kind::Pair(a, b)),
            (any::<u8>(), ".{0,6}").prop_map(|(zeta, alpha)| Kind::Shaped { zeta, alpha }),
        ]
    }

    fn call() -> impl Strategy<Value = Call> {
        (
            any::<u64>(),
            any::<i64>(),
            any::<f64>().prop_filter("finite", |f| f.is_finite()),
            any::<bool>(),
            proptest::option::of(".{0,8}"),
            proptest::collection::btree_map(
                "[a-zA-Z0-9_é😀\u{ff61}-]{0,5}",
                proptest::collection::vec(kind(), 0..3),
                0..4,
            ),
            any::<char>(),
            proptest::option::of(any::<u8>()),
        )
            .prop_map(
                |(zulu, alpha, accented, astral, beyond, nested, c, skipped)| Call {
                    zulu,
                    alpha,
                    accented,
                    astral,
                    beyond_astral_in_utf8: beyond,
                    nested,
                    tuple: (c, ()),
                    skipped,
                },
            )
    }

    /// Any JSON value: every kind of number, keys with any characters, nesting.
    fn json() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map(".{0,4}", inner, 0..5)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    #[derive(Clone, Copy, Debug, Serialize)]
    struct Unit;

    #[derive(Clone, Copy, Debug, Serialize)]
    struct Meters(u16);

    #[derive(Clone, Copy, Debug, Serialize)]
    struct Pair(i8, u8);

    /// Bytes, handed to the serializer as bytes (as `serde_bytes` does), not as a sequence.
    #[derive(Clone, Debug)]
    struct Bytes(Vec<u8>);

    impl Serialize for Bytes {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_bytes(&self.0)
        }
    }

    /// Every kind of value in serde's data model that the writer writes itself.
    #[derive(Clone, Debug, Serialize)]
    struct Every {
        small: i8,
        short: i16,
        int: i32,
        byte: u8,
        word: u16,
        unsigned: u32,
        unit: (),
        unit_struct: Unit,
        newtype: Meters,
        tuple_struct: Pair,
        bytes: Bytes,
        letter: char,
        nothing: Option<u8>,
    }

    fn every() -> impl Strategy<Value = Every> {
        (
            (any::<i8>(), any::<i16>(), any::<i32>()),
            (any::<u8>(), any::<u16>(), any::<u32>()),
            any::<u16>(),
            (any::<i8>(), any::<u8>()),
            proptest::collection::vec(any::<u8>(), 0..4),
            any::<char>(),
            proptest::option::of(any::<u8>()),
        )
            .prop_map(
                |(
                    (small, short, int),
                    (byte, word, unsigned),
                    meters,
                    pair,
                    bytes,
                    letter,
                    nothing,
                )| {
                    Every {
                        small,
                        short,
                        int,
                        byte,
                        word,
                        unsigned,
                        unit: (),
                        unit_struct: Unit,
                        newtype: Meters(meters),
                        tuple_struct: Pair(pair.0, pair.1),
                        bytes: Bytes(bytes),
                        letter,
                        nothing,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn every_kind_of_value_agrees(every in every()) {
            let written = direct(&every);
            prop_assert!(written.is_some());
            prop_assert_eq!(written.unwrap(), by_value(&every));
        }

        #[test]
        fn the_direct_text_is_the_value_routes(call in call()) {
            let written = direct(&call);
            // Every shape here is one the writer vouches for: the fast way is taken.
            prop_assert!(written.is_some());
            prop_assert_eq!(written.unwrap(), by_value(&call));
        }

        #[test]
        fn maps_of_any_string_keys_agree(map in proptest::collection::btree_map(".{0,4}", any::<i16>(), 0..6)) {
            // Keys with control characters, quotes or backslashes go the value route.
            prop_assert_eq!(canonical_text(&map).unwrap(), by_value(&map));
        }

        #[test]
        fn any_json_value_agrees(value in json()) {
            // A `Value` serialises itself through the writer: maps with any keys, every
            // number, nesting.
            prop_assert_eq!(canonical_text(&value).unwrap(), by_value(&value));
        }

        #[test]
        fn any_double_agrees(double in any::<f64>(), single in any::<f32>()) {
            prop_assert_eq!(canonical_text(&double).unwrap(), by_value(&double));
            prop_assert_eq!(canonical_text(&single).unwrap(), by_value(&single));
        }
    }

    /// A map written in the order given (a struct's fields come in declaration order).
    struct AsGiven<V>(Vec<(String, V)>);

    impl<V: Serialize> Serialize for AsGiven<V> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(self.0.len()))?;
            for (key, value) in &self.0 {
                map.serialize_entry(key, value)?;
            }
            map.end()
        }
    }

    #[test]
    fn objects_past_the_stacks_inline_room_agree() {
        // 9 entries out of order outside, then 10 out of order inside, opened while the
        // outer ones are held: the stack moves to the heap halfway through.
        let inner = AsGiven((0..10).rev().map(|i| (alloc::format!("z{i}"), i)).collect());
        let mut outer: Vec<(String, AsGiven<u32>)> = (0..9)
            .rev()
            .map(|i| (alloc::format!("k{i}"), AsGiven(Vec::new())))
            .collect();
        outer.push(("a".into(), inner));
        let outer = AsGiven(outer);
        let written = direct(&outer).expect("vouched for");
        assert_eq!(written, by_value(&outer));
        assert!(written.starts_with(r#"{"a":{"z0":0,"z1":1,"#), "{written}");
        // 40 entries out of order, whose text is longer than the room the stack keeps
        // for it.
        let wide = AsGiven(
            (0..40)
                .rev()
                .map(|i| (alloc::format!("w{i:02}"), 1))
                .collect(),
        );
        let written = direct(&wide).unwrap();
        assert!(written.len() > super::ROOM, "{written}");
        assert_eq!(written, by_value(&wide));
    }

    #[test]
    fn keys_alike_in_their_first_eight_bytes_are_ordered_and_told_apart_whole() {
        let pair = |first: &str, second: &str| AsGiven(vec![(first.into(), 1), (second.into(), 2)]);
        // "argument" is 8 bytes: the two keys differ only past the prefix the sort uses.
        let late = pair("argument_b", "argument_a");
        assert_eq!(
            direct(&late).as_deref(),
            Some(r#"{"argument_a":2,"argument_b":1}"#)
        );
        let in_order = pair("argument_a", "argument_b");
        assert_eq!(
            direct(&in_order).as_deref(),
            Some(r#"{"argument_a":1,"argument_b":2}"#)
        );
        // A key that begins another sorts first, also when the other goes on with a
        // character below the closing quote (a space, `!`).
        for (first, second) in [("a!", "a"), ("a", "a!"), ("a ", "a"), ("a", "a ")] {
            let expected = if first.len() < second.len() {
                alloc::format!(r#"{{"{first}":1,"{second}":2}}"#)
            } else {
                alloc::format!(r#"{{"{second}":2,"{first}":1}}"#)
            };
            assert_eq!(direct(&pair(first, second)), Some(expected));
        }
        // Every bit of each prefix byte counts: "\u{13f}" is C4 BF, "\u{140}" C5 80, so
        // a prefix that let a byte's top bit reach the byte before would order them
        // wrongly.
        assert_eq!(
            direct(&pair("\u{140}", "\u{13f}")).as_deref(),
            Some("{\"\u{13f}\":2,\"\u{140}\":1}")
        );
        // A repeat next to itself is still a repeat: the value route keeps the last.
        let repeated = pair("argument_a", "argument_a");
        assert_eq!(direct(&repeated), None);
        assert_eq!(canonical_text(&repeated).unwrap(), r#"{"argument_a":2}"#);
    }

    #[test]
    fn map_keys_of_every_kind_agree_with_the_value_route() {
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
        struct Name(String);
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
        enum Key {
            Plain,
            Wrapped(u8),
        }
        /// What the value route makes of `input`: its text, or its error's message.
        fn value_route<T: Serialize>(input: &T) -> Result<String, String> {
            serde_json::to_value(input)
                .map(|value| canonical_json(&value))
                .map_err(|error| error.to_string())
        }
        fn agree<K: Serialize + Ord>(keys: [K; 2]) {
            let [first, second] = keys;
            let map = BTreeMap::from([(first, 1), (second, 2)]);
            assert_eq!(canonical_text(&map), value_route(&map));
        }
        agree(['b', 'a']);
        agree([Name("b".into()), Name("a".into())]);
        agree([Some("b"), None]);
        agree([Some("b"), Some("a")]);
        agree([Key::Wrapped(1), Key::Plain]);
        agree([Key::Wrapped(2), Key::Wrapped(1)]);
        agree([true, false]);
        agree([-1i8, 2]);
        // The writer takes characters and newtypes of strings itself.
        assert!(direct(&BTreeMap::from([('b', 1), ('a', 2)])).is_some());
        assert!(direct(&BTreeMap::from([(Name("b".into()), 1)])).is_some());
    }

    #[test]
    fn serde_jsons_raw_text_is_left_to_the_value_route() {
        #[derive(Serialize)]
        struct Raw {
            x: alloc::boxed::Box<serde_json::value::RawValue>,
        }
        let text = String::from(r#"{"b": 1, "a": [2]}"#);
        let raw = Raw {
            x: serde_json::value::RawValue::from_string(text).unwrap(),
        };
        assert_eq!(direct(&raw), None);
        assert_eq!(canonical_text(&raw).unwrap(), r#"{"x":{"a":[2],"b":1}}"#);
    }

    #[test]
    fn keys_in_utf16_order_not_byte_order() {
        // U+FF61 sorts after U+1F600 in UTF-8 bytes' terms reversed: UTF-16 puts the
        // surrogate pair (0xD83D…) before 0xFF61.
        let text = direct(&BTreeMap::from([("\u{ff61}", 1), ("😀", 2)])).unwrap();
        assert_eq!(text, "{\"😀\":2,\"\u{ff61}\":1}");
    }

    /// A map that repeats a key, as a hand-written `Serialize` (or `flatten`) can.
    struct Repeats;

    impl Serialize for Repeats {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(None)?;
            map.serialize_entry("b", &1)?;
            map.serialize_entry("a", &2)?;
            map.serialize_entry("b", &3)?;
            map.end()
        }
    }

    #[test]
    fn what_the_value_route_treats_its_own_way_is_left_to_it() {
        let cases: Vec<(Option<String>, String, String)> = vec![
            (
                direct(&Repeats),
                canonical_text(&Repeats).unwrap(),
                by_value(&Repeats),
            ),
            (
                direct(&BTreeMap::from([(1u8, true)])),
                canonical_text(&BTreeMap::from([(1u8, true)])).unwrap(),
                by_value(&BTreeMap::from([(1u8, true)])),
            ),
            (
                direct(&f64::NAN),
                canonical_text(&f64::NAN).unwrap(),
                by_value(&f64::NAN),
            ),
            (
                direct(&1.5f32),
                canonical_text(&1.5f32).unwrap(),
                by_value(&1.5f32),
            ),
            (
                direct(&7i128),
                canonical_text(&7i128).unwrap(),
                by_value(&7i128),
            ),
            (
                direct(&7u128),
                canonical_text(&7u128).unwrap(),
                by_value(&7u128),
            ),
            (
                direct(&BTreeMap::from([("a\nb", 1)])),
                canonical_text(&BTreeMap::from([("a\nb", 1)])).unwrap(),
                by_value(&BTreeMap::from([("a\nb", 1)])),
            ),
        ];
        for (direct, text, expected) in cases {
            assert_eq!(direct, None, "{expected}");
            assert_eq!(text, expected);
        }
        assert_eq!(by_value(&Repeats), r#"{"a":2,"b":3}"#);
    }

    #[test]
    fn a_serialize_error_is_the_value_routes_error() {
        struct Fails;
        impl Serialize for Fails {
            fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no"))
            }
        }
        assert_eq!(canonical_text(&Fails), Err("no".into()));
    }

    #[test]
    fn numbers_print_as_ecmascript_prints_doubles() {
        let text = direct(&(9_007_199_254_740_993u64, -0.0f64, 1e21f64, 0.1f64, u64::MAX)).unwrap();
        assert_eq!(text, "[9007199254740992,0,1e+21,0.1,18446744073709552000]");
    }
}
