use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::future::{Future, ready};

use crate::approvals::{
    ApprovalLane, AuditRecord, CHAIN_GENESIS, ChainBreak, ChainHash, ChainReport, ChainVerifier,
    ChainedRecord, DueNotice, LaneMark, LaneQuery, NoticeClaim, NoticeOutcome, StoreError,
    StoreWatch, TaskId, TaskRecord, TransitionEvent, chain_link, newest_first,
};
use crate::declare::IdempotencyKey;
use crate::gate::{LaneState, Timestamp};

/// Where approval lanes and the audit trail live: the contract every store keeps.
///
/// - `insert` adds a lane if no lane has its key (insert-if-absent), with the event that
///   opened it, in one step; otherwise it returns the lane that is there.
/// - `transition` replaces a lane only if the stored version is the expected one
///   (compare-and-set), appending its event in the same step; otherwise it changes
///   nothing and says [`StoreError::Conflict`].
/// - The event log is append-only and read with a cursor (`events_since`).
/// - `list` pages the lanes in one state, in key order.
/// - `transition_detached` is the one synchronous entry: it is for a guard in `drop`,
///   which cannot wait, and must not block either (a store with I/O hands the move to a
///   worker that outlives the call).
/// - `query_lanes` pages one state's lanes newest first from a [`LaneMark`], under a
///   [`LaneQuery`]'s filters, and `count_lanes` counts them up to a cap.
/// - `watch`, when the store gives one, moves on after every committed lane change (for a
///   shared database, other processes' too) and never before the change can be read.
/// - `last_known`, for a store that keeps copies of its lanes in the process, gives a lane
///   exactly as it was stored under that key at its version (an older version is allowed:
///   a move's compare-and-set finds it out, and the lane is read again).
///
/// The methods are `async` because real stores do I/O; a store on an async runtime must
/// never block the runtime's worker threads. [`MemoryStore`] answers at once.
/// The conformance kit (`approvals::conformance`, feature `conformance`) checks a store
/// against this contract.
///
/// ```
/// use cairnloop::approvals::{ApprovalStore, MemoryStore};
///
/// async fn backlog(store: &impl ApprovalStore) -> usize {
///     store.events_since(0, usize::MAX).await.map(|events| events.len()).unwrap_or(0)
/// }
/// assert_eq!(pollster::block_on(backlog(&MemoryStore::new())), 0);
/// ```
pub trait ApprovalStore: Send + Sync {
    /// Adds `lane` with the event that opened it, unless a lane has its key: then returns
    /// that lane and `false`, and adds nothing.
    ///
    /// # Errors
    ///
    /// [`StoreError::Full`] for a bounded store that is full; the backend's error.
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(ApprovalLane, bool), StoreError>> + Send;

