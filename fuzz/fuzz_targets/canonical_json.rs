//! RFC 8785 canonicalisation on any JSON: it reparses to the same value and is a fixed
//! point; and the fallback preview, which reads that text, shows an object without a
//! panic, one row per value up to its limit.
#![no_main]

use cairnloop::json::{Preview, canonical_json};
use cairnloop::{Actor, ModePolicy, RiskTier, ToolSpec};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else { return };
    let canonical = canonical_json(&value);
    let reparsed: serde_json::Value = serde_json::from_str(&canonical).expect("canonical JSON parses");
    assert_eq!(canonical_json(&reparsed), canonical, "canonical form is a fixed point");
    if let serde_json::Value::Object(object) = &value {
        const SPEC: ToolSpec = ToolSpec::new("fuzz", "Fuzz", "Fuzzed.", RiskTier::HighWrite);
        let mode = ModePolicy::<()>::new().resolve(&SPEC, &Actor::new("a", &[]), &());
        let preview = Preview::fallback(&SPEC, &[], &mode, object);
        let rows = preview.text().split_once("\ninput:").expect("an input part").1;
        // Each row begins on a line of its own ("\n  "); a value's own line breaks are
        // escaped, so that no row can be forged.
        let shown = rows.matches("\n  ").count();
        // 40 rows at most, then one line that counts the rest.
        let values: usize = object.values().map(leaves).sum();
        assert_eq!(shown, if values > 40 { 41 } else { values }, "{rows}");
        assert_eq!(object.is_empty(), rows == " none", "{rows}");
    }
});

/// The values a preview shows a row for: every value that is not a non-empty object or
/// array.
fn leaves(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Object(object) if !object.is_empty() => object.values().map(leaves).sum(),
        serde_json::Value::Array(items) if !items.is_empty() => items.iter().map(leaves).sum(),
        _ => 1,
    }
}
