//! The PostgreSQL store: many agent processes sharing approvals, many moves in flight at
//! once over a pool of connections, with row-level compare-and-set and an event cursor
//! that follows commit visibility instead of a global lock.

use std::format;
use std::future::Future;
use std::string::{String, ToString};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use std::vec::Vec;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use tokio_postgres::NoTls;

use crate::approvals::{
    ApprovalLane, ApprovalStore, AuditRecord, ChainBreak, ChainReport, ChainVerifier,
    ChainedRecord, DueNotice, LaneQuery, NoticeClaim, NoticeOutcome, STORED_WITHIN_MILLIS,
    StoreError, StoreWatch, TaskId, TaskRecord, TransitionEvent,
};
use crate::declare::IdempotencyKey;
use crate::gate::{LaneState, Timestamp};
use crate::stores::kept_lanes::KeptLanes;
use crate::stores::lane_filter::{LaneColumns, LaneFilter, Param, millis};
use crate::stores::pg_chain;
use crate::stores::pg_relay::{Changes, NOTIFY, relay};
use crate::stores::pg_tls;
use crate::stores::record::{decode, encode, notice_stage, stored_version, task_from_row};
use crate::stores::runtime::StoreRuntime;
use crate::stores::server_time::{READ_AGAIN, READ_SERVER_CLOCK, ServerTime};

/// While a trail is verified: the positions a range spans (so a range holds at most that
/// many events, unless the trail spans more than that many ranges), the most ranges, and
/// how many are read at once.
const VERIFY_RANGE: i64 = 20_000;
const VERIFY_RANGES_MOST: i64 = 4_096;
const VERIFY_READERS: usize = 3;

/// The schema this library writes. A database whose schema is newer is refused.
pub const POSTGRES_SCHEMA_VERSION: i32 = 7;

/// Each migration takes the schema from its index to the next version.
const MIGRATIONS: [&str; 7] = [
    "
    CREATE TABLE cairnloop_lanes (
        key TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        version BIGINT NOT NULL,
        lane TEXT NOT NULL
    );
    CREATE INDEX cairnloop_lanes_by_state ON cairnloop_lanes (state, key);
    CREATE TABLE cairnloop_events (
        seq BIGSERIAL PRIMARY KEY,
        record TEXT NOT NULL
    );
    ",
    // Version 1 numbered events under one advisory lock held to commit. From version 2 an
    // event's position is its transaction's id past a base above every older number, so
    // writers never wait for each other and old cursors stay valid.
    "
    ALTER TABLE cairnloop_events ADD COLUMN position BIGINT;
    UPDATE cairnloop_events SET position = seq;
    ALTER TABLE cairnloop_events ALTER COLUMN position SET NOT NULL;
    CREATE UNIQUE INDEX cairnloop_events_by_position ON cairnloop_events (position);
    ALTER TABLE cairnloop_schema ADD COLUMN position_base BIGINT NOT NULL DEFAULT 0;
    UPDATE cairnloop_schema SET position_base = (SELECT coalesce(max(seq), 0) FROM cairnloop_events);
    ",
    // What a queue is filtered and ordered by, as columns filled from the stored lanes:
    // newest first in every state, and per filter for the pending ones an operator pages
    // (partial indexes: a lane leaves them when it is decided).
    "
    ALTER TABLE cairnloop_lanes
        ADD COLUMN tool TEXT, ADD COLUMN tier TEXT, ADD COLUMN proposer TEXT,
        ADD COLUMN account TEXT, ADD COLUMN proposed_at BIGINT, ADD COLUMN expires_at BIGINT;
    UPDATE cairnloop_lanes SET
        tool = lane::jsonb #>> '{proposal,tool}',
        tier = lane::jsonb #>> '{proposal,risk_tier}',
        proposer = lane::jsonb #>> '{proposal,actor_id}',
        account = lane::jsonb #>> '{proposal,account_id}',
        proposed_at = least((lane::jsonb ->> 'proposed_at')::numeric, 9223372036854775807)::bigint,
        expires_at = least((lane::jsonb ->> 'expires_at')::numeric, 9223372036854775807)::bigint;
    ALTER TABLE cairnloop_lanes
        ALTER COLUMN tool SET NOT NULL, ALTER COLUMN tier SET NOT NULL,
        ALTER COLUMN proposer SET NOT NULL, ALTER COLUMN proposed_at SET NOT NULL,
        ALTER COLUMN expires_at SET NOT NULL;
    CREATE INDEX cairnloop_lanes_newest ON cairnloop_lanes (state, proposed_at, key);
    CREATE INDEX cairnloop_lanes_by_expiry ON cairnloop_lanes (state, expires_at);
    CREATE INDEX cairnloop_lanes_pending_by_tool ON cairnloop_lanes (tool, proposed_at, key)
        WHERE state = 'pending';
    CREATE INDEX cairnloop_lanes_pending_by_tier ON cairnloop_lanes (tier, proposed_at, key)
        WHERE state = 'pending';
    CREATE INDEX cairnloop_lanes_pending_by_proposer
        ON cairnloop_lanes (proposer, proposed_at, key) WHERE state = 'pending';
    CREATE INDEX cairnloop_lanes_pending_by_account
        ON cairnloop_lanes (account, proposed_at, key) WHERE state = 'pending';
    -- A proposer within an operator's accounts: read only the lanes that match both.
    CREATE INDEX cairnloop_lanes_pending_by_proposer_account
        ON cairnloop_lanes (proposer, account) WHERE state = 'pending';
    ",
    // The tasks clients follow while a lane waits: one per lane and owner.
    "
    CREATE TABLE cairnloop_tasks (
        id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        owner TEXT NOT NULL,
        opened_at BIGINT NOT NULL,
        inputs_issued BIGINT NOT NULL DEFAULT 0,
        UNIQUE (lane, owner)
    );
    CREATE INDEX cairnloop_tasks_by_age ON cairnloop_tasks (opened_at);
    ",
    // What became of each notice of a pending lane, per target and round (the lane's
    // proposal time): held by a claim until `due_at`, due again at `due_at`, or done
    // (`due_at` at the end of time).
    "
    CREATE TABLE cairnloop_notices (
        key TEXT NOT NULL,
        target TEXT NOT NULL,
        round BIGINT NOT NULL,
        attempts BIGINT NOT NULL,
        stage TEXT NOT NULL,
        holder TEXT NOT NULL,
        due_at BIGINT NOT NULL,
        PRIMARY KEY (key, target, round)
    );
    ",
    // Tokens taken once (a chat callback's signature), each kept until it is forgotten;
    // and per outbox target, the proposal time below which every pending lane has its
    // notice (a claim looks below it only for notices due again).
    "
    CREATE TABLE cairnloop_accepted (
        token TEXT PRIMARY KEY,
        forget_at BIGINT NOT NULL
    );
    CREATE INDEX cairnloop_accepted_by_age ON cairnloop_accepted (forget_at);
    CREATE TABLE cairnloop_notice_marks (
        target TEXT PRIMARY KEY,
        below BIGINT NOT NULL
    );
    CREATE INDEX cairnloop_notices_due ON cairnloop_notices (target, due_at);
    ",
    // The audit chain: each event's link to the one before it and its own, written in
    // position order once the event is final (a row of its own: an insert costs the
    // server a third of what rewriting the event's row would); and how far it reaches.
    "
    CREATE TABLE cairnloop_links (
        position BIGINT PRIMARY KEY,
        prev BYTEA NOT NULL,
        hash BYTEA NOT NULL
    );
    CREATE TABLE cairnloop_chain (
        only_row BOOLEAN PRIMARY KEY DEFAULT true CHECK (only_row),
        position BIGINT NOT NULL,
        hash BYTEA NOT NULL
    );
    INSERT INTO cairnloop_chain (position, hash) VALUES (0, decode(repeat('00', 32), 'hex'));
    ",
];

