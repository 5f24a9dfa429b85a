//! Allocations and memory of each budgeted path, counted by a global allocator:
//!
//! ```sh
//! cargo bench -p cairnloop-benches --bench allocations
//! ```
//!
//! For each path: allocations per call (ours and the floor's), the most memory a call
//! holds at once beyond what it started with, and what is still held after 10,000 calls
//! (with an audit sink that discards, nothing should be).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use cairnloop_benches::{Path, SHIPMENT, call, discarding, floor};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(bytes: usize) {
    let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(
        isize::try_from(bytes).unwrap_or(isize::MAX),
        Ordering::Relaxed,
    );
}

// SAFETY: forwards every call to the system allocator; it only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        grew(layout.size());
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrank(layout.size());
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        shrank(layout.size());
        grew(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f`, and the most bytes it held at once beyond what was live
/// before it.
fn measure(f: impl FnOnce()) -> (usize, isize) {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    f();
    let peak = PEAK.load(Ordering::Relaxed) - live;
    (ALLOCATIONS.load(Ordering::Relaxed) - before, peak)
}

fn main() {
    let input_value = std::mem::size_of::<cairnloop_benches::Shipment>()
        + "DHL".len()
        + "leave at the door".len();
    println!(
        "argument text: {} bytes; the decoded input: {input_value} bytes\n",
        SHIPMENT.len()
    );
    println!(
        "{:<28} {:>8} {:>8} {:>7} {:>12} {:>16}",
        "path", "allocs", "floor", "ratio", "peak bytes", "held after 10k"
    );
    let (floor_allocations, floor_peak) = measure(|| {
        std::hint::black_box(floor(SHIPMENT));
    });
    println!(
        "{:<28} {:>8} {:>8} {:>7} {:>12} {:>16}",
        "floor", floor_allocations, "", "", floor_peak, ""
    );
    for (path, name) in Path::ALL {
        let governor = discarding();
        // Once first: a proposal is then the same call found again (a repeat), which
        // the budget for "nothing grows per call" is about; the first call is measured
        // on its own store.
        let fresh = discarding();
        let (allocations, peak) = measure(|| {
            std::hint::black_box(call(&fresh, path, SHIPMENT));
        });
        call(&governor, path, SHIPMENT);
        let live = LIVE.load(Ordering::Relaxed);
        for _ in 0..10_000 {
            std::hint::black_box(call(&governor, path, SHIPMENT));
        }
        let held = LIVE.load(Ordering::Relaxed) - live;
        #[allow(clippy::cast_precision_loss, reason = "small counts")]
        let ratio = allocations as f64 / floor_allocations.max(1) as f64;
        println!(
            "{name:<28} {allocations:>8} {floor_allocations:>8} {ratio:>7.2} {peak:>12} {held:>16}"
        );
    }
}
