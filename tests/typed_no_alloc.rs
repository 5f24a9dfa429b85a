//! The typed pipeline allocates nothing: `decide` for an auto tool and for an approval
//! tool, counted by a global allocator. A call by name that gate 2 or 3 blocks allocates
//! only what decoding its input allocates.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use cairnloop::{Actor, Decision, ModePolicy, RiskTier, ToolSpec, decide};

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

plain_tool!(Lookup(u32) -> Result<u32, ()>, (),
    ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly),
    ["orders:read", "orders:list"],
    |call| { Ok(call.into_input()) }
);

plain_tool!(Refund(u64) -> Result<(), ()>, (),
    ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::HighWrite),
    ["refunds:write"],
    |call| { Ok(()) }
);

#[test]
fn typed_decisions_allocate_nothing() {
    let actor = Actor::new("agent", &["orders:read", "orders:list", "refunds:write"]);
    let policy =
        ModePolicy::new().with_tier(RiskTier::LowWrite, cairnloop::ApprovalMode::AlwaysBlock);
    let mut codes = [""; 3];
    let counted = allocations_in(|| {
        codes[0] = decide::<Lookup>(7, &actor, &(), &policy).code();
        codes[1] = decide::<Refund>(1250, &actor, &(), &policy).code();
        let guest = Actor::new("guest", &[]);
        codes[2] = match decide::<Lookup>(7, &guest, &(), &policy) {
            Decision::Blocked(blocked) => blocked.code(),
            _ => "not blocked",
        };
    });
    assert_eq!(codes, ["execute", "await_approval", "scope_missing"]);
    assert_eq!(counted, 0);
}

/// Calls by name: the governor and JSON inputs need `std` and `serde`.
#[cfg(all(feature = "serde", feature = "std"))]
mod by_name {
    use super::*;
    use cairnloop::{InputErrors, Invocation, PolicyDenial, Scope, Tool};

    /// An input that allocates when decoded (its note).
    #[derive(serde::Deserialize, serde::Serialize)]
    struct Shipment {
        order: u32,
        note: String,
    }

    struct Ship;

    impl Tool for Ship {
        const SPEC: ToolSpec = ToolSpec::new("ship", "Ship", "Ships.", RiskTier::ReadOnly);
        const SCOPES: &'static [Scope] = &[Scope::new("orders:write")];
        type Input = Shipment;
        type Output = ();
        type Error = String;
        type Context = bool;

        fn validate(_: &Shipment) -> Result<(), InputErrors> {
            Ok(())
        }

        fn authorize(_: &Actor<'_>, paused: &bool) -> Result<(), PolicyDenial> {
            if *paused {
                Err(PolicyDenial::Denied("shipping is paused"))
            } else {
                Ok(())
            }
        }

        async fn run(_: Invocation<'_, Self>) -> Result<(), String> {
            Ok(())
        }
    }

    static SHIPPING: cairnloop::Registry<bool> =
        cairnloop::Registry::new(&[cairnloop::ToolEntry::json::<Ship>()]);

    /// Polled once with a waker that does nothing: these calls never wait, and a runtime
    /// would allocate on its own.
    fn now<F: std::future::Future>(future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(output) => output,
            std::task::Poll::Pending => panic!("a blocked call waited"),
        }
    }

    #[test]
    fn a_call_blocked_at_gate_2_or_3_allocates_only_its_decoding() {
        let governor =
            cairnloop::Governor::new(&SHIPPING).with_audit_sink(cairnloop::approvals::DiscardAudit);
        let arguments = r#"{"order": 1001, "note": "leave at the door"}"#;
        let call = cairnloop::ToolCall::new("ship", arguments);
        let decoding = allocations_in(|| {
            drop(std::hint::black_box(serde_json::from_str::<Shipment>(
                arguments,
            )));
        });
        assert_eq!(decoding, 1, "the note");
        let guest = Actor::new("guest", &[]);
        let shipper = Actor::new("shipper", &["orders:write"]);
        for (actor, paused, code) in [
            (&guest, false, "scope_missing"),
            (&shipper, true, "policy_denied"),
        ] {
            let mut answer = String::new();
            let counted = allocations_in(|| {
                let outcome = now(governor.call(&call, actor, &paused));
                answer = match outcome {
                    Ok(cairnloop::Outcome::Blocked(blocked)) => blocked.code().to_owned(),
                    _ => "not blocked".to_owned(),
                };
            });
            assert_eq!(answer, code);
            // One more: the answer's own string, made inside the count.
            assert_eq!(counted, decoding + 1, "{code}");
        }
    }
}

#[test]
fn the_counter_counts() {
    assert!(allocations_in(|| drop(std::hint::black_box(vec![1u8; 16]))) >= 1);
}
