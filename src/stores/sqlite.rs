//! The SQLite store: one file, WAL; the moves queued at one moment committed together,
//! each in a savepoint of its own with its event.

use std::format;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::time::Duration;
use std::vec::Vec;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::approvals::{
    ApprovalLane, ApprovalStore, AuditRecord, CHAIN_GENESIS, ChainBreak, ChainHash, ChainReport,
    ChainVerifier, ChainedRecord, DueNotice, LaneQuery, NoticeClaim, NoticeOutcome,
    STORED_WITHIN_MILLIS, StoreError, StoreWatch, TaskId, TaskRecord, TransitionEvent, chain_link,
};
use crate::declare::IdempotencyKey;
use crate::gate::{LaneState, Timestamp};
use crate::stores::checkpointer::Checkpointer;
use crate::stores::lane_filter::{LaneColumns, LaneFilter, Param, millis};
use crate::stores::record::{decode, encode, notice_stage, stored_version, task_from_row};
use crate::stores::worker::{Access, Batch, Worker};

/// Marks a SQLite file as a cairnloop store (`PRAGMA application_id`): "CLop".
const APPLICATION_ID: i32 = 0x434c_6f70;

/// The schema this library writes. A file with a higher `user_version` is refused.
pub const SCHEMA_VERSION: i32 = 6;

/// Each migration takes the schema from its index to the next version.
const MIGRATIONS: [&str; 6] = [
    "
    CREATE TABLE lanes (
        key TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        version INTEGER NOT NULL,
        lane TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX lanes_by_state ON lanes (state, key);
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        record TEXT NOT NULL
    );
    ",
    // What a queue is filtered and ordered by, as columns filled from the stored lanes:
    // newest first in every state, and per filter for the pending ones an operator pages.
    "
    ALTER TABLE lanes ADD COLUMN tool TEXT NOT NULL DEFAULT '';
    ALTER TABLE lanes ADD COLUMN tier TEXT NOT NULL DEFAULT '';
    ALTER TABLE lanes ADD COLUMN proposer TEXT NOT NULL DEFAULT '';
    ALTER TABLE lanes ADD COLUMN account TEXT;
    ALTER TABLE lanes ADD COLUMN proposed_at INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE lanes ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;
    UPDATE lanes SET
        tool = json_extract(lane, '$.proposal.tool'),
        tier = json_extract(lane, '$.proposal.risk_tier'),
        proposer = json_extract(lane, '$.proposal.actor_id'),
        account = json_extract(lane, '$.proposal.account_id'),
        proposed_at = min(json_extract(lane, '$.proposed_at'), 9223372036854775807),
        expires_at = min(json_extract(lane, '$.expires_at'), 9223372036854775807);
    CREATE INDEX lanes_newest ON lanes (state, proposed_at, key);
    CREATE INDEX lanes_by_expiry ON lanes (state, expires_at);
    CREATE INDEX lanes_pending_by_tool ON lanes (tool, proposed_at, key) WHERE state = 'pending';
    CREATE INDEX lanes_pending_by_tier ON lanes (tier, proposed_at, key) WHERE state = 'pending';
    CREATE INDEX lanes_pending_by_proposer ON lanes (proposer, proposed_at, key)
        WHERE state = 'pending';
    CREATE INDEX lanes_pending_by_account ON lanes (account, proposed_at, key)
        WHERE state = 'pending';
    ",
    // The tasks clients follow while a lane waits: one per lane and owner.
    "
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        owner TEXT NOT NULL,
        opened_at INTEGER NOT NULL,
        inputs_issued INTEGER NOT NULL DEFAULT 0,
        UNIQUE (lane, owner)
    ) WITHOUT ROWID;
    CREATE INDEX tasks_by_age ON tasks (opened_at);
    ",
    // What became of each notice of a pending lane, per target and round (the lane's
    // proposal time): held by a claim until `due_at`, due again at `due_at`, or done
    // (`due_at` at the end of time).
    "
    CREATE TABLE notices (
        key TEXT NOT NULL,
        target TEXT NOT NULL,
        round INTEGER NOT NULL,
        attempts INTEGER NOT NULL,
        stage TEXT NOT NULL,
        holder TEXT NOT NULL,
        due_at INTEGER NOT NULL,
        PRIMARY KEY (key, target, round)
    ) WITHOUT ROWID;
    ",
    // Tokens taken once (a chat callback's signature), each kept until it is forgotten;
    // and per outbox target, the proposal time below which every pending lane has its
    // notice (a claim looks below it only for notices due again).
    "
    CREATE TABLE accepted (
        token TEXT PRIMARY KEY,
        forget_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX accepted_by_age ON accepted (forget_at);
    CREATE TABLE notice_marks (
        target TEXT PRIMARY KEY,
        below INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX notices_due ON notices (target, due_at);
    ",
    // The audit chain: each event keeps the link of the one before it and its own
    // (`chain_link`). The events already there are chained in order as the step runs.
    "
    ALTER TABLE events ADD COLUMN prev BLOB;
    ALTER TABLE events ADD COLUMN hash BLOB;
    ",
];

/// The migration step after which the events already there are chained.
const CHAIN_STEP: usize = 5;

/// How a [`SqliteStore`] opens its file.
///
/// The default is `synchronous = NORMAL` in WAL mode: a commit survives the process
/// crashing at any point (the WAL is in the operating system's hands), and a power loss
/// can lose the last commits, never corrupt the file. [`SqliteOptions::durable`] is
/// `synchronous = FULL`: every commit also survives a power loss, at the cost of an fsync
/// per move.
///
/// ```
/// use cairnloop::stores::SqliteOptions;
///
/// let options = SqliteOptions::new().durable();
/// assert!(options.is_durable());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    read_only: bool,
    durable: bool,
    busy_timeout: Duration,
}

