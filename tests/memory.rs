//! The default governor stays the same size however many calls it answers: its memory
//! store keeps the newest events in a ring (cursors stay exact, the dropped are counted),
//! and nothing else grows per call. Measured by counting the bytes the process has
//! allocated and not freed, not by timing.
#![cfg(all(feature = "serde", feature = "std"))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use cairnloop::approvals::{ApprovalStore, AuditRecord, MemoryStore};
use cairnloop::{
    Actor, Governor, InputErrors, Invocation, Outcome, PolicyDenial, Registry, RiskTier, Scope,
    Tool, ToolCall, ToolEntry, ToolSpec,
};

/// The system allocator, counting live bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// The library forbids unsafe code; this test binary's counting allocator needs it, and
// only forwards to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

struct Ping;

impl Tool for Ping {
    const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers pong.", RiskTier::ReadOnly);
    const SCOPES: &'static [Scope] = &[];
    type Input = serde_json::Value;
    type Output = &'static str;
    type Error = String;
    type Context = ();

    fn validate(_: &serde_json::Value) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<&'static str, String> {
        Ok("pong")
    }
}

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<Ping>()]);

fn calls(governor: &Governor<()>, from: u64, count: u64) {
    let actor = Actor::new("agent-1", &[]);
    for n in from..from + count {
        let args = format!("{{\"n\":{n}}}");
        let outcome = pollster::block_on(governor.call(&ToolCall::new("ping", &args), &actor, &()));
        assert!(matches!(outcome, Ok(Outcome::Executed(_))));
    }
}

#[test]
fn a_million_calls_leave_the_default_governor_the_same_size() {
    let governor = Governor::new(&TOOLS);
    let capacity = MemoryStore::DEFAULT_EVENT_CAPACITY as u64;
    // Fill the ring, then measure across many more calls.
    calls(&governor, 0, capacity);
    let full = LIVE.load(Ordering::Relaxed);
    calls(&governor, capacity, 1_000_000 - capacity);
    let after = LIVE.load(Ordering::Relaxed);
    // The ring holds records of the same shape, so what is live differs by little: far
    // less than one more ring's worth (every record is over 100 bytes).
    let grown = after - full;
    assert!(
        grown < 100 * capacity as isize / 10,
        "the governor grew by {grown} bytes over 990,000 calls"
    );

    let store = governor.store();
    assert_eq!(store.evicted_events(), Ok(1_000_000 - capacity));
    let kept = pollster::block_on(store.events_since(0, usize::MAX)).unwrap();
    assert_eq!(kept.len() as u64, capacity);
    // Sequence numbers stay exact: the kept ones are the newest, in order, no gaps.
    let seqs: Vec<u64> = kept.iter().map(|(seq, _)| *seq).collect();
    let expected: Vec<u64> = (1_000_000 - capacity + 1..=1_000_000).collect();
    assert_eq!(seqs, expected);
    // A cursor inside the ring reads from there; one behind it reads what is kept.
    let page = pollster::block_on(store.events_since(999_998, 10)).unwrap();
    assert_eq!(
        page.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
        [999_999, 1_000_000]
    );
    assert!(matches!(&kept[0].1, AuditRecord::Decision(event) if event.decision == "execute"));
}

#[test]
fn a_ring_of_three_keeps_the_newest_three_with_their_numbers() {
    let store = MemoryStore::new().with_event_capacity(3);
    let governor = Governor::new(&TOOLS).with_store(store);
    calls(&governor, 0, 5);
    let kept = pollster::block_on(governor.store().events_since(0, 10)).unwrap();
    assert_eq!(
        kept.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
        [3, 4, 5]
    );
    assert_eq!(governor.store().evicted_events(), Ok(2));
    let after_four = pollster::block_on(governor.store().events_since(4, 10)).unwrap();
    assert_eq!(after_four.len(), 1);
}