    /// The lane with this key, if any.
    ///
    /// # Errors
    ///
    /// The backend's error.
    fn get(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Option<ApprovalLane>, StoreError>> + Send;

    /// Replaces the lane with `lane` if the stored version is `expected_version`, and
    /// appends `event`, in one step.
    ///
    /// # Errors
    ///
    /// [`StoreError::Conflict`] when the version differs (nothing changed);
    /// [`StoreError::Missing`]; the backend's error.
    fn transition(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`ApprovalStore::transition`] without waiting for the result: for a guard in
    /// `drop`. It must not block; a store with I/O hands it to a worker.
    fn transition_detached(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    );

    /// Appends a record that moves no lane (a decision of the gates) to the event log.
    ///
    /// # Errors
    ///
    /// The backend's error; the record is then not in the log.
    fn append(&self, record: AuditRecord) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Takes `record` to append soon, without a round trip the caller waits on: `None`
    /// when the store took it, `Some(record)` back (the default) when it appends only
    /// when asked and awaited ([`ApprovalStore::append`]). A store that takes it promises to commit
    /// it before it serves any later read or write of this process and within a bound it
    /// documents; a process killed in between, or a commit that fails, loses it. A store
    /// that cannot write (read-only, or failing to commit) does not take it, so that the
    /// caller waits and hears of the failure before anything runs. The governor hands it only the
    /// decisions of calls it runs at once (`Auto`), never a proposal, a move, or the
    /// record of a call that waited or was blocked.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, AuditRecord, MemoryStore, RefusalEvent};
    /// use cairnloop::gate::Timestamp;
    ///
    /// let record = AuditRecord::Refusal(RefusalEvent::new("slack", "stale", Timestamp::from_unix_millis(1)));
    /// assert!(MemoryStore::new().append_soon(record).is_some(), "appended when asked, at once");
    /// ```
    fn append_soon(&self, record: AuditRecord) -> Option<AuditRecord> {
        Some(record)
    }

    /// Up to `limit` events after the cursor `after` (0: from the start), each with its
    /// cursor, oldest first.
    ///
    /// # Errors
    ///
    /// The backend's error.
    fn events_since(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(u64, AuditRecord)>, StoreError>> + Send;

    /// Up to `limit` lanes in `state`, in key order, after the key `after` (exclusive):
    /// one page of an operator's queue, or of a sweep.
    ///
    /// # Errors
    ///
    /// The backend's error.
    fn list(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send;

    /// Up to `limit` lanes that `query` asks for, newest first: one page of a filtered
    /// queue; the next page is the same query [`after`](LaneQuery::after) the
    /// [`LaneMark`] of this page's last lane.
    ///
    /// The default reads every lane in the query's state through
    /// [`list`](ApprovalStore::list) and keeps the newest; a store with indexes answers
    /// from them (the durable stores here do).
    ///
    /// # Errors
    ///
    /// The backend's error.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, LaneQuery, MemoryStore};
    /// use cairnloop::gate::LaneState;
    ///
    /// let store = MemoryStore::new();
    /// let page = pollster::block_on(store.query_lanes(&LaneQuery::new(LaneState::Pending), 20))?;
    /// assert!(page.is_empty());
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    fn query_lanes(
        &self,
        query: &LaneQuery,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let query = query.clone();
        async move { scan(self, &query, limit).await }
    }

    /// How many lanes `query` asks for, counted up to `cap` (a count past it is `cap`):
    /// a queue of millions says "10,000+" rather than count them all. The query's mark
    /// is ignored.
    ///
    /// # Errors
    ///
    /// The backend's error.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, LaneQuery, MemoryStore};
    /// use cairnloop::gate::LaneState;
    ///
    /// let store = MemoryStore::new();
    /// let count = pollster::block_on(store.count_lanes(&LaneQuery::new(LaneState::Pending), 10_000))?;
    /// assert_eq!(count, 0);
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    fn count_lanes(
        &self,
        query: &LaneQuery,
        cap: usize,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send {
        let query = query.clone();
        async move { count(self, &query, cap).await }
    }

    /// The store's change signal: it moves on after every lane this store (or, for a
    /// database shared by processes, any store on it) adds or moves, within 100 ms of
    /// the commit, so a waiter reads again instead of polling. `None`, the default, is a
    /// store that cannot be watched: a waiter then reads now and then.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore};
    ///
    /// let watch = MemoryStore::new().watch().expect("the memory store can be watched");
    /// assert_eq!(watch.generation(), 0);
    /// ```
    fn watch(&self) -> Option<StoreWatch> {
        None
    }

    /// The lanes with these keys that the store holds, in any order (a key it does not
    /// hold is left out): one read for many waiters, so that a change wakes a thousand of
    /// them with one query, not a thousand. The default reads them one by one.
    ///
    /// ```
    /// use cairnloop::IdempotencyKey;
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore};
    ///
    /// let unknown = [IdempotencyKey::from_bytes([7; 32])];
    /// assert!(pollster::block_on(MemoryStore::new().get_many(&unknown)).unwrap().is_empty());
    /// ```
    fn get_many(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let keys = keys.to_vec();
        async move {
            let mut lanes = Vec::with_capacity(keys.len());
            for key in &keys {
                if let Some(lane) = self.get(key).await? {
                    lanes.push(lane);
                }
            }
            Ok(lanes)
        }
    }

    /// The version of each lane with these keys that the store holds, in any order (a key
    /// it does not hold is left out): what a waiter needs to know whether its lane moved,
    /// without reading and decoding the lanes whole. The default reads them with
    /// [`ApprovalStore::get_many`].
    ///
    /// ```
    /// use cairnloop::IdempotencyKey;
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore};
    ///
    /// let unknown = [IdempotencyKey::from_bytes([7; 32])];
    /// assert!(pollster::block_on(MemoryStore::new().versions_of(&unknown)).unwrap().is_empty());
    /// ```
    fn versions_of(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<(IdempotencyKey, u64)>, StoreError>> + Send {
        let read = self.get_many(keys);
        async move {
            let lanes = read.await?;
            Ok(lanes
                .iter()
                .map(|lane| (lane.key(), lane.version()))
                .collect())
        }
    }

    /// The lane as this store last wrote or read it in this process, if it keeps such
    /// copies: a move can start from it instead of a read. It may be stale (another
    /// process may have moved the lane since), which the move's compare-and-set finds; a
    /// move refused on a kept copy is decided again on the lane as read. The default keeps
    /// none: every move reads its lane first, which costs a store in memory nothing.
    ///
    /// ```
    /// use cairnloop::IdempotencyKey;
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore};
    ///
    /// let key = IdempotencyKey::from_bytes([7; 32]);
    /// assert!(MemoryStore::new().last_known(&key).is_none());
    /// ```
    fn last_known(&self, key: &IdempotencyKey) -> Option<ApprovalLane> {
        let _ = key;
        None
    }

    /// The store's own time, for a store that processes on several hosts share: every
    /// process then decides expiries, leases and sweeps by this one clock, not by its
    /// host's, which may be seconds off. When it tells a time, the governor uses it in
    /// place of its own clock. `None`, the default: the governor's clock decides (one
    /// host, or a store in memory or in a file).
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore};
    ///
    /// assert!(MemoryStore::new().now().is_none());
    /// ```
    fn now(&self) -> Option<Timestamp> {
        None
    }

    /// Keeps `task`, a client's handle on a waiting lane (an MCP task), or, when the store
    /// already keeps a task of the same lane for the same owner, gives that one back
    /// unchanged: the same call made again by its caller follows the same task. Answers
    /// the task kept and whether it is new. The default keeps none
    /// ([`StoreError::Unsupported`]): a server then answers without a task.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore, TaskId, TaskRecord};
    /// use cairnloop::gate::Timestamp;
    ///
    /// let store = MemoryStore::new();
    /// let key = cairnloop::IdempotencyKey::from_bytes([1; 32]);
    /// let at = Timestamp::from_unix_millis(0);
    /// let first = TaskRecord::new(TaskId::from_random([1; 16]), key, "agent-7", at);
    /// let again = TaskRecord::new(TaskId::from_random([2; 16]), key, "agent-7", at);
    /// let (kept, new) = pollster::block_on(store.open_task(first.clone())).unwrap();
    /// assert!(new);
    /// assert_eq!(pollster::block_on(store.open_task(again)).unwrap(), (first, false));
    /// ```
    fn open_task(
        &self,
        task: TaskRecord,
    ) -> impl Future<Output = Result<(TaskRecord, bool), StoreError>> + Send {
        let _ = task;
        ready(Err(StoreError::Unsupported("tasks")))
    }

    /// The task with this id, if the store keeps it.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore, TaskId};
    ///
    /// let unknown = TaskId::from_random([9; 16]);
    /// assert_eq!(pollster::block_on(MemoryStore::new().task(&unknown)).unwrap(), None);
    /// ```
    fn task(
        &self,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send {
        let _ = id;
        ready(Err(StoreError::Unsupported("tasks")))
    }

    /// Counts one more question put to the client by the task `id`, from `issued` to
    /// `issued + 1`: a compare-and-set, so that two processes never issue one question
    /// number twice. [`StoreError::Conflict`] when the count is no longer `issued`,
    /// [`StoreError::Missing`] for a task the store does not keep.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore, StoreError, TaskId, TaskRecord};
    /// use cairnloop::gate::Timestamp;
    ///
    /// let store = MemoryStore::new();
    /// let id = TaskId::from_random([1; 16]);
    /// let key = cairnloop::IdempotencyKey::from_bytes([1; 32]);
    /// let task = TaskRecord::new(id.clone(), key, "agent-7", Timestamp::from_unix_millis(0));
    /// pollster::block_on(store.open_task(task)).unwrap();
    /// pollster::block_on(store.issue_task_input(&id, 0)).unwrap();
    /// assert_eq!(pollster::block_on(store.issue_task_input(&id, 0)), Err(StoreError::Conflict));
    /// ```
    fn issue_task_input(
        &self,
        id: &TaskId,
        issued: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let _ = (id, issued);
        ready(Err(StoreError::Unsupported("tasks")))
    }

    /// Forgets the tasks opened before `before` (their retention is over), answering how
    /// many. Their lanes stay: the audit trail never loses a call.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore};
    /// use cairnloop::gate::Timestamp;
    ///
    /// let forgotten = pollster::block_on(MemoryStore::new().forget_tasks(Timestamp::from_unix_millis(1)));
    /// assert_eq!(forgotten, Ok(0));
    /// ```
    fn forget_tasks(
        &self,
        before: Timestamp,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        let _ = before;
        ready(Err(StoreError::Unsupported("tasks")))
    }

    /// Claims the notices due to the claim's target at its time, oldest proposal first,
    /// at most its limit, for its holder until its end. A notice is due for every lane
    /// pending and unexpired at that time (in the round of its proposal time) unless, for
    /// this target and round, it was delivered or given up, another claim on it holds past
    /// that time, or its next attempt is later. Each claimed notice's attempt count goes up by one, in the same
    /// atomic step as the claim: however many processes claim at once, a notice is held
    /// by one of them. `StoreError::Unsupported` (the default) for a store that keeps no
    /// outbox.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore, NoticeClaim};
    /// use cairnloop::gate::Timestamp;
    ///
    /// let (now, until) = (Timestamp::from_unix_millis(1_000), Timestamp::from_unix_millis(31_000));
    /// let claim = NoticeClaim::new("webhook:ops", "replica-1", now, until);
    /// assert_eq!(pollster::block_on(MemoryStore::new().claim_notices(&claim)), Ok(vec![]));
    /// ```
    fn claim_notices(
        &self,
        claim: &NoticeClaim,
    ) -> impl Future<Output = Result<Vec<DueNotice>, StoreError>> + Send {
        let _ = claim;
        ready(Err(StoreError::Unsupported("outbox")))
    }

    /// Records what became of `notice`: `true` when its claim was still its holder's,
    /// `false` (nothing written) when it was not (its lease ran out and another holder
    /// claimed the notice, or it was settled already).
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, DueNotice, MemoryStore, NoticeOutcome};
    ///
    /// # fn f(notice: DueNotice) {
    /// let settled = pollster::block_on(MemoryStore::new().settle_notice(&notice, NoticeOutcome::Delivered));
    /// assert_eq!(settled, Ok(false), "never claimed here");
    /// # }
    /// ```
    fn settle_notice(
        &self,
        notice: &DueNotice,
        outcome: NoticeOutcome,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let _ = (notice, outcome);
        ready(Err(StoreError::Unsupported("outbox")))
    }

    /// Takes `token` once: `true` the first time it is offered, `false` while it is
    /// remembered (until `forget_at`), however many processes offer it at once. Tokens
    /// whose `forget_at` is at or before `now` are forgotten. For what must be accepted
    /// once across replicas, such as a signed chat callback that a replay would repeat.
    /// `StoreError::Unsupported` (the default) for a store that remembers none.
    ///
    /// ```
    /// use cairnloop::approvals::{ApprovalStore, MemoryStore};
    /// use cairnloop::gate::Timestamp;
    ///
    /// let store = MemoryStore::new();
    /// let (now, until) = (Timestamp::from_unix_millis(1_000), Timestamp::from_unix_millis(601_000));
    /// assert_eq!(pollster::block_on(store.accept_once("v0=ab12", now, until)), Ok(true));
    /// assert_eq!(pollster::block_on(store.accept_once("v0=ab12", now, until)), Ok(false));
    /// ```
    fn accept_once(
        &self,
        token: &str,
        now: Timestamp,
        forget_at: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let _ = (token, now, forget_at);
        ready(Err(StoreError::Unsupported("accepted tokens")))
    }
}

/// Pages read at a time by the default query and count.
const SCAN_PAGE: usize = 500;

/// [`ApprovalStore::query_lanes`] over [`ApprovalStore::list`]: every lane of the state
/// read, the newest `limit` admitted kept.
async fn scan<S: ApprovalStore + ?Sized>(
    store: &S,
    query: &LaneQuery,
    limit: usize,
) -> Result<Vec<ApprovalLane>, StoreError> {
    let order =
        |a: &ApprovalLane, b: &ApprovalLane| newest_first(&LaneMark::of(a), &LaneMark::of(b));
    let mut found: Vec<ApprovalLane> = Vec::new();
    let mut after = None;
    loop {
        let page = store.list(query.state(), after.as_ref(), SCAN_PAGE).await?;
        let full = page.len() == SCAN_PAGE;
        after = page.last().map(ApprovalLane::key);
        found.extend(page.into_iter().filter(|lane| query.admits(lane)));
        // Memory stays at about twice the page asked for, whatever the store holds.
        if found.len() > limit.saturating_mul(2).max(SCAN_PAGE) {
            found.sort_unstable_by(order);
            found.truncate(limit);
        }
        if !full {
            break;
        }
    }
    found.sort_unstable_by(order);
    found.truncate(limit);
    Ok(found)
}

/// [`ApprovalStore::count_lanes`] over [`ApprovalStore::list`].
async fn count<S: ApprovalStore + ?Sized>(
    store: &S,
    query: &LaneQuery,
    cap: usize,
) -> Result<usize, StoreError> {
    let query = query.clone().without_mark();
    let mut counted = 0usize;
    let mut after = None;
    loop {
        let page = store.list(query.state(), after.as_ref(), SCAN_PAGE).await?;
        let full = page.len() == SCAN_PAGE;
        after = page.last().map(ApprovalLane::key);
        counted = counted.saturating_add(page.iter().filter(|lane| query.admits(lane)).count());
        if counted >= cap {
            return Ok(cap);
        }
        if !full {
            return Ok(counted);
        }
    }
}

impl<S: ApprovalStore + ?Sized> ApprovalStore for Arc<S> {
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(ApprovalLane, bool), StoreError>> + Send {
        (**self).insert(lane, event)
    }