impl SqliteOptions {
    /// Read-write, `synchronous = NORMAL`, waiting up to 5 s for another process's lock.
    ///
    /// ```
    /// assert!(!cairnloop::stores::SqliteOptions::new().is_durable());
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            read_only: false,
            durable: false,
            busy_timeout: Duration::from_secs(5),
        }
    }

    /// `synchronous = FULL`: every commit survives a power loss.
    ///
    /// ```
    /// assert!(cairnloop::stores::SqliteOptions::new().durable().is_durable());
    /// ```
    #[must_use]
    pub const fn durable(self) -> Self {
        Self {
            durable: true,
            ..self
        }
    }

    /// Opens the file read-only: lanes and events can be read, every write is refused
    /// with [`StoreError::ReadOnly`] (and a call that needs one is blocked).
    ///
    /// ```
    /// let options = cairnloop::stores::SqliteOptions::new().read_only();
    /// ```
    #[must_use]
    pub const fn read_only(self) -> Self {
        Self {
            read_only: true,
            ..self
        }
    }

    /// How long a move waits for another process's write lock before it fails.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let options = cairnloop::stores::SqliteOptions::new().busy_timeout(Duration::from_secs(1));
    /// ```
    #[must_use]
    pub const fn busy_timeout(self, busy_timeout: Duration) -> Self {
        Self {
            busy_timeout,
            ..self
        }
    }

    /// Whether every commit is synced to disk.
    ///
    /// ```
    /// assert!(!cairnloop::stores::SqliteOptions::default().is_durable());
    /// ```
    #[must_use]
    pub const fn is_durable(&self) -> bool {
        self.durable
    }
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// An [`ApprovalStore`] on one SQLite file: the embedded default, shared by every process
/// that opens the same file.
///
/// Each move is one `BEGIN IMMEDIATE` transaction that writes the lane (compare-and-set on
/// its version) and appends its event, so of two processes racing for a lane one wins and
/// the other changes nothing. The schema is versioned and migrated when the file is
/// opened. A file whose schema is newer than this library's, a SQLite file that is not a
/// cairnloop store, and a file that is not a SQLite database are refused, and nothing is
/// written to them. The connection lives on a thread of its own, so an async caller never
/// blocks its runtime; a second thread copies the write-ahead log back into the file a
/// few times a second (SQLite would otherwise do it inside whichever commit fills the log
/// past 1,000 pages, which then is the slowest one).
///
/// ```
/// use cairnloop::approvals::ApprovalStore;
/// use cairnloop::stores::SqliteStore;
///
/// let dir = std::env::temp_dir().join(format!("cairnloop-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let store = SqliteStore::open(dir.join("approvals.db"))?;
/// assert!(pollster::block_on(store.events_since(0, 10))?.is_empty());
/// # drop(store);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), cairnloop::approvals::StoreError>(())
/// ```
pub struct SqliteStore {
    worker: Worker<Watched>,
    /// Copies the write-ahead log back into the file off the commit path (none for a
    /// read-only store).
    _checkpointer: Option<Checkpointer>,
    watch: StoreWatch,
    path: PathBuf,
    options: SqliteOptions,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (or creates) the store at `path` with the default options.
    ///
    /// # Errors
    ///
    /// [`StoreError::Foreign`], [`StoreError::NewerSchema`], [`StoreError::Corrupt`] for a
    /// file it refuses (nothing is written to it); the backend's error.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::new())
    }

    /// Opens (or creates) the store at `path` with `options`.
    ///
    /// # Errors
    ///
    /// As [`SqliteStore::open`]; a read-only store whose file does not exist yet or
    /// needs a migration is refused with [`StoreError::ReadOnly`].
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let exists = std::fs::metadata(&path).is_ok_and(|meta| meta.len() > 0);
        if exists {
            // Look before writing anything: a file that is not ours stays untouched.
            let inspect = Connection::open_with_flags(
                &path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(classify)?;
            check_file(&inspect)?;
        } else if options.read_only {
            return Err(StoreError::ReadOnly);
        }
        let flags = if options.read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
        };
        let mut connection = Connection::open_with_flags(&path, flags).map_err(classify)?;
        connection
            .busy_timeout(options.busy_timeout)
            .map_err(classify)?;
        // Room for every statement the store prepares (transactions, savepoints, moves,
        // the listings' variants), so none is parsed again under load.
        connection.set_prepared_statement_cache_capacity(64);
        if options.read_only {
            let version = user_version(&connection)?;
            if version != SCHEMA_VERSION {
                return Err(StoreError::ReadOnly);
            }
        } else {
            connection
                .pragma_update(None, "journal_mode", "WAL")
                .map_err(classify)?;
            let synchronous = if options.durable { "FULL" } else { "NORMAL" };
            connection
                .pragma_update(None, "synchronous", synchronous)
                .map_err(classify)?;
            migrate(&mut connection)?;
            // The checkpointer below copies the log back; no commit of this connection
            // does.
            connection
                .pragma_update(None, "wal_autocheckpoint", 0)
                .map_err(classify)?;
        }
        let name = format!("cairnloop-sqlite-{}", path.display());
        let checkpointer = if options.read_only {
            None
        } else {
            let own = Connection::open_with_flags(&path, flags).map_err(classify)?;
            own.busy_timeout(options.busy_timeout).map_err(classify)?;
            Some(Checkpointer::spawn(own, &name)?)
        };
        let watch = StoreWatch::new();
        let connection = Watched::new(connection)?;
        Ok(Self {
            worker: Worker::spawn(&name, connection, watch.clone())?,
            _checkpointer: checkpointer,
            watch,
            path,
            options,
        })
    }

    /// The file the store is on.
    ///
    /// ```
    /// # fn f(store: &cairnloop::stores::SqliteStore) -> &std::path::Path {
    /// store.path()
    /// # }
    /// ```
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Up to `limit` events after `after` (0: from the start) with their links, oldest
    /// first, as stored: for [`ChainVerifier`](crate::approvals::ChainVerifier) and an
    /// export.
    ///
    /// # Errors
    ///
    /// The backend's error.
    ///
    /// ```
    /// # fn demo() -> Result<(), cairnloop::approvals::StoreError> {
    /// let store = cairnloop::stores::SqliteStore::open(":memory:")?;
    /// assert!(pollster::block_on(store.chained_since(0, 100))?.is_empty());
    /// # Ok(()) }
    /// # demo().unwrap();
    /// ```
    pub fn chained_since(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ChainedRecord>, StoreError>> + Send + use<> {
        self.worker.run(Access::Read, move |connection| {
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut select = connection
                .prepare_cached(
                    "SELECT seq, prev, hash, record FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                )
                .map_err(classify)?;
            let rows = select
                .query_map(params![after, limit], |row| {
                    let seq = u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0);
                    let prev = as_link(row.get_ref(1)?.as_blob_or_null()?);
                    let hash = as_link(row.get_ref(2)?.as_blob_or_null()?);
                    Ok(ChainedRecord::new(seq, prev, hash, row.get::<_, String>(3)?))
                })
                .map_err(classify)?;
            rows.collect::<Result<_, _>>().map_err(classify)
        })
    }

    /// Checks the whole audit trail: every event's link, from the first to the last.
    /// The outer error is the store's; the inner one names the first event that was
    /// changed, removed or inserted.
    ///
    /// # Errors
    ///
    /// The backend's error.
    ///
    /// ```
    /// # fn demo() -> Result<(), cairnloop::approvals::StoreError> {
    /// let store = cairnloop::stores::SqliteStore::open(":memory:")?;
    /// let report = pollster::block_on(store.verify_audit())?.expect("an empty trail holds");
    /// assert_eq!(report.records, 0);
    /// # Ok(()) }
    /// # demo().unwrap();
    /// ```
    pub async fn verify_audit(&self) -> Result<Result<ChainReport, ChainBreak>, StoreError> {
        self.verify_audit_with(ChainVerifier::new()).await
    }

    /// [`SqliteStore::verify_audit`] with `verifier` (one that also
    /// [watches](ChainVerifier::watching) for a head kept from before).
    ///
    /// # Errors
    ///
    /// The backend's error.
    ///
    /// ```
    /// # fn demo() -> Result<(), cairnloop::approvals::StoreError> {
    /// use cairnloop::approvals::{CHAIN_GENESIS, ChainVerifier};
    /// let store = cairnloop::stores::SqliteStore::open(":memory:")?;
    /// let watching = ChainVerifier::new().watching(CHAIN_GENESIS);
    /// let report = pollster::block_on(store.verify_audit_with(watching))?.unwrap();
    /// assert_eq!(report.watched_found, Some(true));
    /// # Ok(()) }
    /// # demo().unwrap();
    /// ```
    pub async fn verify_audit_with(
        &self,
        verifier: ChainVerifier,
    ) -> Result<Result<ChainReport, ChainBreak>, StoreError> {
        crate::stores::verify_pages(verifier, |after| self.chained_since(after, VERIFY_PAGE)).await
    }
}

