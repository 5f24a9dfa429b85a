//! The audit chain's cost, in one run.
//!
//! - **Verify throughput**: [`ChainVerifier`] over 1,000,000 records in memory (the
//!   texts of real decision and transition records, cycled), and `verify_audit` over the
//!   whole trail of each store, reading included (goal: ≥ 500,000 records/s).
//! - **The chain's cost per record against a proposal's time** (goal: ≤ 5%):
//!   - SQLite links a record as it writes it: one more read (the last record's link) and
//!     one SHA-256. Timed here as the store's statements, a thousand records per
//!     transaction, linked against plain, interleaved; against a proposal through a
//!     governor on the same store.
//!   - PostgreSQL links records after they are final, off the proposal's path: the cost
//!     is the server's and the sealer's work per record, timed as `seal_audit` over the
//!     records the proposals wrote, against a proposal's time.
//!
//! `scripts/with_postgres.sh cargo bench -p cairnloop-benches --bench audit_chain`
//! (without the script, PostgreSQL is left out)

use std::hint::black_box;
use std::time::{Duration, Instant};

use cairnloop::approvals::{
    ApprovalStore, AuditRecord, CHAIN_GENESIS, ChainVerifier, ChainedRecord, DiscardAudit,
    RefusalEvent, chain_link,
};
use cairnloop::gate::Timestamp;
use cairnloop::stores::{PostgresOptions, PostgresStore, SqliteStore};
use cairnloop::{Actor, Governor, Outcome, Registry, ToolCall, ToolEntry};
use cairnloop_benches::{LookupRefund, RefundOrder};
use criterion::{Criterion, Throughput};
use sha2::{Digest, Sha256};

static TOOLS: Registry<()> = Registry::new(&[
    ToolEntry::json::<RefundOrder>(),
    ToolEntry::json::<LookupRefund>(),
]);

const PROPOSALS: u64 = 3_000;

/// Records in each store's trail when it is verified.
const TRAIL: u64 = 100_000;

