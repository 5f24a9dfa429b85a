//! A map's key, read as text once for every map, then handed to the type that wants it.
//!
//! Reading each key through the watch would compile serde_json's whole key path again for
//! every struct of every tool (most of a tool's decoding code). A key is always a string
//! in JSON, so it is read by one seed compiled once, and only the type's own visit of it
//! is compiled per type. What serde_json does with a key that a type reads as something
//! else (a number, a bool, an enum's variant, bytes) is done here alike.

use alloc::borrow::Cow;
use alloc::string::String;
use core::fmt;
use core::marker::PhantomData;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, Unexpected, Visitor};
use serde::forward_to_deserialize_any;

/// Reads a map's key as text: borrowed from the input unless it held an escape.
pub(crate) struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(key))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key.into()))
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key))
    }
}

/// A key already read, as a deserializer for the type's own key seed.
pub(crate) struct Key<'de, E> {
    key: Cow<'de, str>,
    error: PhantomData<E>,
}

impl<'de, E> Key<'de, E> {
    pub(crate) const fn new(key: Cow<'de, str>) -> Self {
        Self {
            key,
            error: PhantomData,
        }
    }
}

/// What serde_json says of a key read as a number that does not begin like one.
const NOT_A_NUMBER: &str = "invalid value: expected key to be a number in quotes";

impl<'de, E: de::Error> Key<'de, E> {
    /// The key's text as a number, read the way serde_json reads a number in quotes: it
    /// must begin with a digit or `-` and hold nothing after the number. A key with an
    /// escape is no number (serde_json reads the text as written).
    fn number<V: Visitor<'de>>(
        self,
        visitor: V,
        read: fn(
            &mut serde_json::Deserializer<serde_json::de::StrRead<'de>>,
            V,
        ) -> Result<V::Value, serde_json::Error>,
    ) -> Result<V::Value, E> {
        let Cow::Borrowed(text) = self.key else {
            return Err(E::custom(NOT_A_NUMBER));
        };
        if !text.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
            return Err(E::custom(NOT_A_NUMBER));
        }
        if text.contains(|c: char| c.is_ascii_whitespace()) {
            return Err(E::custom("expected `\"`"));
        }
        let mut number = serde_json::Deserializer::from_str(text);
        let value = read(&mut number, visitor).map_err(E::custom)?;
        number.end().map_err(|_| E::custom("expected `\"`"))?;
        Ok(value)
    }
}

macro_rules! numeric_key {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
                self.number(visitor, |number, visitor| number.$method(visitor))
            }
        )*
    };
}

