//! The JSON Schema of a tool's input, fitted to what the input gate accepts.

use alloc::string::String;

use serde_json::{Value, json};

/// The input schema of `T`, fitted to what the input gate accepts: every object closed
/// (`additionalProperties: false`) and with an explicit `required` list, and every
/// integer bounded by what its type holds and what the decoder takes (±(2^53 − 1)).
pub(crate) fn input_schema<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    close_objects(&mut schema);
    schema
}

/// The schema of an output type `T`, as its values are serialised: no `$schema` line
/// (it is embedded in an envelope), its `$defs` at its root.
pub(crate) fn output_schema<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(object) = &mut schema {
        object.remove("$schema");
    }
    schema
}

/// The largest integer the decoder accepts: beyond it a JSON number is not exact.
const MAX_SAFE: i64 = (1 << 53) - 1;

/// The range of an integer schema's `format`, within what the decoder accepts.
fn integer_range(format: Option<&str>) -> (i64, i64) {
    match format {
        Some("uint8") => (0, i64::from(u8::MAX)),
        Some("uint16") => (0, i64::from(u16::MAX)),
        Some("uint32") => (0, i64::from(u32::MAX)),
        Some(format) if format.starts_with("uint") => (0, MAX_SAFE),
        Some("int8") => (i64::from(i8::MIN), i64::from(i8::MAX)),
        Some("int16") => (i64::from(i16::MIN), i64::from(i16::MAX)),
        Some("int32") => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => (-MAX_SAFE, MAX_SAFE),
    }
}

/// Bounds an integer schema: `minimum` and `maximum` no wider than the decoder takes.
fn bound_integer(object: &mut serde_json::Map<String, Value>) {
    let integer = match object.get("type") {
        Some(Value::String(kind)) => kind == "integer",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "integer"),
        _ => false,
    };
    if !integer {
        return;
    }
    let (low, high) = integer_range(object.get("format").and_then(Value::as_str));
    let minimum = object
        .get("minimum")
        .and_then(Value::as_i64)
        .map_or(low, |minimum| minimum.max(low));
    let maximum = object
        .get("maximum")
        .and_then(Value::as_i64)
        .map_or(high, |maximum| maximum.min(high));
    object.insert("minimum".into(), minimum.into());
    object.insert("maximum".into(), maximum.into());
}

/// Walks a schema through the places that hold subschemas, closing every object schema
/// and bounding every integer.
fn close_objects(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    if object.contains_key("properties") || object.get("type") == Some(&json!("object")) {
        object
            .entry("additionalProperties")
            .or_insert(Value::Bool(false));
        object.entry("required").or_insert_with(|| json!([]));
    }
    bound_integer(object);
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = object.get_mut(key) {
            children.values_mut().for_each(close_objects);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = object.get_mut(key) {
            children.iter_mut().for_each(close_objects);
        }
    }
    for key in ["items", "additionalProperties", "not", "if", "then", "else"] {
        if let Some(child) = object.get_mut(key) {
            close_objects(child);
        }
    }
}
