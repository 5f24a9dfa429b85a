//! Strict parsing of a model's JSON arguments, and strict decoding into a tool's input
//! type with every field error reported.
//!
//! serde_json alone keeps the last of duplicate keys, turns huge integers into floats and
//! reports only a message; here each of those is a field error with a path and a code.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::{self, Write as _};

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::declare::{FieldError, InputErrors, InputLimits};
use crate::json::watch::{DecodeInto, decode_with, traced, watched};

/// The largest integer every JSON peer and RFC 8785 keep exact: 2^53 − 1.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The longest message from a decoder that is passed on; it may quote the model's input.
const MAX_MESSAGE_CHARS: usize = 200;

struct State {
    limits: InputLimits,
    depth: usize,
    path: String,
    failure: Option<FieldError>,
}

impl State {
    fn fail<E: de::Error>(&mut self, code: &'static str, message: String) -> E {
        let error = E::custom(&message);
        self.failure = Some(FieldError::owned(self.path.clone(), code, message));
        error
    }
}

struct ValueSeed<'s> {
    state: &'s mut State,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        if v.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(out_of_range(self.state));
        }
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        if v > MAX_SAFE_INTEGER {
            return Err(out_of_range(self.state));
        }
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // Integers past u64 arrive here as floats; so do floats too large to be exact.
        #[allow(clippy::cast_precision_loss, reason = "2^53 - 1 is exact in f64")]
        let limit = MAX_SAFE_INTEGER as f64;
        match Number::from_f64(v) {
            Some(number) if v.abs() <= limit => Ok(Value::Number(number)),
            _ => Err(out_of_range(self.state)),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        check_string(self.state, v)?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        check_string(self.state, &v)?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let state = self.state;
        enter(state)?;
        let mut items = Vec::new();
        loop {
            let len = state.path.len();
            let _ = write!(state.path, "/{}", items.len());
            let item = seq.next_element_seed(ValueSeed { state: &mut *state })?;
            state.path.truncate(len);
            match item {
                Some(item) => items.push(item),
                None => break,
            }
        }
        state.depth -= 1;
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let state = self.state;
        enter(state)?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let len = state.path.len();
            state.path.push('/');
            push_pointer_token(&mut state.path, &key);
            if key.len() > state.limits.max_string_bytes() {
                let message = format!(
                    "key is {} bytes, longer than the limit of {}",
                    key.len(),
                    state.limits.max_string_bytes()
                );
                return Err(state.fail("string_too_long", message));
            }
            if object.contains_key(&key) {
                return Err(state.fail("duplicate_key", "key appears more than once".to_owned()));
            }
            let value = map.next_value_seed(ValueSeed { state: &mut *state })?;
            state.path.truncate(len);
            object.insert(key, value);
        }
        state.depth -= 1;
        Ok(Value::Object(object))
    }
}

fn enter<E: de::Error>(state: &mut State) -> Result<(), E> {
    state.depth += 1;
    if state.depth > state.limits.max_depth() {
        let message = format!(
            "nested deeper than the limit of {} arrays and objects",
            state.limits.max_depth()
        );
        return Err(state.fail("too_deep", message));
    }
    Ok(())
}

fn check_string<E: de::Error>(state: &mut State, v: &str) -> Result<(), E> {
    if v.len() > state.limits.max_string_bytes() {
        let message = format!(
            "string is {} bytes, longer than the limit of {}",
            v.len(),
            state.limits.max_string_bytes()
        );
        return Err(state.fail("string_too_long", message));
    }
    Ok(())
}

fn out_of_range<E: de::Error>(state: &mut State) -> E {
    state.fail(
        "number_out_of_range",
        "numbers must lie within ±9007199254740991 (2^53 - 1) to stay exact".to_owned(),
    )
}