    fn get(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Option<ApprovalLane>, StoreError>> + Send {
        (**self).get(key)
    }

    fn transition(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).transition(expected_version, lane, event)
    }

    fn transition_detached(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) {
        (**self).transition_detached(expected_version, lane, event);
    }

    fn append(&self, record: AuditRecord) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).append(record)
    }

    fn append_soon(&self, record: AuditRecord) -> Option<AuditRecord> {
        (**self).append_soon(record)
    }

    fn events_since(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(u64, AuditRecord)>, StoreError>> + Send {
        (**self).events_since(after, limit)
    }

    fn list(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        (**self).list(state, after, limit)
    }

    fn query_lanes(
        &self,
        query: &LaneQuery,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        (**self).query_lanes(query, limit)
    }

    fn count_lanes(
        &self,
        query: &LaneQuery,
        cap: usize,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send {
        (**self).count_lanes(query, cap)
    }

    fn watch(&self) -> Option<StoreWatch> {
        (**self).watch()
    }

    fn get_many(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        (**self).get_many(keys)
    }

    fn versions_of(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<(IdempotencyKey, u64)>, StoreError>> + Send {
        (**self).versions_of(keys)
    }

    fn last_known(&self, key: &IdempotencyKey) -> Option<ApprovalLane> {
        (**self).last_known(key)
    }

    fn now(&self) -> Option<Timestamp> {
        (**self).now()
    }

    fn open_task(
        &self,
        task: TaskRecord,
    ) -> impl Future<Output = Result<(TaskRecord, bool), StoreError>> + Send {
        (**self).open_task(task)
    }

    fn task(
        &self,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send {
        (**self).task(id)
    }

    fn issue_task_input(
        &self,
        id: &TaskId,
        issued: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).issue_task_input(id, issued)
    }

    fn forget_tasks(
        &self,
        before: Timestamp,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        (**self).forget_tasks(before)
    }

    fn claim_notices(
        &self,
        claim: &NoticeClaim,
    ) -> impl Future<Output = Result<Vec<DueNotice>, StoreError>> + Send {
        (**self).claim_notices(claim)
    }

    fn settle_notice(
        &self,
        notice: &DueNotice,
        outcome: NoticeOutcome,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).settle_notice(notice, outcome)
    }

    fn accept_once(
        &self,
        token: &str,
        now: Timestamp,
        forget_at: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).accept_once(token, now, forget_at)
    }
}