// Claims the notices due to a target in one statement: from the target's mark on, lanes
// with a notice due or none yet; below it, notices due again. When fewer than the limit
// were due, every lane proposed before `$6` has its notice now (or a claimer racing this
// one holds it), and the mark moves up to it, never down. Two claimers racing for one
// notice: the second's insert waits on the first's row, then takes the update, whose
// condition it reads on the row as the first left it (held into the future): skipped.
const CLAIM_NOTICES: &str = "
    WITH mark AS (
        SELECT coalesce((SELECT below FROM cairnloop_notice_marks WHERE target = $1), 0) AS below
    ), due AS (
        SELECT * FROM (
            SELECT l.key, l.lane, l.proposed_at, coalesce(n.attempts, 0) AS attempts
            FROM cairnloop_lanes l
            LEFT JOIN cairnloop_notices n
              ON n.key = l.key AND n.target = $1 AND n.round = l.proposed_at
            WHERE l.state = 'pending' AND l.expires_at > $2
              AND l.proposed_at >= (SELECT below FROM mark)
              AND (n.key IS NULL OR n.due_at <= $2)
            UNION ALL
            SELECT l.key, l.lane, l.proposed_at, n.attempts
            FROM cairnloop_notices n
            JOIN cairnloop_lanes l ON l.key = n.key AND l.proposed_at = n.round
            WHERE n.target = $1 AND n.due_at <= $2 AND n.round < (SELECT below FROM mark)
              AND l.state = 'pending' AND l.expires_at > $2
        ) found
        ORDER BY proposed_at, key LIMIT $5
    ), claimed AS (
        INSERT INTO cairnloop_notices (key, target, round, attempts, stage, holder, due_at)
        SELECT key, $1, proposed_at, attempts + 1, 'held', $3, $4 FROM due
        ON CONFLICT (key, target, round) DO UPDATE SET
            attempts = cairnloop_notices.attempts + 1, stage = 'held',
            holder = excluded.holder, due_at = excluded.due_at
        WHERE cairnloop_notices.due_at <= $2
        RETURNING key, attempts
    ), marked AS (
        INSERT INTO cairnloop_notice_marks (target, below)
        SELECT $1, $6 WHERE (SELECT count(*) FROM due) < $5
        ON CONFLICT (target) DO UPDATE
            SET below = GREATEST(cairnloop_notice_marks.below, excluded.below)
    )
    SELECT due.lane, claimed.attempts FROM claimed JOIN due ON due.key = claimed.key
    ORDER BY due.proposed_at, due.key";

// A task: the new row, or, when the lane and owner have one, that one (a conflict on the
// pair reads it back in the same statement).
const OPEN_TASK: &str = "
    WITH added AS (
        INSERT INTO cairnloop_tasks (id, lane, owner, opened_at) VALUES ($1, $2, $3, $4)
        ON CONFLICT (lane, owner) DO NOTHING
        RETURNING id, lane, owner, opened_at, inputs_issued
    )
    SELECT id, lane, owner, opened_at, inputs_issued FROM added
    UNION ALL
    SELECT id, lane, owner, opened_at, inputs_issued FROM cairnloop_tasks
        WHERE lane = $2 AND owner = $3 AND NOT EXISTS (SELECT 1 FROM added)";

const GET_TASK: &str =
    "SELECT id, lane, owner, opened_at, inputs_issued FROM cairnloop_tasks WHERE id = $1";

// The question count's compare-and-set, and whether the task exists when it is refused.
const ISSUE_TASK_INPUT: &str = "
    WITH moved AS (
        UPDATE cairnloop_tasks SET inputs_issued = inputs_issued + 1
        WHERE id = $1 AND inputs_issued = $2 RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM moved),
           EXISTS (SELECT 1 FROM cairnloop_tasks WHERE id = $1)";

/// A task row as read back.
fn task_row(row: &tokio_postgres::Row) -> Result<TaskRecord, StoreError> {
    task_from_row(
        row.get(0),
        row.get(1),
        row.get::<_, String>(2),
        row.get(3),
        row.get(4),
    )
}

/// Taken by a migrating process only: one migrator at a time, across processes.
const MIGRATION_LOCK: i64 = 0x6361_6972_6e6c_6f6f;

// Every move is one statement: the lane's compare-and-set and its event in one implicit
// transaction, one round trip. What only a refused move needs (the lane that is there,
// whether the key is known) is looked up only then: a sub-query the server runs when
// its value is first asked for. `$base + pg_current_xact_id()` is the event's position:
// one event per transaction, so positions are unique, and a reader only returns positions
// below the oldest transaction still running (see `EVENTS_SINCE`).
const INSERT: &str = "
    WITH added AS (
        INSERT INTO cairnloop_lanes
            (key, state, version, lane, tool, tier, proposer, account, proposed_at, expires_at)
        VALUES ($1, $2, $3, $4, $7, $8, $9, $10, $11, $12)
        ON CONFLICT (key) DO NOTHING RETURNING key
    ), logged AS (
        INSERT INTO cairnloop_events (position, record)
        SELECT $6 + pg_current_xact_id()::text::bigint, $5 FROM added RETURNING position
    )
    SELECT EXISTS (SELECT 1 FROM added),
           CASE WHEN EXISTS (SELECT 1 FROM added) THEN NULL
                ELSE (SELECT lane FROM cairnloop_lanes WHERE key = $1) END,
           (SELECT position FROM logged)";

