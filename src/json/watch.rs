//! The decoder of gate 1, one per input type. The fast way: the input decoded straight
//! from the argument text, with every rule of the strict parse watched on the way, in the
//! same pass. Whatever the watch cannot vouch for (a duplicate key it cannot see, a field
//! the type ignores, a number past 2^53, a string or nesting past the limits) makes the
//! pass *unsure*, and the caller then takes the slow way, which names every error: the
//! same decoder again, this time keeping track of where it is and what it ignored.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use core::fmt::{self, Write as _};

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

use serde_json::Value;

use crate::declare::InputLimits;
use crate::json::map_key::{Key, KeySeed};
use crate::json::stand_in::StandIn;

/// The largest integer kept exact: 2^53 − 1 (as in the strict parse).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// What the watch has seen so far.
pub(crate) struct Watch {
    limits: InputLimits,
    depth: Cell<usize>,
    unsure: Cell<bool>,
    /// On the slow way only: where the decoder is, and the fields it ignored.
    track: Option<RefCell<Tracking>>,
}

#[derive(Default)]
struct Tracking {
    /// The JSON Pointer of the value being decoded.
    path: String,
    /// The pointers of fields the type does not take.
    unknown: Vec<String>,
    /// The pointers of fields whose error is known: each is read as a
    /// [`StandIn`], present or not, so that the pass goes on to the next error.
    stand_ins: Vec<String>,
}

impl Watch {
    fn new(limits: InputLimits, track: Option<Tracking>) -> Self {
        Self {
            limits,
            depth: Cell::new(0),
            unsure: Cell::new(false),
            track: track.map(RefCell::new),
        }
    }

    /// On the slow way: whether the value after the key just read is a stand-in's (its
    /// `null` is read past and the type gets a [`StandIn`]).
    #[inline]
    fn stands_in_here(&self) -> bool {
        self.track.as_ref().is_some_and(stands_in)
    }

    // The fast way tracks nothing: each of these is one inlined test there, and the
    // tracking itself stays out of line.

    /// How long the path is now (0 when not tracking).
    #[inline]
    fn mark(&self) -> usize {
        self.track
            .as_ref()
            .map_or(0, |track| track.borrow().path.len())
    }

    /// Back to a path `mark` returned.
    #[inline]
    fn back_to(&self, mark: usize) {
        if let Some(track) = &self.track {
            track.borrow_mut().path.truncate(mark);
        }
    }

    /// One step down: a key or an index.
    #[inline]
    fn step(&self, token: &dyn fmt::Display) {
        if let Some(track) = &self.track {
            step_on(track, token);
        }
    }

    fn ignored(&self) {
        self.doubt();
        if let Some(track) = &self.track {
            let mut track = track.borrow_mut();
            let here = track.path.clone();
            track.unknown.push(here);
        }
    }

    fn doubt(&self) {
        self.unsure.set(true);
    }

    fn string(&self, text: &str) {
        if text.len() > self.limits.max_string_bytes() {
            self.doubt();
        }
    }

    /// Anything but an object at the top: the strict parse refuses it.
    fn not_top(&self) {
        if self.depth.get() == 0 {
            self.doubt();
        }
    }
}

#[inline(never)]
fn stands_in(track: &RefCell<Tracking>) -> bool {
    let track = track.borrow();
    track.stand_ins.contains(&track.path)
}

#[inline(never)]
fn step_on(track: &RefCell<Tracking>, token: &dyn fmt::Display) {
    let path = &mut track.borrow_mut().path;
    path.push('/');
    let token = token.to_string();
    super::strict::push_pointer_token(path, &token);
}

/// Decodes text under a watch and keeps the input in a slot of the caller's: the only
/// part of gate 1 compiled once per input type ([`decode_with`] in a closure); every
/// path around it is compiled once for all.
pub(crate) type DecodeInto<'a> = dyn FnMut(&str, &Watch) -> Result<(), serde_json::Error> + 'a;