impl<'de, E: de::Error> Deserializer<'de> for Key<'de, E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.key {
            Cow::Borrowed(key) => visitor.visit_borrowed_str(key),
            // Copied, as serde_json hands over a key it unescaped: a type's visitor of
            // owned text is then compiled only where it is its own.
            Cow::Owned(key) => visitor.visit_str(&key),
        }
    }

    numeric_key!(
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
    );

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match &*self.key {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            other => Err(E::invalid_type(Unexpected::Str(other), &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        // A key is never null.
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        // A unit variant, named by the key.
        match self.key {
            Cow::Borrowed(key) => {
                BorrowedStrDeserializer::<E>::new(key).deserialize_enum(name, variants, visitor)
            }
            Cow::Owned(key) => IntoDeserializer::<E>::into_deserializer(key)
                .deserialize_enum(name, variants, visitor),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.key {
            Cow::Borrowed(key) => visitor.visit_borrowed_bytes(key.as_bytes()),
            Cow::Owned(key) => visitor.visit_byte_buf(key.into_bytes()),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.deserialize_bytes(visitor)
    }

    forward_to_deserialize_any! {
        char str string unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use alloc::collections::BTreeMap;
    use alloc::format;
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;

    use proptest::prelude::*;
    use serde::de::DeserializeOwned;

    use crate::declare::InputLimits;
    use crate::json::strict::decode_text;

    /// Decoded through the pipeline's gate 1 (keys read once, then handed over) and by
    /// serde_json alone: both accept, alike, or both refuse. A key is the string its JSON
    /// text denotes (gate 1 names every error from a parsed tree, so `"\u0031"` is the
    /// key `1`), so serde_json reads the text as that tree writes it.
    fn alike<T: DeserializeOwned + PartialEq + core::fmt::Debug>(text: &str) {
        let ours = decode_text::<T>(text, &InputLimits::new(), |_| Ok(()));
        let theirs = serde_json::from_str::<serde_json::Value>(text)
            .and_then(|tree| serde_json::from_str::<T>(&tree.to_string()));
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs, "{text}"),
            (Err(_), Err(_)) => {}
            (ours, theirs) => panic!("{text}: gate 1 gave {ours:?}, serde_json {theirs:?}"),
        }
    }

    /// A key read as a bool is `true` or `false`, and nothing else. (Not compared with
    /// serde_json 1.0.154, whose own reading of a bool key that begins with a character
    /// outside ASCII splits the character and panics.)
    fn bools(key: &str, text: &str) {
        let decoded = decode_text::<BTreeMap<bool, u8>>(text, &InputLimits::new(), |_| Ok(()));
        match key {
            "true" | "false" => assert_eq!(decoded.unwrap().keys().next(), Some(&(key == "true"))),
            _ => assert!(decoded.is_err(), "{text}"),
        }
    }

    #[test]
    fn a_bool_key_that_begins_outside_ascii_is_refused_not_split() {
        let refused =
            decode_text::<BTreeMap<bool, u8>>(r#"{"é": 1}"#, &InputLimits::new(), |_| Ok(()));
        assert_eq!(
            refused.unwrap_err().iter().next().unwrap().code(),
            "invalid_type"
        );
    }

    #[derive(Debug, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
    enum Colour {
        Red,
        Green(u8),
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Named {
        name: String,
        #[serde(default)]
        tags: BTreeMap<String, u8>,
    }

    #[test]
    fn keys_read_as_other_types_are_read_as_serde_json_reads_them() {
        for key in [
            "1",
            "01",
            "-1",
            "+1",
            " 1",
            "1 ",
            "1.5",
            "1e2",
            "-",
            "",
            "x",
            "\\u0031",
            "18446744073709551616",
            "-9223372036854775809",
            "true",
            "false",
            "tru",
            "Red",
            "Green",
            "Blue",
            "\\u0052ed",
            "é",
            "\\\"",
        ] {
            let text = format!("{{\"{key}\": 1}}");
            alike::<BTreeMap<u32, u8>>(&text);
            alike::<BTreeMap<i64, u8>>(&text);
            alike::<BTreeMap<i128, u8>>(&text);
            bools(key, &text);
            alike::<BTreeMap<char, u8>>(&text);
            alike::<BTreeMap<String, u8>>(&text);
            alike::<BTreeMap<Colour, u8>>(&text);
            alike::<BTreeMap<Option<u8>, u8>>(&text);
            alike::<BTreeMap<Vec<u8>, u8>>(&text);
        }
    }

    #[test]
    fn a_field_named_with_escapes_is_the_field() {
        alike::<Named>(r#"{"\u006eame": "a", "tags": {"\u0078": 1}}"#);
        alike::<Named>(r#"{"name": "a", "t\u0061gs": {"y": 2}}"#);
    }

    proptest! {
        #[test]
        fn any_key_is_read_as_serde_json_reads_it(
            parts in proptest::collection::vec(
                prop_oneof![
                    "[0-9]{1,3}".prop_map(|s| s),
                    Just(String::from("-")),
                    Just(String::from("+")),
                    Just(String::from(".")),
                    Just(String::from("e")),
                    Just(String::from(" ")),
                    Just(String::from("\\u0031")),
                    Just(String::from("\\n")),
                    "[a-zé]{1,3}".prop_map(|s| s),
                ],
                0..4,
            )
        ) {
            let key: String = parts.concat();
            let text = format!("{{\"{key}\": 7}}");
            alike::<BTreeMap<u64, u8>>(&text);
            alike::<BTreeMap<i32, u8>>(&text);
            alike::<BTreeMap<String, u8>>(&text);
            bools(&key, &text);
        }
    }
}