const TRANSITION: &str = "
    WITH moved AS (
        UPDATE cairnloop_lanes SET state = $1, version = $2, lane = $3, expires_at = $8
        WHERE key = $4 AND version = $5 RETURNING key
    ), logged AS (
        INSERT INTO cairnloop_events (position, record)
        SELECT $7 + pg_current_xact_id()::text::bigint, $6 FROM moved RETURNING position
    )
    SELECT EXISTS (SELECT 1 FROM moved),
           EXISTS (SELECT 1 FROM moved) OR EXISTS (SELECT 1 FROM cairnloop_lanes WHERE key = $4),
           (SELECT position FROM logged)";

const APPEND: &str = "
    INSERT INTO cairnloop_events (position, record)
    VALUES ($2 + pg_current_xact_id()::text::bigint, $1) RETURNING position";

// Every transaction with an id below the snapshot's xmin has ended, and no later one can
// get such an id: events below that horizon are final, so a cursor past them never skips
// one that commits later. Events of transactions still running wait (their readers see
// them on a later read), in id order, which is stable. The horizon comes back too, so a
// reader can tell whether its own store's last event is below it yet.
const EVENTS_SINCE: &str = "
    WITH horizon AS (
        SELECT $3 + pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS below
    )
    SELECT horizon.below, event.position, event.record FROM horizon
    LEFT JOIN LATERAL (
        SELECT position, record FROM cairnloop_events
        WHERE position > $1 AND position < horizon.below
        ORDER BY position LIMIT $2
    ) event ON true
    ORDER BY event.position";

const GET: &str = "SELECT lane FROM cairnloop_lanes WHERE key = $1";

// Keys are lowercase hex of one length: `COLLATE "C"` orders them as bytes.
const LIST: &str = "
    SELECT lane FROM cairnloop_lanes WHERE state = $1 AND key COLLATE \"C\" > $2
    ORDER BY key COLLATE \"C\" LIMIT $3";

/// How a [`PostgresStore`] connects: the pool's size and its timeouts.
///
/// ```
/// use std::time::Duration;
/// use cairnloop::stores::PostgresOptions;
///
/// let options = PostgresOptions::new()
///     .pool_size(32)
///     .statement_timeout(Duration::from_secs(2))
///     .connect_timeout(Duration::from_secs(3));
/// assert_eq!(options.pool_size_value(), 32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostgresOptions {
    pool_size: usize,
    threads: usize,
    statement_timeout: Duration,
    connect_timeout: Duration,
    seal_every: Option<Duration>,
}

