//! Throughput of a durable store against concurrency: full lifecycles (propose → approve
//! → execute) and audited auto calls per second, from 1, 8, 32 and 64 tasks in one
//! process and from 32 tasks split over 1, 2 and 4 processes; in the same run, the floor:
//! the same number of commits per lifecycle as bare statements through the same driver
//! (tokio-postgres, or rusqlite with the store's pragmas), with no library around them, at
//! the same concurrency; and `pgbench -N`'s figure for PostgreSQL. It stops by itself.
//!
//! ```sh
//! scripts/with_postgres.sh --fsync cargo bench -p cairnloop-benches --bench concurrency -- --store postgres
//! cargo bench -p cairnloop-benches --bench concurrency -- --store sqlite
//! ```
//!
//! Options: `--store postgres|sqlite`, `--seconds S` per point (5), `--tasks 1,8,32,64`,
//! `--processes 1,2,4`. The server's `fsync` and `synchronous_commit` (or SQLite's
//! `synchronous`) are printed with the figures.

use std::future::Future;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cairnloop::approvals::{ApprovalStore, MemoryStore};
use cairnloop::stores::{PostgresOptions, PostgresStore, SqliteStore};
use cairnloop::{Actor, Governor, Outcome, Registry, ToolCall, ToolEntry};
#[path = "../tests/fixtures/counted_store.rs"]
mod counted_store;
use cairnloop_benches::{LookupRefund, RefundOrder};
use counted_store::Counted;

static TOOLS: Registry<()> = Registry::new(&[
    ToolEntry::json::<LookupRefund>(),
    ToolEntry::json::<RefundOrder>(),
]);

/// What one point measures.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Work {
    Lifecycle,
    Auto,
    LifecycleFloor,
    AutoFloor,
}

impl Work {
    fn name(self) -> &'static str {
        match self {
            Self::Lifecycle => "lifecycle",
            Self::Auto => "auto",
            Self::LifecycleFloor => "lifecycle-floor",
            Self::AutoFloor => "auto-floor",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "lifecycle" => Self::Lifecycle,
            "auto" => Self::Auto,
            "lifecycle-floor" => Self::LifecycleFloor,
            "auto-floor" => Self::AutoFloor,
            other => panic!("unknown work {other}"),
        }
    }
}

/// Orders are numbered per process and run so that no two lanes share a key.
fn order_base() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    // Below 2^53, as JSON numbers must be: 13 bits of the process id (the processes of a
    // run are started one after another), 40 of the clock.
    ((u64::from(std::process::id()) & 0x1fff) << 40) ^ (nanos as u64 & 0xff_ffff_ffff)
}

