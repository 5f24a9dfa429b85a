//! A value of any shape, for a field whose error is already known.
//!
//! serde stops at the first error of a pass and checks missing fields one at a time, in
//! declaration order. To learn of every error, the slow way puts a stand-in where each
//! known error is (a missing field, a value of the wrong type) and decodes again: the
//! next pass goes past it and finds the next error. A stand-in answers whatever the type
//! asks for with its plainest value: `false`, zero, an empty string or sequence, `None`,
//! the first variant, a struct of stand-ins. Its result is never kept: a pass with a
//! stand-in has an error already, so the input is refused.

use core::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, Visitor};

/// The stand-in for one value; `E` is the error type of the decoder it stands in for.
pub(crate) struct StandIn<E>(PhantomData<E>);

impl<E> StandIn<E> {
    pub(crate) const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<'de, E: de::Error> IntoDeserializer<'de, E> for StandIn<E> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// `len` stand-ins in a row: a tuple's elements.
fn stand_ins<E>(len: usize) -> impl Iterator<Item = StandIn<E>> {
    (0..len).map(|_| StandIn::new())
}

macro_rules! stand_in_with {
    ($($method:ident => $visit:ident($($value:expr)?)),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
                visitor.$visit($($value)?)
            }
        )*
    };
}

impl<'de, E: de::Error> Deserializer<'de> for StandIn<E> {
    type Error = E;

    stand_in_with!(
        deserialize_any => visit_unit(),
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i8(0),
        deserialize_i16 => visit_i16(0),
        deserialize_i32 => visit_i32(0),
        deserialize_i64 => visit_i64(0),
        deserialize_i128 => visit_i128(0),
        deserialize_u8 => visit_u8(0),
        deserialize_u16 => visit_u16(0),
        deserialize_u32 => visit_u32(0),
        deserialize_u64 => visit_u64(0),
        deserialize_u128 => visit_u128(0),
        deserialize_f32 => visit_f32(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('0'),
        deserialize_str => visit_str(""),
        deserialize_string => visit_str(""),
        deserialize_bytes => visit_bytes(&[]),
        deserialize_byte_buf => visit_bytes(&[]),
        deserialize_option => visit_none(),
        deserialize_unit => visit_unit(),
        deserialize_identifier => visit_str(""),
        deserialize_ignored_any => visit_unit(),
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.deserialize_tuple(0, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, E> {
        visitor.visit_seq(de::value::SeqDeserializer::new(stand_ins(len)))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, E> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.deserialize_struct("", &[], visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        let entries = fields.iter().map(|&field| (field, Self::new()));
        visitor.visit_map(de::value::MapDeserializer::new(entries))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        match variants.first() {
            Some(&variant) => visitor.visit_enum(Variant::<E> {
                name: variant,
                error: PhantomData,
            }),
            None => Err(E::custom("an enum without variants has no value")),
        }
    }
}

/// The first variant of an enum, with stand-ins for whatever it holds.
struct Variant<E> {
    name: &'static str,
    error: PhantomData<E>,
}

impl<'de, E: de::Error> de::EnumAccess<'de> for Variant<E> {
    type Error = E;
    type Variant = StandIn<E>;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, StandIn<E>), E> {
        let name: de::value::StrDeserializer<'_, E> = self.name.into_deserializer();
        Ok((seed.deserialize(name)?, StandIn::new()))
    }
}

impl<'de, E: de::Error> de::VariantAccess<'de> for StandIn<E> {
    type Error = E;

    fn unit_variant(self) -> Result<(), E> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, E> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, E> {
        self.deserialize_tuple(len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        self.deserialize_struct("", fields, visitor)
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::String;
    use alloc::vec::Vec;

    use serde::Deserialize;

    use super::StandIn;

    #[derive(Debug, PartialEq, Deserialize)]
    enum Kind {
        First,
        Second(u8),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Inner {
        flag: bool,
        kind: Kind,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Shapes {
        number: u32,
        float: f64,
        text: String,
        list: Vec<u8>,
        pair: (u8, String),
        maybe: Option<u8>,
        inner: Inner,
    }

    #[test]
    fn a_stand_in_takes_the_plainest_value_of_any_shape() {
        let shapes = Shapes::deserialize(StandIn::<serde_json::Error>::new()).unwrap();
        assert_eq!(
            shapes,
            Shapes {
                number: 0,
                float: 0.0,
                text: String::new(),
                list: Vec::new(),
                pair: (0, String::new()),
                maybe: None,
                inner: Inner {
                    flag: false,
                    kind: Kind::First,
                },
            }
        );
    }
}