impl PostgresOptions {
    /// Sixteen connections, two threads, five seconds for a statement and five to
    /// connect (or to wait for a free connection).
    ///
    /// ```
    /// assert_eq!(cairnloop::stores::PostgresOptions::new().pool_size_value(), 16);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            pool_size: 16,
            threads: 2,
            statement_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            seal_every: Some(pg_chain::SEAL_EVERY),
        }
    }

    /// At most `size` connections (at least 1): as many moves in flight at once.
    ///
    /// ```
    /// let options = cairnloop::stores::PostgresOptions::new().pool_size(0);
    /// assert_eq!(options.pool_size_value(), 1);
    /// ```
    #[must_use]
    pub const fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = if size == 0 { 1 } else { size };
        self
    }

    /// The number of connections the pool holds at most.
    ///
    /// ```
    /// assert_eq!(cairnloop::stores::PostgresOptions::new().pool_size(4).pool_size_value(), 4);
    /// ```
    #[must_use]
    pub const fn pool_size_value(&self) -> usize {
        self.pool_size
    }

    /// Threads of the store's own runtime, which drives the connections (at least 1).
    ///
    /// ```
    /// let options = cairnloop::stores::PostgresOptions::new().threads(1);
    /// ```
    #[must_use]
    pub const fn threads(mut self, threads: usize) -> Self {
        self.threads = if threads == 0 { 1 } else { threads };
        self
    }

    /// The server cancels a statement that runs longer (`statement_timeout`); the move
    /// then fails with the server's error and changes nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = cairnloop::stores::PostgresOptions::new().statement_timeout(Duration::from_millis(500));
    /// ```
    #[must_use]
    pub const fn statement_timeout(mut self, timeout: Duration) -> Self {
        self.statement_timeout = timeout;
        self
    }

    /// How long to wait for a new connection, and for a free one from the pool.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = cairnloop::stores::PostgresOptions::new().connect_timeout(Duration::from_secs(1));
    /// ```
    #[must_use]
    pub const fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How often this process links the audit events that became final (every second
    /// by default); `None`: never on its own, only when
    /// [`PostgresStore::seal_audit`] or [`PostgresStore::verify_audit`] is called (for a
    /// process that should leave it to others). An event not linked yet can be changed
    /// without a trace, so some process should.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = cairnloop::stores::PostgresOptions::new().seal_every(Some(Duration::from_millis(200)));
    /// assert_eq!(options.seal_every_value(), Some(Duration::from_millis(200)));
    /// ```
    #[must_use]
    pub const fn seal_every(mut self, every: Option<Duration>) -> Self {
        self.seal_every = every;
        self
    }

    /// How often this process links the audit events that became final.
    ///
    /// ```
    /// let options = cairnloop::stores::PostgresOptions::new();
    /// assert_eq!(options.seal_every_value(), Some(std::time::Duration::from_secs(1)));
    /// ```
    #[must_use]
    pub const fn seal_every_value(&self) -> Option<Duration> {
        self.seal_every
    }
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// An [`ApprovalStore`] on a PostgreSQL database, for many agent processes that share
/// approvals.
///
/// Each move is one statement, one round trip: the lane is updated only where its version
/// is the expected one (row-level compare-and-set), and its event is appended in the same
/// implicit transaction. Moves run concurrently over a pool of connections
/// ([`PostgresOptions`]); a connection the server closed is replaced on its next use, so
/// a store outlives a server restart. Writers never take a common lock: an event's
/// position is its transaction's id, and a reader's cursor stops below the oldest
/// transaction still running, so it never skips an event that commits later and never
/// returns one twice. (One long writing transaction anywhere in the cluster, in any
/// database, holds readers back until it ends; writers are not held, and read-only
/// queries hold nothing back.) A process reads its own writes: when the store's own
/// latest event is not yet below that horizon, a read waits for it, at most the
/// statement timeout, and then returns what is final.
///
/// The store keeps the lanes it wrote or read lately in the process (a few thousand, then
/// it starts again), and a move starts from that copy instead of a read
/// ([`ApprovalStore::last_known`]): a lifecycle costs one read, not three. A copy another
/// process made stale fails its compare-and-set, and the lane is read and the move decided
/// again.
///
/// The connections are tokio-postgres ones, pooled by deadpool-postgres, driven by a
/// small runtime the store owns: a host on any executor, or none, awaits the store's
/// futures, and a host on tokio is not blocked by them. (tokio-postgres rather than sqlx:
/// its pipelined protocol lets a move be one round trip, its errors keep the server's
/// SQLSTATE, and it builds on the crate's Rust version.)
///
/// Errors keep the server's message and SQLSTATE. A write whose connection broke before
/// the server answered is [`StoreError::OutcomeUnknown`]: it may have committed, so it is
/// never retried blindly; read the lane to learn.
///
/// The schema is versioned in a table of its own (`cairnloop_schema`) and migrated at
/// connect; a newer schema is refused, and so is a database that has tables of the same
/// names that this library did not make.
///
/// ```no_run
/// use cairnloop::stores::PostgresStore;
///
/// let store = PostgresStore::connect("host=/var/run/postgresql user=agent dbname=approvals")?;
/// # Ok::<(), cairnloop::approvals::StoreError>(())
/// ```
pub struct PostgresStore {
    pool: Pool,
    /// Added to transaction ids to make event positions (above every version-1 number).
    base: i64,
    /// How long a read waits for its own writes (the statement timeout).
    read_wait: Duration,
    /// What this store's writes leave behind in the process.
    committed: Arc<Committed>,
    /// The server's clock: the one time source of every process sharing the database.
    time: Arc<ServerTime>,
    runtime: Arc<StoreRuntime>,
}

/// What a store's committed writes leave behind in its process.
struct Committed {
    /// The position of the latest event this store committed: a read waits until it is
    /// below the horizon, so a process reads its own writes.
    written: AtomicI64,
    /// Wakes watchers here and, through the relay, in other processes.
    changes: Arc<Changes>,
    /// The lanes this store wrote or read lately: a move starts from them.
    kept: KeptLanes,
}

impl Committed {
    /// A write committed, with its event at `position` (if it wrote one).
    fn note(&self, position: Option<i64>) {
        if let Some(position) = position {
            self.written.fetch_max(position, Ordering::AcqRel);
        }
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        f.debug_struct("PostgresStore")
            .field("connections", &status.size)
            .field("pool_size", &status.max_size)
            .finish_non_exhaustive()
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        // The moves still running first, then what they changed is told: a process that
        // ends right after a decision still wakes the others.
        self.runtime.settle();
        if self.committed.changes.take_unsent() {
            let pool = self.pool.clone();
            let _ = self.runtime.block_on(async move {
                let notify = async {
                    if let Ok(client) = pool.get().await {
                        let _ = client.batch_execute(NOTIFY).await;
                    }
                };
                let _ = tokio::time::timeout(Duration::from_secs(2), notify).await;
            });
        }
    }
}

impl PostgresStore {
    /// Connects with a libpq-style configuration string (`host=... user=... dbname=...`,
    /// or a `postgres://` URL; a `host` that is a path is a Unix socket directory) and the
    /// default [`PostgresOptions`], and migrates the schema.
    ///
    /// TLS is as libpq's `sslmode` says: `disable` turns it off; `allow` and `prefer` (the
    /// default) use it when the server offers it; `require`, `verify-ca` and `verify-full`
    /// insist on it. Whenever TLS is used, the server's certificate is checked against the
    /// public web roots, or the PEM file `sslrootcert` names, and against the host's name
    /// (rustls): `require` is as strict as `verify-full`, stricter than libpq.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when the server cannot be reached or the string does not
    /// parse; [`StoreError::NewerSchema`] and [`StoreError::Foreign`] for a database it
    /// refuses (nothing is written to it).
    ///
    /// ```no_run
    /// let store = cairnloop::stores::PostgresStore::connect("host=localhost dbname=approvals")?;
    /// let shared = cairnloop::stores::PostgresStore::connect(
    ///     "postgres://gateway@db.internal/approvals?sslmode=verify-full&sslrootcert=/etc/cairnloop/ca.pem",
    /// )?;
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    pub fn connect(config: &str) -> Result<Self, StoreError> {
        Self::connect_with(config, PostgresOptions::new())
    }

    /// [`PostgresStore::connect`] with a pool of its own size and timeouts.
    ///
    /// # Errors
    ///
    /// As [`PostgresStore::connect`].
    ///
    /// ```no_run
    /// use cairnloop::stores::{PostgresOptions, PostgresStore};
    ///
    /// let options = PostgresOptions::new().pool_size(32);
    /// let store = PostgresStore::connect_with("host=localhost dbname=approvals", options)?;
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    pub fn connect_with(config: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        let pg_tls::Connection {
            config: mut pg,
            tls,
        } = pg_tls::parse(config)?;
        let millis = options.statement_timeout.as_millis();
        pg.options(format!("-c statement_timeout={millis}"))
            .connect_timeout(options.connect_timeout);
        let managed = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &tls {
            Some(tls) => Manager::from_config(pg.clone(), tls.clone(), managed),
            None => Manager::from_config(pg.clone(), NoTls, managed),
        };
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(options.connect_timeout))
            .create_timeout(Some(options.connect_timeout))
            .recycle_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|error| StoreError::Backend(format!("the connection pool: {error}")))?;
        let runtime = Arc::new(StoreRuntime::start("cairnloop-postgres", options.threads)?);
        let migrating = pool.clone();
        let (base, time) = runtime.block_on(async move {
            let mut client = migrating.get().await.map_err(unavailable)?;
            let base = migrate(&mut client).await?;
            let (server, sent, received) = read_server_clock(&client).await?;
            Ok::<_, StoreError>((base, Arc::new(ServerTime::new(server, sent, received))))
        })??;
        let changes = Arc::new(Changes::default());
        match tls {
            Some(tls) => runtime.background(relay(pg, tls, Arc::clone(&changes))),
            None => runtime.background(relay(pg, NoTls, Arc::clone(&changes))),
        }
        runtime.background(follow_server_clock(pool.clone(), Arc::clone(&time)));
        if let Some(every) = options.seal_every {
            runtime.background(pg_chain::seal_periodically(pool.clone(), base, every));
        }
        Ok(Self {
            pool,
            base,

            read_wait: options.statement_timeout,
            committed: Arc::new(Committed {
                written: AtomicI64::new(0),
                changes,
                kept: KeptLanes::default(),
            }),
            time,
            runtime,
        })
    }

    /// The server's plan for a page of `query` (`EXPLAIN (ANALYZE, BUFFERS)` of the very
    /// statement [`ApprovalStore::query_lanes`] runs, so it runs it once): to see that a
    /// queue page over millions of lanes reads an index, not the table.
    ///
    /// # Errors
    ///
    /// The server's error.
    ///
    /// ```no_run
    /// use cairnloop::approvals::LaneQuery;
    /// use cairnloop::gate::LaneState;
    /// use cairnloop::stores::PostgresStore;
    ///
    /// let store = PostgresStore::connect("host=/var/run/postgresql dbname=approvals")?;
    /// let plan = pollster::block_on(store.explain_queue(&LaneQuery::new(LaneState::Pending), 50))?;
    /// assert!(plan.contains("Index"));
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    pub fn explain_queue(
        &self,
        query: &LaneQuery,
        limit: usize,
    ) -> impl Future<Output = Result<String, StoreError>> + Send + use<> {
        let (sql, params) = queue_statement(query, limit);
        self.run(move |client| async move {
            let rows = client
                .query(
                    &format!("EXPLAIN (ANALYZE, BUFFERS) {sql}"),
                    &parameters(&params),
                )
                .await
                .map_err(read_error)?;
            Ok(rows
                .iter()
                .map(|row| row.get::<_, String>(0))
                .collect::<Vec<_>>()
                .join("\n"))
        })
    }

    /// Links every final event of the audit trail now (each process also does so every
    /// second): an event is final once no transaction older than its own is running.
    /// Answers how many were linked.
    ///
    /// # Errors
    ///
    /// The server's error.
    ///
    /// ```no_run
    /// let store = cairnloop::stores::PostgresStore::connect("host=/var/run/postgresql dbname=approvals")?;
    /// let linked = pollster::block_on(store.seal_audit())?;
    /// println!("{linked} events linked");
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    pub fn seal_audit(&self) -> impl Future<Output = Result<u64, StoreError>> + Send + use<> {
        let base = self.base;
        self.run(move |mut client| async move { pg_chain::seal(&mut client, base, true).await })
    }

    /// Up to `limit` linked events after the position `after` (0: from the start), with
    /// their links, oldest first, as stored. Events not linked yet (see
    /// [`PostgresStore::seal_audit`]) are not among them.
    ///
    /// # Errors
    ///
    /// The server's error.
    ///
    /// ```no_run
    /// let store = cairnloop::stores::PostgresStore::connect("host=/var/run/postgresql dbname=approvals")?;
    /// let first = pollster::block_on(store.chained_since(0, 100))?;
    /// assert!(first.iter().all(|record| record.is_consistent()));
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    pub fn chained_since(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ChainedRecord>, StoreError>> + Send + use<> {
        self.run(move |client| async move { pg_chain::chained_since(&client, after, limit).await })
    }

    /// Links what is final ([`PostgresStore::seal_audit`]), then checks the whole linked
    /// trail. The outer error is the store's; the inner one names the first event that
    /// was changed, removed or inserted.
    ///
    /// # Errors
    ///
    /// The server's error.
    ///
    /// ```no_run
    /// let store = cairnloop::stores::PostgresStore::connect("host=/var/run/postgresql dbname=approvals")?;
    /// match pollster::block_on(store.verify_audit())? {
    ///     Ok(report) => println!("intact: {report}"),
    ///     Err(broken) => println!("altered: {broken}"),
    /// }
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    pub async fn verify_audit(&self) -> Result<Result<ChainReport, ChainBreak>, StoreError> {
        self.verify_audit_with(ChainVerifier::new()).await
    }

    /// [`PostgresStore::verify_audit`] with `verifier` (one that also
    /// [watches](ChainVerifier::watching) for a head kept from before).
    ///
    /// # Errors
    ///
    /// The server's error.
    ///
    /// ```no_run
    /// use cairnloop::approvals::{ChainVerifier, chain_from_hex};
    /// let store = cairnloop::stores::PostgresStore::connect("host=/var/run/postgresql dbname=approvals")?;
    /// let kept = chain_from_hex(&"ab".repeat(32)).unwrap();
    /// let report = pollster::block_on(store.verify_audit_with(ChainVerifier::new().watching(kept)))?;
    /// assert!(report.is_ok_and(|report| report.watched_found == Some(true)));
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    pub async fn verify_audit_with(
        &self,
        mut verifier: ChainVerifier,
    ) -> Result<Result<ChainReport, ChainBreak>, StoreError> {
        self.seal_audit().await?;
        let (first, last) = self
            .run(|client| async move { pg_chain::extent(&client).await })
            .await?;
        // Ranges of positions read on several connections at once, checked in order: the
        // reading is the cost, and the server reads ranges side by side.
        let step = ((last - first) / VERIFY_RANGES_MOST).max(VERIFY_RANGE);
        let mut ranges = (0..)
            .map(|n: i64| first.saturating_add(n.saturating_mul(step)))
            .take_while(|from| *from < last)
            .map(|from| (from, from.saturating_add(step).min(last)));
        let mut reading = std::collections::VecDeque::new();
        loop {
            while reading.len() < VERIFY_READERS {
                let Some((after, through)) = ranges.next() else {
                    break;
                };
                reading.push_back(self.run(move |client| async move {
                    pg_chain::chained_between(&client, after, through).await
                }));
            }
            let Some(next) = reading.pop_front() else {
                return Ok(Ok(verifier.finish()));
            };
            for record in &next.await? {
                if let Err(broken) = verifier.check(record) {
                    return Ok(Err(broken));
                }
            }
        }
    }

    /// Runs `job` with a connection from the pool, on the store's runtime.
    /// `columns` of the lanes with these keys, in one statement.
    fn by_keys(
        &self,
        columns: &'static str,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<tokio_postgres::Row>, StoreError>> + Send + use<> {
        let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
        self.run(move |client| async move {
            let sql = format!("SELECT {columns} FROM cairnloop_lanes WHERE key = ANY($1)");
            let statement = client.prepare_cached(&sql).await.map_err(read_error)?;
            client.query(&statement, &[&keys]).await.map_err(read_error)
        })
    }

    fn run<T, F, Fut>(
        &self,
        job: F,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + use<T, F, Fut>
    where
        T: Send + 'static,
        F: FnOnce(Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let pool = self.pool.clone();
        self.runtime.spawn(async move {
            let client = pool.get().await.map_err(unavailable)?;
            job(client).await
        })
    }
}

async fn migrate(client: &mut Object) -> Result<i64, StoreError> {
    let transaction = client.transaction().await.map_err(read_error)?;
    transaction
        .batch_execute("SET LOCAL statement_timeout = 0")
        .await
        .map_err(read_error)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(read_error)?;
    let meta: bool = transaction
        .query_one("SELECT to_regclass('cairnloop_schema') IS NOT NULL", &[])
        .await
        .map_err(read_error)?
        .get(0);
    let version: i32 = if meta {
        transaction
            .query_one("SELECT version FROM cairnloop_schema", &[])
            .await
            .map_err(read_error)?
            .get(0)
    } else {
        let taken: bool = transaction
            .query_one(
                "SELECT to_regclass('cairnloop_lanes') IS NOT NULL OR to_regclass('cairnloop_events') IS NOT NULL",
                &[],
            )
            .await
            .map_err(read_error)?
            .get(0);
        if taken {
            return Err(StoreError::Foreign);
        }
        transaction
            .batch_execute("CREATE TABLE cairnloop_schema (version INTEGER NOT NULL); INSERT INTO cairnloop_schema VALUES (0);")
            .await
            .map_err(read_error)?;
        0
    };
    if version > POSTGRES_SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found: version,
            supported: POSTGRES_SCHEMA_VERSION,
        });
    }
    for (step, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .skip(usize::try_from(version).unwrap_or(0))
    {
        transaction.batch_execute(sql).await.map_err(read_error)?;
        let next = i32::try_from(step + 1).unwrap_or(i32::MAX);
        transaction
            .execute("UPDATE cairnloop_schema SET version = $1", &[&next])
            .await
            .map_err(read_error)?;
    }
    let base: i64 = transaction
        .query_one("SELECT position_base FROM cairnloop_schema", &[])
        .await
        .map_err(read_error)?
        .get(0);
    transaction.commit().await.map_err(read_error)?;
    Ok(base)
}

