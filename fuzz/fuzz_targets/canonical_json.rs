//! RFC 8785 canonicalisation on any JSON: it reparses to the same value and is a fixed
//! point.
#![no_main]

use cairnloop::json::canonical_json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else { return };
    let canonical = canonical_json(&value);
    let reparsed: serde_json::Value = serde_json::from_str(&canonical).expect("canonical JSON parses");
    assert_eq!(canonical_json(&reparsed), canonical, "canonical form is a fixed point");
});
