//! The SQLite store in its default mode: full lifecycles (propose → approve → execute)
//! per second, one page of 50 pending lanes out of 100,000 stored, and what the outbox
//! adds to a proposal: proposals per second with a process delivering every notice as it
//! goes, against the same without an outbox, in one run (goal: at most 10% slower).
//!
//! `scripts/with_postgres.sh cargo bench -p cairnloop-benches --bench stores` (without the
//! script, PostgreSQL is left out)

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cairnloop::approvals::{ApprovalStore, DiscardAudit, MemoryStore};
use cairnloop::gate::LaneState;
use cairnloop::stores::{PostgresStore, SqliteStore};
use cairnloop::{Actor, Governor, Outcome, Registry, ToolCall, ToolEntry};
use cairnloop_benches::RefundOrder;
use criterion::Criterion;

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<RefundOrder>()]);

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cairnloop-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Full lifecycles through a governor over `store`: criterion's figure, then a plain
/// per-second count over three seconds.
fn lifecycle<S: ApprovalStore + 'static>(c: &mut Criterion, name: &str, store: S) {
    let governor = Governor::new(&TOOLS)
        .with_store(store)
        // The store's own log keeps the transitions; decisions are discarded here.
        .with_audit_sink(DiscardAudit);
    let agent = Actor::new("agent-7", &["refunds:write"]);
    let next = AtomicU64::new(0);
    let once = || {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let arguments = format!(r#"{{"order": {n}, "cents": 1250}}"#);
        let call = ToolCall::new("refund_order", &arguments);
        let Ok(Outcome::AwaitingApproval(lane)) =
            pollster::block_on(governor.call(&call, &agent, &()))
        else {
            panic!("a proposal")
        };
        pollster::block_on(governor.approve(&lane.key(), "ops-lead")).unwrap();
        black_box(pollster::block_on(governor.execute(&lane.key(), &agent, &())).unwrap());
    };
    let mut group = c.benchmark_group(name);
    group.sample_size(20);
    group.bench_function("lifecycle", |b| b.iter(once));
    group.finish();
    let start = Instant::now();
    let mut done = 0u64;
    while start.elapsed() < Duration::from_secs(3) {
        once();
        done += 1;
    }
    let rate = done as f64 / start.elapsed().as_secs_f64();
    println!("\n{name}: full lifecycles per second: {rate:.0}");
}

fn lifecycles(c: &mut Criterion) {
    lifecycle(c, "memory", MemoryStore::with_capacity(10_000_000));
    let dir = scratch("lifecycle");
    lifecycle(
        c,
        "sqlite",
        SqliteStore::open(dir.join("approvals.db")).unwrap(),
    );
    let _ = std::fs::remove_dir_all(&dir);
    // PostgreSQL when a server is at hand (scripts/with_postgres.sh starts one).
    match std::env::var("CAIRNLOOP_POSTGRES") {
        Ok(config) => lifecycle(c, "postgres", PostgresStore::connect(&config).unwrap()),
        Err(_) => println!("\npostgres: no CAIRNLOOP_POSTGRES, not measured"),
    }
}

