//! The store contract, checked by the conformance kit against the memory store, the SQLite
//! store and deliberately broken stores; the SQLite store's refusals, and approvals that
//! survive a restart.
#![cfg(all(feature = "sqlite", feature = "conformance"))]

#[path = "fixtures/scratch.rs"]
mod scratch;

#[path = "fixtures/desk.rs"]
mod desk;

use scratch::Scratch;
use std::collections::BTreeMap;
use std::future::{Future, ready};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use cairnloop::approvals::{
    ApprovalStore, AuditRecord, DueNotice, LaneMark, LaneQuery, ManualClock, MemoryStore,
    NoticeClaim, NoticeOutcome, StoreError, StoreWatch, TaskId, TaskRecord, TransitionEvent,
    conformance,
};
use cairnloop::gate::{LaneState, Timestamp};
use cairnloop::stores::{SqliteOptions, SqliteStore};
use cairnloop::{ApprovalError, ApprovalLane, Governor, IdempotencyKey, Outcome, ToolCall};
use desk::{DESK, Desk, EVERY_SCOPE};

#[test]
fn the_memory_store_keeps_the_contract() {
    conformance::check(MemoryStore::new, 8).unwrap();
}

#[test]
fn the_sqlite_store_keeps_the_contract() {
    let scratch = Scratch::new("kit");
    let next = AtomicU64::new(0);
    conformance::check(
        || {
            let n = next.fetch_add(1, Ordering::SeqCst);
            SqliteStore::open(scratch.file(&format!("kit-{n}.db"))).unwrap()
        },
        8,
    )
    .unwrap();
}

/// A store written plainly over a map, with one rule of the contract broken on purpose.
#[derive(Default)]
struct Broken {
    flaw: Flaw,
    lanes: Mutex<BTreeMap<IdempotencyKey, ApprovalLane>>,
    events: Mutex<BTreeMap<u64, AuditRecord>>,
    numbered: AtomicU64,
    watch: StoreWatch,
    /// The lane last written, whatever its key.
    last: Mutex<Option<ApprovalLane>>,
    tasks: Mutex<BTreeMap<TaskId, TaskRecord>>,
    /// Each notice by lane, target and round: attempts, holder, when it is due (a claim's
    /// lease, a retry's time, or never).
    notices: Mutex<BTreeMap<NoticeId, (u32, String, u64)>>,
    /// The tokens taken, each with when it is forgotten.
    accepted: Mutex<BTreeMap<String, u64>>,
}

/// A notice's lane, target and round.
type NoticeId = (IdempotencyKey, String, u64);

#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Flaw {
    #[default]
    None,
    /// The claim reads the version, then writes later: two racers can both win.
    ClaimNotAtomic,
    /// A move's event is not appended.
    LosesEvents,
    /// A move ignores the expected version.
    NoCompareAndSet,
    /// Inserting a known key overwrites the stored lane.
    InsertOverwrites,
    /// An append takes its number, then publishes the record a moment later: a reader can
    /// pass a number whose record is not there yet, and never see it.
    NumberedBeforePublished,
    /// A move copies the log, adds its event and writes the copy back, outside any lock:
    /// moves of different lanes at once lose each other's events.
    LogCopiedBack,
    /// The next page starts below the last lane's millisecond: lanes proposed in the same
    /// millisecond as a page's last one are skipped.
    QueueSkipsTies,
    /// It can be watched, but no write moves the signal on.
    WatchSilent,
    /// Watchers are woken before the write is made, then never again.
    WakesBeforeWrite,
    /// The copy it keeps of a lane is the lane it wrote last, whatever its key.
    KeepsAnyLane,
    /// Every task it is given is new, even for a lane and owner that have one.
    TaskPerOpen,
    /// A task's question count moves on whatever count the caller last saw: two processes
    /// can issue one question number twice.
    TaskCountNotAtomic,
    /// The versions it reports for waiters are not the lanes' own (one ahead): a waiter
    /// would be woken for a move that never happened, or miss one that did.
    VersionsAhead,
    /// A notice held by one claim is claimed again by another.
    ClaimsHeldNotices,
    /// Any holder settles a notice, not only the one whose claim holds it.
    SettlesOthersNotices,
    /// The claim reads which notices are due, then marks them a moment later: racing
    /// claimers take the same notice.
    NoticeClaimNotAtomic,
    /// A notice of a lane proposed more than a minute ago is never claimed again once it
    /// was claimed: a mark that skips old lanes, retries and all.
    ForgetsOldRetries,
    /// A token is forgotten a moment early (at its time less one second): a replay just
    /// inside the window is taken again.
    ForgetsEarly,
    /// Whether a token is known is read, then it is written a moment later: racing offers
    /// both take it.
    AcceptNotAtomic,
    /// A move that leaves the state as it was (a quorum's first approval) is answered as
    /// written and not written.
    SkipsSameStateMoves,
}