/// An in-memory [`ApprovalStore`], safe to share between threads, for tests and hosts
/// that keep nothing across restarts.
///
/// It is bounded, so a process that answers calls for ever stays the same size:
///
/// - **Lanes**: at most `capacity`; a new proposal past that is refused with
///   [`StoreError::Full`], and no lane is evicted on its own (a lane a person may still
///   decide, or that may still run, is never lost). Terminal lanes leave through
///   [`MemoryStore::compact`], an explicit host call.
/// - **Events**: the newest `event_capacity` records are kept, in a ring. Each keeps its
///   sequence number, so a cursor stays exact; a reader that falls behind by more than the
///   ring holds misses the oldest, and [`MemoryStore::evicted_events`] counts them. A host
///   that must keep every record gives the governor a durable store (SQLite, PostgreSQL),
///   which keeps everything, or an audit sink of its own.
///
/// ```
/// use cairnloop::approvals::{ApprovalStore, MemoryStore};
///
/// let store = MemoryStore::new();
/// assert!(pollster::block_on(store.events_since(0, 10)).unwrap().is_empty());
/// assert_eq!(store.capacity(), MemoryStore::DEFAULT_CAPACITY);
/// assert_eq!(store.event_capacity(), MemoryStore::DEFAULT_EVENT_CAPACITY);
/// ```
#[cfg(feature = "std")]
#[derive(Debug)]
pub struct MemoryStore {
    inner: std::sync::Mutex<Memory>,
    capacity: usize,
    event_capacity: usize,
    watch: StoreWatch,
}

