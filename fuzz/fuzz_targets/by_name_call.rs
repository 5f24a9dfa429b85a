//! The by-name pipeline on arbitrary name and argument bytes: never a panic, and
//! *execute* only for a known auto tool with an object for arguments.
#![no_main]

#[path = "../../examples/desk/mod.rs"]
#[allow(dead_code, unused_macros)]
mod desk;

use cairnloop::{Actor, CallDecision, Governance, ToolCall};
use desk::{DESK, Desk};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First byte: where the name ends; second: which scopes are granted.
    let Some((&split, rest)) = data.split_first() else { return };
    let Some((&grants, rest)) = rest.split_first() else { return };
    let split = usize::from(split).min(rest.len());
    let name = String::from_utf8_lossy(&rest[..split]);
    let arguments = String::from_utf8_lossy(&rest[split..]);
    let all = ["orders:read", "tickets:write", "refunds:write", "customers:delete", "*", "all", "orders:*", "ORDERS:READ"];
    let scopes: Vec<&str> = all.iter().enumerate().filter(|(i, _)| grants & (1 << i) != 0).map(|(_, s)| *s).collect();
    let actor = Actor::new("admin-1", &scopes).with_account("acme");
    let desk = Desk::default();
    let outcome = DESK.call(&ToolCall::new(&name, &arguments), &actor, &desk, &Governance::new());
    if let CallDecision::Execute(_) = outcome.decision {
        assert!(matches!(name.as_ref(), "lookup_order" | "tag_ticket"), "executed {name:?}");
        assert!(serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&arguments).is_ok());
    }
});