impl Broken {
    fn with(flaw: Flaw) -> Self {
        Self {
            flaw,
            ..Self::default()
        }
    }

    /// Before a write: the flaw that wakes too early.
    fn before_write(&self) {
        if self.flaw == Flaw::WakesBeforeWrite {
            self.watch.notify();
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// After a write: every store but the flawed ones wakes its watchers.
    fn after_write(&self) {
        if !matches!(self.flaw, Flaw::WatchSilent | Flaw::WakesBeforeWrite) {
            self.watch.notify();
        }
    }

    fn move_now(
        &self,
        expected: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(), StoreError> {
        self.before_write();
        let mut lanes = self.lanes.lock().unwrap();
        let Some(version) = lanes.get(&lane.key()).map(ApprovalLane::version) else {
            return Err(StoreError::Missing);
        };
        if version != expected && self.flaw != Flaw::NoCompareAndSet {
            return Err(StoreError::Conflict);
        }
        if self.flaw == Flaw::SkipsSameStateMoves
            && lanes.get(&lane.key()).map(ApprovalLane::state) == Some(lane.state())
        {
            return Ok(());
        }
        if self.flaw == Flaw::ClaimNotAtomic {
            // Checked, then written after letting go of the lock: the window a real bug
            // leaves.
            drop(lanes);
            std::thread::sleep(std::time::Duration::from_millis(20));
            lanes = self.lanes.lock().unwrap();
        }
        *self.last.lock().unwrap() = Some(lane.clone());
        lanes.insert(lane.key(), lane);
        drop(lanes);
        match self.flaw {
            Flaw::LosesEvents => {}
            Flaw::LogCopiedBack => {
                let mut copy = self.events.lock().unwrap().clone();
                let next = copy.keys().next_back().map_or(1, |last| last + 1);
                copy.insert(next, AuditRecord::Transition(event));
                std::thread::sleep(std::time::Duration::from_millis(2));
                *self.events.lock().unwrap() = copy;
            }
            _ => self.publish(AuditRecord::Transition(event)),
        }
        self.after_write();
        Ok(())
    }

    fn publish(&self, record: AuditRecord) {
        if self.flaw == Flaw::NumberedBeforePublished {
            let number = self.numbered.fetch_add(1, Ordering::SeqCst) + 1;
            // Later numbers overtake this one while it waits.
            std::thread::sleep(std::time::Duration::from_micros(50 * (number % 7)));
            self.events.lock().unwrap().insert(number, record);
        } else {
            let mut events = self.events.lock().unwrap();
            let number = self.numbered.fetch_add(1, Ordering::SeqCst) + 1;
            events.insert(number, record);
        }
    }
}

impl ApprovalStore for Broken {
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(ApprovalLane, bool), StoreError>> + Send {
        self.before_write();
        let mut lanes = self.lanes.lock().unwrap();
        let result = match lanes.get(&lane.key()) {
            Some(existing) if self.flaw != Flaw::InsertOverwrites => (existing.clone(), false),
            _ => {
                lanes.insert(lane.key(), lane.clone());
                *self.last.lock().unwrap() = Some(lane.clone());
                self.publish(AuditRecord::Transition(event));
                (lane, true)
            }
        };
        drop(lanes);
        self.after_write();
        ready(Ok(result))
    }

    fn get(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Option<ApprovalLane>, StoreError>> + Send {
        ready(Ok(self.lanes.lock().unwrap().get(key).cloned()))
    }

    fn transition(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        ready(self.move_now(expected_version, lane, event))
    }

    fn transition_detached(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) {
        let _ = self.move_now(expected_version, lane, event);
    }

    fn append(&self, record: AuditRecord) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.publish(record);
        ready(Ok(()))
    }

    fn events_since(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(u64, AuditRecord)>, StoreError>> + Send {
        let events = self.events.lock().unwrap();
        ready(Ok(events
            .range(after.saturating_add(1)..)
            .take(limit)
            .map(|(cursor, record)| (*cursor, record.clone()))
            .collect()))
    }

    fn versions_of(
        &self,
        keys: &[IdempotencyKey],
    ) -> impl Future<Output = Result<Vec<(IdempotencyKey, u64)>, StoreError>> + Send {
        let lanes = self.lanes.lock().unwrap();
        let ahead = u64::from(self.flaw == Flaw::VersionsAhead);
        ready(Ok(keys
            .iter()
            .filter_map(|key| lanes.get(key))
            .map(|lane| (lane.key(), lane.version() + ahead))
            .collect()))
    }

    fn list(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let lanes = self.lanes.lock().unwrap();
        ready(Ok(lanes
            .values()
            .filter(|lane| lane.state() == state && after.is_none_or(|after| lane.key() > *after))
            .take(limit)
            .cloned()
            .collect()))
    }

    fn query_lanes(
        &self,
        query: &LaneQuery,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApprovalLane>, StoreError>> + Send {
        let lanes = self.lanes.lock().unwrap();
        let mut found: Vec<ApprovalLane> = lanes
            .values()
            .filter(|lane| match (self.flaw, query.mark()) {
                (Flaw::QueueSkipsTies, Some(mark)) => {
                    query.clone().without_mark().admits(lane)
                        && lane.proposed_at() < mark.proposed_at()
                }
                _ => query.admits(lane),
            })
            .cloned()
            .collect();
        found.sort_by_key(|lane| std::cmp::Reverse(LaneMark::of(lane)));
        found.truncate(limit);
        ready(Ok(found))
    }

    fn watch(&self) -> Option<StoreWatch> {
        Some(self.watch.clone())
    }

    fn open_task(
        &self,
        task: TaskRecord,
    ) -> impl Future<Output = Result<(TaskRecord, bool), StoreError>> + Send {
        let mut tasks = self.tasks.lock().unwrap();
        let kept = tasks
            .values()
            .find(|kept| kept.lane() == task.lane() && kept.owner() == task.owner())
            .filter(|_| self.flaw != Flaw::TaskPerOpen)
            .cloned();
        ready(Ok(match kept {
            Some(kept) => (kept, false),
            None => {
                tasks.insert(task.id().clone(), task.clone());
                (task, true)
            }
        }))
    }

    fn claim_notices(
        &self,
        claim: &NoticeClaim,
    ) -> impl Future<Output = Result<Vec<DueNotice>, StoreError>> + Send {
        let (now, holder) = (claim.now().unix_millis(), claim.holder());
        let lanes: Vec<ApprovalLane> = (self.lanes.lock().unwrap().values())
            .filter(|lane| lane.state() == LaneState::Pending && lane.expires_at() > claim.now())
            .cloned()
            .collect();
        let id = |lane: &ApprovalLane| {
            let round = lane.proposed_at().unix_millis();
            (lane.key(), claim.target().to_owned(), round)
        };
        let mut notices = self.notices.lock().unwrap();
        let old = |lane: &ApprovalLane| lane.proposed_at().unix_millis() + 60_000 < now;
        let due: Vec<(ApprovalLane, u32)> = lanes
            .into_iter()
            .filter_map(|lane| match notices.get(&id(&lane)) {
                None => Some((lane, 0)),
                Some(_) if self.flaw == Flaw::ForgetsOldRetries && old(&lane) => None,
                Some((attempts, by, due_at)) => {
                    let held_elsewhere = *due_at > now && by != holder;
                    let ignores_hold = self.flaw == Flaw::ClaimsHeldNotices && *due_at != u64::MAX;
                    (*due_at <= now || (held_elsewhere && ignores_hold))
                        .then_some((lane, *attempts))
                }
            })
            .take(claim.max())
            .collect();
        if self.flaw == Flaw::NoticeClaimNotAtomic {
            // Read, then let go and mark a moment later: the window a real bug leaves.
            drop(notices);
            std::thread::sleep(std::time::Duration::from_millis(20));
            notices = self.notices.lock().unwrap();
        }
        let until = claim.until().unix_millis();
        let claimed = due
            .into_iter()
            .map(|(lane, attempts)| {
                notices.insert(id(&lane), (attempts + 1, holder.to_owned(), until));
                DueNotice::claimed(lane, claim, attempts + 1)
            })
            .collect();
        ready(Ok(claimed))
    }

    fn settle_notice(
        &self,
        notice: &DueNotice,
        outcome: NoticeOutcome,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let mut notices = self.notices.lock().unwrap();
        let round = notice.round().unix_millis();
        let id = (
            notice.lane().key(),
            notice.claim().target().to_owned(),
            round,
        );
        let Some((attempts, by, due_at)) = notices.get_mut(&id) else {
            return ready(Ok(false));
        };
        let held = *due_at != u64::MAX && *attempts == notice.attempt() && !by.is_empty();
        let holds =
            held && (by == notice.claim().holder() || self.flaw == Flaw::SettlesOthersNotices);
        if !holds {
            return ready(Ok(false));
        }
        *due_at = match outcome {
            NoticeOutcome::Retry(at) => at.unix_millis(),
            _ => u64::MAX,
        };
        // A retry waits unheld: its holder is gone.
        by.clear();
        ready(Ok(true))
    }

    fn accept_once(
        &self,
        token: &str,
        now: Timestamp,
        forget_at: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let early = if self.flaw == Flaw::ForgetsEarly {
            1_000
        } else {
            0
        };
        let now = now.unix_millis();
        let mut accepted = self.accepted.lock().unwrap();
        accepted.retain(|_, until| until.saturating_sub(early) > now);
        let known = accepted.contains_key(token);
        if self.flaw == Flaw::AcceptNotAtomic {
            drop(accepted);
            std::thread::sleep(std::time::Duration::from_millis(20));
            accepted = self.accepted.lock().unwrap();
        }
        if !known {
            accepted.insert(token.to_owned(), forget_at.unix_millis());
        }
        ready(Ok(!known))
    }

    fn task(
        &self,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send {
        ready(Ok(self.tasks.lock().unwrap().get(id).cloned()))
    }

    fn issue_task_input(
        &self,
        id: &TaskId,
        issued: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let Some(task) = self.tasks.lock().unwrap().get(id).cloned() else {
            return ready(Err(StoreError::Missing));
        };
        let counted = if self.flaw == Flaw::TaskCountNotAtomic || task.inputs_issued() == issued {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        };
        if counted.is_ok() {
            let next = task.with_inputs_issued(issued + 1);
            self.tasks.lock().unwrap().insert(id.clone(), next);
        }
        ready(counted)
    }

    fn forget_tasks(
        &self,
        before: Timestamp,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        let mut tasks = self.tasks.lock().unwrap();
        let old = tasks.len();
        tasks.retain(|_, task| task.opened_at() >= before);
        ready(Ok((old - tasks.len()) as u64))
    }

    fn last_known(&self, key: &IdempotencyKey) -> Option<ApprovalLane> {
        if self.flaw == Flaw::KeepsAnyLane {
            return self.last.lock().unwrap().clone();
        }
        // Without the flaw: the lane as stored, a copy that is never stale here.
        self.lanes.lock().unwrap().get(key).cloned()
    }
}

#[test]
fn every_broken_store_fails_the_kit_at_its_flaw() {
    // The plain store without a flaw passes: the kit's failures below are the flaws'.
    conformance::check(|| Broken::with(Flaw::None), 8).unwrap();
    for (flaw, check) in [
        (Flaw::ClaimNotAtomic, "one claim"),
        (Flaw::LosesEvents, "compare-and-set"),
        (Flaw::NoCompareAndSet, "compare-and-set"),
        (Flaw::InsertOverwrites, "insert-if-absent"),
        (
            Flaw::NumberedBeforePublished,
            "cursor under concurrent writers",
        ),
        (Flaw::LogCopiedBack, "sweeps in a crowd"),
        (Flaw::QueueSkipsTies, "filtered queue"),
        (Flaw::WatchSilent, "watch"),
        (Flaw::WakesBeforeWrite, "watch"),
        (Flaw::KeepsAnyLane, "kept copies"),
        (Flaw::TaskPerOpen, "tasks"),
        (Flaw::TaskCountNotAtomic, "tasks"),
        (Flaw::VersionsAhead, "read together"),
        (Flaw::ClaimsHeldNotices, "outbox"),
        (Flaw::SettlesOthersNotices, "outbox"),
        (Flaw::NoticeClaimNotAtomic, "outbox under racing claims"),
        (Flaw::ForgetsOldRetries, "outbox"),
        (Flaw::ForgetsEarly, "tokens taken once"),
        (Flaw::AcceptNotAtomic, "tokens taken once"),
        (Flaw::SkipsSameStateMoves, "quorum-kept"),
    ] {
        let violation = conformance::check(|| Broken::with(flaw), 8).unwrap_err();
        assert_eq!(violation.check, check, "{violation}");
    }
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn a_file_that_is_not_ours_is_refused_and_left_as_it_was() {
    let scratch = Scratch::new("refuse");
    // Random bytes.
    let noise = scratch.file("noise.db");
    let junk: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&noise, &junk).unwrap();
    assert!(matches!(
        SqliteStore::open(&noise),
        Err(StoreError::Corrupt(_))
    ));
    assert_eq!(bytes(&noise), junk);
    // Another application's SQLite database.
    let foreign = scratch.file("foreign.db");
    let other = rusqlite::Connection::open(&foreign).unwrap();
    other
        .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(other);
    let before = bytes(&foreign);
    assert_eq!(
        SqliteStore::open(&foreign).unwrap_err(),
        StoreError::Foreign
    );
    assert_eq!(bytes(&foreign), before);
    // A store written by a newer library.
    let newer = scratch.file("newer.db");
    drop(SqliteStore::open(&newer).unwrap());
    let bump = rusqlite::Connection::open(&newer).unwrap();
    bump.pragma_update(None, "user_version", 99).unwrap();
    drop(bump);
    let before = bytes(&newer);
    assert_eq!(
        SqliteStore::open(&newer).unwrap_err(),
        StoreError::NewerSchema {
            found: 99,
            supported: 6
        }
    );
    assert_eq!(bytes(&newer), before);
}

const REFUND: &str = r#"{"order": 7, "cents": 1250, "reason": "damaged"}"#;
const REFUND_OTHER: &str = r#"{"order": 8, "cents": 1250, "reason": "damaged"}"#;

fn admin() -> cairnloop::Actor<'static> {
    cairnloop::Actor::new("admin-1", EVERY_SCOPE).with_account("acme")
}

fn governor(path: &Path, clock: &ManualClock) -> Governor<Desk, SqliteStore> {
    Governor::new(&DESK)
        .with_store(SqliteStore::open(path).unwrap())
        .with_clock(clock.clone())
}

#[test]
fn a_read_only_store_refuses_writes_with_a_typed_error_and_blocks_the_call() {
    let scratch = Scratch::new("read-only");
    let path = scratch.file("approvals.db");
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
    let writer = governor(&path, &clock);
    let call = ToolCall::new("refund_order", REFUND);
    let Ok(Outcome::AwaitingApproval(lane)) =
        pollster::block_on(writer.call(&call, &admin(), &Desk::default()))
    else {
        panic!("expected a proposal")
    };
    drop(writer);
    let before = bytes(&path);
    let reader = Governor::new(&DESK)
        .with_store(SqliteStore::open_with(&path, SqliteOptions::new().read_only()).unwrap())
        .with_clock(clock.clone());
    // What was written is still there to read.
    assert_eq!(
        pollster::block_on(reader.lane(&lane.key()))
            .unwrap()
            .state(),
        LaneState::Pending
    );
    assert_eq!(
        pollster::block_on(reader.approve(&lane.key(), "lead")),
        Err(ApprovalError::Store(StoreError::ReadOnly))
    );
    let other = ToolCall::new(
        "refund_order",
        r#"{"order": 8, "cents": 1, "reason": "late"}"#,
    );
    assert_eq!(
        pollster::block_on(reader.call(&other, &admin(), &Desk::default())),
        Err(ApprovalError::Store(StoreError::ReadOnly))
    );
    drop(reader);
    assert_eq!(bytes(&path), before);
}

/// Proposes `call` through `governor`: the lane's key.
fn propose_refund(governor: &Governor<Desk, SqliteStore>, call: &ToolCall<'_>) -> IdempotencyKey {
    match pollster::block_on(governor.call(call, &admin(), &Desk::default())) {
        Ok(Outcome::AwaitingApproval(lane)) => lane.key(),
        other => panic!("expected a proposal, got {other:?}"),
    }
}

#[test]
fn approvals_survive_a_restart_and_an_executed_call_is_not_run_again() {
    let scratch = Scratch::new("restart");
    let path = scratch.file("approvals.db");
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
    let call = ToolCall::new("refund_order", REFUND);
    let key = propose_refund(&governor(&path, &clock), &call);
    // A new process opens the same file.
    let after = governor(&path, &clock);
    assert_eq!(
        pollster::block_on(after.lane(&key)).unwrap().state(),
        LaneState::Pending
    );
    pollster::block_on(after.approve(&key, "lead")).unwrap();
    let ran = pollster::block_on(after.execute(&key, &admin(), &Desk::default()));
    assert_eq!(ran, Ok(serde_json::json!("refunded")));
    drop(after);
    // And the next one gives the recorded outcome back for the same call, without a run.
    let later = governor(&path, &clock);
    assert_eq!(
        pollster::block_on(later.call(&call, &admin(), &Desk::default())),
        Ok(Outcome::Executed(serde_json::json!("refunded")))
    );
    let lane = pollster::block_on(later.lane(&key)).unwrap();
    assert_eq!((lane.state(), lane.attempts()), (LaneState::Executed, 1));
    let transitions = pollster::block_on(later.events())
        .unwrap()
        .into_iter()
        .filter(|record| matches!(record, AuditRecord::Transition(_)))
        .count();
    assert_eq!(
        transitions, 4,
        "opened, approved, claimed, executed: once each"
    );
}

#[test]
fn a_store_locked_by_another_process_gives_a_typed_error_and_loses_nothing() {
    let scratch = Scratch::new("locked");
    let path = scratch.file("approvals.db");
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
    let call = ToolCall::new("refund_order", REFUND);
    let key = propose_refund(&governor(&path, &clock), &call);
    // Another process holds the write lock.
    let mut other = rusqlite::Connection::open(&path).unwrap();
    let holding = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let store = SqliteStore::open_with(
        &path,
        SqliteOptions::new().busy_timeout(std::time::Duration::from_millis(100)),
    );
    // Opening migrates inside a write transaction: refused while the lock is held.
    assert!(
        matches!(store, Err(StoreError::Backend(ref why)) if why.contains("busy")),
        "{store:?}"
    );
    drop(holding);
    let governor = Governor::new(&DESK)
        .with_store(
            SqliteStore::open_with(
                &path,
                SqliteOptions::new().busy_timeout(std::time::Duration::from_millis(100)),
            )
            .unwrap(),
        )
        .with_clock(clock.clone());
    let holding = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let refused = pollster::block_on(governor.approve(&key, "lead"));
    assert!(
        matches!(refused, Err(ApprovalError::Store(StoreError::Backend(ref why))) if why.contains("busy")),
        "{refused:?}"
    );
    drop(holding);
    // Nothing was lost or half-written: the lane is still pending, and approvable.
    assert_eq!(
        pollster::block_on(governor.lane(&key)).unwrap().state(),
        LaneState::Pending
    );
    assert!(pollster::block_on(governor.approve(&key, "lead")).is_ok());
}

/// A move is its lane and its event together: when the event cannot be written, the
/// lane's change is undone with it (the move's savepoint), and the store goes on.
#[test]
fn a_move_whose_event_cannot_be_written_leaves_its_lane_as_it_was() {
    let scratch = Scratch::new("half-move");
    let path = scratch.file("approvals.db");
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
    let call = ToolCall::new("refund_order", REFUND);
    let governor = governor(&path, &clock);
    let key = propose_refund(&governor, &call);
    // Another connection makes the approval's event fail, after the lane is written.
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .execute_batch(
            "CREATE TRIGGER refuse_approvals BEFORE INSERT ON events \
             WHEN NEW.record LIKE '%\"approved\"%' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
        )
        .unwrap();
    let refused = pollster::block_on(governor.approve(&key, "lead"));
    assert!(
        matches!(refused, Err(ApprovalError::Store(_))),
        "{refused:?}"
    );
    assert_eq!(
        pollster::block_on(governor.lane(&key)).unwrap().state(),
        LaneState::Pending,
        "the lane was changed without its event"
    );
    other
        .execute_batch("DROP TRIGGER refuse_approvals")
        .unwrap();
    pollster::block_on(governor.approve(&key, "lead")).unwrap();
    assert_eq!(
        pollster::block_on(governor.lane(&key)).unwrap().state(),
        LaneState::Approved
    );
}

#[test]
fn a_recorded_output_of_null_survives_the_file_and_is_given_back() {
    let scratch = Scratch::new("null-output");
    let path = scratch.file("approvals.db");
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
    // internal_note returns `()`: its output is JSON `null`, which must not read back as
    // "no output" (and so as a lane that cannot give its outcome back).
    let note = ToolCall::new("internal_note", r#"{"ticket": 4, "body": "Called."}"#);
    let governor = governor(&path, &clock);
    let key = propose_refund(&governor, &note);
    pollster::block_on(governor.approve(&key, "lead")).unwrap();
    assert_eq!(
        pollster::block_on(governor.call(&note, &admin(), &Desk::default())),
        Ok(Outcome::Executed(serde_json::Value::Null))
    );
    drop(governor);
    let later = self::governor(&path, &clock);
    assert_eq!(
        pollster::block_on(later.lane(&key)).unwrap().output(),
        Some(&serde_json::Value::Null)
    );
    assert_eq!(
        pollster::block_on(later.call(&note, &admin(), &Desk::default())),
        Ok(Outcome::Executed(serde_json::Value::Null))
    );
}

/// The first schema, as version 1 of the library wrote it.
const VERSION_1: &str = "
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
";

#[test]
fn a_version_1_file_migrates_and_its_lanes_are_found_by_every_filter() {
    let scratch = Scratch::new("v1");
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
    // Lanes and events as today's store writes them, copied into a version-1 file.
    let source = scratch.file("source.db");
    let mut keys = Vec::new();
    {
        let governor = governor(&source, &clock);
        for order in 1..=3 {
            clock.advance(cairnloop::gate::Ttl::from_millis(5));
            let arguments = format!(r#"{{"order": {order}, "cents": 100, "reason": "late"}}"#);
            keys.push(propose_refund(
                &governor,
                &ToolCall::new("refund_order", &arguments),
            ));
        }
        pollster::block_on(governor.approve(&keys[0], "lead")).unwrap();
    }
    let old = scratch.file("old.db");
    {
        let from = rusqlite::Connection::open(&source).unwrap();
        let to = rusqlite::Connection::open(&old).unwrap();
        to.execute_batch(VERSION_1).unwrap();
        to.pragma_update(None, "application_id", 0x434c_6f70)
            .unwrap();
        to.pragma_update(None, "user_version", 1).unwrap();
        let mut lanes = from
            .prepare("SELECT key, state, version, lane FROM lanes")
            .unwrap();
        let rows = lanes
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, String>(3)?,
                ))
            })
            .unwrap();
        for row in rows {
            let (key, state, version, lane) = row.unwrap();
            to.execute(
                "INSERT INTO lanes VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![key, state, version, lane],
            )
            .unwrap();
        }
        let events: Vec<String> = from
            .prepare("SELECT record FROM events ORDER BY seq")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for record in &events {
            to.execute("INSERT INTO events (record) VALUES (?1)", [record])
                .unwrap();
        }
    }
    let events_before = {
        let store = SqliteStore::open(&source).unwrap();
        pollster::block_on(store.events_since(0, usize::MAX)).unwrap()
    };
    let store = SqliteStore::open(&old).unwrap();
    assert_eq!(
        pollster::block_on(store.events_since(0, usize::MAX)).unwrap(),
        events_before
    );
    // The events written before the chain existed were linked in order as it migrated.
    let chained = pollster::block_on(store.verify_audit()).unwrap().unwrap();
    assert_eq!(chained.records, events_before.len() as u64);
    let pending = LaneQuery::new(LaneState::Pending);
    let page = |query: &LaneQuery| -> Vec<IdempotencyKey> {
        pollster::block_on(store.query_lanes(query, 10))
            .unwrap()
            .iter()
            .map(ApprovalLane::key)
            .collect()
    };
    // Newest first: the third proposal, then the second; the first was approved.
    assert_eq!(page(&pending), vec![keys[2], keys[1]]);
    assert_eq!(
        page(&pending.clone().tool("refund_order")),
        vec![keys[2], keys[1]]
    );
    assert_eq!(
        page(&pending.clone().proposer("admin-1")),
        vec![keys[2], keys[1]]
    );
    assert_eq!(
        page(&pending.clone().accounts(["acme"])),
        vec![keys[2], keys[1]]
    );
    assert_eq!(page(&pending.clone().accounts(["globex"])), vec![]);
    assert_eq!(page(&pending.clone().proposer("someone")), vec![]);
    let tier = pollster::block_on(store.get(&keys[1]))
        .unwrap()
        .unwrap()
        .proposal()
        .risk_tier();
    assert_eq!(page(&pending.clone().tiers([tier])), vec![keys[2], keys[1]]);
    assert_eq!(page(&LaneQuery::new(LaneState::Approved)), vec![keys[0]]);
    // The migrated file keeps tasks too.
    let task = TaskRecord::new(
        TaskId::from_random([5; 16]),
        keys[1],
        "agent-7",
        Timestamp::from_unix_millis(2_000),
    );
    assert_eq!(
        pollster::block_on(store.open_task(task.clone())),
        Ok((task.clone(), true))
    );
    assert_eq!(pollster::block_on(store.task(task.id())), Ok(Some(task)));
}

#[test]
fn a_decision_made_through_another_connection_ends_a_wait_on_this_one() {
    let scratch = Scratch::new("watch");
    let path = scratch.file("approvals.db");
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
    let call = ToolCall::new("refund_order", REFUND);
    // Two connections to one file, as two processes have: the agent's and the console's.
    let agent = std::sync::Arc::new(governor(&path, &clock));
    let console = governor(&path, &clock);
    let key = propose_refund(&agent, &call);
    // A third connection's signal: it must move on for a write it did not make (a
    // wait that ran out would say `false`).
    let watcher = SqliteStore::open(&path).unwrap();
    let watch = watcher.watch().unwrap();
    let seen = watch.generation();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let waiter = {
        let (agent, barrier) = (
            std::sync::Arc::clone(&agent),
            std::sync::Arc::clone(&barrier),
        );
        std::thread::spawn(move || {
            barrier.wait();
            // Long enough that only a wake-up ends it with a decision.
            pollster::block_on(agent.await_decision(&key, std::time::Duration::from_secs(60)))
        })
    };
    barrier.wait();
    pollster::block_on(console.approve(&key, "lead")).unwrap();
    let decided = waiter.join().unwrap().unwrap();
    assert_eq!(decided.state(), LaneState::Approved);
    assert!(pollster::block_on(
        watch.changed(seen, std::time::Duration::from_secs(60))
    ));
    // A wait that nobody ends gives the lane back as it is at the deadline.
    let other = propose_refund(&agent, &ToolCall::new("refund_order", REFUND_OTHER));
    let waited =
        pollster::block_on(agent.await_decision(&other, std::time::Duration::from_millis(50)));
    assert_eq!(waited.unwrap().state(), LaneState::Pending);
}

/// An auto call's decision record is not waited for, and is still committed on its own
/// within the store's bound: another connection finds it without this process reading.
#[test]
fn an_auto_calls_record_is_committed_without_being_waited_for() {
    let scratch = Scratch::new("soon");
    let path = scratch.file("approvals.db");
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
    let governor = governor(&path, &clock);
    let call = ToolCall::new("lookup_order", r#"{"order": 7}"#);
    pollster::block_on(governor.call(&call, &admin(), &Desk::default())).unwrap();
    let counted = || -> i64 {
        let other = rusqlite::Connection::open(&path).unwrap();
        other
            .query_row("SELECT count(*) FROM events", [], |row| row.get(0))
            .unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while counted() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the record was never committed"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(counted(), 1);
    drop(governor);
}

/// The store's commits never copy the write-ahead log back into the file (a thread does,
/// off the commit path), and the log does not grow without bound: once copied back it
/// is written again from its start.
#[test]
fn the_write_ahead_log_is_copied_back_and_stays_small() {
    let scratch = Scratch::new("checkpoint");
    let path = scratch.file("approvals.db");
    let log = scratch.file("approvals.db-wal");
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
    let governor = governor(&path, &clock);
    let call = ToolCall::new("lookup_order", r#"{"order": 7}"#);
    let round = || {
        // Each call, allowed or not, appends its decision record.
        for _ in 0..500 {
            pollster::block_on(governor.call(&call, &admin(), &Desk::default())).unwrap();
        }
        // An auto call's record is committed with the store's next batch: a read is one.
        pollster::block_on(governor.audit_log(0, 1)).unwrap();
        std::fs::metadata(&log).unwrap().len()
    };
    let first = round();
    let mut last = first;
    for _ in 0..3 {
        // Several checkpoint periods: the log is copied back while nothing writes.
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        last = round();
    }
    assert!(
        last < 2 * first,
        "the log grew from {first} to {last} bytes: nothing copied it back"
    );
    let events = pollster::block_on(governor.events()).unwrap();
    assert_eq!(events.len(), 2_000, "every decision record is kept");
}