#[cfg(feature = "std")]
#[derive(Debug)]
struct Memory {
    lanes: std::collections::BTreeMap<IdempotencyKey, ApprovalLane>,
    /// The kept events with their sequence numbers, oldest first (ascending; gaps only
    /// where `compact` removed records).
    events: std::collections::VecDeque<(u64, AuditRecord)>,
    /// The sequence number of the next event (the first is 1).
    next_seq: u64,
    /// Events that left the ring to make room.
    evicted: u64,
    /// The tasks by id, and each one's id by its lane and owner.
    tasks: std::collections::BTreeMap<TaskId, TaskRecord>,
    task_of: std::collections::BTreeMap<(IdempotencyKey, String), TaskId>,
    /// What became of each notice: by lane, target and round (proposal time).
    notices: std::collections::BTreeMap<(IdempotencyKey, String, u64), NoticeState>,
    /// The tokens taken once, each until it is forgotten.
    accepted: std::collections::BTreeMap<String, Timestamp>,
    /// The audit chain across the kept events, when the store keeps one
    /// ([`MemoryStore::with_audit_chain`]).
    chain: Option<MemoryChain>,
}

/// A memory store's audit chain: each kept event's text and links, oldest first (the
/// events' order); the link of the last event the ring dropped, which the oldest kept
/// follows; and the last link written, which the next event follows.
#[cfg(feature = "std")]
#[derive(Debug)]
struct MemoryChain {
    anchor: ChainHash,
    head: ChainHash,
    kept: std::collections::VecDeque<ChainedRecord>,
}

#[cfg(feature = "std")]
impl MemoryChain {
    /// Links `record`, numbered `seq`, after the last; keeps at most `capacity` links.
    fn link(&mut self, seq: u64, record: &AuditRecord, capacity: usize) {
        // A record is plain data with string keys: it always serializes.
        let text = serde_json::to_string(record).unwrap_or_default();
        let hash = chain_link(&self.head, &text);
        self.kept
            .push_back(ChainedRecord::new(seq, self.head, hash, text));
        self.head = hash;
        while self.kept.len() > capacity {
            if let Some(dropped) = self.kept.pop_front() {
                self.anchor = dropped.hash;
            }
        }
    }
}

/// Where one notice stands in the outbox, with the attempts made so far.
#[cfg(feature = "std")]
#[derive(Clone, Debug)]
struct NoticeState {
    attempts: u32,
    stage: NoticeStage,
}

#[cfg(feature = "std")]
#[derive(Clone, Debug, PartialEq, Eq)]
enum NoticeStage {
    Held { holder: String, until: Timestamp },
    Retry(Timestamp),
    Done,
}

#[cfg(feature = "std")]
impl NoticeState {
    /// Whether it may be claimed at `now`.
    fn due(&self, now: Timestamp) -> bool {
        match &self.stage {
            NoticeStage::Held { until, .. } => *until <= now,
            NoticeStage::Retry(at) => *at <= now,
            NoticeStage::Done => false,
        }
    }
}

#[cfg(feature = "std")]
impl Memory {
    /// Appends `record` under the next sequence number, making room in a full ring.
    fn push(&mut self, record: AuditRecord, event_capacity: usize) {
        if let Some(chain) = &mut self.chain {
            chain.link(self.next_seq, &record, event_capacity);
        }
        if event_capacity == 0 {
            self.next_seq += 1;
            self.evicted += 1;
            return;
        }
        while self.events.len() >= event_capacity {
            self.events.pop_front();
            self.evicted += 1;
        }
        self.events.push_back((self.next_seq, record));
        self.next_seq += 1;
    }
}

#[cfg(feature = "std")]
impl Default for MemoryStore {
    fn default() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }
}

#[cfg(feature = "std")]
impl MemoryStore {
    /// How many lanes [`MemoryStore::new`] holds.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::MemoryStore::DEFAULT_CAPACITY, 100_000);
    /// ```
    pub const DEFAULT_CAPACITY: usize = 100_000;

    /// How many events [`MemoryStore::new`] keeps.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::MemoryStore::DEFAULT_EVENT_CAPACITY, 10_000);
    /// ```
    pub const DEFAULT_EVENT_CAPACITY: usize = 10_000;