fn listing(c: &mut Criterion) {
    let dir = scratch("listing");
    let path = dir.join("approvals.db");
    // 100,000 lanes, one in twenty pending, written through the store once...
    let template = {
        let governor = Governor::new(&TOOLS).with_store(SqliteStore::open(&path).unwrap());
        let call = ToolCall::new("refund_order", r#"{"order": 0, "cents": 1}"#);
        let agent = Actor::new("agent-7", &["refunds:write"]);
        let Ok(Outcome::AwaitingApproval(lane)) =
            pollster::block_on(governor.call(&call, &agent, &()))
        else {
            panic!("a proposal")
        };
        serde_json::to_value(&*lane).unwrap()
    };
    // ...then copied in bulk, with distinct keys, in one transaction.
    {
        let mut connection = rusqlite::Connection::open(&path).unwrap();
        let transaction = connection.transaction().unwrap();
        {
            let mut insert = transaction
                .prepare("INSERT OR REPLACE INTO lanes (key, state, version, lane) VALUES (?1, ?2, 0, ?3)")
                .unwrap();
            for n in 0..100_000u64 {
                let key = format!("{:064x}", n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let state = if n % 20 == 0 { "pending" } else { "executed" };
                let mut lane = template.clone();
                lane["proposal"]["idempotency_key"] = key.clone().into();
                lane["state"] = state.into();
                insert
                    .execute(rusqlite::params![key, state, lane.to_string()])
                    .unwrap();
            }
        }
        transaction.commit().unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let mut group = c.benchmark_group("sqlite");
    group.bench_function("list_50_pending_of_100k", |b| {
        b.iter(|| {
            let page = pollster::block_on(store.list(LaneState::Pending, None, 50)).unwrap();
            assert_eq!(page.len(), 50);
            black_box(page)
        })
    });
    group.finish();
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Says every notice delivered at once.
struct Delivered;

impl cairnloop::approvals::Notifier for Delivered {
    fn proposed(
        &self,
        _: cairnloop::approvals::Notice,
        report: cairnloop::approvals::NoticeReport,
    ) {
        report.delivered("bench", 1);
    }
}

/// Proposals per second for `seconds` through `governor`, numbered from `first`.
fn proposals_per_second(governor: &Governor<(), SqliteStore>, first: u64, seconds: u64) -> f64 {
    let agent = Actor::new("agent-7", &["refunds:write"]);
    let start = Instant::now();
    let mut n = first;
    while start.elapsed() < Duration::from_secs(seconds) {
        let arguments = format!(r#"{{"order": {n}, "cents": 1250}}"#);
        let call = ToolCall::new("refund_order", &arguments);
        let proposed = pollster::block_on(governor.call(&call, &agent, &()));
        assert!(matches!(proposed, Ok(Outcome::AwaitingApproval(_))));
        n += 1;
    }
    (n - first) as f64 / start.elapsed().as_secs_f64()
}

/// Proposals on SQLite: without an outbox; with one that nobody delivers meanwhile (what
/// the outbox adds to the proposal itself); and with one delivered as it goes, a pass at
/// most every 100 ms as the gateway runs it (the deliveries' own writes share SQLite's
/// one writer). Three rounds of each, alternating.
fn outbox() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let dir = scratch("outbox");
    let plain = Governor::new(&TOOLS)
        .with_store(SqliteStore::open(dir.join("plain.db")).unwrap())
        .with_audit_sink(DiscardAudit);
    let told = Arc::new(
        Governor::new(&TOOLS)
            .with_store(SqliteStore::open(dir.join("outbox.db")).unwrap())
            .with_audit_sink(DiscardAudit)
            .with_outbox("bench", Delivered),
    );
    // The deliverer, as a gateway runs it: a pass when the store moves, at most every
    // 100 ms, while `delivering` says so.
    let (running, delivering) = (
        Arc::new(AtomicBool::new(true)),
        Arc::new(AtomicBool::new(false)),
    );
    let deliverer = {
        let (told, running, delivering) = (
            Arc::clone(&told),
            Arc::clone(&running),
            Arc::clone(&delivering),
        );
        std::thread::spawn(move || {
            let watch = told.watch().unwrap_or_default();
            let mut delivered = 0;
            while running.load(Ordering::Relaxed) {
                let (seen, began) = (watch.generation(), Instant::now());
                if delivering.load(Ordering::Relaxed) {
                    delivered += pollster::block_on(told.deliver_notices("bench"))
                        .unwrap()
                        .delivered;
                }
                pollster::block_on(watch.changed(seen, Duration::from_secs(1)));
                std::thread::sleep(Duration::from_millis(100).saturating_sub(began.elapsed()));
            }
            delivered
        })
    };
    let (mut without, mut owed, mut with) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..3 {
        without.push(proposals_per_second(&plain, round * 1_000_000, 3));
        delivering.store(false, Ordering::Relaxed);
        owed.push(proposals_per_second(
            &told,
            10_000_000 + round * 1_000_000,
            3,
        ));
        delivering.store(true, Ordering::Relaxed);
        with.push(proposals_per_second(
            &told,
            20_000_000 + round * 1_000_000,
            3,
        ));
    }
    running.store(false, Ordering::Relaxed);
    let delivered = deliverer.join().unwrap();
    let best = |rates: &[f64]| rates.iter().copied().fold(0.0, f64::max);
    let cost = |rates: &[f64]| (1.0 - best(rates) / best(&without)) * 100.0;
    println!(
        "\nsqlite: proposals per second without an outbox {:.0}; with one, nobody delivering {:.0} \
         (the outbox adds {:.1}% to a proposal, goal ≤ 10%); delivered as it goes {:.0} \
         ({:.1}% with the deliveries' own writes, {delivered} notices delivered)",
        best(&without),
        best(&owed),
        cost(&owed),
        best(&with),
        cost(&with)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    lifecycles(&mut criterion);
    listing(&mut criterion);
    outbox();
    criterion.final_summary();
}