/// Appends `token` escaped as an RFC 6901 JSON Pointer reference token.
pub(crate) fn push_pointer_token(path: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// A JSON Pointer token as the key it names (RFC 6901: `~1` is `/`, then `~0` is `~`).
pub(crate) fn pointer_token_key(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn short(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message.to_owned(),
    }
}

/// Parses a model's argument text: exactly one JSON object, no duplicate keys, within
/// `limits`.
pub(crate) fn parse_arguments(
    text: &str,
    limits: &InputLimits,
) -> Result<Map<String, Value>, InputErrors> {
    if text.len() > limits.max_bytes() {
        return Err(InputErrors::one(FieldError::owned(
            String::new(),
            "too_large",
            format!(
                "arguments are {} bytes, larger than the limit of {}",
                text.len(),
                limits.max_bytes()
            ),
        )));
    }
    let mut state = State {
        limits: *limits,
        depth: 0,
        path: String::new(),
        failure: None,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = ValueSeed { state: &mut state }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    let value = match parsed {
        Ok(value) => value,
        Err(error) => {
            let field = state.failure.take().unwrap_or_else(|| {
                let message = error.to_string();
                let code = if message.starts_with("recursion limit exceeded") {
                    "too_deep"
                } else if message.starts_with("number out of range") {
                    "number_out_of_range"
                } else {
                    "invalid_json"
                };
                // The path reached when the parser stopped.
                FieldError::owned(state.path.clone(), code, short(&message))
            });
            return Err(InputErrors::one(field));
        }
    };
    match value {
        Value::Object(object) => Ok(object),
        other => Err(InputErrors::one(FieldError::owned(
            String::new(),
            "not_an_object",
            format!("arguments must be a JSON object, not {}", kind(&other)),
        ))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The slow way alone: the parsed arguments decoded into `T`, or every field error.
#[cfg(test)]
pub(crate) fn decode<T: DeserializeOwned>(arguments: Value) -> Result<T, InputErrors> {
    let mut slot = None;
    decode_passes(arguments, &mut |text, watch| {
        decode_with::<T>(text, watch, &mut slot)
    })?;
    // `decode_passes` says Ok only right after a pass that decoded.
    slot.ok_or_else(InputErrors::new)
}

/// The slow way: the parsed arguments decoded, reporting every field error rather than
/// the first, in path order. A valid input decodes in one pass. An invalid one is
/// decoded again with a stand-in for each field found wrong or missing, until a pass
/// finds nothing new: serde stops at the first error of a pass (and names one missing
/// field at a time), and this way a model that sends three bad fields and leaves out two
/// learns of all five. The same for every input type, so compiled once: only `decode`
/// knows the type, and keeps the input of the last pass.
fn decode_passes(mut arguments: Value, decode: &mut DecodeInto<'_>) -> Result<(), InputErrors> {
    let mut found: Vec<FieldError> = Vec::new();
    let mut stand_ins: Vec<String> = Vec::new();
    for _ in 0..MAX_PASSES {
        let (decoded, ignored) = traced(&arguments, stand_ins.clone(), decode);
        for pointer in ignored {
            if !found.iter().any(|known| known.path() == pointer) {
                found.push(FieldError::owned(
                    pointer,
                    "unknown_field",
                    "this field is not part of the tool's input".to_owned(),
                ));
            }
        }
        let field = match decoded {
            Ok(()) if found.is_empty() => return Ok(()),
            Ok(()) => break,
            Err((pointer, message)) => classify(pointer, &message),
        };
        // An error at a field already reported, or at one of its parents, is the echo of a
        // field this loop took out: nothing new is to be learnt.
        let echo = found.iter().any(|known| {
            known.path() == field.path()
                || known
                    .path()
                    .strip_prefix(field.path())
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        if echo {
            break;
        }
        // The field's value (if it has one) makes way for a stand-in, so that the next
        // pass goes past it, whether it was wrong or missing.
        let Some(removed) = take_out(&mut arguments, field.path()) else {
            break;
        };
        // A field the type does not know is only taken out: it has no place to stand in.
        if field.code() != "unknown_field" {
            stand_ins.push(removed);
        }
        found.push(field);
    }
    // One order whatever the passes found first: by path.
    found.sort_by(|a, b| a.path().cmp(b.path()));
    let mut errors = InputErrors::new();
    for field in found {
        errors.push(field);
    }
    Err(errors)
}

/// The whole of gate 1's decoding for a call by name: the argument text parsed strictly
/// within `limits`, then decoded into `T` with every field error, then `validate`d (the
/// tool's own check: passed in, so that this is the one function compiled per input type).
///
/// First the fast way: the input decoded straight from the text, the strict parse's rules
/// watched in the same pass. Only what the watch cannot vouch for takes the slow way
/// (a tree, then decoding pass after pass), which names every error.
pub(crate) fn decode_text<T: DeserializeOwned>(
    text: &str,
    limits: &InputLimits,
    validate: fn(&T) -> Result<(), InputErrors>,
) -> Result<T, InputErrors> {
    let mut slot = None;
    // Matched rather than `?` and mapped: each would be compiled again for every type.
    match decode_text_into(text, limits, &mut |text, watch| {
        decode_with::<T>(text, watch, &mut slot)
    }) {
        // `decode_text_into` says Ok only right after a pass that decoded.
        Ok(()) => match slot {
            Some(input) => match validate(&input) {
                Ok(()) => Ok(input),
                Err(errors) => Err(errors),
            },
            None => Err(InputErrors::new()),
        },
        Err(errors) => Err(errors),
    }
}

/// [`decode_text`] for any input type, compiled once.
fn decode_text_into(
    text: &str,
    limits: &InputLimits,
    decode: &mut DecodeInto<'_>,
) -> Result<(), InputErrors> {
    if watched(text, limits, decode) {
        return Ok(());
    }
    let arguments = parse_arguments(text, limits)?;
    decode_passes(Value::Object(arguments), decode)
}

/// Bounds the passes of [`decode_passes`] on a hostile input with very many bad fields.
const MAX_PASSES: usize = 64;

/// Removes the value at `pointer`, if there is one (a missing field has none), and
/// returns the pointer of the object's field that a stand-in then takes: an array
/// element takes its whole array along (removing one element would renumber the rest).
/// `None` when no object field holds `pointer` (the arguments themselves).
fn take_out(arguments: &mut Value, pointer: &str) -> Option<String> {
    let mut pointer = pointer;
    loop {
        let (parent, token) = pointer.rsplit_once('/')?;
        match arguments.pointer_mut(parent) {
            Some(Value::Object(object)) => {
                let key = pointer_token_key(token);
                object.remove(&key);
                return Some(pointer.to_owned());
            }
            Some(Value::Array(_)) => pointer = parent,
            _ => return None,
        }
    }
}

/// Maps serde's standard messages to a stable code; a missing field's path names the field.
fn classify(mut pointer: String, message: &str) -> FieldError {
    // A missing field is reported at its parent (so may an unknown one be): name the
    // field itself.
    if (message.starts_with("missing field") || message.starts_with("unknown field"))
        && let Some(name) = message.split('`').nth(1)
    {
        let mut token = String::new();
        push_pointer_token(&mut token, name);
        let named = pointer
            .strip_suffix(token.as_str())
            .is_some_and(|parent| parent.ends_with('/'));
        if !named {
            pointer.push('/');
            pointer.push_str(&token);
        }
    }
    let code = if message.starts_with("missing field") {
        "required"
    } else if message.starts_with("invalid type") {
        "invalid_type"
    } else if message.starts_with("unknown variant") || message.starts_with("invalid value") {
        "invalid_value"
    } else if message.starts_with("invalid length") {
        "invalid_length"
    } else if message.starts_with("unknown field") {
        "unknown_field"
    } else if message.starts_with("duplicate field") {
        "duplicate_key"
    } else {
        "invalid"
    };
    FieldError::owned(pointer, code, short(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(text: &str) -> (String, &'static str) {
        let errors = parse_arguments(text, &InputLimits::new()).unwrap_err();
        let error = errors.iter().next().unwrap();
        (error.path().to_owned(), error.code())
    }

    /// Every (path, code) decoding `text` into `T` reports.
    fn every_error<T: DeserializeOwned>(text: &str) -> Vec<(String, &'static str)> {
        let Err(errors) = decode_text::<T>(text, &InputLimits::new(), |_| Ok(())) else {
            panic!("{text} decoded");
        };
        errors
            .iter()
            .map(|error| (error.path().to_owned(), error.code()))
            .collect()
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code, reason = "only decoded")]
    struct Counted {
        items: Vec<u32>,
        n: u32,
        count: core::num::NonZeroU32,
    }

    #[test]
    fn an_error_in_an_array_does_not_hide_the_fields_after_it() {
        assert_eq!(
            every_error::<Counted>(r#"{"items": ["x", 2], "n": "y", "count": 1}"#),
            [
                ("/items/0".to_owned(), "invalid_type"),
                ("/n".to_owned(), "invalid_type")
            ]
        );
    }

    #[test]
    fn a_field_whose_stand_in_is_refused_too_is_reported_once() {
        // A missing nonzero count: its stand-in, 0, is refused at the same place. The
        // field is reported once, as missing, and the decoding stops there.
        assert_eq!(
            every_error::<Counted>(r#"{"items": [], "n": 1}"#),
            [("/count".to_owned(), "required")]
        );
    }

    #[test]
    fn a_refused_stand_in_comes_after_the_fields_the_input_has() {
        // `count` is wrong, and so is its stand-in: were it read before `n`, the pass
        // would stop at it and never reach `n`.
        assert_eq!(
            every_error::<Counted>(r#"{"items": [], "count": 0, "n": "y"}"#),
            [
                ("/count".to_owned(), "invalid_value"),
                ("/n".to_owned(), "invalid_type")
            ]
        );
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        assert_eq!(first(r#"{"a":1,"a":2}"#), ("/a".into(), "duplicate_key"));
        assert_eq!(
            first(r#"{"x":[{"b":1,"b":1}]}"#),
            ("/x/0/b".into(), "duplicate_key")
        );
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(
            first(r#"{"a/b~":{"c":1,"c":2}}"#),
            ("/a~1b~0/c".into(), "duplicate_key")
        );
    }

    #[test]
    fn numbers_stay_exact() {
        assert!(parse_arguments(r#"{"n":9007199254740991}"#, &InputLimits::new()).is_ok());
        assert!(parse_arguments(r#"{"n":-9007199254740991}"#, &InputLimits::new()).is_ok());
        assert_eq!(first(r#"{"n":9007199254740992}"#).1, "number_out_of_range");
        assert_eq!(first(r#"{"n":-9007199254740993}"#).1, "number_out_of_range");
        assert_eq!(
            first(r#"{"n":18446744073709551616}"#).1,
            "number_out_of_range"
        );
        assert_eq!(first(r#"{"n":1e300}"#).1, "number_out_of_range");
        assert!(parse_arguments(r#"{"n":0.1}"#, &InputLimits::new()).is_ok());
    }

    #[test]
    fn every_json_value_is_kept_as_parsed() {
        let text = r#"{"t":true,"f":false,"n":null,"i":-3,"u":7,"x":0.5,"s":"a\u00e9","a":[1,[]],"o":{"k":{}}}"#;
        let parsed = parse_arguments(text, &InputLimits::new()).unwrap();
        let plain: Map<String, Value> = serde_json::from_str(text).unwrap();
        assert_eq!(parsed, plain);
    }

    #[test]
    fn closing_a_container_gives_its_depth_back() {
        let limits = InputLimits::new().with_max_depth(2);
        assert!(parse_arguments(r#"{"a":[1],"b":[2],"c":[3]}"#, &limits).is_ok());
        assert!(parse_arguments(r#"{"a":{},"b":{},"c":{}}"#, &limits).is_ok());
    }

    #[test]
    fn strings_and_keys_may_be_exactly_as_long_as_the_limit() {
        let limits = InputLimits::new().with_max_string_bytes(4);
        assert!(parse_arguments(r#"{"abcd":"wxyz"}"#, &limits).is_ok());
        let errors = parse_arguments(r#"{"abcde":1}"#, &limits).unwrap_err();
        let error = errors.iter().next().unwrap();
        assert_eq!((error.path(), error.code()), ("/abcde", "string_too_long"));
        assert_eq!(
            error.message(),
            "key is 5 bytes, longer than the limit of 4"
        );
        let errors = parse_arguments(r#"{"a":"vwxyz"}"#, &limits).unwrap_err();
        let error = errors.iter().next().unwrap();
        assert_eq!((error.path(), error.code()), ("/a", "string_too_long"));
        assert_eq!(
            error.message(),
            "string is 5 bytes, longer than the limit of 4"
        );
    }

    #[test]
    fn parser_messages_are_passed_on_and_cut_at_200_characters() {
        let errors = parse_arguments(r#"{"a":1,}"#, &InputLimits::new()).unwrap_err();
        let error = errors.iter().next().unwrap();
        assert_eq!(error.code(), "invalid_json");
        assert_eq!(error.message(), "trailing comma at line 1 column 8");
        let long = "é".repeat(300);
        assert_eq!(short(&long), format!("{}…", "é".repeat(200)));
        assert_eq!(short(&long[..400]), long[..400]);
    }

    #[test]
    fn a_value_that_is_not_an_object_is_named() {
        for (text, what) in [
            ("null", "null"),
            ("true", "a boolean"),
            ("1", "a number"),
            (r#""x""#, "a string"),
            ("[]", "an array"),
        ] {
            let errors = parse_arguments(text, &InputLimits::new()).unwrap_err();
            let error = errors.iter().next().unwrap();
            assert_eq!((error.path(), error.code()), ("", "not_an_object"));
            assert_eq!(
                error.message(),
                format!("arguments must be a JSON object, not {what}")
            );
        }
    }

    #[test]
    fn depth_counts_the_arguments_object() {
        let limits = InputLimits::new().with_max_depth(2);
        assert!(parse_arguments(r#"{"a":[1]}"#, &limits).is_ok());
        let errors = parse_arguments(r#"{"a":[[1]]}"#, &limits).unwrap_err();
        assert_eq!(errors.iter().next().unwrap().code(), "too_deep");
    }
}
