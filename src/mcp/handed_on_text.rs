//! The answer to a call whose output is an MCP `CallToolResult` as the text a server
//! wrote, written around that text: the common result (every content block plain text,
//! no error) is read once, without a tree, and the line built from its parts; any other
//! takes the tree's way, as `handed_on` answers it.

use alloc::borrow::Cow;
use alloc::vec::Vec;
use core::fmt;

use rmcp::model::RequestId;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The line (its newline included) that answers request `id` with the executed result
/// whose output is `text`, shaped for the protocol the session agreed (`current`:
/// 2026-07-28 or later), when every content block of `text` is plain text and it says
/// no error; `None` for any other result, and for text that spans lines.
pub(crate) fn plain_result_line(text: &RawValue, id: &RequestId, current: bool) -> Option<Vec<u8>> {
    let text = text.get();
    // JSON allows newlines between tokens; a line must not hold one.
    if text.contains('\n') || text.contains('\r') {
        return None;
    }
    let PlainResult(blocks) = serde_json::from_str(text).ok()?;
    let mut line = Vec::with_capacity(2 * text.len() + 160);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut line, id).ok()?;
    line.extend_from_slice(br#","result":{"#);
    if current {
        line.extend_from_slice(br#""resultType":"complete","#);
    }
    line.extend_from_slice(br#""content":["#);
    for (at, block) in blocks.iter().enumerate() {
        if at > 0 {
            line.push(b',');
        }
        line.extend_from_slice(br#"{"type":"text","text":"#);
        serde_json::to_writer(&mut line, block.as_ref()).ok()?;
        line.push(b'}');
    }
    line.extend_from_slice(br#"],"structuredContent":{"status":"executed","output":"#);
    line.extend_from_slice(text.as_bytes());
    line.extend_from_slice(b"},\"isError\":false}}\n");
    Some(line)
}

/// The texts of a result whose content blocks are all plain text (`type` and `text`,
/// nothing else), at least one, and whose `isError` is absent or `false`. A duplicate
/// key, which a tree would keep the last of, is no plain result.
struct PlainResult<'a>(Vec<Cow<'a, str>>);

impl<'de> serde::Deserialize<'de> for PlainResult<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ResultVisitor)
    }
}

struct ResultVisitor;

impl<'de> Visitor<'de> for ResultVisitor {
    type Value = PlainResult<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool's result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut content = None;
        let mut error_said = false;
        while let Some(key) = map.next_key::<ResultKey>()? {
            match key {
                ResultKey::Content if content.is_none() => {
                    content = Some(map.next_value::<TextBlocks<'de>>()?.0);
                }
                ResultKey::IsError if !error_said => {
                    error_said = true;
                    if map.next_value::<bool>()? {
                        return Err(de::Error::custom("an error result"));
                    }
                }
                ResultKey::Content | ResultKey::IsError => {
                    return Err(de::Error::custom("a key twice"));
                }
                ResultKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        content
            .filter(|blocks| !blocks.is_empty())
            .map(PlainResult)
            .ok_or_else(|| de::Error::custom("no content"))
    }
}

/// A key of a result, named without a copy.
enum ResultKey {
    Content,
    IsError,
    Other,
}

impl<'de> serde::Deserialize<'de> for ResultKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NameVisitor(|name: &str| match name {
            "content" => ResultKey::Content,
            "isError" => ResultKey::IsError,
            _ => ResultKey::Other,
        }))
    }
}

/// A key of a content block.
enum BlockKey {
    Type,
    Text,
    Other,
}

impl<'de> serde::Deserialize<'de> for BlockKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NameVisitor(|name: &str| match name {
            "type" => BlockKey::Type,
            "text" => BlockKey::Text,
            _ => BlockKey::Other,
        }))
    }
}

/// A string, told apart by `name` as it is read (escaped or not).
struct NameVisitor<F>(F);