/// Events read per page while a trail is verified.
const VERIFY_PAGE: usize = 20_000;

/// Refuses a file that is not a cairnloop store, or one from a newer library.
fn check_file(connection: &Connection) -> Result<(), StoreError> {
    let application_id: i32 = connection
        .query_row("PRAGMA application_id", [], |row| row.get(0))
        .map_err(classify)?;
    let version = user_version(connection)?;
    if application_id == 0 && version == 0 {
        // A SQLite file: empty is ours to set up; anything in it belongs to someone else.
        let tables: i64 = connection
            .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
            .map_err(classify)?;
        return if tables == 0 {
            Ok(())
        } else {
            Err(StoreError::Foreign)
        };
    }
    if application_id != APPLICATION_ID {
        return Err(StoreError::Foreign);
    }
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

fn user_version(connection: &Connection) -> Result<i32, StoreError> {
    connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(classify)
}

/// Brings the schema to [`SCHEMA_VERSION`], one transaction per step, checking the
/// version again inside the transaction (another process may be migrating too).
fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    loop {
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(classify)?;
        check_file(&transaction)?;
        let version = user_version(&transaction)?;
        let Some(step) = usize::try_from(version)
            .ok()
            .and_then(|v| MIGRATIONS.get(v))
        else {
            transaction.commit().map_err(classify)?;
            return Ok(());
        };
        transaction.execute_batch(step).map_err(classify)?;
        if usize::try_from(version) == Ok(CHAIN_STEP) {
            chain_existing(&transaction)?;
        }
        transaction
            .pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(classify)?;
        transaction
            .pragma_update(None, "user_version", version + 1)
            .map_err(classify)?;
        transaction.commit().map_err(classify)?;
    }
}

