//! An upstream's result, kept as the text it wrote where it reads as a tool's result
//! that is no error: checked in one pass that reads every string as a tree would (its
//! escapes, its Unicode), without building the tree. Anything else is read into a tree,
//! which decides as it always has.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Whether `text` is a successful tool's result a tree would read: an object whose
/// `content` (when present) is a list of objects that each name their `type` in a
/// string, whose `isError` (when present) is `false`, and all of whose strings are
/// Unicode text. `false` also where a tree would read it but keep the last of a key
/// given twice: the tree then decides.
pub(crate) fn reads_as_success(text: &RawValue) -> bool {
    serde_json::from_str::<Success>(text.get()).is_ok()
}

/// A result that reads as [`reads_as_success`] says.
struct Success;

impl<'de> serde::Deserialize<'de> for Success {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(SuccessVisitor)
    }
}

struct SuccessVisitor;

impl<'de> Visitor<'de> for SuccessVisitor {
    type Value = Success;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool's result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Success, A::Error> {
        let (mut content, mut error) = (false, false);
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Named("content") if !content => {
                    content = true;
                    map.next_value::<Blocks>()?;
                }
                Key::Named("isError") if !error => {
                    error = true;
                    if map.next_value::<bool>()? {
                        return Err(de::Error::custom("an error result"));
                    }
                }
                Key::Named("content" | "isError") => {
                    return Err(de::Error::custom("a key twice"));
                }
                Key::Named(_) | Key::Other => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        Ok(Success)
    }
}

/// A key: one of the few that matter here, or any other (read, and checked).
enum Key {
    Named(&'static str),
    Other,
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(["content", "isError", "type"]
                    .into_iter()
                    .find(|name| *name == key)
                    .map_or(Key::Other, Key::Named))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A list of content blocks, each an object with a string `type`.
struct Blocks;

impl<'de> serde::Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlocksVisitor;
        impl<'de> Visitor<'de> for BlocksVisitor {
            type Value = Blocks;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of content blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks, A::Error> {
                while seq.next_element::<Block>()?.is_some() {}
                Ok(Blocks)
            }
        }
        deserializer.deserialize_seq(BlocksVisitor)
    }
}

/// One content block: an object that names its `type` in a string.
struct Block;

impl<'de> serde::Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlockVisitor;
        impl<'de> Visitor<'de> for BlockVisitor {
            type Value = Block;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Block, A::Error> {
                let mut typed = false;
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Named("type") if !typed => {
                            typed = true;
                            map.next_value::<Text>()?;
                        }
                        Key::Named("type") => return Err(de::Error::custom("a key twice")),
                        Key::Named(_) | Key::Other => {
                            map.next_value::<Checked>()?;
                        }
                    }
                }
                if typed {
                    Ok(Block)
                } else {
                    Err(de::Error::custom("a block without its type"))
                }
            }
        }
        deserializer.deserialize_map(BlockVisitor)
    }
}

/// A string.
struct Text;

impl<'de> serde::Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl Visitor<'_> for TextVisitor {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Text, E> {
                Ok(Text)
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Any JSON value, read as a tree reads it (each string decoded, each number parsed),
/// nothing of it kept.
struct Checked;

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<Text>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.into()).unwrap()
    }

    #[test]
    fn a_successful_result_reads_as_one() {
        for text in [
            r#"{"content":[{"type":"text","text":"hello"}]}"#,
            r#"{"content":[]}"#,
            r#"{}"#,
            r#"{"type":"x","type":"y","content":[]}"#,
            r#"{"content":[{"type":"image","data":"AA==","mimeType":"image/png","annotations":{"priority":0.5}}],"isError":false}"#,
            r#"{"content":[{"text":"é \u00e9 \ud83d\ude00 \"q\"","type":"text"}],"structuredContent":{"n":[1,-2,3.5e10,null,true]},"_meta":{}}"#,
        ] {
            assert!(reads_as_success(&raw(text)), "{text}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_tree() {
        for text in [
            // Errors, and results that are none.
            r#"{"content":[{"type":"text","text":"no"}],"isError":true}"#,
            r#"{"content":[],"isError":null}"#,
            r#"{"content":null}"#,
            r#"{"content":{}}"#,
            r#"{"content":[{"text":"x"}]}"#,
            r#"{"content":[{"type":1}]}"#,
            r#"{"content":[["type","text"]]}"#,
            r#"[]"#,
            r#""text""#,
            // A key twice, of which a tree keeps the last.
            r#"{"isError":false,"isError":true}"#,
            r#"{"content":[],"content":null}"#,
            r#"{"content":[{"type":"text","type":2}]}"#,
            // Strings and numbers a tree refuses, wherever they are.
            r#"{"content":[],"_meta":{"k":"\ud800"}}"#,
            r#"{"content":[{"type":"text","text":"\udc00x"}]}"#,
            r#"{"content":[],"structuredContent":{"big":1e400}}"#,
        ] {
            assert!(!reads_as_success(&raw(text)), "{text}");
        }
    }

    /// Any JSON value up to a few levels deep, as text: strings with every kind of
    /// escape (a lone surrogate among them), numbers past a float's range, keys twice.
    fn any_json() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            Just("-12.5e3".to_owned()),
            Just("1e400".to_owned()),
            Just(r#""\ud800""#.to_owned()),
            Just(r#""\ud83d\ude00\n""#.to_owned()),
            Just(r#""text""#.to_owned()),
            Just(r#""image""#.to_owned()),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            let key = prop_oneof![
                Just("type"),
                Just("text"),
                Just("content"),
                Just("isError"),
                Just("x"),
            ];
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                proptest::collection::vec((key, inner), 0..4).prop_map(|fields| {
                    let fields: Vec<String> = fields
                        .into_iter()
                        .map(|(key, value)| format!(r#""{key}":{value}"#))
                        .collect();
                    format!("{{{}}}", fields.join(","))
                }),
            ]
        })
    }

    proptest::proptest! {
        /// Whatever reads as a success here is, read as a tree, a tool's result that
        /// says no error: the gateway's judgement of it is the tree's.
        #[test]
        fn a_success_here_is_a_success_to_a_tree(text in any_json()) {
            if reads_as_success(&raw(&text)) {
                let tree: Value = serde_json::from_str(&text).unwrap();
                proptest::prop_assert!(crate::upstream::is_tool_result(&tree), "{}", text);
                proptest::prop_assert_ne!(tree.get("isError"), Some(&Value::Bool(true)), "{}", text);
            }
        }
    }

    #[test]
    fn what_reads_as_success_a_tree_reads_too() {
        for text in [
            r#"{"content":[{"type":"text","text":"a\u0000b"}],"x":{"y":[{"z":"\ud83d\ude00"}]}}"#,
            r#"{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"t"}}]}"#,
        ] {
            assert!(reads_as_success(&raw(text)), "{text}");
            let tree: Value = serde_json::from_str(text).unwrap();
            assert_eq!(tree["isError"].as_bool(), None);
        }
    }
}