async fn lifecycle<S: ApprovalStore>(governor: &Governor<(), S>, order: u64) {
    let agent = Actor::new("agent-7", &["refunds:write"]);
    let arguments = format!(r#"{{"order": {order}, "cents": 1250}}"#);
    let call = ToolCall::new("refund_order", &arguments);
    let lane = match governor.call(&call, &agent, &()).await {
        Ok(Outcome::AwaitingApproval(lane)) => lane,
        other => panic!("a proposal, got {other:?}"),
    };
    governor.approve(&lane.key(), "ops-lead").await.unwrap();
    governor.execute(&lane.key(), &agent, &()).await.unwrap();
}

async fn auto<S: ApprovalStore>(governor: &Governor<(), S>, order: u64) {
    let agent = Actor::new("agent-7", &["refunds:write"]);
    let arguments = format!(r#"{{"order": {order}, "cents": 1250}}"#);
    let call = ToolCall::new("lookup_refund", &arguments);
    let Ok(Outcome::Executed(_)) = governor.call(&call, &agent, &()).await else {
        panic!("an executed call")
    };
}

/// Commits per lifecycle and per auto call, counted on a memory store.
fn commits_per_item() -> (u64, u64) {
    // What a lifecycle and an auto call commit: the writes a store is handed.
    let counting = Arc::new(Counted::new(MemoryStore::new()));
    let governor = Governor::new(&TOOLS).with_store(Arc::clone(&counting));
    pollster::block_on(lifecycle(&governor, 1));
    let per_lifecycle = counting.take_writes();
    pollster::block_on(auto(&governor, 2));
    (per_lifecycle, counting.take_writes())
}

/// Runs `tasks` tasks doing `one` until `until`; returns how many items they finished.
async fn drive<F, Fut>(tasks: usize, until: Instant, one: F) -> u64
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let (one, done, next) = (
        Arc::new(one),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(order_base())),
    );
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (one, done, next) = (Arc::clone(&one), Arc::clone(&done), Arc::clone(&next));
            tokio::spawn(async move {
                while Instant::now() < until {
                    one(next.fetch_add(1, Ordering::Relaxed)).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.await.unwrap();
    }
    done.load(Ordering::SeqCst)
}

/// Drives `governor` with `work` (the lifecycle or auto calls) until `until`.
async fn drive_governor<S>(
    governor: Arc<Governor<(), S>>,
    work: Work,
    tasks: usize,
    until: Instant,
) -> u64
where
    S: ApprovalStore + Send + Sync + 'static,
{
    drive(tasks, until, move |order| {
        let governor = Arc::clone(&governor);
        async move {
            if work == Work::Lifecycle {
                lifecycle(&governor, order).await;
            } else {
                auto(&governor, order).await;
            }
        }
    })
    .await
}

/// One process's share of a point: sets up, waits for `start_at`, runs for `seconds`.
async fn measure(
    store: &str,
    target: &str,
    work: Work,
    tasks: usize,
    start_at: u64,
    seconds: u64,
) -> u64 {
    let wait = || async {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        tokio::time::sleep(Duration::from_millis(start_at.saturating_sub(now))).await;
        Instant::now() + Duration::from_secs(seconds)
    };
    let (lifecycle_commits, auto_commits) = commits_per_item();
    match (store, work) {
        ("postgres", Work::Lifecycle | Work::Auto) => {
            let options = PostgresOptions::new().pool_size(tasks.clamp(1, 32));
            let governor = Arc::new(
                Governor::new(&TOOLS)
                    .with_store(PostgresStore::connect_with(target, options).unwrap()),
            );
            drive_governor(governor, work, tasks, wait().await).await
        }
        ("postgres", _) => {
            let commits = if work == Work::LifecycleFloor {
                lifecycle_commits
            } else {
                auto_commits
            };
            let pool = postgres_floor_pool(target, tasks.clamp(1, 32)).await;
            let until = wait().await;
            drive(tasks, until, move |order| {
                let pool = pool.clone();
                async move { postgres_floor(&pool, order, commits).await }
            })
            .await
        }
        ("sqlite", Work::Lifecycle | Work::Auto) => {
            let governor =
                Arc::new(Governor::new(&TOOLS).with_store(SqliteStore::open(target).unwrap()));
            drive_governor(governor, work, tasks, wait().await).await
        }
        ("sqlite", _) => {
            let commits = if work == Work::LifecycleFloor {
                lifecycle_commits
            } else {
                auto_commits
            };
            // SQLite takes one writer at a time: the floor is one connection, as the
            // store's own worker is.
            let path = format!("{target}-floor");
            let until = wait().await;
            tokio::task::spawn_blocking(move || sqlite_floor(&path, until, commits))
                .await
                .unwrap()
        }
        (other, _) => panic!("unknown store {other}"),
    }
}

const FLOOR_LANE: &str = r#"{"state":"pending","version":1,"proposal":{"tool":"refund_order","risk_tier":"high_write","mode":"requires_approval","actor_id":"agent-7","account_id":null,"input":"{\"cents\":1250,\"order\":1}","preview":"refund_order(cents=1250, order=1)","scopes":["refunds:write"]},"opened_at":1,"expires_at":2}"#;

async fn postgres_floor_pool(target: &str, size: usize) -> deadpool_postgres::Pool {
    let config: tokio_postgres::Config = target.parse().unwrap();
    let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
    let pool = deadpool_postgres::Pool::builder(manager)
        .max_size(size)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .unwrap();
    pool.get()
        .await
        .unwrap()
        .batch_execute(FLOOR_TABLES)
        .await
        .unwrap();
    pool
}

/// The rows a store must keep, with the columns and indexes its queue and sweeps need (the
/// same as the stores'), and nothing more.
const FLOOR_TABLES: &str = "
    CREATE TABLE IF NOT EXISTS floor_lanes (key TEXT PRIMARY KEY, state TEXT NOT NULL,
        version BIGINT NOT NULL, lane TEXT NOT NULL, tool TEXT NOT NULL, tier TEXT NOT NULL,
        proposer TEXT NOT NULL, account TEXT, proposed_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL);
    CREATE INDEX IF NOT EXISTS floor_lanes_by_state ON floor_lanes (state, key);
    CREATE INDEX IF NOT EXISTS floor_lanes_newest ON floor_lanes (state, proposed_at, key);
    CREATE INDEX IF NOT EXISTS floor_lanes_by_expiry ON floor_lanes (state, expires_at);
    CREATE INDEX IF NOT EXISTS floor_lanes_by_tool ON floor_lanes (tool, proposed_at, key)
        WHERE state = 'pending';
    CREATE INDEX IF NOT EXISTS floor_lanes_by_tier ON floor_lanes (tier, proposed_at, key)
        WHERE state = 'pending';
    CREATE INDEX IF NOT EXISTS floor_lanes_by_proposer
        ON floor_lanes (proposer, proposed_at, key) WHERE state = 'pending';
    CREATE INDEX IF NOT EXISTS floor_lanes_by_account
        ON floor_lanes (account, proposed_at, key) WHERE state = 'pending';
    CREATE TABLE IF NOT EXISTS floor_events (seq BIGSERIAL PRIMARY KEY, record TEXT NOT NULL);";

/// The columns of a floor lane after its key, text and state.
const FLOOR_COLUMNS: &str = "tool, tier, proposer, proposed_at, expires_at";
const FLOOR_VALUES: &str = "'refund_order', 'high_write', 'agent-7', 1700000000000, 1700172800000";

/// Each commit writes what a move writes, as one bare statement: the lane (inserted,
/// then moved through states) and its event.
const FLOOR_INSERT: &str = "
    WITH lane AS (INSERT INTO floor_lanes (key, state, version, lane, tool, tier, proposer,
                                           proposed_at, expires_at)
                  VALUES ($1, 'pending', 1, $2, 'refund_order', 'high_write', 'agent-7',
                          1700000000000, 1700172800000))
    INSERT INTO floor_events (record) VALUES ($2)";
const FLOOR_MOVE: &str = "
    WITH lane AS (UPDATE floor_lanes SET state = $3, version = version + 1, lane = $2 WHERE key = $1)
    INSERT INTO floor_events (record) VALUES ($2)";
const FLOOR_STATES: [&str; 4] = ["approved", "execution_pending", "executed", "closed"];

/// `commits` single-statement commits, as a governed call makes them: the gates'
/// decision record; then, for a lifecycle, the lane inserted with its event and moved.
async fn postgres_floor(pool: &deadpool_postgres::Pool, order: u64, commits: u64) {
    let client = pool.get().await.unwrap();
    let append = client
        .prepare_cached("INSERT INTO floor_events (record) VALUES ($1)")
        .await
        .unwrap();
    client.execute(&append, &[&FLOOR_LANE]).await.unwrap();
    if commits < 2 {
        return;
    }
    let key = format!("{order:064x}");
    let insert = client.prepare_cached(FLOOR_INSERT).await.unwrap();
    client.execute(&insert, &[&key, &FLOOR_LANE]).await.unwrap();
    let moved = client.prepare_cached(FLOOR_MOVE).await.unwrap();
    for state in FLOOR_STATES
        .iter()
        .cycle()
        .take(commits.saturating_sub(2) as usize)
    {
        client
            .execute(&moved, &[&key, &FLOOR_LANE, state])
            .await
            .unwrap();
    }
}

fn sqlite_floor(path: &str, until: Instant, commits: u64) -> u64 {
    let connection = rusqlite::Connection::open(path).unwrap();
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .unwrap();
    connection
        .pragma_update(None, "synchronous", "NORMAL")
        .unwrap();
    connection.busy_timeout(Duration::from_secs(5)).unwrap();
    connection
        .execute_batch(&FLOOR_TABLES.replace("BIGSERIAL", "INTEGER"))
        .unwrap();
    let mut order = order_base();
    let mut done = 0;
    while Instant::now() < until {
        order += 1;
        let key = format!("{order:064x}");
        connection
            .execute(
                "INSERT INTO floor_events (record) VALUES (?1)",
                [FLOOR_LANE],
            )
            .unwrap();
        if commits >= 2 {
            // SQLite has no data-modifying WITH: a transaction of two statements a commit.
            let write = |first: &str, state: &str| {
                let transaction = connection.unchecked_transaction().unwrap();
                transaction
                    .execute(first, (&key, FLOOR_LANE, state))
                    .unwrap();
                transaction
                    .execute(
                        "INSERT INTO floor_events (record) VALUES (?1)",
                        [FLOOR_LANE],
                    )
                    .unwrap();
                transaction.commit().unwrap();
            };
            write(
                &format!(
                    "INSERT INTO floor_lanes (key, state, version, lane, {FLOOR_COLUMNS})
                     VALUES (?1, ?3, 1, ?2, {FLOOR_VALUES})"
                ),
                "pending",
            );
            for state in FLOOR_STATES
                .iter()
                .cycle()
                .take(commits.saturating_sub(2) as usize)
            {
                write(
                    "UPDATE floor_lanes SET state = ?3, version = version + 1, lane = ?2 WHERE key = ?1",
                    state,
                );
            }
        }
        done += 1;
    }
    done
}

/// A point: `processes` processes of `tasks / processes` tasks each; items per second.
fn point(
    store: &str,
    target: &str,
    work: Work,
    tasks: usize,
    processes: usize,
    seconds: u64,
) -> f64 {
    let start_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 1_500;
    let share = (tasks / processes).max(1);
    let children: Vec<_> = (0..processes)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--child",
                    store,
                    target,
                    work.name(),
                    &share.to_string(),
                    &start_at.to_string(),
                    &seconds.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let total: u64 = children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success(), "a measuring process failed");
            String::from_utf8(output.stdout)
                .unwrap()
                .trim()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    total as f64 / seconds as f64
}

fn pgbench(target: &str, seconds: u64) -> Option<f64> {
    let bindir = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin"))
        .max()?;
    let config: tokio_postgres::Config = target.parse().ok()?;
    let host = match config.get_hosts().first()? {
        tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        tokio_postgres::config::Host::Tcp(name) => name.clone(),
    };
    let user = config.get_user().unwrap_or("postgres").to_owned();
    let database = config.get_dbname().unwrap_or("postgres").to_owned();
    let common = ["-h", &host, "-U", &user];
    let init = Command::new(bindir.join("pgbench"))
        .args(common)
        .args(["-i", "-q", &database])
        .output()
        .ok()?;
    if !init.status.success() {
        return None;
    }
    let run = Command::new(bindir.join("pgbench"))
        .args(common)
        .args([
            "-N",
            "-c",
            "8",
            "-j",
            "2",
            "-T",
            &seconds.to_string(),
            &database,
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&run.stdout);
    text.lines()
        .find(|line| line.starts_with("tps = "))
        .and_then(|line| line[6..].split_whitespace().next())
        .and_then(|tps| tps.parse().ok())
}

async fn settings(store: &str, target: &str) -> String {
    match store {
        "postgres" => {
            let (client, connection) = tokio_postgres::connect(target, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let mut shown = Vec::new();
            for name in [
                "server_version",
                "fsync",
                "synchronous_commit",
                "max_connections",
            ] {
                let row = client
                    .query_one(&format!("SHOW {name}"), &[])
                    .await
                    .unwrap();
                shown.push(format!("{name}={}", row.get::<_, String>(0)));
            }
            shown.join(" ")
        }
        _ => "journal_mode=WAL synchronous=NORMAL (the store's default)".to_owned(),
    }
}

fn list(text: &str) -> Vec<usize> {
    text.split(',').map(|n| n.trim().parse().unwrap()).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if args.first().map(String::as_str) == Some("--child") {
        let [_, store, target, work, tasks, start_at, seconds] = &args[..] else {
            panic!("--child STORE TARGET WORK TASKS START_AT SECONDS")
        };
        let done = runtime.block_on(measure(
            store,
            target,
            Work::parse(work),
            tasks.parse().unwrap(),
            start_at.parse().unwrap(),
            seconds.parse().unwrap(),
        ));
        println!("{done}");
        return;
    }
    let (mut store, mut seconds) = ("postgres".to_owned(), 5u64);
    let (mut tasks, mut processes) = (vec![1, 8, 32, 64], vec![1, 2, 4]);
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--store" => store = args.next().unwrap_or_default(),
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(5)
                    .min(60)
            }
            "--tasks" => tasks = list(&args.next().unwrap_or_default()),
            "--processes" => processes = list(&args.next().unwrap_or_default()),
            "--bench" => {}
            other => panic!("unknown option {other}"),
        }
    }
    let target = match store.as_str() {
        "postgres" => std::env::var("CAIRNLOOP_POSTGRES")
            .expect("run under scripts/with_postgres.sh: CAIRNLOOP_POSTGRES names the server"),
        "sqlite" => {
            let dir =
                std::env::temp_dir().join(format!("cairnloop-concurrency-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            dir.join("approvals.db").display().to_string()
        }
        other => panic!("unknown store {other}"),
    };
    let (lifecycle_commits, auto_commits) = commits_per_item();
    println!(
        "store: {store}; {}",
        runtime.block_on(settings(&store, &target))
    );
    println!(
        "commits: {lifecycle_commits} per lifecycle, {auto_commits} per audited auto call; {seconds} s per point; {} cores",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    if store == "postgres"
        && let Some(tps) = pgbench(&target, seconds)
    {
        println!("pgbench -N -c 8 -j 2: {tps:.0} transactions/s");
    }
    println!(
        "\n| tasks | processes | lifecycles/s | floor/s | ratio | auto calls/s | floor/s | ratio |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut points: Vec<(usize, usize)> = tasks.iter().map(|&tasks| (tasks, 1)).collect();
    points.extend(processes.iter().filter(|&&p| p > 1).map(|&p| (32, p)));
    for (tasks, processes) in points {
        let measured: Vec<f64> = [
            Work::Lifecycle,
            Work::LifecycleFloor,
            Work::Auto,
            Work::AutoFloor,
        ]
        .into_iter()
        .map(|work| point(&store, &target, work, tasks, processes, seconds))
        .collect();
        println!(
            "| {tasks} | {processes} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {:.2} |",
            measured[0],
            measured[1],
            measured[0] / measured[1],
            measured[2],
            measured[3],
            measured[2] / measured[3],
        );
    }
    if store == "sqlite"
        && let Some(dir) = std::path::Path::new(&target).parent()
    {
        let _ = std::fs::remove_dir_all(dir);
    }
}