    /// An empty store for up to [`MemoryStore::DEFAULT_CAPACITY`] lanes.
    ///
    /// ```
    /// let store = cairnloop::approvals::MemoryStore::new();
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store for up to `capacity` lanes.
    ///
    /// ```
    /// let store = cairnloop::approvals::MemoryStore::with_capacity(10);
    /// assert_eq!(store.capacity(), 10);
    /// ```
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: std::sync::Mutex::new(Memory {
                lanes: std::collections::BTreeMap::new(),
                events: std::collections::VecDeque::new(),
                next_seq: 1,
                evicted: 0,
                tasks: std::collections::BTreeMap::new(),
                task_of: std::collections::BTreeMap::new(),
                notices: std::collections::BTreeMap::new(),
                accepted: std::collections::BTreeMap::new(),
                chain: None,
            }),
            capacity,
            event_capacity: Self::DEFAULT_EVENT_CAPACITY,
            watch: StoreWatch::new(),
        }
    }

    /// The same store, keeping the newest `event_capacity` events (0 keeps none: every
    /// record is counted as evicted at once).
    ///
    /// ```
    /// let store = cairnloop::approvals::MemoryStore::new().with_event_capacity(500);
    /// assert_eq!(store.event_capacity(), 500);
    /// ```
    #[must_use]
    pub fn with_event_capacity(self, event_capacity: usize) -> Self {
        Self {
            event_capacity,
            ..self
        }
    }

    /// The same store, linking each event it records into an audit chain, as SQLite and
    /// PostgreSQL do: each kept event carries the SHA-256 link of the one before it
    /// ([`chain_link`](crate::approvals::chain_link)), across the ring as it drops its
    /// oldest. Off by default: a link costs a serialization and a hash per event, on every
    /// call that runs at once, which the default governor's budget does not have room
    /// for. Events recorded before this call are not linked.
    ///
    /// ```
    /// use cairnloop::approvals::MemoryStore;
    /// let store = MemoryStore::new().with_audit_chain();
    /// assert!(store.keeps_audit_chain());
    /// assert!(!MemoryStore::new().keeps_audit_chain());
    /// ```
    #[must_use]
    pub fn with_audit_chain(self) -> Self {
        if let Ok(mut memory) = self.inner.lock() {
            memory.chain.get_or_insert_with(|| MemoryChain {
                anchor: CHAIN_GENESIS,
                head: CHAIN_GENESIS,
                kept: std::collections::VecDeque::new(),
            });
        }
        self
    }

    /// Whether the store links its events into an audit chain
    /// ([`MemoryStore::with_audit_chain`]).
    ///
    /// ```
    /// assert!(!cairnloop::approvals::MemoryStore::new().keeps_audit_chain());
    /// ```
    #[must_use]
    pub fn keeps_audit_chain(&self) -> bool {
        self.inner.lock().is_ok_and(|memory| memory.chain.is_some())
    }

    /// Up to `limit` kept events after `after` (0: from the oldest kept) with their links,
    /// oldest first: for [`ChainVerifier`](crate::approvals::ChainVerifier) and an export.
    /// `None` when the store keeps no chain.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when a thread panicked while holding the store.
    ///
    /// ```
    /// use cairnloop::approvals::MemoryStore;
    /// assert_eq!(MemoryStore::new().chained_since(0, 10), Ok(None));
    /// assert_eq!(MemoryStore::new().with_audit_chain().chained_since(0, 10), Ok(Some(vec![])));
    /// ```
    pub fn chained_since(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Option<Vec<ChainedRecord>>, StoreError> {
        let memory = self.lock()?;
        Ok(memory.chain.as_ref().map(|chain| {
            chain
                .kept
                .iter()
                .filter(|record| record.seq > after)
                .take(limit)
                .cloned()
                .collect()
        }))
    }

    /// Checks the kept part of the audit chain: every kept event's link, from the oldest
    /// kept to the newest. The oldest kept follows the last event the ring dropped
    /// ([`MemoryStore::evicted_events`] counts them), or the chain's start; the report's
    /// anchor is that link, for a head kept from before. The inner error names the first
    /// event out of place: events a [`compact`](MemoryStore::compact)ion removed show as a
    /// gap before the next kept one. The newest events removed leave no gap; the
    /// report's `watched_found` is then `Some(false)` (the chain's last link is no longer
    /// among the kept). `None` when the store keeps no chain.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when a thread panicked while holding the store.
    ///
    /// ```
    /// use cairnloop::approvals::MemoryStore;
    /// let report = MemoryStore::new().with_audit_chain().verify_audit()?.unwrap().unwrap();
    /// assert_eq!(report.records, 0);
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    pub fn verify_audit(&self) -> Result<Option<Result<ChainReport, ChainBreak>>, StoreError> {
        let memory = self.lock()?;
        let Some(chain) = &memory.chain else {
            return Ok(None);
        };
        if let Some(first) = chain.kept.front()
            && first.prev != chain.anchor
        {
            return Ok(Some(Err(ChainBreak::Removed {
                after: None,
                before: first.seq,
            })));
        }
        let mut verifier = ChainVerifier::anchored_at_first().watching(chain.head);
        for record in &chain.kept {
            if let Err(broken) = verifier.check(record) {
                return Ok(Some(Err(broken)));
            }
        }
        Ok(Some(Ok(verifier.finish())))
    }

    /// How many events the store keeps at most.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::MemoryStore::new().event_capacity(), 10_000);
    /// ```
    #[must_use]
    pub const fn event_capacity(&self) -> usize {
        self.event_capacity
    }

    /// How many events left the ring to make room for newer ones, since the store was
    /// made.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when a thread panicked while holding the store.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::MemoryStore::new().evicted_events(), Ok(0));
    /// ```
    pub fn evicted_events(&self) -> Result<u64, StoreError> {
        Ok(self.lock()?.evicted)
    }

    /// How many lanes the store holds at most.
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::MemoryStore::with_capacity(3).capacity(), 3);
    /// ```
    #[must_use]
    pub const fn capacity(&self) -> usize {
        self.capacity
    }

    /// Removes every terminal lane (rejected, deferred, expired, executed, failed,
    /// invalidated) and every event of those lanes; returns how many lanes went. Lanes
    /// that can still move, and their events, stay.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when a thread panicked while holding the store.
    ///
    /// ```
    /// let store = cairnloop::approvals::MemoryStore::new();
    /// assert_eq!(store.compact(), Ok(0));
    /// ```
    pub fn compact(&self) -> Result<usize, StoreError> {
        let mut memory = self.lock()?;
        let before = memory.lanes.len();
        memory.lanes.retain(|_, lane| !lane.state().is_terminal());
        let Memory {
            lanes,
            events,
            chain,
            ..
        } = &mut *memory;
        events.retain(|(_, record)| match record {
            AuditRecord::Transition(event) => lanes.contains_key(&event.key),
            AuditRecord::Decision(event) => event
                .idempotency_key
                .is_none_or(|key| lanes.contains_key(&key)),
            AuditRecord::Notice(event) => lanes.contains_key(&event.key),
            AuditRecord::Refusal(event) => event.key.is_none_or(|key| lanes.contains_key(&key)),
        });
        // The chain keeps the events that stay, and so shows where the others were.
        if let Some(chain) = chain {
            let mut staying = events.iter().map(|(seq, _)| *seq).peekable();
            chain.kept.retain(|record| {
                while staying.next_if(|seq| *seq < record.seq).is_some() {}
                staying.next_if_eq(&record.seq).is_some()
            });
        }
        Ok(before - memory.lanes.len())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Memory>, StoreError> {
        // A thread that panicked while holding the lock may have left a half-made move.
        self.inner
            .lock()
            .map_err(|_| StoreError::Backend("a thread panicked while holding the store".into()))
    }
}

