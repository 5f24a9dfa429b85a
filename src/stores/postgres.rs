//! The PostgreSQL store: many agent processes sharing approvals, with row-level
//! compare-and-set.

use std::future::Future;
use std::string::{String, ToString};
use std::vec::Vec;

use postgres::{Client, NoTls};

use crate::approvals::{ApprovalLane, ApprovalStore, AuditRecord, StoreError, TransitionEvent};
use crate::declare::IdempotencyKey;
use crate::gate::LaneState;
use crate::stores::record::{decode, encode};
use crate::stores::worker::Worker;

/// The schema this library writes. A database whose schema is newer is refused.
pub const POSTGRES_SCHEMA_VERSION: i32 = 1;

/// Each migration takes the schema from its index to the next version.
const MIGRATIONS: [&str; 1] = ["
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
"];

/// Serialises the writers of the event log, so that cursors follow commit order (a
/// sequence alone does not: a later number can commit first).
const EVENT_LOCK: i64 = 0x6361_6972_6e6c_6f6f;

/// An [`ApprovalStore`] on a PostgreSQL database, for many agent processes that share
/// approvals.
///
/// Each move is one transaction: the lane is updated only where its version is the
/// expected one (row-level compare-and-set), and its event is appended in the same
/// transaction. The schema is versioned in a table of its own (`cairnloop_schema`) and
/// migrated at connect; a newer schema is refused, and so is a database that has tables
/// of the same names that this library did not make. The connection lives on a thread of
/// its own, so an async caller never blocks its runtime.
///
/// ```no_run
/// use cairnloop::stores::PostgresStore;
///
/// let store = PostgresStore::connect("host=/var/run/postgresql user=agent dbname=approvals")?;
/// # Ok::<(), cairnloop::approvals::StoreError>(())
/// ```
pub struct PostgresStore {
    worker: Worker<Client>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects with a libpq-style configuration string (`host=... user=... dbname=...`;
    /// a `host` that is a path is a Unix socket directory) and migrates the schema.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when the server cannot be reached;
    /// [`StoreError::NewerSchema`] and [`StoreError::Foreign`] for a database it refuses
    /// (nothing is written to it).
    pub fn connect(config: &str) -> Result<Self, StoreError> {
        // The client runs a runtime of its own to connect: on a thread of its own, so that
        // a host may connect from inside an async runtime too.
        let client = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut client = Client::connect(config, NoTls).map_err(classify)?;
                    migrate(&mut client)?;
                    Ok::<_, StoreError>(client)
                })
                .join()
        })
        .map_err(|_| StoreError::Backend("connecting to PostgreSQL panicked".into()))??;
        Ok(Self {
            worker: Worker::spawn("cairnloop-postgres", client)?,
        })
    }
}

fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let mut transaction = client.transaction().map_err(classify)?;
    // One migrator at a time, across processes.
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&EVENT_LOCK])
        .map_err(classify)?;
    let meta: bool = transaction
        .query_one("SELECT to_regclass('cairnloop_schema') IS NOT NULL", &[])
        .map_err(classify)?
        .get(0);
    let version: i32 = if meta {
        transaction
            .query_one("SELECT version FROM cairnloop_schema", &[])
            .map_err(classify)?
            .get(0)
    } else {
        let taken: bool = transaction
            .query_one(
                "SELECT to_regclass('cairnloop_lanes') IS NOT NULL OR to_regclass('cairnloop_events') IS NOT NULL",
                &[],
            )
            .map_err(classify)?
            .get(0);
        if taken {
            return Err(StoreError::Foreign);
        }
        transaction
            .batch_execute("CREATE TABLE cairnloop_schema (version INTEGER NOT NULL); INSERT INTO cairnloop_schema VALUES (0);")
            .map_err(classify)?;
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
        transaction.batch_execute(sql).map_err(classify)?;
        let next = i32::try_from(step + 1).unwrap_or(i32::MAX);
        transaction
            .execute("UPDATE cairnloop_schema SET version = $1", &[&next])
            .map_err(classify)?;
    }
    transaction.commit().map_err(classify)
}

fn classify(error: postgres::Error) -> StoreError {
    match error.code() {
        Some(code) if code.code() == "25006" => StoreError::ReadOnly,
        _ => StoreError::Backend(error.to_string()),
    }
}

fn version_of(version: u64) -> Result<i64, StoreError> {
    i64::try_from(version).map_err(|_| StoreError::Conflict)
}

