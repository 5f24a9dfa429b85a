//! The by-name pipeline on arbitrary name and argument bytes: never a panic, and
//! *execute* only for a known auto tool with an object for arguments.
#![no_main]

#[path = "../../tests/fixtures/desk.rs"]
#[allow(dead_code, unused_macros)]
mod desk;

use cairnloop::approvals::DiscardAudit;
use cairnloop::{Actor, Governor, Outcome, ToolCall};
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
    // A fresh governor per input, and a sink that discards: the store stays small.
    let governor = Governor::new(&DESK).with_audit_sink(DiscardAudit);
    let call = ToolCall::new(&name, &arguments);
    let outcome = pollster::block_on(governor.call(&call, &actor, &desk)).expect("a memory store records");
    if let Outcome::Executed(_) | Outcome::Failed(_) = outcome {
        assert!(matches!(name.as_ref(), "lookup_order" | "tag_ticket"), "executed {name:?}");
        assert!(serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&arguments).is_ok());
    }
});
