//! One path of a call by name, in a loop, for a profiler:
//!
//! ```sh
//! cargo bench -p cairnloop-benches --bench profile --no-run
//! valgrind --tool=callgrind target/release/deps/profile-* executes 20000
//! ```
//!
//! Paths: `floor`, `repeated` (the same proposal made again: its lane found),
//! `default_governor` (the call that executes, its decision kept in the memory store's
//! full event ring, as the governance bench's), each name of `cairnloop_benches::Path::ALL`, `visibility_1000` (one
//! listing of 1,000 tools for an actor with five scopes, as the governance bench's) and
//! `visibility_floor` (its floor, the bench's too).

use cairnloop_benches::{
    LISTING_SCOPES, Path, R1000, SHIPMENT, call, discarding, discarding_all, floor,
};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "executes".into());
    let times: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    if path == "visibility_1000" {
        let actor = cairnloop::Actor::new("agent", &LISTING_SCOPES);
        let policy = cairnloop::ModePolicy::new();
        let visible: usize = (0..times)
            .map(|_| {
                cairnloop::gate::visible(&R1000, std::hint::black_box(&actor), &(), &policy).count()
            })
            .sum();
        println!("visibility_1000: {visible} visible ×{times}");
        return;
    }
    if path == "visibility_floor" {
        let visible: usize = (0..times)
            .map(|_| cairnloop_benches::visibility_floor())
            .sum();
        println!("visibility_floor: {visible} visible ×{times}");
        return;
    }
    if path == "floor" {
        let ok = (0..times)
            .filter(|_| floor(std::hint::black_box(SHIPMENT)))
            .count();
        println!("floor: {ok} of {times}");
        return;
    }
    if path == "repeated" {
        // The same proposal made again and again: its lane found each time.
        let governor = discarding();
        let mut last = "";
        for _ in 0..times {
            last = call(&governor, Path::Proposal, std::hint::black_box(SHIPMENT));
        }
        println!("repeated: {last} ×{times}");
        return;
    }
    if path == "default_governor" {
        let governor = cairnloop_benches::governor_with_store_log();
        for _ in 0..cairnloop::approvals::MemoryStore::DEFAULT_EVENT_CAPACITY {
            call(&governor, Path::Executes, SHIPMENT);
        }
        let mut last = "";
        for _ in 0..times {
            last = call(&governor, Path::Executes, std::hint::black_box(SHIPMENT));
        }
        println!("default_governor: {last} ×{times}");
        return;
    }
    let Some(&(chosen, _)) = Path::ALL.iter().find(|(_, name)| *name == path) else {
        eprintln!("unknown path {path}");
        std::process::exit(2);
    };
    let governor = discarding();
    let mut last = "";
    if matches!(chosen, Path::Proposal) {
        // A store that keeps nothing: each call a new proposal, as in the bench.
        let pipeline = discarding_all();
        for _ in 0..times {
            last = call(&pipeline, chosen, std::hint::black_box(SHIPMENT));
        }
    } else {
        for _ in 0..times {
            last = call(&governor, chosen, std::hint::black_box(SHIPMENT));
        }
    }
    println!("{path}: {last} ×{times}");
}
