//! Idempotency keys: RFC 8785 canonical JSON, then SHA-256, with the published RFC 8785
//! vectors and vectors computed independently.
#![cfg(feature = "serde")]

#[macro_use]
#[path = "fixtures/desk.rs"]
mod desk;

use cairnloop::json::canonical_json;
use cairnloop::{Actor, Governor, IdempotencyKey, Outcome, ToolCall};
use desk::{DESK, Desk, EVERY_SCOPE};
use serde_json::{Value, json};

#[test]
fn rfc_8785_section_3_2_2_example() {
    let input = r#"{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }"#;
    let value: Value = serde_json::from_str(input).unwrap();
    assert_eq!(
        canonical_json(&value),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

#[test]
fn rfc_8785_section_3_2_3_sorts_keys_by_utf16_code_units() {
    let input = r#"{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }"#;
    let value: Value = serde_json::from_str(input).unwrap();
    let canonical = canonical_json(&value);
    let back: serde_json::Map<String, Value> = serde_json::from_str(&canonical).unwrap();
    let order: Vec<&str> = canonical
        .split("\":\"")
        .skip(1)
        .map(|part| part.split('"').next().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "Carriage Return",
            "One",
            "Control",
            "Latin Small Letter O With Diaeresis",
            "Euro Sign",
            "Emoji: Grinning Face",
            "Hebrew Letter Dalet With Dagesh"
        ]
    );
    assert_eq!(back.len(), 7);
    assert!(canonical.starts_with(r#"{"\r":"Carriage Return","1":"One","#));
}

#[test]
fn rfc_8785_appendix_b_numbers() {
    let vectors: [(u64, &str); 23] = [
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];
    for (bits, expected) in vectors {
        let value = Value::from(f64::from_bits(bits));
        assert_eq!(canonical_json(&value), expected, "{bits:#018x}");
    }
}

#[test]
fn string_escapes_are_minimal() {
    let value = json!(["\u{1}\u{8}\t\n\u{c}\r\u{1f}\"\\/\u{7f}\u{2028}é😀"]);
    assert_eq!(
        canonical_json(&value),
        "[\"\\u0001\\b\\t\\n\\f\\r\\u001f\\\"\\\\/\u{7f}\u{2028}é😀\"]"
    );
}

#[test]
fn key_vectors_computed_independently() {
    // sha256(json.dumps(envelope, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    let key = IdempotencyKey::for_call(
        "refund_order",
        &json!({"order": 7, "cents": 1250, "reason": "damaged"}),
        Some("agent-1"),
        Some("acme"),
        None,
    );
    assert_eq!(
        key.to_string(),
        "8b8207d2ca54436778615c2a42ee092efc3f7992dee9849fdc58ab4f2e24e5e4"
    );
    // Every part absent: {"account_id":null,"actor_id":null,"dedupe_token":null,"input":null,"tool_ref":""}
    let empty = IdempotencyKey::for_call("", &Value::Null, None, None, None);
    assert_eq!(
        empty.to_string(),
        "1b224ef0cc39d54b5db8743d5ce9ba68404298ef727d2624550d1171062a6e7d"
    );
}

fn key_of(arguments: &str, token: Option<&str>) -> IdempotencyKey {
    let actor = Actor::new("admin-1", EVERY_SCOPE).with_account("acme");
    let desk = Desk::default();
    let mut call = ToolCall::new("refund_order", arguments);
    if let Some(token) = token {
        call = call.with_dedupe_token(token);
    }
    let governor = Governor::new(&DESK);
    match pollster::block_on(governor.call(&call, &actor, &desk)) {
        Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
        other => panic!("expected a proposal, got {other:?}"),
    }
}

#[test]
fn key_order_whitespace_and_escapes_never_change_the_key() {
    let reference = key_of(r#"{"order":7,"cents":1250,"reason":"damaged"}"#, None);
    for same in [
        r#"{"reason":"damaged","cents":1250,"order":7}"#,
        "{\n  \"cents\" : 1250 ,\n\t\"order\": 7, \"reason\": \"damaged\"\n}\n",
        r#"{"order":7,"cents":1250,"reason":"dam\u0061ged"}"#,
    ] {
        assert_eq!(key_of(same, None), reference, "{same}");
    }
}

#[test]
fn number_spellings_share_one_canonical_form() {
    let a: Value = serde_json::from_str(r#"{"n": 1250, "x": 0.5}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{"x": 5e-1, "n": 1.25e3}"#).unwrap();
    assert_eq!(canonical_json(&a), canonical_json(&b));
    assert_eq!(canonical_json(&a), r#"{"n":1250,"x":0.5}"#);
}

#[test]
fn any_change_of_input_or_token_changes_the_key() {
    let reference = key_of(r#"{"order":7,"cents":1250,"reason":"damaged"}"#, None);
    for different in [
        r#"{"order":7,"cents":1251,"reason":"damaged"}"#,
        r#"{"order":8,"cents":1250,"reason":"damaged"}"#,
        r#"{"order":7,"cents":1250,"reason":"late"}"#,
    ] {
        assert_ne!(key_of(different, None), reference, "{different}");
    }
    assert_ne!(
        key_of(r#"{"order":7,"cents":1250,"reason":"damaged"}"#, Some("t")),
        reference
    );
}

#[test]
fn the_key_is_exactly_the_hash_of_the_five_parts() {
    // Nothing else (no conversation or routing id, no timestamp) enters the key: the
    // pipeline's key equals the one built from the five parts alone.
    let from_pipeline = key_of(
        r#"{"order":7,"cents":1250,"reason":"damaged"}"#,
        Some("turn-3"),
    );
    let by_hand = IdempotencyKey::for_call(
        "refund_order",
        &json!({"cents": 1250, "order": 7, "reason": "damaged"}),
        Some("admin-1"),
        Some("acme"),
        Some("turn-3"),
    );
    assert_eq!(from_pipeline, by_hand);
}

#[test]
fn a_key_parses_only_from_its_own_form() {
    let key = IdempotencyKey::for_call("t", &json!({}), None, None, None);
    assert_eq!(key.to_string().parse::<IdempotencyKey>(), Ok(key));
    for bad in [
        "",
        "abc",
        &key.to_string().to_uppercase(),
        &format!("{key}0"),
        &"g".repeat(64),
    ] {
        assert!(bad.parse::<IdempotencyKey>().is_err(), "{bad}");
    }
    assert!(serde_json::from_str::<IdempotencyKey>("\"xyz\"").is_err());
}

#[test]
fn hex_display_debug_and_serde_spell_the_same_digits() {
    let bytes: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0xa5);
    let key = IdempotencyKey::from_bytes(bytes);
    let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(key.to_hex(), expected);
    assert_eq!(key.to_string(), expected);
    assert_eq!(format!("{key:?}"), format!("IdempotencyKey({expected})"));
    assert_eq!(serde_json::to_value(key).unwrap(), json!(expected));
    assert_eq!(expected.parse::<IdempotencyKey>(), Ok(key));
    assert_eq!(
        serde_json::from_value::<IdempotencyKey>(json!(expected)).unwrap(),
        key
    );
}

/// A key is computed only where it is needed: for a proposal, or when a tool asks for
/// its run key. The input's `Serialize`, which every key computation goes through,
/// counts how often it is called.
mod computed_only_when_needed {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use cairnloop::approvals::{AuditRecord, TypedOutcome};
    use cairnloop::{Actor, Governor, Outcome, Registry, RiskTier, ToolCall, ToolEntry, ToolSpec};
    use serde::ser::SerializeStruct;
    use sha2::Digest;

    static SERIALIZED: AtomicUsize = AtomicUsize::new(0);

    #[derive(serde::Deserialize)]
    struct Counted {
        n: u32,
    }

    impl serde::Serialize for Counted {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            SERIALIZED.fetch_add(1, Ordering::SeqCst);
            let mut s = serializer.serialize_struct("Counted", 1)?;
            s.serialize_field("n", &self.n)?;
            s.end()
        }
    }

    macro_rules! counted_tool {
        ($tool:ident, $name:literal, $tier:expr, asks_key: $asks:literal) => {
            plain_tool!($tool(Counted) -> Result<Option<String>, String>, (),
                ToolSpec::new($name, "Counted", "Counts.", $tier),
                ["count:use"],
                |call| {
                    Ok(if $asks {
                        call.run_key().map(|key| key.to_string())
                    } else {
                        None
                    })
                }
            );
        };
    }

    counted_tool!(CountRead, "count_read", RiskTier::ReadOnly, asks_key: false);
    counted_tool!(CountKeyed, "count_keyed", RiskTier::ReadOnly, asks_key: true);
    counted_tool!(CountWrite, "count_write", RiskTier::LowWrite, asks_key: false);

    static COUNTED: Registry<()> = Registry::new(&[
        ToolEntry::json::<CountRead>(),
        ToolEntry::json::<CountKeyed>(),
        ToolEntry::json::<CountWrite>(),
    ]);

    fn serialized_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
        let before = SERIALIZED.load(Ordering::SeqCst);
        let result = f();
        (result, SERIALIZED.load(Ordering::SeqCst) - before)
    }

    #[test]
    fn a_call_that_runs_at_once_or_is_blocked_computes_no_key() {
        let governor = Governor::new(&COUNTED);
        let actor = Actor::new("agent-7", &["count:use"]);
        let call = |name: &str, args: &str| {
            pollster::block_on(governor.call(&ToolCall::new(name, args), &actor, &())).unwrap()
        };

        // By name, executed at once: no key, and none in its decision record.
        let (outcome, count) = serialized_during(|| call("count_read", r#"{"n": 1}"#));
        assert_eq!(
            (outcome, count),
            (Outcome::Executed(serde_json::Value::Null), 0)
        );
        let Some(AuditRecord::Decision(record)) =
            pollster::block_on(governor.events()).unwrap().pop()
        else {
            panic!("a decision record")
        };
        assert_eq!(
            (record.decision.as_ref(), record.idempotency_key),
            ("execute", None)
        );

        // Typed, executed at once: no key.
        let (outcome, count) = serialized_during(|| {
            pollster::block_on(governor.call_typed::<CountRead>(Counted { n: 2 }, &actor, &()))
        });
        assert!(matches!(outcome, Ok(TypedOutcome::Executed(None))));
        assert_eq!(count, 0);

        // Blocked: no key.
        let stranger = Actor::new("stranger", &[]);
        let (outcome, count) = serialized_during(|| {
            let call = ToolCall::new("count_read", r#"{"n": 3}"#);
            pollster::block_on(governor.call(&call, &stranger, &())).unwrap()
        });
        assert_eq!((outcome.code(), count), ("scope_missing", 0));

        // A proposal: the key, computed once.
        let (outcome, count) = serialized_during(|| call("count_write", r#"{"n": 4}"#));
        assert_eq!((outcome.code(), count), ("awaiting_approval", 1));

        // A tool that asks for its run key gets the key of its call, computed then.
        let (outcome, count) = serialized_during(|| call("count_keyed", r#"{"n": 5}"#));
        // The SHA-256 of the canonical envelope, spelled out here.
        let envelope = r#"{"account_id":null,"actor_id":"agent-7","dedupe_token":null,"input":{"n":5},"tool_ref":"count_keyed"}"#;
        let expected: String = sha2::Sha256::digest(envelope.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        assert_eq!(outcome, Outcome::Executed(serde_json::json!(expected)));
        assert_eq!(count, 1);
    }
}