/// Fills `store`'s trail up to [`TRAIL`] records with copies of `texts`' kind of record
/// (refusals), from sixteen writers at once.
fn fill<S: ApprovalStore + Sync>(store: &S, have: u64) {
    let writers = 16;
    std::thread::scope(|scope| {
        for writer in 0..writers {
            scope.spawn(move || {
                for n in (have..TRAIL).filter(|n| n % writers == writer) {
                    let event = RefusalEvent::new("slack", "stale", Timestamp::from_unix_millis(n));
                    pollster::block_on(store.append(AuditRecord::Refusal(event))).unwrap();
                }
            });
        }
    });
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cairnloop-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `PROPOSALS` proposals through a governor over `store` (each also writes a decision
/// record of an auto call first, as a session does); the time of one, on average.
fn proposals<S: ApprovalStore + 'static>(store: S, first: u64) -> (Duration, Governor<(), S>) {
    let governor = Governor::new(&TOOLS)
        .with_store(store)
        .with_audit_sink(DiscardAudit);
    let agent = Actor::new("agent-7", &["refunds:write"]);
    let start = Instant::now();
    for n in first..first + PROPOSALS {
        let arguments = format!(r#"{{"order": {n}, "cents": 1250}}"#);
        let call = ToolCall::new("refund_order", &arguments);
        let Ok(Outcome::AwaitingApproval(_)) =
            pollster::block_on(governor.call(&call, &agent, &()))
        else {
            panic!("a proposal")
        };
    }
    (start.elapsed() / PROPOSALS as u32, governor)
}

/// A thousand records appended in one transaction, linked as the SQLite store links
/// them or plain; the time per record.
fn thousand(connection: &rusqlite::Connection, text: &str, linked: bool) -> Duration {
    let start = Instant::now();
    connection.execute_batch("BEGIN IMMEDIATE").unwrap();
    for _ in 0..1_000 {
        if linked {
            let prev: Vec<u8> = connection
                .prepare_cached("SELECT hash FROM events ORDER BY seq DESC LIMIT 1")
                .unwrap()
                .query_row([], |row| row.get(0))
                .unwrap_or_else(|_| CHAIN_GENESIS.to_vec());
            let mut hasher = Sha256::new();
            hasher.update(&prev);
            hasher.update(text.as_bytes());
            let hash = hasher.finalize().to_vec();
            connection
                .prepare_cached("INSERT INTO events (record, prev, hash) VALUES (?1, ?2, ?3)")
                .unwrap()
                .execute(rusqlite::params![text, prev, hash])
                .unwrap();
        } else {
            connection
                .prepare_cached("INSERT INTO events (record) VALUES (?1)")
                .unwrap()
                .execute([text])
                .unwrap();
        }
    }
    connection.execute_batch("COMMIT").unwrap();
    start.elapsed() / 1_000
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn us(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Verifies a whole store's trail with `verify`; records per second.
fn verify_rate(verify: impl FnOnce() -> u64) -> (u64, f64) {
    let start = Instant::now();
    let records = verify();
    (records, records as f64 / start.elapsed().as_secs_f64())
}

fn sqlite(texts: &mut Vec<String>) {
    let dir = scratch("chain");
    let (proposal, governor) = proposals(SqliteStore::open(dir.join("lanes.db")).unwrap(), 0);
    let store = governor.store();
    let records = pollster::block_on(store.chained_since(0, 10_000)).unwrap();
    texts.extend(records.into_iter().map(|record| record.text));
    fill(store, PROPOSALS);
    let (checked, rate) = verify_rate(|| {
        pollster::block_on(store.verify_audit())
            .unwrap()
            .unwrap()
            .records
    });

    // The store's statements, linked and plain, in a file of their own.
    let side = dir.join("side.db");
    drop(SqliteStore::open(&side).unwrap());
    let connection = rusqlite::Connection::open(&side).unwrap();
    let text = &texts[texts.len() / 2];
    let (mut linked, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..30 {
        plain.push(thousand(&connection, text, false));
        linked.push(thousand(&connection, text, true));
    }
    let added = median(linked).saturating_sub(median(plain));
    println!(
        "sqlite: a proposal {:.1} µs; the chain adds {:.2} µs per record ({:.2}% of a proposal; goal <= 5%)",
        us(proposal),
        us(added),
        100.0 * us(added) / us(proposal),
    );
    println!(
        "sqlite: verify_audit over the store's {checked} records: {rate:.0} records/s (goal >= 500000)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn postgres(config: &str) {
    // Nothing links on its own here: the proposals' records wait for `seal_audit`.
    let options = PostgresOptions::new().seal_every(None);
    let store = PostgresStore::connect_with(config, options).unwrap();
    pollster::block_on(store.seal_audit()).unwrap();
    let first = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let (proposal, governor) = proposals(store, first);
    let store = governor.store();
    fill(store, PROPOSALS);
    let start = Instant::now();
    let sealed = pollster::block_on(store.seal_audit()).unwrap();
    let per_record = start.elapsed() / u32::try_from(sealed.max(1)).unwrap_or(u32::MAX);
    println!(
        "postgres: a proposal {:.1} µs; linking costs {:.2} µs per record ({sealed} records; {:.2}% of a proposal; goal <= 5%), off the proposal's path",
        us(proposal),
        us(per_record),
        100.0 * us(per_record) / us(proposal),
    );
    let (checked, rate) = verify_rate(|| {
        pollster::block_on(store.verify_audit())
            .unwrap()
            .unwrap()
            .records
    });
    println!(
        "postgres: verify_audit over the store's {checked} records: {rate:.0} records/s (goal >= 500000)"
    );
}

/// A million records linked in memory, and the verifier over them.
fn in_memory(c: &mut Criterion, texts: &[String]) {
    let mut prev = CHAIN_GENESIS;
    let trail: Vec<ChainedRecord> = (1..=1_000_000u64)
        .zip(texts.iter().cycle())
        .map(|(seq, text)| {
            let hash = chain_link(&prev, text);
            let record = ChainedRecord::new(seq, prev, hash, text.clone());
            prev = hash;
            record
        })
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum::<usize>() / texts.len().max(1);
    let mut group = c.benchmark_group("audit_chain");
    group.sample_size(10);
    group.throughput(Throughput::Elements(trail.len() as u64));
    group.bench_function("verify_1m_in_memory", |b| {
        b.iter(|| {
            let mut verifier = ChainVerifier::new();
            for record in &trail {
                verifier.check(record).unwrap();
            }
            black_box(verifier.finish())
        });
    });
    group.finish();
    let start = Instant::now();
    let mut verifier = ChainVerifier::new();
    for record in &trail {
        verifier.check(record).unwrap();
    }
    black_box(verifier.finish());
    let rate = trail.len() as f64 / start.elapsed().as_secs_f64();
    println!(
        "in memory: the verifier over 1,000,000 records of {bytes} bytes on average: {rate:.0} records/s (goal >= 500000)"
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let mut texts = Vec::new();
    sqlite(&mut texts);
    match std::env::var("CAIRNLOOP_POSTGRES") {
        Ok(config) => postgres(&config),
        Err(_) => println!("postgres: no CAIRNLOOP_POSTGRES, not measured"),
    }
    in_memory(&mut criterion, &texts);
    criterion.final_summary();
}