/// A typed error for what SQLite said.
fn classify(error: rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly,
        Some(ErrorCode::NotADatabase) => StoreError::Corrupt("the file is not a database".into()),
        Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt(error.to_string()),
        Some(ErrorCode::DiskFull) => StoreError::Backend("the disk is full".into()),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Backend(format!("the store is busy: {error}"))
        }
        _ => StoreError::Backend(error.to_string()),
    }
}

fn write_transition(
    connection: &mut Connection,
    expected_version: u64,
    lane: &ApprovalLane,
    event: &TransitionEvent,
) -> Result<(), StoreError> {
    let key = lane.key().to_string();
    let (text, record) = (
        encode(lane)?,
        encode(&AuditRecord::Transition(event.clone()))?,
    );
    let expected = i64::try_from(expected_version).map_err(|_| StoreError::Conflict)?;
    let next = i64::try_from(lane.version()).map_err(|_| StoreError::Conflict)?;
    let expires_at = millis(lane.expires_at().unix_millis());
    in_move(connection, |transaction| {
        let changed = transaction
            .prepare_cached(
                "UPDATE lanes SET state = ?1, version = ?2, lane = ?3, expires_at = ?6
                 WHERE key = ?4 AND version = ?5",
            )
            .and_then(|mut update| {
                update.execute(params![
                    lane.state().as_str(),
                    next,
                    text,
                    key,
                    expected,
                    expires_at
                ])
            })
            .map_err(classify)?;
        if changed == 0 {
            let exists = transaction
                .query_row("SELECT 1 FROM lanes WHERE key = ?1", [&key], |_| Ok(()))
                .optional()
                .map_err(classify)?
                .is_some();
            return Err(if exists {
                StoreError::Conflict
            } else {
                StoreError::Missing
            });
        }
        append_event(transaction, &record)
    })
}

/// Runs one move atomically, in a savepoint of the batch's transaction: on an error it is
/// rolled back to where it began (the savepoint is dropped), the batch's other moves kept.
fn in_move<T>(
    connection: &mut Connection,
    body: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    // The statements are prepared once per connection: every move runs them.
    run_cached(connection, "SAVEPOINT move")?;
    let done = body(connection).and_then(|value| {
        run_cached(connection, "RELEASE move")?;
        Ok(value)
    });
    if done.is_err() {
        // Undone to where the move began; the batch's other moves are kept.
        let _ = run_cached(connection, "ROLLBACK TO move");
        let _ = run_cached(connection, "RELEASE move");
    }
    done
}

/// `columns` of the lanes with these keys, each row read by `read`: a statement per 500
/// keys, under SQLite's limit of bound parameters per statement.
fn by_keys<T>(
    connection: &Connection,
    columns: &str,
    keys: &[String],
    read: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StoreError> {
    let mut found = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(500) {
        let marks = std::vec!["?"; chunk.len()].join(", ");
        let sql = format!("SELECT {columns} FROM lanes WHERE key IN ({marks})");
        let mut select = connection.prepare_cached(&sql).map_err(classify)?;
        let rows = select
            .query_map(rusqlite::params_from_iter(chunk), &read)
            .map_err(classify)?;
        for row in rows {
            found.push(row.map_err(classify)?);
        }
    }
    Ok(found)
}

/// Runs one statement that returns no rows, prepared once per connection.
fn run_cached(connection: &Connection, sql: &str) -> Result<(), StoreError> {
    connection
        .prepare_cached(sql)
        .and_then(|mut statement| statement.execute([]))
        .map(|_| ())
        .map_err(classify)
}

/// The store's connection, and the last `data_version` it saw: SQLite moves that number
/// when another connection (in any process) commits, and not for its own commits.
struct Watched {
    connection: Connection,
    seen: i64,
    /// The link of the event this connection last appended in the open transaction, and
    /// the connection's count of changed rows just after: an append that finds the count
    /// unchanged (nothing written or undone since) links to it without reading the log.
    appended: Option<(ChainHash, u64)>,
}

impl Watched {
    fn new(connection: Connection) -> Result<Self, StoreError> {
        let seen = data_version(&connection).map_err(classify)?;
        Ok(Self {
            connection,
            seen,
            appended: None,
        })
    }

    /// [`append_event`], linked to the event this connection appended just before when
    /// nothing was written since: the records handed over to write soon, one after
    /// another at the start of a batch, read the log's last link once.
    fn append_linked(&mut self, record: &str) -> Result<(), StoreError> {
        let changes = self.connection.total_changes();
        let prev = match self.appended.take() {
            Some((link, after)) if after == changes => link,
            _ => chain_tail(&self.connection)?,
        };
        let hash = chain_link(&prev, record);
        insert_event(&self.connection, record, &prev, &hash)?;
        self.appended = Some((hash, self.connection.total_changes()));
        Ok(())
    }
}

fn data_version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row("PRAGMA data_version", [], |row| row.get(0))
}