fn append_event(
    transaction: &mut postgres::Transaction<'_>,
    record: &str,
) -> Result<(), StoreError> {
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&EVENT_LOCK])
        .map_err(classify)?;
    transaction
        .execute(
            "INSERT INTO cairnloop_events (record) VALUES ($1)",
            &[&record],
        )
        .map_err(classify)?;
    Ok(())
}

fn write_transition(
    client: &mut Client,
    expected_version: u64,
    lane: &ApprovalLane,
    event: &TransitionEvent,
) -> Result<(), StoreError> {
    let key = lane.key().to_string();
    let (text, record) = (
        encode(lane)?,
        encode(&AuditRecord::Transition(event.clone()))?,
    );
    let (expected, next) = (version_of(expected_version)?, version_of(lane.version())?);
    let mut transaction = client.transaction().map_err(classify)?;
    let changed = transaction
        .execute(
            "UPDATE cairnloop_lanes SET state = $1, version = $2, lane = $3 WHERE key = $4 AND version = $5",
            &[&lane.state().as_str(), &next, &text, &key, &expected],
        )
        .map_err(classify)?;
    if changed == 0 {
        let exists = transaction
            .query_opt("SELECT 1 FROM cairnloop_lanes WHERE key = $1", &[&key])
            .map_err(classify)?
            .is_some();
        return Err(if exists {
            StoreError::Conflict
        } else {
            StoreError::Missing
        });
    }
    append_event(&mut transaction, &record)?;
    transaction.commit().map_err(classify)
}

impl ApprovalStore for PostgresStore {
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(ApprovalLane, bool), StoreError>> + Send {
        self.worker.run(move |client| {
            let key = lane.key().to_string();
            let (text, record) = (encode(&lane)?, encode(&AuditRecord::Transition(event))?);
            let version = version_of(lane.version())?;
            let mut transaction = client.transaction().map_err(classify)?;
            let inserted = transaction
                .execute(
                    "INSERT INTO cairnloop_lanes (key, state, version, lane) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING",
                    &[&key, &lane.state().as_str(), &version, &text],
                )
                .map_err(classify)?;
            if inserted == 0 {
                let existing: String = transaction
                    .query_one("SELECT lane FROM cairnloop_lanes WHERE key = $1", &[&key])
                    .map_err(classify)?
                    .get(0);
                return Ok((decode(&existing)?, false));
            }
            append_event(&mut transaction, &record)?;
            transaction.commit().map_err(classify)?;
            Ok((lane, true))
        })
    }

    fn get(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Option<ApprovalLane>, StoreError>> + Send {
        let key = key.to_string();
        self.worker.run(move |client| {
            let row = client
                .query_opt("SELECT lane FROM cairnloop_lanes WHERE key = $1", &[&key])
                .map_err(classify)?;
            row.map(|row| decode(row.get::<_, &str>(0))).transpose()
        })
    }

    fn transition(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.worker
            .run(move |client| write_transition(client, expected_version, &lane, &event))
    }

    fn transition_detached(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) {
        self.worker.detach(move |client| {
            let _ = write_transition(client, expected_version, &lane, &event);
        });
    }

    fn append(&self, record: AuditRecord) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.worker.run(move |client| {
            let text = encode(&record)?;
            let mut transaction = client.transaction().map_err(classify)?;
            append_event(&mut transaction, &text)?;
            transaction.commit().map_err(classify)
        })
    }

    fn events_since(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(u64, AuditRecord)>, StoreError>> + Send {
        self.worker.run(move |client| {
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    "SELECT seq, record FROM cairnloop_events WHERE seq > $1 ORDER BY seq LIMIT $2",
                    &[&after, &limit],
                )
                .map_err(classify)?;
            rows.iter()
                .map(|row| {
                    let seq: i64 = row.get(0);
                    Ok((
                        u64::try_from(seq).unwrap_or(0),
                        decode(row.get::<_, &str>(1))?,
                    ))
                })
                .collect()
        })
    }

    fn list(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let after = after.map_or_else(String::new, ToString::to_string);
        self.worker.run(move |client| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            // Keys are lowercase hex of one length: `COLLATE "C"` orders them as bytes.
            let rows = client
                .query(
                    "SELECT lane FROM cairnloop_lanes WHERE state = $1 AND key COLLATE \"C\" > $2 ORDER BY key COLLATE \"C\" LIMIT $3",
                    &[&state.as_str(), &after, &limit],
                )
                .map_err(classify)?;
            rows.iter().map(|row| decode(row.get::<_, &str>(0))).collect()
        })
    }
}