/// The server's clock in milliseconds since the Unix epoch, when it was asked and when it
/// answered.
async fn read_server_clock(
    client: &tokio_postgres::Client,
) -> Result<(i64, std::time::Instant, std::time::Instant), StoreError> {
    let sent = std::time::Instant::now();
    let row = client
        .query_one(READ_SERVER_CLOCK, &[])
        .await
        .map_err(read_error)?;
    Ok((row.get(0), sent, std::time::Instant::now()))
}

/// Reads the server's clock again now and then; a failed reading keeps the last one.
async fn follow_server_clock(pool: Pool, time: Arc<ServerTime>) {
    loop {
        tokio::time::sleep(READ_AGAIN).await;
        if let Ok(client) = pool.get().await
            && let Ok((server, sent, received)) = read_server_clock(&client).await
        {
            time.read_again(server, sent, received);
        }
    }
}

/// No connection could be had: nothing was sent, so nothing changed.
fn unavailable(error: PoolError) -> StoreError {
    match error {
        PoolError::Backend(error) => StoreError::Backend(format!(
            "cannot connect to PostgreSQL: {}",
            describe(&error)
        )),
        other => StoreError::Backend(format!("no PostgreSQL connection: {other}")),
    }
}

/// The server's message with its SQLSTATE, or the client's error.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            text
        }
    }
}