/// Whether `decode` decoded `text` in one pass with the watch vouching that the strict
/// parse accepts it and that the type knows every field; when `false`, the slow way
/// decides (and names every error), whatever `decode` kept.
pub(crate) fn watched(text: &str, limits: &InputLimits, decode: &mut DecodeInto<'_>) -> bool {
    if text.len() > limits.max_bytes() {
        return false;
    }
    let watch = Watch::new(*limits, None);
    decode(text, &watch).is_ok() && !watch.unsure.get()
}

/// One pass of the slow way over arguments the strict parse already accepted, with a
/// [`StandIn`] at each of `stand_ins` (JSON Pointers of fields whose error is known, taken
/// out of `arguments`): `Ok` when `decode` kept the input, or the first error with the
/// pointer where it happened; and the pointers of the fields the type does not take.
pub(crate) fn traced(
    arguments: &Value,
    stand_ins: Vec<String>,
    decode: &mut DecodeInto<'_>,
) -> (Result<(), (String, String)>, Vec<String>) {
    let mut text = String::new();
    write_with_stand_ins(&mut text, &mut String::new(), arguments, &stand_ins);
    let tracking = Tracking {
        stand_ins,
        ..Tracking::default()
    };
    let watch = Watch::new(
        InputLimits::new().with_max_bytes(usize::MAX),
        Some(tracking),
    );
    let decoded = decode(&text, &watch);
    let tracking = watch.track.map(RefCell::into_inner).unwrap_or_default();
    let decoded = decoded.map_err(|error| (tracking.path, bare_message(&error)));
    (decoded, tracking.unknown)
}

/// `value` (at `path`) as JSON text, each object followed by its stand-in fields: a
/// stand-in's key comes after the object's own entries (the last one found first), with
/// `null` for a value, so that a type's decoder reads it as any other key and only the
/// watch knows to hand it a [`StandIn`].
fn write_with_stand_ins(text: &mut String, path: &mut String, value: &Value, stand_ins: &[String]) {
    let parent = path.len();
    match value {
        Value::Object(object) => {
            text.push('{');
            for (i, (key, value)) in object.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                write_key(text, key);
                path.push('/');
                super::strict::push_pointer_token(path, key);
                write_with_stand_ins(text, path, value, stand_ins);
                path.truncate(parent);
            }
            let mut first = object.is_empty();
            for pointer in stand_ins.iter().rev() {
                if let Some((at, token)) = pointer.rsplit_once('/')
                    && at == path.as_str()
                {
                    if !first {
                        text.push(',');
                    }
                    first = false;
                    write_key(text, &super::strict::pointer_token_key(token));
                    text.push_str("null");
                }
            }
            text.push('}');
        }
        Value::Array(items) => {
            text.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                let _ = write!(path, "/{i}");
                write_with_stand_ins(text, path, item, stand_ins);
                path.truncate(parent);
            }
            text.push(']');
        }
        scalar => {
            let _ = write!(text, "{scalar}");
        }
    }
}

/// `"key":`, the key escaped as canonical JSON escapes it.
fn write_key(text: &mut String, key: &str) {
    let _ = super::canonical::write_string(text, key);
    text.push(':');
}

/// The one decoding of `T` both ways share, into the caller's `slot` (so that the
/// closure around it, compiled once per type too, is a single call).
pub(crate) fn decode_with<T: DeserializeOwned>(
    text: &str,
    watch: &Watch,
    slot: &mut Option<T>,
) -> Result<(), serde_json::Error> {
    let mut json = serde_json::Deserializer::from_str(text);
    *slot = Some(T::deserialize(Watched {
        inner: &mut json,
        watch,
    })?);
    json.end()
}

/// serde's message, without the position serde_json appends (the pointer says where).
fn bare_message(error: &serde_json::Error) -> String {
    let full = error.to_string();
    let mut suffix = String::new();
    let _ = write!(
        suffix,
        " at line {} column {}",
        error.line(),
        error.column()
    );
    match full.strip_suffix(suffix.as_str()) {
        Some(bare) => bare.to_string(),
        None => full,
    }
}

/// A deserializer under watch.
struct Watched<'w, D> {
    inner: D,
    watch: &'w Watch,
}