impl<'de, T, F: FnOnce(&str) -> T> Visitor<'de> for NameVisitor<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<T, E> {
        Ok((self.0)(name))
    }
}

struct TextBlocks<'a>(Vec<Cow<'a, str>>);

impl<'de> serde::Deserialize<'de> for TextBlocks<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(BlocksVisitor)
    }
}

struct BlocksVisitor;

impl<'de> Visitor<'de> for BlocksVisitor {
    type Value = TextBlocks<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of content blocks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1));
        while let Some(TextBlock(text)) = seq.next_element()? {
            blocks.push(text);
        }
        Ok(TextBlocks(blocks))
    }
}

/// A content block of exactly `"type": "text"` and a `text`.
struct TextBlock<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for TextBlock<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(BlockVisitor)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = TextBlock<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a text block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut typed = false;
        let mut text = None;
        while let Some(key) = map.next_key::<BlockKey>()? {
            match key {
                BlockKey::Type if !typed => {
                    typed = map.next_value::<Text<'de>>()?.0 == "text";
                    if !typed {
                        return Err(de::Error::custom("not a text block"));
                    }
                }
                BlockKey::Text if text.is_none() => text = Some(map.next_value::<Text<'de>>()?.0),
                _ => return Err(de::Error::custom("not a plain text block")),
            }
        }
        text.filter(|_| typed)
            .map(TextBlock)
            .ok_or_else(|| de::Error::custom("not a text block"))
    }
}