/// An error of a statement that changes nothing: the server's, or a lost connection.
fn read_error(error: tokio_postgres::Error) -> StoreError {
    match error.as_db_error() {
        Some(db) if db.code().code() == "25006" => StoreError::ReadOnly,
        _ => StoreError::Backend(describe(&error)),
    }
}

/// An error of a write: the server's answer means it did not commit; without one (the
/// connection broke after the statement may have been sent) the outcome is unknown.
fn write_error(error: tokio_postgres::Error) -> StoreError {
    if error.as_db_error().is_some() {
        read_error(error)
    } else {
        StoreError::OutcomeUnknown(describe(&error))
    }
}

fn version_of(version: u64) -> Result<i64, StoreError> {
    i64::try_from(version).map_err(|_| StoreError::Conflict)
}

async fn write_transition(
    client: Object,
    base: i64,
    committed: Arc<Committed>,
    expected_version: u64,
    lane: ApprovalLane,
    event: TransitionEvent,
) -> Result<(), StoreError> {
    let key = lane.key().to_string();
    let (text, record) = (encode(&lane)?, encode(&AuditRecord::Transition(event))?);
    let (expected, next) = (version_of(expected_version)?, version_of(lane.version())?);
    let expires_at = millis(lane.expires_at().unix_millis());
    let statement = client
        .prepare_cached(TRANSITION)
        .await
        .map_err(read_error)?;
    let row = client
        .query_one(
            &statement,
            &[
                &lane.state().as_str(),
                &next,
                &text,
                &key,
                &expected,
                &record,
                &base,
                &expires_at,
            ],
        )
        .await
        .map_err(write_error)?;
    committed.note(row.get(2));
    match (row.get::<_, bool>(0), row.get::<_, bool>(1)) {
        (true, _) => {
            committed.changes.committed();
            committed.kept.keep(&lane);
            Ok(())
        }
        (false, exists) => {
            committed.kept.forget(&lane.key());
            Err(if exists {
                StoreError::Conflict
            } else {
                StoreError::Missing
            })
        }
    }
}

impl ApprovalStore for PostgresStore {
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(ApprovalLane, bool), StoreError>> + Send {
        let (base, committed) = (self.base, self.committed.clone());
        self.run(move |client| async move {
            let key = lane.key().to_string();
            let (text, record) = (encode(&lane)?, encode(&AuditRecord::Transition(event))?);
            let version = version_of(lane.version())?;
            let columns = LaneColumns::of(&lane);
            let statement = client.prepare_cached(INSERT).await.map_err(read_error)?;
            let row = client
                .query_one(
                    &statement,
                    &[
                        &key,
                        &lane.state().as_str(),
                        &version,
                        &text,
                        &record,
                        &base,
                        &columns.tool,
                        &columns.tier,
                        &columns.proposer,
                        &columns.account,
                        &columns.proposed_at,
                        &columns.expires_at,
                    ],
                )
                .await
                .map_err(write_error)?;
            committed.note(row.get(2));
            if row.get::<_, bool>(0) {
                committed.changes.committed();
                committed.kept.keep(&lane);
                return Ok((lane, true));
            }
            let existing = match row.get::<_, Option<String>>(1) {
                Some(existing) => existing,
                // The lane that won committed after this statement's snapshot was taken:
                // it is there now.
                None => client
                    .query_one(GET, &[&key])
                    .await
                    .map_err(read_error)?
                    .get(0),
            };
            let existing = decode(&existing)?;
            committed.kept.keep(&existing);
            Ok((existing, false))
        })
    }