impl std::ops::Deref for Watched {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.connection
    }
}

impl std::ops::DerefMut for Watched {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.connection
    }
}

impl Batch for Watched {
    fn begin(&mut self) -> Result<(), StoreError> {
        // Another process may have appended since the last transaction.
        self.appended = None;
        run_cached(self, "BEGIN IMMEDIATE")
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.appended = None;
        run_cached(self, "COMMIT").inspect_err(|_| {
            let _ = run_cached(self, "ROLLBACK");
        })
    }

    fn changed_elsewhere(&mut self) -> bool {
        // An error here is a missed look, not a missed change: the number stays behind
        // and the next look that works sees it.
        match data_version(&self.connection) {
            Ok(version) if version != self.seen => {
                self.seen = version;
                true
            }
            _ => false,
        }
    }
}

/// Appends `record` after the last event, linked to it. SQLite has one writer at a
/// time, and a reader's snapshot cannot become a writer's once another has written: the
/// last event read here is still the last when the insert commits, so there is one chain.
fn append_event(connection: &Connection, record: &str) -> Result<(), StoreError> {
    let prev = chain_tail(connection)?;
    let hash = chain_link(&prev, record);
    insert_event(connection, record, &prev, &hash)
}

/// Inserts `record` with its links.
fn insert_event(
    connection: &Connection,
    record: &str,
    prev: &ChainHash,
    hash: &ChainHash,
) -> Result<(), StoreError> {
    connection
        .prepare_cached("INSERT INTO events (record, prev, hash) VALUES (?1, ?2, ?3)")
        .and_then(|mut insert| insert.execute(params![record, &prev[..], &hash[..]]))
        .map(|_| ())
        .map_err(classify)
}

/// The last event's link, or [`CHAIN_GENESIS`] in an empty log.
fn chain_tail(connection: &Connection) -> Result<ChainHash, StoreError> {
    let last: Option<Option<Vec<u8>>> = connection
        .prepare_cached("SELECT hash FROM events ORDER BY seq DESC LIMIT 1")
        .and_then(|mut select| select.query_row([], |row| row.get(0)).optional())
        .map_err(classify)?;
    Ok(last.map_or(CHAIN_GENESIS, |hash| as_link(hash.as_deref())))
}

/// A stored link; one that is missing or of another length reads as zeros, which no
/// record's link is, so the verifier names its record.
fn as_link(stored: Option<&[u8]>) -> ChainHash {
    stored
        .and_then(|bytes| ChainHash::try_from(bytes).ok())
        .unwrap_or([0; 32])
}

/// Chains the events written before the chain existed, in order.
fn chain_existing(connection: &Connection) -> Result<(), StoreError> {
    let rows: Vec<(i64, String)> = connection
        .prepare("SELECT seq, record FROM events ORDER BY seq")
        .and_then(|mut select| {
            select
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect()
        })
        .map_err(classify)?;
    let mut update = connection
        .prepare("UPDATE events SET prev = ?1, hash = ?2 WHERE seq = ?3")
        .map_err(classify)?;
    let mut prev = CHAIN_GENESIS;
    for (seq, record) in rows {
        let hash = chain_link(&prev, &record);
        update
            .execute(params![&prev[..], &hash[..], seq])
            .map_err(classify)?;
        prev = hash;
    }
    Ok(())
}

/// The task the clause `filter` picks, if any.
fn read_task(
    connection: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
) -> Result<Option<TaskRecord>, StoreError> {
    let sql = format!("SELECT id, lane, owner, opened_at, inputs_issued FROM tasks {filter}");
    let row = connection
        .prepare_cached(&sql)
        .and_then(|mut select| {
            select
                .query_row(params, |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, i64>(3)?,
                        row.get::<_, i64>(4)?,
                    ))
                })
                .optional()
        })
        .map_err(classify)?;
    row.map(|(id, lane, owner, opened_at, issued)| {
        task_from_row(&id, &lane, owner, opened_at, issued)
    })
    .transpose()
}

impl ApprovalStore for SqliteStore {
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(ApprovalLane, bool), StoreError>> + Send {
        self.worker.run(Access::Lanes, move |connection| {
            let key = lane.key().to_string();
            let (text, record) = (encode(&lane)?, encode(&AuditRecord::Transition(event))?);
            let version = i64::try_from(lane.version()).map_err(|_| StoreError::Conflict)?;
            let columns = LaneColumns::of(&lane);
            in_move(connection, |transaction| {
                let existing: Option<String> = transaction
                    .query_row("SELECT lane FROM lanes WHERE key = ?1", [&key], |row| {
                        row.get(0)
                    })
                    .optional()
                    .map_err(classify)?;
                if let Some(existing) = existing {
                    return Ok((decode(&existing)?, false));
                }
                transaction
                    .prepare_cached(
                        "INSERT INTO lanes (key, state, version, lane, tool, tier, proposer,
                                            account, proposed_at, expires_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    )
                    .and_then(|mut insert| {
                        insert.execute(params![
                            key,
                            lane.state().as_str(),
                            version,
                            text,
                            columns.tool,
                            columns.tier,
                            columns.proposer,
                            columns.account,
                            columns.proposed_at,
                            columns.expires_at
                        ])
                    })
                    .map_err(classify)?;
                append_event(transaction, &record)?;
                Ok((lane, true))
            })
        })
    }

