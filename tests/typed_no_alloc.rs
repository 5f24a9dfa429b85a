//! The typed pipeline allocates nothing: `decide` for an auto tool and for an approval
//! tool, counted by a global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use cairnloop::{
    Actor, Decision, InputErrors, Invocation, ModePolicy, PolicyDenial, RiskTier, Scope, Tool,
    ToolSpec, decide,
};

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

struct Lookup;

impl Tool for Lookup {
    const SPEC: ToolSpec = ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly);
    const SCOPES: &'static [Scope] = &[Scope::new("orders:read"), Scope::new("orders:list")];
    type Input = u32;
    type Output = u32;
    type Error = ();
    type Context = ();

    fn validate(_: &u32) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(call: Invocation<'_, Self>) -> Result<u32, ()> {
        Ok(call.into_input())
    }
}

struct Refund;

impl Tool for Refund {
    const SPEC: ToolSpec = ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::HighWrite);
    const SCOPES: &'static [Scope] = &[Scope::new("refunds:write")];
    type Input = u64;
    type Output = ();
    type Error = ();
    type Context = ();

    fn validate(_: &u64) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

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

#[test]
fn the_counter_counts() {
    assert!(allocations_in(|| drop(std::hint::black_box(vec![1u8; 16]))) >= 1);
}