    fn get(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Option<ApprovalLane>, StoreError>> + Send {
        let (wanted, committed) = (*key, self.committed.clone());
        let key = key.to_string();
        self.run(move |client| async move {
            let statement = client.prepare_cached(GET).await.map_err(read_error)?;
            let row = client
                .query_opt(&statement, &[&key])
                .await
                .map_err(read_error)?;
            let lane = row.map(|row| decode(row.get::<_, &str>(0))).transpose()?;
            match &lane {
                Some(lane) => committed.kept.keep(lane),
                None => committed.kept.forget(&wanted),
            }
            Ok(lane)
        })
    }

    fn transition(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let (base, committed) = (self.base, self.committed.clone());
        self.run(move |client| {
            write_transition(client, base, committed, expected_version, lane, event)
        })
    }

    fn transition_detached(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) {
        let (base, committed, pool) = (self.base, self.committed.clone(), self.pool.clone());
        self.runtime.detach(async move {
            if let Ok(client) = pool.get().await {
                let _ =
                    write_transition(client, base, committed, expected_version, lane, event).await;
            }
        });
    }

    fn append(&self, record: AuditRecord) -> impl Future<Output = Result<(), StoreError>> + Send {
        let (base, committed) = (self.base, self.committed.clone());
        self.run(move |client| async move {
            let text = encode(&record)?;
            let statement = client.prepare_cached(APPEND).await.map_err(read_error)?;
            let row = client
                .query_one(&statement, &[&text, &base])
                .await
                .map_err(write_error)?;
            committed.note(row.get(0));
            Ok(())
        })
    }

    fn events_since(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(u64, AuditRecord)>, StoreError>> + Send {
        let (base, committed, read_wait) = (self.base, self.committed.clone(), self.read_wait);
        self.run(move |client| async move {
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let wanted = i64::try_from(limit).unwrap_or(i64::MAX);
            let statement = client
                .prepare_cached(EVENTS_SINCE)
                .await
                .map_err(read_error)?;
            let deadline = tokio::time::Instant::now() + read_wait;
            let mut pause = Duration::from_millis(1);
            loop {
                let rows = client
                    .query(&statement, &[&after, &wanted, &base])
                    .await
                    .map_err(read_error)?;
                let below: i64 = rows.first().map_or(i64::MAX, |row| row.get(0));
                let mut events = Vec::with_capacity(rows.len());
                for row in &rows {
                    let Some(position) = row.get::<_, Option<i64>>(1) else {
                        continue;
                    };
                    let position = u64::try_from(position).map_err(|_| {
                        StoreError::Corrupt(format!("an event has position {position}"))
                    })?;
                    events.push((position, decode(row.get::<_, &str>(2))?));
                }
                // This store's own latest event is not below the horizon yet: an older
                // writer elsewhere is still open. Wait for it (briefly, as a statement
                // would), so a process always reads what it has just written.
                let own = committed.written.load(Ordering::Acquire);
                let waiting = own > after && own >= below && events.len() < limit;
                if !waiting || tokio::time::Instant::now() + pause > deadline {
                    return Ok(events);
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(20));
            }
        })
    }

    fn list(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let after = after.map_or_else(String::new, ToString::to_string);
        self.run(move |client| async move {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let statement = client.prepare_cached(LIST).await.map_err(read_error)?;
            let rows = client
                .query(&statement, &[&state.as_str(), &after, &limit])
                .await
                .map_err(read_error)?;
            rows.iter()
                .map(|row| decode(row.get::<_, &str>(0)))
                .collect()
        })
    }

    fn query_lanes(
        &self,
        query: &LaneQuery,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let (sql, params) = queue_statement(query, limit);
        self.run(move |client| async move {
            // Not a cached statement: a cached one is planned once for any values, and
            // a plan good for one proposer or account list can read the whole table for
            // another. Planned for its values, a page costs a parse more.
            let rows = client
                .query(&sql, &parameters(&params))
                .await
                .map_err(read_error)?;
            rows.iter()
                .map(|row| decode(row.get::<_, &str>(0)))
                .collect()
        })
    }

    fn count_lanes(
        &self,
        query: &LaneQuery,
        cap: usize,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send {
        let mut filter = LaneFilter::new(query, false, numbered);
        self.run(move |client| async move {
            let cap = filter.push(Param::Int(i64::try_from(cap).unwrap_or(i64::MAX)), numbered);
            let sql = format!(
                "SELECT count(*) FROM (SELECT 1 FROM cairnloop_lanes WHERE {} LIMIT {cap}) AS found",
                filter.clause
            );
            // Planned for its values, as the queue's pages are.
            let counted: i64 = client
                .query_one(&sql, &parameters(&filter.params))
                .await
                .map_err(read_error)?
                .get(0);
            Ok(usize::try_from(counted).unwrap_or(0))
        })
    }

    /// The database server's clock: processes on hosts whose clocks differ decide
    /// expiries, leases and sweeps by this one time.
    fn now(&self) -> Option<Timestamp> {
        self.time.now()
    }

    fn last_known(&self, key: &IdempotencyKey) -> Option<ApprovalLane> {
        self.committed.kept.get(key)
    }

    fn watch(&self) -> Option<StoreWatch> {
        Some(self.committed.changes.watch().clone())
    }

    fn get_many(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let committed = self.committed.clone();
        let rows = self.by_keys("lane", keys);
        async move {
            let mut lanes = Vec::new();
            for row in rows.await? {
                let lane: ApprovalLane = decode(row.get::<_, &str>(0))?;
                committed.kept.keep(&lane);
                lanes.push(lane);
            }
            Ok(lanes)
        }
    }

    fn versions_of(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<(IdempotencyKey, u64)>, StoreError>> + Send {
        let rows = self.by_keys("key, version", keys);
        async move {
            (rows.await?.iter())
                .map(|row| stored_version(row.get::<_, &str>(0), row.get::<_, i64>(1)))
                .collect()
        }
    }

    fn claim_notices(
        &self,
        claim: &NoticeClaim,
    ) -> impl Future<Output = Result<Vec<DueNotice>, StoreError>> + Send {
        let claim = claim.clone();
        self.run(move |client| async move {
            let (now, until) = (
                millis(claim.now().unix_millis()),
                millis(claim.until().unix_millis()),
            );
            let limit = i64::try_from(claim.max()).unwrap_or(i64::MAX);
            let statement = client
                .prepare_cached(CLAIM_NOTICES)
                .await
                .map_err(write_error)?;
            let (target, holder) = (claim.target(), claim.holder());
            let mark = now.saturating_sub(millis(STORED_WITHIN_MILLIS));
            let rows = client
                .query(&statement, &[&target, &now, &holder, &until, &limit, &mark])
                .await
                .map_err(write_error)?;
            rows.iter()
                .map(|row| {
                    let lane: ApprovalLane = decode(row.get::<_, &str>(0))?;
                    let attempt = u32::try_from(row.get::<_, i64>(1)).unwrap_or(u32::MAX);
                    Ok(DueNotice::claimed(lane, &claim, attempt))
                })
                .collect()
        })
    }

    fn settle_notice(
        &self,
        notice: &DueNotice,
        outcome: NoticeOutcome,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let (stage, due_at) = notice_stage(outcome);
        let notice = notice.clone();
        self.run(move |client| async move {
            let statement = client
                .prepare_cached(
                    "UPDATE cairnloop_notices SET stage = $1, due_at = $2
                     WHERE key = $3 AND target = $4 AND round = $5
                       AND stage = 'held' AND holder = $6 AND attempts = $7",
                )
                .await
                .map_err(write_error)?;
            let (key, round) = (
                notice.lane().key().to_string(),
                millis(notice.round().unix_millis()),
            );
            let (target, holder) = (notice.claim().target(), notice.claim().holder());
            let attempt = i64::from(notice.attempt());
            let settled = client
                .execute(
                    &statement,
                    &[&stage, &due_at, &key, &target, &round, &holder, &attempt],
                )
                .await
                .map_err(write_error)?;
            Ok(settled == 1)
        })
    }

    fn accept_once(
        &self,
        token: &str,
        now: Timestamp,
        forget_at: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let token = String::from(token);
        let (now, forget_at) = (millis(now.unix_millis()), millis(forget_at.unix_millis()));
        self.run(move |client| async move {
            // One statement: the other forgotten tokens go, and this one is taken unless
            // it is kept (two replicas taking it at once: the primary key lets one in).
            // A forgotten row of this token is taken over in place: the delete and the
            // insert of one statement see the same snapshot, so deleting it would not
            // make room for it.
            let statement = client
                .prepare_cached(
                    "WITH forgotten AS (
                       DELETE FROM cairnloop_accepted WHERE forget_at <= $2 AND token <> $1
                     )
                     INSERT INTO cairnloop_accepted (token, forget_at) VALUES ($1, $3)
                     ON CONFLICT (token) DO UPDATE SET forget_at = EXCLUDED.forget_at
                     WHERE cairnloop_accepted.forget_at <= $2",
                )
                .await
                .map_err(write_error)?;
            let taken = client
                .execute(&statement, &[&token, &now, &forget_at])
                .await
                .map_err(write_error)?;
            Ok(taken == 1)
        })
    }

    fn open_task(
        &self,
        task: TaskRecord,
    ) -> impl Future<Output = Result<(TaskRecord, bool), StoreError>> + Send {
        self.run(move |client| async move {
            // One statement: the new row, or the one kept for this lane and owner.
            let statement = client.prepare_cached(OPEN_TASK).await.map_err(read_error)?;
            let (lane, opened_at) = (
                task.lane().to_string(),
                millis(task.opened_at().unix_millis()),
            );
            // A rival's row committed while this statement waited on it is not in the
            // statement's snapshot: the next attempt reads it.
            for _ in 0..3 {
                let row = client
                    .query_opt(
                        &statement,
                        &[&task.id().as_str(), &lane, &task.owner(), &opened_at],
                    )
                    .await
                    .map_err(|error| match error.as_db_error() {
                        // The id is taken (never, with 128 random bits): refused.
                        Some(db) if db.code().code() == "23505" => StoreError::Conflict,
                        _ => write_error(error),
                    })?;
                if let Some(row) = row {
                    let kept = task_row(&row)?;
                    let new = kept.id() == task.id();
                    return Ok((kept, new));
                }
            }
            Err(StoreError::Backend(
                "the task was neither added nor found".into(),
            ))
        })
    }

    fn task(
        &self,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send {
        let id = id.clone();
        self.run(move |client| async move {
            let statement = client.prepare_cached(GET_TASK).await.map_err(read_error)?;
            let row = client
                .query_opt(&statement, &[&id.as_str()])
                .await
                .map_err(read_error)?;
            row.as_ref().map(task_row).transpose()
        })
    }

    fn issue_task_input(
        &self,
        id: &TaskId,
        issued: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let id = id.clone();
        self.run(move |client| async move {
            let statement = client
                .prepare_cached(ISSUE_TASK_INPUT)
                .await
                .map_err(read_error)?;
            let row = client
                .query_one(&statement, &[&id.as_str(), &i64::from(issued)])
                .await
                .map_err(write_error)?;
            match (row.get::<_, bool>(0), row.get::<_, bool>(1)) {
                (true, _) => Ok(()),
                (false, true) => Err(StoreError::Conflict),
                (false, false) => Err(StoreError::Missing),
            }
        })
    }

    fn forget_tasks(
        &self,
        before: Timestamp,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        self.run(move |client| async move {
            client
                .execute(
                    "DELETE FROM cairnloop_tasks WHERE opened_at < $1",
                    &[&millis(before.unix_millis())],
                )
                .await
                .map_err(write_error)
        })
    }
}

/// The queue's statement and its parameters: the lanes `query` admits, newest first, at
/// most `limit`.
fn queue_statement(query: &LaneQuery, limit: usize) -> (String, Vec<Param>) {
    let mut filter = LaneFilter::new(query, true, numbered);
    let limit = filter.push(
        Param::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
        numbered,
    );
    let sql = format!(
        "SELECT lane FROM cairnloop_lanes WHERE {}
         ORDER BY proposed_at DESC, key DESC LIMIT {limit}",
        filter.clause
    );
    (sql, filter.params)
}

/// PostgreSQL's numbered placeholder.
fn numbered(n: usize) -> String {
    format!("${n}")
}

fn parameters(params: &[Param]) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
    params
        .iter()
        .map(|param| -> &(dyn tokio_postgres::types::ToSql + Sync) {
            match param {
                Param::Text(text) => text,
                Param::Int(number) => number,
            }
        })
        .collect()
}
