//! The JSON Schema of a tool's input, fitted to what the input gate accepts.

use serde_json::{Value, json};

/// The input schema of `T`, fitted to what the input gate accepts: every object closed
/// (`additionalProperties: false`) and with an explicit `required` list.
pub(crate) fn input_schema<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    close_objects(&mut schema);
    schema
}

/// Walks a schema through the places that hold subschemas, closing every object schema.
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