    fn get(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Option<ApprovalLane>, StoreError>> + Send {
        let key = key.to_string();
        self.worker.run(Access::Read, move |connection| {
            let text: Option<String> = connection
                .query_row("SELECT lane FROM lanes WHERE key = ?1", [&key], |row| {
                    row.get(0)
                })
                .optional()
                .map_err(classify)?;
            text.as_deref().map(decode).transpose()
        })
    }

    fn transition(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.worker.run(Access::Lanes, move |connection| {
            write_transition(connection, expected_version, &lane, &event)
        })
    }

    fn transition_detached(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) {
        self.worker.detach(move |connection| {
            let _ = write_transition(connection, expected_version, &lane, &event);
        });
    }

    fn append(&self, record: AuditRecord) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.worker.run(Access::Write, move |connection| {
            let text = encode(&record)?;
            // One statement: undone by itself if it fails, so no savepoint is needed.
            append_event(connection, &text)
        })
    }

    /// Committed at the start of the store's next batch: before any later read or write
    /// of this store, and within 100 ms. Not taken (the caller waits for its commit, as
    /// for [`ApprovalStore::append`]) by a read-only store, nor after a batch failed to
    /// commit, until one commits again.
    fn append_soon(&self, record: AuditRecord) -> Option<AuditRecord> {
        // A store that cannot write says so to the caller, who then does not run the call.
        if self.options.read_only {
            return Some(record);
        }
        // Written as text on the store's thread, with the rest of its batch. A record's
        // fields are strings, numbers and names, which JSON always writes.
        self.worker
            .soon(record, |connection, record| {
                // A record that cannot be written is lost: its caller chose not to wait.
                if let Ok(text) = encode(&record) {
                    let _ = connection.append_linked(&text);
                }
            })
            .err()
    }

