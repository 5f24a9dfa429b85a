//! From a commit to a subscriber's wake-up, under load: one store (with its own pool and
//! its own listening connection, as another process has) runs `--tasks` tasks of full
//! lifecycles, and every 20 ms a probe proposes a new call through it; a second store on
//! the same database watches, and the time from the probe's commit (its proposal
//! answered) to the watcher's first wake-up after it, with the lane then read through the
//! watcher, is recorded. Percentiles of the probes, and the load's lifecycles per second,
//! are printed. It stops by itself; not part of `.ci/run`.
//!
//! ```sh
//! scripts/with_postgres.sh --fsync cargo bench -p cairnloop-benches --bench watch_latency -- --store postgres
//! cargo bench -p cairnloop-benches --bench watch_latency -- --store sqlite
//! ```
//!
//! Options: `--store postgres|sqlite`, `--tasks T` (32), `--seconds S` (10).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cairnloop::approvals::ApprovalStore;
use cairnloop::stores::{PostgresOptions, PostgresStore, SqliteStore};
use cairnloop::{Actor, Governor, Outcome, Registry, ToolCall, ToolEntry};
use serde::{Deserialize, Serialize};

#[macro_use]
#[path = "../tests/fixtures/plain_tool.rs"]
mod plain_tool;

#[derive(Deserialize, Serialize)]
struct Refund {
    order: u64,
}

plain_tool!(
    RefundOrder,
    "refund_order",
    HighWrite,
    [],
    |input: Refund| -> u64 { input.order }
);

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<RefundOrder>()]);

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut store, mut tasks, mut seconds) = (String::from("postgres"), 32usize, 10u64);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--store" => store = args.next().unwrap_or_default(),
            "--tasks" => tasks = args.next().and_then(|n| n.parse().ok()).unwrap_or(tasks),
            "--seconds" => seconds = args.next().and_then(|n| n.parse().ok()).unwrap_or(seconds),
            "--bench" => {}
            other => panic!("unknown option {other}"),
        }
    }
    match store.as_str() {
        "postgres" => {
            let server = std::env::var("CAIRNLOOP_POSTGRES")
                .expect("run under scripts/with_postgres.sh: CAIRNLOOP_POSTGRES names the server");
            let options = PostgresOptions::new().pool_size(tasks.max(4));
            let load = PostgresStore::connect_with(&server, options).unwrap();
            let watcher = PostgresStore::connect(&server).unwrap();
            measure("PostgreSQL", load, watcher, tasks, seconds);
        }
        "sqlite" => {
            let dir = std::env::temp_dir().join(format!("cairnloop-watch-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("approvals.db");
            let load = SqliteStore::open(&file).unwrap();
            let watcher = SqliteStore::open(&file).unwrap();
            measure("SQLite", load, watcher, tasks, seconds);
            let _ = std::fs::remove_dir_all(dir);
        }
        other => panic!("unknown store {other}"),
    }
}

fn measure<S: ApprovalStore + 'static>(
    name: &str,
    load: S,
    watcher: S,
    tasks: usize,
    seconds: u64,
) {
    let governor = Arc::new(Governor::new(&TOOLS).with_store(load));
    let watch = watcher.watch().expect("a store that can be watched");
    let stop = Arc::new(AtomicBool::new(false));
    let (next, done) = (
        Arc::new(AtomicU64::new(1_000_000)),
        Arc::new(AtomicU64::new(0)),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Give the watcher's listening connection a moment to be up.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let workers: Vec<_> = (0..tasks)
        .map(|_| {
            let (governor, stop, next, done) = (
                Arc::clone(&governor),
                Arc::clone(&stop),
                Arc::clone(&next),
                Arc::clone(&done),
            );
            runtime.spawn(async move {
                let agent = Actor::new("agent-7", &[]);
                while !stop.load(Ordering::Relaxed) {
                    let order = next.fetch_add(1, Ordering::Relaxed);
                    let arguments = format!(r#"{{"order": {order}}}"#);
                    let call = ToolCall::new("refund_order", &arguments);
                    let Ok(Outcome::AwaitingApproval(lane)) =
                        governor.call(&call, &agent, &()).await
                    else {
                        panic!("a proposal")
                    };
                    governor.approve(&lane.key(), "ops-lead").await.unwrap();
                    governor.execute(&lane.key(), &agent, &()).await.unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut delays = Vec::new();
    let agent = Actor::new("probe", &[]);
    let mut probe = 0u64;
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_millis(20));
        probe += 1;
        let arguments = format!(r#"{{"order": {probe}}}"#);
        let call = ToolCall::new("refund_order", &arguments);
        let Ok(Outcome::AwaitingApproval(lane)) =
            pollster::block_on(governor.call(&call, &agent, &()))
        else {
            panic!("a probe's proposal")
        };
        let committed = Instant::now();
        let mut seen = watch.generation();
        // The first wake-up after the commit whose read finds the probe.
        loop {
            if !pollster::block_on(watch.changed(seen, Duration::from_secs(10))) {
                panic!("no wake-up within 10 s");
            }
            seen = watch.generation();
            if pollster::block_on(watcher.get(&lane.key()))
                .unwrap()
                .is_some()
            {
                break;
            }
        }
        delays.push(committed.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    runtime.block_on(async {
        for worker in workers {
            worker.await.unwrap();
        }
    });
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    delays.sort();
    let at = |q: f64| delays[((delays.len() as f64 * q) as usize).min(delays.len() - 1)];
    let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
    println!(
        "{name}: {tasks} tasks, {rate:.0} lifecycles/s; {} probes, commit to a watcher's wake-up: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        delays.len(),
        ms(at(0.50)),
        ms(at(0.99)),
        ms(delays[delays.len() - 1]),
    );
}