/// A visitor under watch.
struct Watching<'w, V> {
    inner: V,
    watch: &'w Watch,
    /// Whether the value was asked for as a struct: its keys are then the type's own
    /// fields, whose repeats serde itself refuses; any other map could hide a repeat.
    is_struct: bool,
}

impl<'w, V> Watching<'w, V> {
    fn of(inner: V, watch: &'w Watch) -> Self {
        Self {
            inner,
            watch,
            is_struct: false,
        }
    }
}

macro_rules! forward_deserialize {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.inner.$method(Watching::of(visitor, self.watch))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Watched<'_, D> {
    type Error = D::Error;

    forward_deserialize!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_unit_struct(name, Watching::of(visitor, self.watch))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_newtype_struct(name, Watching::of(visitor, self.watch))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_tuple(len, Watching::of(visitor, self.watch))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_tuple_struct(name, len, Watching::of(visitor, self.watch))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let visitor = Watching {
            inner: visitor,
            watch: self.watch,
            is_struct: true,
        };
        self.inner.deserialize_struct(name, fields, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_enum(name, variants, Watching::of(visitor, self.watch))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        // A value the type does not take: an unknown field.
        self.watch.ignored();
        self.inner.deserialize_ignored_any(visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Watching<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<V::Value, E> {
        self.watch.not_top();
        self.inner.visit_bool(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<V::Value, E> {
        self.watch.not_top();
        if v.unsigned_abs() > MAX_SAFE_INTEGER {
            self.watch.doubt();
        }
        self.inner.visit_i64(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<V::Value, E> {
        self.watch.not_top();
        if v > MAX_SAFE_INTEGER {
            self.watch.doubt();
        }
        self.inner.visit_u64(v)
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<V::Value, E> {
        self.watch.doubt();
        self.inner.visit_i128(v)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<V::Value, E> {
        self.watch.doubt();
        self.inner.visit_u128(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        self.watch.not_top();
        #[allow(clippy::cast_precision_loss, reason = "2^53 - 1 is exact in f64")]
        let limit = MAX_SAFE_INTEGER as f64;
        if !(v.is_finite() && v.abs() <= limit) {
            self.watch.doubt();
        }
        self.inner.visit_f64(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.watch.not_top();
        self.watch.string(v);
        self.inner.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.watch.not_top();
        self.watch.string(v);
        self.inner.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.watch.not_top();
        self.watch.string(&v);
        self.inner.visit_string(v)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<V::Value, E> {
        self.watch.doubt();
        self.inner.visit_bytes(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.watch.not_top();
        self.inner.visit_none()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Watched {
            inner: deserializer,
            watch: self.watch,
        })
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.watch.not_top();
        self.inner.visit_unit()
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Watched {
            inner: deserializer,
            watch: self.watch,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        // At the top, a struct read from an array: the strict parse wants an object.
        self.watch.not_top();
        let depth = enter(self.watch);
        let value = self.inner.visit_seq(WatchedSeq {
            inner: seq,
            watch: self.watch,
            index: 0,
        });
        self.watch.depth.set(depth);
        value
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        if !self.is_struct {
            // A map of any keys: a repeated key would pass unseen.
            self.watch.doubt();
        }
        let depth = enter(self.watch);
        let value = self.inner.visit_map(WatchedMap {
            inner: map,
            watch: self.watch,
            mark: 0,
        });
        self.watch.depth.set(depth);
        value
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.watch.not_top();
        self.inner.visit_enum(WatchedEnum {
            inner: data,
            watch: self.watch,
        })
    }
}

/// One level deeper; the depth to restore on the way out.
fn enter(watch: &Watch) -> usize {
    let depth = watch.depth.get();
    if depth + 1 > watch.limits.max_depth() {
        watch.doubt();
    }
    watch.depth.set(depth + 1);
    depth
}

/// A seed under watch.
struct WatchedSeed<'w, S> {
    inner: S,
    watch: &'w Watch,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for WatchedSeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Watched {
            inner: deserializer,
            watch: self.watch,
        })
    }
}

struct WatchedSeq<'w, A> {
    inner: A,
    watch: &'w Watch,
    index: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for WatchedSeq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        let mark = self.watch.mark();
        self.watch.step(&self.index);
        let element = self.inner.next_element_seed(WatchedSeed {
            inner: seed,
            watch: self.watch,
        })?;
        // Past the element (an error leaves the path where it happened).
        self.watch.back_to(mark);
        self.index += 1;
        Ok(element)
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

struct WatchedMap<'w, A> {
    inner: A,
    watch: &'w Watch,
    /// The path before the current key.
    mark: usize,
}

impl<'de, A: MapAccess<'de>> WatchedMap<'_, A> {
    /// The next key, as text, watched: one step of the path, and a string within the
    /// limits.
    fn read_key(&mut self) -> Result<Option<Key<'de, A::Error>>, A::Error> {
        self.mark = self.watch.mark();
        let Some(key) = self.inner.next_key_seed(KeySeed)? else {
            return Ok(None);
        };
        self.watch.string(&key);
        self.watch.step(&key);
        Ok(Some(Key::new(key)))
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for WatchedMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        // Read as text by code compiled once for every map, then handed to the type's
        // own seed: reading it through the watch would compile the whole key path again
        // for each struct.
        let Some(key) = self.read_key()? else {
            return Ok(None);
        };
        match seed.deserialize(key) {
            Ok(value) => Ok(Some(value)),
            Err(error) => Err(error),
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        let value = if self.watch.stands_in_here() {
            // The slow way wrote this field last in its object, with `null`: read past
            // (the same for every map, so compiled once), it stands in for any value.
            self.inner.next_value::<de::IgnoredAny>()?;
            seed.deserialize(StandIn::new())?
        } else {
            self.inner.next_value_seed(WatchedSeed {
                inner: seed,
                watch: self.watch,
            })?
        };
        self.watch.back_to(self.mark);
        Ok(value)
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

struct WatchedEnum<'w, A> {
    inner: A,
    watch: &'w Watch,
}

impl<'de, 'w, A: EnumAccess<'de>> EnumAccess<'de> for WatchedEnum<'w, A> {
    type Error = A::Error;
    type Variant = WatchedVariant<'w, A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let watch = self.watch;
        let (value, variant) = self
            .inner
            .variant_seed(WatchedSeed { inner: seed, watch })?;
        Ok((
            value,
            WatchedVariant {
                inner: variant,
                watch,
            },
        ))
    }
}

struct WatchedVariant<'w, A> {
    inner: A,
    watch: &'w Watch,
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for WatchedVariant<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.inner.newtype_variant_seed(WatchedSeed {
            inner: seed,
            watch: self.watch,
        })
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner
            .tuple_variant(len, Watching::of(visitor, self.watch))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        let visitor = Watching {
            inner: visitor,
            watch: self.watch,
            is_struct: true,
        };
        self.inner.struct_variant(fields, visitor)
    }
}

#[cfg(test)]
mod tests {
    use alloc::format;
    use alloc::string::{String, ToString};
    use alloc::vec;
    use alloc::vec::Vec;

    use serde::Deserialize;

    use serde::de::DeserializeOwned;

    use super::{decode_with, watched};
    use crate::declare::InputLimits;
    use crate::json::strict::{decode, parse_arguments};

    /// The fast way alone: the input, when the watch vouches for it.
    fn decode_watched<T: DeserializeOwned>(text: &str, limits: &InputLimits) -> Option<T> {
        let mut slot = None;
        let sure = watched(text, limits, &mut |text, watch| {
            decode_with::<T>(text, watch, &mut slot)
        });
        if sure { slot } else { None }
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Probe {
        #[serde(default)]
        f0: Option<Leafy>,
        #[serde(default)]
        f1: Option<Vec<Leafy>>,
        #[serde(default)]
        f2: Option<Kind>,
        #[serde(default)]
        f3: Option<alloc::collections::BTreeMap<String, i64>>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Leafy {
        #[serde(default)]
        a: Option<i64>,
        #[serde(default)]
        b: Option<Vec<Leafy>>,
        #[serde(default)]
        c: Option<String>,
        #[serde(default)]
        d: Option<f64>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Small,
        Large { a: u8 },
    }

    fn fast(text: &str) -> Option<Probe> {
        decode_watched(
            text,
            &InputLimits::new()
                .with_max_depth(6)
                .with_max_string_bytes(4096),
        )
    }

    #[test]
    fn plain_inputs_take_the_fast_way() {
        let probe =
            fast(r#"{"f0": {"a": -5, "c": "x", "d": 2.5e3}, "f1": [{"b": []}], "f2": "small"}"#);
        assert!(probe.is_some());
        assert!(fast(r#"{"f2": {"large": {"a": 7}}}"#).is_some());
        // A unit variant in the map form serde_json also reads: the same value.
        assert_eq!(
            fast(r#"{"f2": {"small": null}}"#).and_then(|probe| probe.f2),
            Some(Kind::Small)
        );
        assert!(fast(r#"{"f0": {"a": 9007199254740991}}"#).is_some());
    }

    #[test]
    fn what_the_strict_parse_refuses_never_takes_the_fast_way() {
        for text in [
            r#"{"f0": {"a": 1, "a": 2}}"#,
            r#"{"f0": {"a": 1, "\u0061": 2}}"#,
            r#"{"f0": {"a": 9007199254740992}}"#,
            r#"{"f0": {"a": -9007199254740992}}"#,
            r#"{"f0": {"d": 1e300}}"#,
            r#"{"f0": {"zzz": 1}}"#,
            r#"{"f0": {}, "f0": {}}"#,
            r#"{"f3": {"k": 1, "k": 2}}"#,
            "[null, null, null]",
            "{\"f0\": {\"c\": \"unterminated}}",
            "{} {}",
        ] {
            assert!(fast(text).is_none(), "{text}");
        }
        let deep = format!("{{\"f1\": [{}]}}", "{\"b\": [".repeat(6) + &"]}".repeat(6));
        assert!(fast(&deep).is_none());
        let long = format!("{{\"f0\": {{\"c\": \"{}\"}}}}", "x".repeat(5000));
        assert!(fast(&long).is_none());
    }

    /// A JSON text with room for what the strict parse refuses: repeated keys, escaped
    /// keys, numbers past 2^53, deep nesting, long strings, unknown fields.
    fn text() -> impl proptest::prelude::Strategy<Value = String> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("c".to_string()),
            Just("d".to_string()),
            Just("\\u0061".to_string()),
            Just("z".to_string()),
        ];
        let leaf = prop_oneof![
            Just("1".to_string()),
            Just("-0".to_string()),
            Just("2.5e3".to_string()),
            Just("9007199254740991".to_string()),
            Just("9007199254740992".to_string()),
            Just("1e400".to_string()),
            Just("123456789012345678901234".to_string()),
            Just("true".to_string()),
            Just("null".to_string()),
            Just("\"small\"".to_string()),
            "\"[a-z\\\\\"]{0,6}\"",
            (1usize..12).prop_map(|n| format!("\"{}\"", "x".repeat(n * 500))),
        ];
        let node = leaf.prop_recursive(7, 48, 5, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                proptest::collection::vec((key.clone(), inner), 0..5).prop_map(|fields| {
                    let fields: Vec<_> =
                        fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", fields.join(","))
                }),
            ]
        });
        proptest::collection::vec(node, 0..5).prop_map(|values| {
            let fields: Vec<_> = values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("\"f{}\":{v}", i % 4))
                .collect();
            format!("{{{}}}", fields.join(","))
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

        /// The fast way is a promise: whatever it decodes, the strict parse accepts, and
        /// the slow way decodes to the same input.
        #[test]
        fn the_fast_way_decodes_only_what_the_slow_way_decodes_alike(text in text()) {
            let limits = InputLimits::new().with_max_depth(6).with_max_string_bytes(4096);
            let _ = vec![0u8; 0];
            if let Some(quick) = decode_watched::<Probe>(&text, &limits) {
                let parsed = parse_arguments(&text, &limits);
                proptest::prop_assert!(parsed.is_ok(), "{} -> {:?}", text, parsed.err());
                let slow = decode::<Probe>(serde_json::Value::Object(parsed.unwrap()));
                proptest::prop_assert_eq!(Some(quick), slow.ok(), "{}", text);
            }
        }
    }
}