    fn events_since(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(u64, AuditRecord)>, StoreError>> + Send {
        self.worker.run(Access::Read, move |connection| {
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut statement = connection
                .prepare_cached(
                    "SELECT seq, record FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                )
                .map_err(classify)?;
            let rows = statement
                .query_map(params![after, limit], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(classify)?;
            let mut events = Vec::new();
            for row in rows {
                let (seq, text) = row.map_err(classify)?;
                events.push((u64::try_from(seq).unwrap_or(0), decode(&text)?));
            }
            Ok(events)
        })
    }

    fn list(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        // Keys are lowercase hex of one length, so text order is key order.
        let after = after.map_or_else(String::new, ToString::to_string);
        self.worker.run(Access::Read, move |connection| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut statement = connection
                .prepare_cached(
                    "SELECT lane FROM lanes WHERE state = ?1 AND key > ?2 ORDER BY key LIMIT ?3",
                )
                .map_err(classify)?;
            let rows = statement
                .query_map(params![state.as_str(), after, limit], |row| {
                    row.get::<_, String>(0)
                })
                .map_err(classify)?;
            let mut lanes = Vec::new();
            for row in rows {
                lanes.push(decode(&row.map_err(classify)?)?);
            }
            Ok(lanes)
        })
    }

    fn query_lanes(
        &self,
        query: &LaneQuery,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let mut filter = LaneFilter::new(query, true, numbered);
        self.worker.run(Access::Read, move |connection| {
            let limit = filter.push(
                Param::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
                numbered,
            );
            let sql = format!(
                "SELECT lane FROM lanes WHERE {} ORDER BY proposed_at DESC, key DESC LIMIT {limit}",
                filter.clause
            );
            let mut statement = connection.prepare_cached(&sql).map_err(classify)?;
            let rows = statement
                .query_map(
                    rusqlite::params_from_iter(filter.params.iter().map(value)),
                    |row| row.get::<_, String>(0),
                )
                .map_err(classify)?;
            let mut lanes = Vec::new();
            for row in rows {
                lanes.push(decode(&row.map_err(classify)?)?);
            }
            Ok(lanes)
        })
    }

    fn count_lanes(
        &self,
        query: &LaneQuery,
        cap: usize,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send {
        let mut filter = LaneFilter::new(query, false, numbered);
        self.worker.run(Access::Read, move |connection| {
            let cap = filter.push(Param::Int(i64::try_from(cap).unwrap_or(i64::MAX)), numbered);
            let sql = format!(
                "SELECT count(*) FROM (SELECT 1 FROM lanes WHERE {} LIMIT {cap})",
                filter.clause
            );
            let counted: i64 = connection
                .prepare_cached(&sql)
                .and_then(|mut statement| {
                    statement.query_row(
                        rusqlite::params_from_iter(filter.params.iter().map(value)),
                        |row| row.get(0),
                    )
                })
                .map_err(classify)?;
            Ok(usize::try_from(counted).unwrap_or(0))
        })
    }

    fn watch(&self) -> Option<StoreWatch> {
        Some(self.watch.clone())
    }

    fn get_many(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
        self.worker.run(Access::Read, move |connection| {
            let texts = by_keys(connection, "lane", &keys, |row| row.get::<_, String>(0))?;
            texts.iter().map(|text| decode(text)).collect()
        })
    }

    fn versions_of(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<(IdempotencyKey, u64)>, StoreError>> + Send {
        let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
        self.worker.run(Access::Read, move |connection| {
            let rows = by_keys(connection, "key, version", &keys, |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })?;
            rows.iter()
                .map(|(key, version)| stored_version(key, *version))
                .collect()
        })
    }

    fn claim_notices(
        &self,
        claim: &NoticeClaim,
    ) -> impl Future<Output = Result<Vec<DueNotice>, StoreError>> + Send {
        let claim = claim.clone();
        self.worker.run(Access::Write, move |connection| {
            let now = millis(claim.now().unix_millis());
            let limit = i64::try_from(claim.max()).unwrap_or(i64::MAX);
            let below: i64 = connection
                .prepare_cached("SELECT below FROM notice_marks WHERE target = ?1")
                .and_then(|mut select| {
                    select
                        .query_row(params![claim.target()], |row| row.get(0))
                        .optional()
                })
                .map_err(classify)?
                .unwrap_or(0);
            // Lanes from the mark on, with a notice due or none yet; and below it, only
            // notices due again (through the notices' own index).
            let due: Vec<(String, i64)> = connection
                .prepare_cached(
                    "SELECT lane, attempts FROM (
                       SELECT l.lane, coalesce(n.attempts, 0) AS attempts, l.proposed_at, l.key
                       FROM lanes l
                       LEFT JOIN notices n
                         ON n.key = l.key AND n.target = ?1 AND n.round = l.proposed_at
                       WHERE l.state = 'pending' AND l.expires_at > ?2 AND l.proposed_at >= ?4
                         AND (n.key IS NULL OR n.due_at <= ?2)
                       UNION ALL
                       SELECT l.lane, n.attempts, l.proposed_at, l.key
                       FROM notices n
                       JOIN lanes l ON l.key = n.key AND l.proposed_at = n.round
                       WHERE n.target = ?1 AND n.due_at <= ?2 AND n.round < ?4
                         AND l.state = 'pending' AND l.expires_at > ?2
                     ) ORDER BY proposed_at, key LIMIT ?3",
                )
                .and_then(|mut select| {
                    select
                        .query_map(params![claim.target(), now, limit, below], |row| {
                            Ok((row.get(0)?, row.get(1)?))
                        })?
                        .collect()
                })
                .map_err(classify)?;
            // Nothing left due: every lane proposed long enough ago has its notice now.
            if (due.len() as i64) < limit {
                let mark = now.saturating_sub(millis(STORED_WITHIN_MILLIS));
                connection
                    .prepare_cached(
                        "INSERT INTO notice_marks (target, below) VALUES (?1, ?2)
                         ON CONFLICT (target) DO UPDATE SET below = max(below, excluded.below)",
                    )
                    .and_then(|mut mark_it| mark_it.execute(params![claim.target(), mark]))
                    .map_err(classify)?;
            }
            let mut claimed = Vec::with_capacity(due.len());
            for (text, attempts) in due {
                let lane: ApprovalLane = decode(&text)?;
                let attempt = u32::try_from(attempts)
                    .unwrap_or(u32::MAX)
                    .saturating_add(1);
                connection
                    .prepare_cached(
                        "INSERT INTO notices (key, target, round, attempts, stage, holder, due_at)
                         VALUES (?1, ?2, ?3, ?4, 'held', ?5, ?6)
                         ON CONFLICT (key, target, round) DO UPDATE SET
                           attempts = excluded.attempts, stage = 'held',
                           holder = excluded.holder, due_at = excluded.due_at",
                    )
                    .and_then(|mut hold| {
                        hold.execute(params![
                            lane.key().to_string(),
                            claim.target(),
                            millis(lane.proposed_at().unix_millis()),
                            attempt,
                            claim.holder(),
                            millis(claim.until().unix_millis())
                        ])
                    })
                    .map_err(classify)?;
                claimed.push(DueNotice::claimed(lane, &claim, attempt));
            }
            Ok(claimed)
        })
    }

    fn settle_notice(
        &self,
        notice: &DueNotice,
        outcome: NoticeOutcome,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let (stage, due_at) = notice_stage(outcome);
        let notice = notice.clone();
        self.worker.run(Access::Write, move |connection| {
            let settled = connection
                .prepare_cached(
                    "UPDATE notices SET stage = ?1, due_at = ?2
                     WHERE key = ?3 AND target = ?4 AND round = ?5
                       AND stage = 'held' AND holder = ?6 AND attempts = ?7",
                )
                .and_then(|mut settle| {
                    settle.execute(params![
                        stage,
                        due_at,
                        notice.lane().key().to_string(),
                        notice.claim().target(),
                        millis(notice.round().unix_millis()),
                        notice.claim().holder(),
                        notice.attempt()
                    ])
                })
                .map_err(classify)?;
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
        self.worker.run(Access::Write, move |connection| {
            connection
                .prepare_cached("DELETE FROM accepted WHERE forget_at <= ?1")
                .and_then(|mut forget| forget.execute(params![now]))
                .map_err(classify)?;
            let taken = connection
                .prepare_cached(
                    "INSERT INTO accepted (token, forget_at) VALUES (?1, ?2)
                     ON CONFLICT (token) DO NOTHING",
                )
                .and_then(|mut take| take.execute(params![token, forget_at]))
                .map_err(classify)?;
            Ok(taken == 1)
        })
    }

    fn open_task(
        &self,
        task: TaskRecord,
    ) -> impl Future<Output = Result<(TaskRecord, bool), StoreError>> + Send {
        self.worker.run(Access::Write, move |connection| {
            let added = connection
                .prepare_cached(
                    "INSERT INTO tasks (id, lane, owner, opened_at, inputs_issued)
                     VALUES (?1, ?2, ?3, ?4, 0) ON CONFLICT (lane, owner) DO NOTHING",
                )
                .and_then(|mut insert| {
                    insert.execute(params![
                        task.id().as_str(),
                        task.lane().to_string(),
                        task.owner(),
                        millis(task.opened_at().unix_millis()),
                    ])
                })
                .map_err(|error| match error.sqlite_error_code() {
                    // The id is taken (never, with 128 random bits): refused.
                    Some(ErrorCode::ConstraintViolation) => StoreError::Conflict,
                    _ => classify(error),
                })?;
            if added == 1 {
                return Ok((task, true));
            }
            let kept = read_task(
                connection,
                "WHERE lane = ?1 AND owner = ?2",
                params![task.lane().to_string(), task.owner()],
            )?;
            kept.map(|kept| (kept, false))
                .ok_or_else(|| StoreError::Backend("the task vanished as it was opened".into()))
        })
    }

    fn task(
        &self,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send {
        let id = id.clone();
        self.worker.run(Access::Read, move |connection| {
            read_task(connection, "WHERE id = ?1", params![id.as_str()])
        })
    }

    fn issue_task_input(
        &self,
        id: &TaskId,
        issued: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let id = id.clone();
        self.worker.run(Access::Write, move |connection| {
            let moved = connection
                .prepare_cached(
                    "UPDATE tasks SET inputs_issued = inputs_issued + 1
                     WHERE id = ?1 AND inputs_issued = ?2",
                )
                .and_then(|mut update| update.execute(params![id.as_str(), issued]))
                .map_err(classify)?;
            if moved == 1 {
                return Ok(());
            }
            let exists = read_task(connection, "WHERE id = ?1", params![id.as_str()])?.is_some();
            Err(if exists {
                StoreError::Conflict
            } else {
                StoreError::Missing
            })
        })
    }

    fn forget_tasks(
        &self,
        before: Timestamp,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        self.worker.run(Access::Write, move |connection| {
            connection
                .prepare_cached("DELETE FROM tasks WHERE opened_at < ?1")
                .and_then(|mut delete| delete.execute([millis(before.unix_millis())]))
                .map(|gone| gone as u64)
                .map_err(classify)
        })
    }
}

/// SQLite's numbered placeholder.
fn numbered(n: usize) -> String {
    format!("?{n}")
}

fn value(param: &Param) -> rusqlite::types::Value {
    match param {
        Param::Text(text) => rusqlite::types::Value::Text(text.clone()),
        Param::Int(number) => rusqlite::types::Value::Integer(*number),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event's `prev` is the `hash` before it, and its `hash` links its record.
    fn chain_holds(connection: &Connection) -> usize {
        let mut select = connection
            .prepare("SELECT record, prev, hash FROM events ORDER BY seq")
            .unwrap();
        let rows: Vec<(String, Vec<u8>, Vec<u8>)> = select
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut prev = CHAIN_GENESIS.to_vec();
        for (record, linked_to, hash) in &rows {
            assert_eq!(linked_to, &prev, "{record} links to its predecessor");
            assert_eq!(
                hash,
                &chain_link(&as_link(Some(linked_to)), record).to_vec(),
                "{record}"
            );
            prev = hash.clone();
        }
        rows.len()
    }

    #[test]
    fn appends_one_after_another_link_up_around_other_writes_and_other_connections() {
        let dir = std::env::temp_dir().join(format!("cairnloop-linked-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lanes.db");
        let mut connection = Connection::open(&path).unwrap();
        migrate(&mut connection).unwrap();
        let mut store = Watched::new(connection).unwrap();
        let other = Connection::open(&path).unwrap();

        store.begin().unwrap();
        store.append_linked("a").unwrap();
        store.append_linked("b").unwrap();
        // A write of another kind in the same transaction: the next append reads the log.
        append_event(&store, "c").unwrap();
        store.append_linked("d").unwrap();
        store.commit().unwrap();
        // Another connection (another process) appends between two transactions.
        append_event(&other, "e").unwrap();
        store.begin().unwrap();
        store.append_linked("f").unwrap();
        store.append_linked("g").unwrap();
        store.commit().unwrap();

        assert_eq!(chain_holds(&other), 7);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