/// A string, borrowed from the text where it holds no escape.
struct Text<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(text.into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::fast::answer_message;
    use crate::mcp::result::handed_on;
    use alloc::borrow::ToOwned;
    use alloc::boxed::Box;
    use alloc::format;
    use alloc::string::String;
    use serde_json::Value;

    /// The line the tree's way writes: `handed_on`, then rmcp's model written out.
    fn by_the_tree(text: &str, id: &RequestId, current: bool) -> Value {
        let output: Value = serde_json::from_str(text).unwrap();
        let message = answer_message(Ok(handed_on(output)), id.clone(), current);
        serde_json::to_value(message).unwrap()
    }

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.into()).unwrap()
    }

    #[test]
    fn a_plain_result_is_answered_as_the_tree_answers_it() {
        let plain = [
            r#"{"content":[{"type":"text","text":"hello"}]}"#,
            r#"{"content":[{"text":"a\nb \"q\" \u00e9 \ud83d\ude00","type":"text"},{"type":"text","text":""}],"isError":false}"#,
            r#"{"structuredContent":{"a":[1,2.5,null]},"content":[{"type":"text","text":"x"}],"_meta":{"k":"v"}}"#,
            r#"{ "content" : [ { "type" : "text" , "text" : "spaced" } ] }"#,
        ];
        for text in plain {
            for (id, current) in [
                (RequestId::Number(7), true),
                (RequestId::String("call-\"1\"".into()), false),
            ] {
                let line = plain_result_line(&raw(text), &id, current).expect(text);
                assert_eq!(line.last(), Some(&b'\n'), "{text}");
                assert_eq!(line.iter().filter(|&&byte| byte == b'\n').count(), 1);
                let written: Value = serde_json::from_slice(&line).unwrap();
                assert_eq!(written, by_the_tree(text, &id, current), "{text}");
            }
        }
    }

    /// A JSON string literal: escaped as a writer escapes it, or spelled with `\u`
    /// escapes a writer never uses (a lone surrogate among them).
    fn string_literal() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            "\\PC{0,6}".prop_map(|text| serde_json::to_string(&text).unwrap()),
            Just(r#""\u00e9\n\t""#.to_owned()),
            Just(r#""\ud83d\ude00""#.to_owned()),
            Just(r#""\ud800""#.to_owned()),
            Just(r#""a\/b""#.to_owned()),
        ]
    }

    /// A content block, as a server may write one.
    fn block() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        (string_literal(), 0..7_u8).prop_map(|(text, shape)| match shape {
            0 => format!(r#"{{"type":"text","text":{text}}}"#),
            1 => format!(r#"{{ "text" : {text} , "type" : "text" }}"#),
            2 => r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#.to_owned(),
            3 => format!(r#"{{"type":"text","text":{text},"annotations":{{"priority":1}}}}"#),
            4 => r#"{"type":"text","text":5}"#.to_owned(),
            5 => format!(r#"{{"type":"text","text":{text},"text":"other"}}"#),
            _ => r#"{"type":"text"}"#.to_owned(),
        })
    }

    /// A result's text: its content (none, once or twice), an error flag of any value,
    /// structured content, spacing and line breaks between tokens.
    fn result_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let content = proptest::collection::vec(block(), 0..4)
            .prop_map(|blocks| format!(r#""content":[{}]"#, blocks.join(",")));
        let error = prop_oneof![
            Just(None),
            Just(Some(r#""isError":false"#)),
            Just(Some(r#""isError":true"#)),
            Just(Some(r#""isError":null"#)),
        ];
        let extra = prop_oneof![
            Just(None),
            Just(Some(
                r#""structuredContent":{"n":[1,2.5,-3e2,null],"s":"\u00e9"}"#
            )),
            Just(Some(r#""_meta":{}"#)),
        ];
        let space = prop_oneof![Just(""), Just(" "), Just("\n")];
        (
            proptest::collection::vec(content, 0..3),
            error,
            extra,
            space,
        )
            .prop_map(|(contents, error, extra, space)| {
                let mut keys = contents;
                keys.extend(error.map(str::to_owned));
                keys.extend(extra.map(str::to_owned));
                format!("{{{space}{}{space}}}", keys.join(&format!(",{space}")))
            })
    }

    proptest::proptest! {
        /// Whatever a server writes, a line written around its text is one line, and
        /// reads as the tree's answer to the same text.
        #[test]
        fn a_line_written_around_the_text_reads_as_the_trees(
            text in result_text(),
            current in proptest::bool::ANY,
        ) {
            let id = RequestId::Number(3);
            if let Some(line) = plain_result_line(&raw(&text), &id, current) {
                proptest::prop_assert_eq!(line.iter().filter(|&&byte| byte == b'\n').count(), 1);
                let written: Value = serde_json::from_slice(&line).unwrap();
                proptest::prop_assert_eq!(written, by_the_tree(&text, &id, current), "{}", text);
            }
        }
    }

    #[test]
    fn any_other_result_is_left_to_the_tree() {
        let other = [
            // Not plain text, or more than type and text.
            r#"{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"text","text":"x","annotations":{"priority":1.0}}]}"#,
            r#"{"content":[{"type":"text","text":5}]}"#,
            r#"{"content":[{"type":"text"}]}"#,
            r#"{"content":[["text","x"]]}"#,
            // No content, an error, or an error flag that is not `false`.
            r#"{"content":[]}"#,
            r#"{"structuredContent":{}}"#,
            r#"{"content":[{"type":"text","text":"x"}],"isError":true}"#,
            r#"{"content":[{"type":"text","text":"x"}],"isError":null}"#,
            // A key twice: the tree keeps the last.
            r#"{"content":[{"type":"text","text":"x"}],"content":[{"type":"image","data":"","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"text","text":"x"}],"isError":false,"isError":true}"#,
            r#"{"content":[{"type":"text","text":"x","text":"y"}]}"#,
            // Not an object; spread over lines.
            r#"["content"]"#,
            "{\"content\":[{\"type\":\"text\",\n\"text\":\"x\"}]}",
            // A lone surrogate, which a tree refuses too.
            r#"{"content":[{"type":"text","text":"\ud800"}]}"#,
        ];
        for text in other {
            assert!(
                plain_result_line(&raw(text), &RequestId::Number(1), true).is_none(),
                "{text}"
            );
        }
    }
}