#[cfg(feature = "std")]
impl MemoryStore {
    fn insert_now(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(ApprovalLane, bool), StoreError> {
        let mut memory = self.lock()?;
        use std::collections::btree_map;
        let full = memory.lanes.len() >= self.capacity;
        // One search of the tree, whether the key is there or not.
        match memory.lanes.entry(lane.key()) {
            btree_map::Entry::Occupied(existing) => return Ok((existing.get().clone(), false)),
            btree_map::Entry::Vacant(_) if full => {
                return Err(StoreError::Full {
                    capacity: self.capacity,
                });
            }
            btree_map::Entry::Vacant(vacant) => {
                vacant.insert(lane.clone());
            }
        }
        memory.push(AuditRecord::Transition(event), self.event_capacity);
        Ok((lane, true))
    }

    fn transition_now(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(), StoreError> {
        let mut memory = self.lock()?;
        let stored = memory
            .lanes
            .get_mut(&lane.key())
            .ok_or(StoreError::Missing)?;
        if stored.version() != expected_version {
            return Err(StoreError::Conflict);
        }
        *stored = lane;
        memory.push(AuditRecord::Transition(event), self.event_capacity);
        Ok(())
    }

    fn list_now(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> Result<Vec<ApprovalLane>, StoreError> {
        use core::ops::Bound;
        let memory = self.lock()?;
        let from = after.map_or(Bound::Unbounded, |key| Bound::Excluded(*key));
        Ok(memory
            .lanes
            .range((from, Bound::Unbounded))
            .map(|(_, lane)| lane)
            .filter(|lane| lane.state() == state)
            .take(limit)
            .cloned()
            .collect())
    }

    fn events_now(&self, after: u64, limit: usize) -> Result<Vec<(u64, AuditRecord)>, StoreError> {
        let memory = self.lock()?;
        let first = memory.events.partition_point(|(seq, _)| *seq <= after);
        Ok(memory.events.range(first..).take(limit).cloned().collect())
    }

    fn open_task_now(&self, task: TaskRecord) -> Result<(TaskRecord, bool), StoreError> {
        let mut memory = self.lock()?;
        let owned = (task.lane(), task.owner().into());
        if let Some(id) = memory.task_of.get(&owned) {
            let kept = memory.tasks.get(id).cloned();
            return kept
                .map(|kept| (kept, false))
                .ok_or_else(|| StoreError::Corrupt("a task's index names no task".into()));
        }
        if memory.tasks.len() >= self.capacity {
            return Err(StoreError::Full {
                capacity: self.capacity,
            });
        }
        if memory.tasks.contains_key(task.id()) {
            // Two tasks under one id: never, with 128 random bits; refused all the same.
            return Err(StoreError::Conflict);
        }
        memory.task_of.insert(owned, task.id().clone());
        memory.tasks.insert(task.id().clone(), task.clone());
        Ok((task, true))
    }

    fn issue_task_input_now(&self, id: &TaskId, issued: u32) -> Result<(), StoreError> {
        let mut memory = self.lock()?;
        let task = memory.tasks.get_mut(id).ok_or(StoreError::Missing)?;
        if task.inputs_issued() != issued {
            return Err(StoreError::Conflict);
        }
        *task = task.clone().with_inputs_issued(issued.saturating_add(1));
        Ok(())
    }

    fn claim_notices_now(&self, claim: &NoticeClaim) -> Result<Vec<DueNotice>, StoreError> {
        let mut memory = self.lock()?;
        let now = claim.now();
        let mut waiting: Vec<ApprovalLane> = (memory.lanes.values())
            .filter(|lane| lane.state() == LaneState::Pending && lane.expires_at() > now)
            .cloned()
            .collect();
        waiting.sort_by_key(|lane| (lane.proposed_at(), lane.key()));
        let mut claimed = Vec::new();
        for lane in waiting {
            if claimed.len() >= claim.max() {
                break;
            }
            let id = (
                lane.key(),
                claim.target().into(),
                lane.proposed_at().unix_millis(),
            );
            let attempts = match memory.notices.get(&id) {
                Some(state) if !state.due(now) => continue,
                Some(state) => state.attempts,
                None => 0,
            };
            let attempt = attempts.saturating_add(1);
            let stage = NoticeStage::Held {
                holder: claim.holder().into(),
                until: claim.until(),
            };
            memory.notices.insert(
                id,
                NoticeState {
                    attempts: attempt,
                    stage,
                },
            );
            claimed.push(DueNotice::claimed(lane, claim, attempt));
        }
        Ok(claimed)
    }

    fn settle_notice_now(
        &self,
        notice: &DueNotice,
        outcome: NoticeOutcome,
    ) -> Result<bool, StoreError> {
        let mut memory = self.lock()?;
        let id = (
            notice.lane().key(),
            notice.claim().target().into(),
            notice.round().unix_millis(),
        );
        let Some(state) = memory.notices.get_mut(&id) else {
            return Ok(false);
        };
        let held_here = matches!(&state.stage, NoticeStage::Held { holder, .. } if holder == notice.claim().holder())
            && state.attempts == notice.attempt();
        if !held_here {
            return Ok(false);
        }
        state.stage = match outcome {
            NoticeOutcome::Retry(at) => NoticeStage::Retry(at),
            NoticeOutcome::Delivered | NoticeOutcome::GaveUp => NoticeStage::Done,
        };
        Ok(true)
    }

    fn forget_tasks_now(&self, before: Timestamp) -> Result<u64, StoreError> {
        let mut memory = self.lock()?;
        let old: Vec<TaskRecord> = memory
            .tasks
            .values()
            .filter(|task| task.opened_at() < before)
            .cloned()
            .collect();
        for task in &old {
            memory.tasks.remove(task.id());
            memory.task_of.remove(&(task.lane(), task.owner().into()));
        }
        Ok(old.len() as u64)
    }
}

#[cfg(feature = "std")]
impl ApprovalStore for MemoryStore {
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(ApprovalLane, bool), StoreError>> + Send {
        let inserted = self.insert_now(lane, event);
        if matches!(inserted, Ok((_, true))) {
            self.watch.notify();
        }
        ready(inserted)
    }

    fn get(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Option<ApprovalLane>, StoreError>> + Send {
        ready(self.lock().map(|memory| memory.lanes.get(key).cloned()))
    }

    fn transition(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let moved = self.transition_now(expected_version, lane, event);
        if moved.is_ok() {
            self.watch.notify();
        }
        ready(moved)
    }

    fn transition_detached(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) {
        if self.transition_now(expected_version, lane, event).is_ok() {
            self.watch.notify();
        }
    }

    fn append(&self, record: AuditRecord) -> impl Future<Output = Result<(), StoreError>> + Send {
        ready(
            self.lock()
                .map(|mut memory| memory.push(record, self.event_capacity)),
        )
    }

    fn events_since(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(u64, AuditRecord)>, StoreError>> + Send {
        ready(self.events_now(after, limit))
    }

    fn list(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        ready(self.list_now(state, after, limit))
    }

    fn watch(&self) -> Option<StoreWatch> {
        Some(self.watch.clone())
    }

    fn get_many(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        ready(self.lock().map(|memory| {
            keys.iter()
                .filter_map(|key| memory.lanes.get(key).cloned())
                .collect()
        }))
    }

    fn open_task(
        &self,
        task: TaskRecord,
    ) -> impl Future<Output = Result<(TaskRecord, bool), StoreError>> + Send {
        ready(self.open_task_now(task))
    }

    fn task(
        &self,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send {
        ready(self.lock().map(|memory| memory.tasks.get(id).cloned()))
    }

    fn issue_task_input(
        &self,
        id: &TaskId,
        issued: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        ready(self.issue_task_input_now(id, issued))
    }

    fn forget_tasks(
        &self,
        before: Timestamp,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        ready(self.forget_tasks_now(before))
    }

    fn claim_notices(
        &self,
        claim: &NoticeClaim,
    ) -> impl Future<Output = Result<Vec<DueNotice>, StoreError>> + Send {
        ready(self.claim_notices_now(claim))
    }

    fn settle_notice(
        &self,
        notice: &DueNotice,
        outcome: NoticeOutcome,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        ready(self.settle_notice_now(notice, outcome))
    }

    fn accept_once(
        &self,
        token: &str,
        now: Timestamp,
        forget_at: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        ready(self.lock().map(|mut memory| {
            memory.accepted.retain(|_, until| *until > now);
            if memory.accepted.contains_key(token) {
                return false;
            }
            memory.accepted.insert(token.into(), forget_at);
            true
        }))
    }
}
