//! The conformance kit (feature `conformance`): the store contract, checked against any
//! [`ApprovalStore`]. A store that passes it can back a governor; the kit's own tests run
//! it against deliberately broken stores, each of which must fail it.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::approvals::block_on;
use crate::approvals::{
    ApprovalLane, ApprovalStore, AuditRecord, DueNotice, LaneMark, LaneQuery, NoticeClaim,
    NoticeOutcome, StoreError, StoreWatch, TaskId, TaskRecord, TransitionEvent,
};
use crate::declare::{Actor, ApprovalMode, IdempotencyKey, RiskTier, Scope, ToolSpec};
use crate::gate::{LaneAction, LaneState, ModePolicy, Timestamp};
use crate::json::{AuditEvent, Draft, Proposal};

/// A rule of the store contract that a store broke, with what was seen.
///
/// ```
/// use cairnloop::approvals::conformance::Violation;
///
/// fn report(violation: &Violation) -> String {
///     format!("{}: {}", violation.check, violation.detail)
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{check}: {detail}")]
#[non_exhaustive]
pub struct Violation {
    /// The check that failed.
    pub check: &'static str,
    /// What the store did instead.
    pub detail: String,
}

/// Runs every check of the contract against stores made by `make` (a fresh, empty store
/// for each check), with `racers` threads in the race for one claim (at least 2).
///
/// The checks: insert-if-absent; get; many lanes read at once, an unknown key left out; compare-and-set (a stale version changes nothing);
/// a move of a missing lane; events appended with each move, read back in order through
/// a cursor, in pages; decision records appended; lanes listed by state, in key order,
/// page by page, each exactly once; the filtered queue (by tool, tiers, proposer and
/// accounts, alone and together) paged newest first from marks, each lane once, and
/// counted up to a cap; `racers` threads released together by a barrier,
/// each trying to claim the same lane, exactly one winning; a detached move written;
/// `racers` writers appending at once while a reader follows the cursor, which must
/// return every record exactly once with growing cursors (no record that commits late
/// is skipped); `racers` sweepers expiring the same lanes at once, each lane moved
/// exactly once with one event, every loser told [`StoreError::Conflict`]; tasks (for a
/// store that keeps them): one per lane and owner, the first kept unchanged when the same
/// pair opens another, read back by id, an unknown id unknown, the question count a
/// compare-and-set, old tasks forgotten and no others, and `racers` threads opening one
/// lane's task for one owner at once all given the same task, exactly one told it is new;
/// the outbox (for a store that keeps one): a notice due for each pending lane and target,
/// oldest first, held by one claim until it is settled or its lease runs out, settled only
/// by its holder, due again at its retry time with the attempt counted, never again once
/// delivered or given up, none for a decided lane, a retry due long after its lane was
/// proposed still claimed, as is a lane proposed long after the others, and `racers`
/// threads claiming at once each notice claimed by exactly one; tokens taken once (for a store that remembers
/// them): a token taken the first time only, until it is forgotten, and `racers` threads
/// offering one token at once, exactly one taking it;
/// for a store
/// that can be watched, a waiter parked on another thread woken by a proposal, a
/// decision and a detached move, and finding each written when it wakes (a store that
/// cannot be watched skips this check: its waiters read now and then).
///
/// # Errors
///
/// The first [`Violation`] found.
///
/// ```
/// use cairnloop::approvals::{MemoryStore, conformance};
///
/// conformance::check(MemoryStore::new, 8).unwrap();
/// ```
pub fn check<S, F>(make: F, racers: usize) -> Result<(), Violation>
where
    S: ApprovalStore + 'static,
    F: Fn() -> S,
{
    insert_if_absent(&make())?;
    read_together(&make())?;
    compare_and_set(&make())?;
    quorum_kept(&make())?;
    events_in_order(&make())?;
    pages_by_state(&make())?;
    filtered_queue(&make())?;
    detached(&make())?;
    kept_copies(&make())?;
    watched(Arc::new(make()))?;
    race(Arc::new(make()), racers.max(2))?;
    cursor_under_writers(Arc::new(make()), racers.max(2))?;
    sweepers(Arc::new(make()), racers.max(2))?;
    tasks(Arc::new(make()), racers.max(2))?;
    outbox(&make())?;
    outbox_raced(Arc::new(make()), racers.max(2))?;
    accepted_once(Arc::new(make()), racers.max(2))?;
    Ok(())
}

fn fail<T>(check: &'static str, detail: impl Into<String>) -> Result<T, Violation> {
    Err(Violation {
        check,
        detail: detail.into(),
    })
}

fn store_error<T>(check: &'static str, error: &StoreError) -> Result<T, Violation> {
    fail(check, format!("the store failed: {error}"))
}

const SPEC: ToolSpec = ToolSpec::new(
    "kit_tool",
    "Kit tool",
    "A tool of the kit.",
    RiskTier::HighWrite,
);
const T0: Timestamp = Timestamp::from_unix_millis(1_000_000);

/// A pending lane for the call with argument `n`.
fn lane(n: u64) -> ApprovalLane {
    let actor = Actor::new("kit-agent", &[]);
    let mode = ModePolicy::<()>::new().resolve(&SPEC, &actor, &());
    let input = format!("{{\"n\":{n}}}");
    let proposal = Proposal::from_draft(Draft {
        spec: &SPEC,
        scopes: &[] as &[Scope],
        actor: &actor,
        dedupe_token: None,
        idempotency_key: crate::declare::IdempotencyKey::for_canonical_call(
            SPEC.name(),
            &input,
            Some(actor.id()),
            None,
            None,
        ),
        input,
        own_preview: None,
        fallback: None,
        mode,
        host_floor: ApprovalMode::Auto,
        raised_because: None,
    });
    ApprovalLane::open(proposal, T0, Timestamp::from_unix_millis(u64::MAX))
}

fn opened(lane: &ApprovalLane) -> TransitionEvent {
    TransitionEvent::of(None, lane, None, None)
}

/// `lane` moved by `action`, with the event of the move.
fn moved(lane: &ApprovalLane, action: LaneAction) -> (ApprovalLane, TransitionEvent) {
    let next = lane
        .moved(action, T0, Some("kit"), Some("kit"))
        .unwrap_or_else(|_| lane.clone());
    let event = TransitionEvent::of(Some(lane), &next, Some(action), Some("kit"));
    (next, event)
}

fn events<S: ApprovalStore>(
    store: &S,
    check: &'static str,
) -> Result<Vec<(u64, AuditRecord)>, Violation> {
    block_on(store.events_since(0, usize::MAX)).or_else(|error| store_error(check, &error))
}

fn insert_if_absent<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "insert-if-absent";
    let first = lane(1);
    match block_on(store.insert(first.clone(), opened(&first))) {
        Ok((stored, true)) if stored == first => {}
        Ok(other) => return fail(CHECK, format!("a new lane was answered with {other:?}")),
        Err(error) => return store_error(CHECK, &error),
    }
    // The same key again, in another state: the stored lane stays, nothing is added.
    let (approved, event) = moved(&first, LaneAction::Approve);
    match block_on(store.insert(approved, event)) {
        Ok((stored, false)) if stored == first => {}
        Ok(other) => return fail(CHECK, format!("a known key was answered with {other:?}")),
        Err(error) => return store_error(CHECK, &error),
    }
    match block_on(store.get(&first.key())) {
        Ok(Some(stored)) if stored == first => {}
        Ok(other) => return fail(CHECK, format!("get returned {other:?}")),
        Err(error) => return store_error(CHECK, &error),
    }
    match block_on(store.get(&lane(2).key())) {
        Ok(None) => {}
        Ok(other) => return fail(CHECK, format!("an unknown key returned {other:?}")),
        Err(error) => return store_error(CHECK, &error),
    }
    let count = events(store, CHECK)?.len();
    if count != 1 {
        return fail(CHECK, format!("{count} events after one insert"));
    }
    Ok(())
}

fn compare_and_set<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "compare-and-set";
    let first = lane(1);
    block_on(store.insert(first.clone(), opened(&first)))
        .or_else(|error| store_error(CHECK, &error))?;
    let (approved, event) = moved(&first, LaneAction::Approve);
    block_on(store.transition(first.version(), approved.clone(), event))
        .or_else(|error| store_error(CHECK, &error))?;
    // A writer that read the lane before the approval writes back: refused, no change.
    let (rejected, event) = moved(&first, LaneAction::Reject);
    match block_on(store.transition(first.version(), rejected, event)) {
        Err(StoreError::Conflict) => {}
        other => {
            return fail(
                CHECK,
                format!("a stale version was answered with {other:?}"),
            );
        }
    }
    match block_on(store.get(&first.key())) {
        Ok(Some(stored)) if stored == approved => {}
        other => return fail(CHECK, format!("after a refused move the lane is {other:?}")),
    }
    let count = events(store, CHECK)?.len();
    if count != 2 {
        return fail(
            CHECK,
            format!("{count} events after an insert, a move and a refused move"),
        );
    }
    let ghost = lane(9);
    let (moved_ghost, event) = moved(&ghost, LaneAction::Approve);
    match block_on(store.transition(ghost.version(), moved_ghost, event)) {
        Err(StoreError::Missing) => Ok(()),
        other => fail(
            CHECK,
            format!("moving a missing lane was answered with {other:?}"),
        ),
    }
}

/// A quorum's approvals, each a move of its own: the lane as read keeps every approval, in
/// order, and a second approver who read the lane before the first wrote is refused.
fn quorum_kept<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "quorum-kept";
    let first = lane(1);
    block_on(store.insert(first.clone(), opened(&first)))
        .or_else(|error| store_error(CHECK, &error))?;
    let endorsed = first
        .moved(LaneAction::Endorse, T0, Some("first-approver"), None)
        .or_else(|error| fail(CHECK, format!("{error}")))?;
    let event = TransitionEvent::of(Some(&first), &endorsed, Some(LaneAction::Endorse), None);
    block_on(store.transition(first.version(), endorsed.clone(), event))
        .or_else(|error| store_error(CHECK, &error))?;
    // The second approver read the lane before the first approval: refused.
    let stale = first
        .moved(LaneAction::Endorse, T0, Some("second-approver"), None)
        .or_else(|error| fail(CHECK, format!("{error}")))?;
    let event = TransitionEvent::of(Some(&first), &stale, Some(LaneAction::Endorse), None);
    match block_on(store.transition(first.version(), stale, event)) {
        Err(StoreError::Conflict) => {}
        other => {
            return fail(
                CHECK,
                format!("a stale approval was answered with {other:?}"),
            );
        }
    }
    let approved = endorsed
        .moved(LaneAction::Approve, T0, Some("second-approver"), None)
        .or_else(|error| fail(CHECK, format!("{error}")))?;
    let event = TransitionEvent::of(Some(&endorsed), &approved, Some(LaneAction::Approve), None);
    block_on(store.transition(endorsed.version(), approved.clone(), event))
        .or_else(|error| store_error(CHECK, &error))?;
    match block_on(store.get(&first.key())) {
        Ok(Some(stored)) if stored == approved => {}
        Ok(other) => return fail(CHECK, format!("the approved lane reads back as {other:?}")),
        Err(error) => return store_error(CHECK, &error),
    }
    let by: Vec<&str> = approved.approvals().iter().map(|a| a.by()).collect();
    if by != ["first-approver", "second-approver"] {
        return fail(CHECK, format!("approvals kept as {by:?}"));
    }
    Ok(())
}

fn events_in_order<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "event log";
    let first = lane(1);
    block_on(store.insert(first.clone(), opened(&first)))
        .or_else(|error| store_error(CHECK, &error))?;
    let decision = AuditRecord::Decision(AuditEvent::of_verdict(
        "kit_tool",
        Some(&SPEC),
        &Actor::new("kit-agent", &[]),
        &crate::gate::Verdict::<()>::Blocked(crate::gate::Blocked::UnknownTool),
    ));
    block_on(store.append(decision.clone())).or_else(|error| store_error(CHECK, &error))?;
    let (approved, event) = moved(&first, LaneAction::Approve);
    block_on(store.transition(first.version(), approved.clone(), event.clone()))
        .or_else(|error| store_error(CHECK, &error))?;
    let all = events(store, CHECK)?;
    let kinds: Vec<&str> = all
        .iter()
        .map(|(_, record)| match record {
            AuditRecord::Decision(_) => "decision",
            AuditRecord::Transition(_) => "transition",
            AuditRecord::Notice(_) => "notice",
            AuditRecord::Refusal(_) => "refusal",
        })
        .collect();
    if kinds != ["transition", "decision", "transition"] {
        return fail(
            CHECK,
            format!("the log holds {kinds:?}, not every record in order"),
        );
    }
    if all[1].1 != decision || all[2].1 != AuditRecord::Transition(event) {
        return fail(CHECK, "a record came back different from what was written");
    }
    if !all.windows(2).all(|pair| pair[0].0 < pair[1].0) {
        return fail(CHECK, "cursors do not grow");
    }
    // Resuming from a cursor gives exactly the rest, in pages.
    let rest =
        block_on(store.events_since(all[0].0, 1)).or_else(|error| store_error(CHECK, &error))?;
    if rest.len() != 1 || rest[0] != all[1] {
        return fail(
            CHECK,
            format!("a page of one after the first cursor was {rest:?}"),
        );
    }
    let tail =
        block_on(store.events_since(all[1].0, 10)).or_else(|error| store_error(CHECK, &error))?;
    if tail != all[2..] {
        return fail(CHECK, "resuming from a cursor did not give the rest");
    }
    Ok(())
}

fn pages_by_state<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "lanes by state";
    let mut pending = Vec::new();
    for n in 0..25 {
        let lane = lane(n);
        block_on(store.insert(lane.clone(), opened(&lane)))
            .or_else(|error| store_error(CHECK, &error))?;
        if n % 3 == 0 {
            let (approved, event) = moved(&lane, LaneAction::Approve);
            block_on(store.transition(lane.version(), approved, event))
                .or_else(|error| store_error(CHECK, &error))?;
        } else {
            pending.push(lane.key());
        }
    }
    pending.sort();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = block_on(store.list(LaneState::Pending, after.as_ref(), 4))
            .or_else(|error| store_error(CHECK, &error))?;
        if page.len() > 4 {
            return fail(CHECK, format!("a page of 4 held {}", page.len()));
        }
        if page.iter().any(|lane| lane.state() != LaneState::Pending) {
            return fail(CHECK, "a page held a lane in another state");
        }
        seen.extend(page.iter().map(ApprovalLane::key));
        if page.len() < 4 {
            break;
        }
        after = page.last().map(ApprovalLane::key);
    }
    if seen != pending {
        return fail(
            CHECK,
            format!(
                "pages gave {} lanes, not the {} pending in key order",
                seen.len(),
                pending.len()
            ),
        );
    }
    Ok(())
}

const KIT_SPECS: [ToolSpec; 3] = [
    SPEC,
    ToolSpec::new(
        "kit_refund",
        "Kit refund",
        "A tool of the kit.",
        RiskTier::LowWrite,
    ),
    ToolSpec::new(
        "kit_drop",
        "Kit drop",
        "A tool of the kit.",
        RiskTier::Destructive,
    ),
];
const KIT_PEOPLE: [&str; 3] = ["ana", "ben", "cy"];
const KIT_ACCOUNTS: [Option<&str>; 3] = [Some("acme"), Some("globex"), None];

/// A lane of the `n`th varied call: its tool, proposer and account turn at different
/// rates, and several lanes share each millisecond. Its parts, for the expected answers.
fn varied(
    n: u64,
) -> (
    ApprovalLane,
    (&'static str, RiskTier, &'static str, Option<&'static str>),
) {
    let index = |period: u64| usize::try_from(n % period).unwrap_or(0);
    let spec = &KIT_SPECS[index(3)];
    let person = KIT_PEOPLE[index(2) + usize::from(n % 5 == 4)];
    let account = KIT_ACCOUNTS[usize::try_from((n / 2) % 3).unwrap_or(0)];
    let actor = Actor::new(person, &[]);
    let actor = match account {
        Some(account) => actor.with_account(account),
        None => actor,
    };
    let mode = ModePolicy::<()>::new().resolve(spec, &actor, &());
    let input = format!("{{\"n\":{n}}}");
    let proposal = Proposal::from_draft(Draft {
        spec,
        scopes: &[] as &[Scope],
        actor: &actor,
        dedupe_token: None,
        idempotency_key: crate::declare::IdempotencyKey::for_canonical_call(
            spec.name(),
            &input,
            Some(person),
            account,
            None,
        ),
        input,
        own_preview: None,
        fallback: None,
        mode,
        host_floor: ApprovalMode::Auto,
        raised_because: None,
    });
    let at = Timestamp::from_unix_millis(T0.unix_millis() + (n / 4) * 10);
    let lane = ApprovalLane::open(proposal, at, Timestamp::from_unix_millis(u64::MAX));
    (lane, (spec.name(), spec.risk_tier(), person, account))
}

fn filtered_queue<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "filtered queue";
    type Parts = (&'static str, RiskTier, &'static str, Option<&'static str>);
    type Case = (LaneQuery, fn(&Parts) -> bool);
    let mut pending: Vec<((u64, [u8; 32]), Parts)> = Vec::new();
    for n in 0..40 {
        let (lane, parts) = varied(n);
        block_on(store.insert(lane.clone(), opened(&lane)))
            .or_else(|error| store_error(CHECK, &error))?;
        if n % 7 == 3 {
            let (approved, event) = moved(&lane, LaneAction::Approve);
            block_on(store.transition(lane.version(), approved, event))
                .or_else(|error| store_error(CHECK, &error))?;
        } else {
            pending.push((
                (lane.proposed_at().unix_millis(), *lane.key().as_bytes()),
                parts,
            ));
        }
    }
    // Newest first; among one millisecond, the greater key first.
    pending.sort_by_key(|entry| core::cmp::Reverse(entry.0));
    let all = LaneQuery::new(LaneState::Pending);
    let cases: [Case; 8] = [
        (all.clone(), |_| true),
        (all.clone().tool("kit_refund"), |p| p.0 == "kit_refund"),
        (
            all.clone()
                .tiers([RiskTier::HighWrite, RiskTier::Destructive]),
            |p| matches!(p.1, RiskTier::HighWrite | RiskTier::Destructive),
        ),
        (all.clone().proposer("ben"), |p| p.2 == "ben"),
        (all.clone().accounts(["acme", "initech"]), |p| {
            p.3 == Some("acme")
        }),
        (all.clone().accounts(Vec::<String>::new()), |_| false),
        (all.clone().tiers([]), |_| false),
        (
            all.clone()
                .tool("kit_tool")
                .proposer("ana")
                .accounts(["globex"]),
            |p| p.0 == "kit_tool" && p.2 == "ana" && p.3 == Some("globex"),
        ),
    ];
    for (query, wanted) in cases {
        let expected: Vec<[u8; 32]> = pending
            .iter()
            .filter(|(_, parts)| wanted(parts))
            .map(|((_, key), _)| *key)
            .collect();
        let mut seen: Vec<[u8; 32]> = Vec::new();
        let mut page_query = query.clone();
        loop {
            let page = block_on(store.query_lanes(&page_query, 3))
                .or_else(|error| store_error(CHECK, &error))?;
            if page.len() > 3 {
                return fail(CHECK, format!("a page of 3 held {}", page.len()));
            }
            seen.extend(page.iter().map(|lane| *lane.key().as_bytes()));
            let Some(last) = page.last() else { break };
            if seen.len() > pending.len() {
                return fail(CHECK, format!("{query:?}: pages never end"));
            }
            page_query = query.clone().after(LaneMark::of(last));
        }
        if seen != expected {
            return fail(
                CHECK,
                format!(
                    "{query:?}: pages gave {} lanes, not the {} asked for newest first",
                    seen.len(),
                    expected.len()
                ),
            );
        }
        for cap in [2, 1_000] {
            let counted = block_on(store.count_lanes(&page_query, cap))
                .or_else(|error| store_error(CHECK, &error))?;
            if counted != expected.len().min(cap) {
                return fail(
                    CHECK,
                    format!(
                        "{query:?}: counted {counted} up to {cap}, not {}",
                        expected.len()
                    ),
                );
            }
        }
    }
    Ok(())
}

fn detached<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "detached move";
    let first = lane(1);
    block_on(store.insert(first.clone(), opened(&first)))
        .or_else(|error| store_error(CHECK, &error))?;
    let (approved, event) = moved(&first, LaneAction::Approve);
    store.transition_detached(first.version(), approved.clone(), event);
    // A store may write it later, from a worker: wait a little for it.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match block_on(store.get(&first.key())) {
            Ok(Some(stored)) if stored == approved => return Ok(()),
            Ok(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            other => {
                return fail(
                    CHECK,
                    format!("the detached move was not written: {other:?}"),
                );
            }
        }
    }
}

/// How long a watcher waits for a wake-up before the kit calls it lost.
const WAKE_WAIT: Duration = Duration::from_secs(3);

/// A copy the store keeps ([`ApprovalStore::last_known`]) is the lane asked for, exactly
/// as it was stored at its version: a move starts from it, and its compare-and-set
/// checks only the version.
fn kept_copies<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "kept copies";
    let (first, other) = (lane(30), lane(31));
    for opening in [&first, &other] {
        block_on(store.insert(opening.clone(), opened(opening)))
            .or_else(|error| store_error(CHECK, &error))?;
    }
    let (approved, event) = moved(&first, LaneAction::Approve);
    block_on(store.transition(first.version(), approved.clone(), event))
        .or_else(|error| store_error(CHECK, &error))?;
    // A refused move from the version before, then a read of the other lane.
    let (rejected, event) = moved(&first, LaneAction::Reject);
    let _ = block_on(store.transition(first.version(), rejected, event));
    let _ = block_on(store.get(&other.key()));
    let stored = [first.clone(), approved];
    if let Some(copy) = store.last_known(&first.key())
        && !stored.contains(&copy)
    {
        return fail(
            CHECK,
            format!("the copy kept of a lane was never stored under its key: {copy:?}"),
        );
    }
    match store.last_known(&lane(32).key()) {
        None => Ok(()),
        Some(copy) => fail(
            CHECK,
            format!("a copy is kept of a lane never stored: {copy:?}"),
        ),
    }
}

fn watched<S: ApprovalStore + 'static>(store: Arc<S>) -> Result<(), Violation> {
    const CHECK: &str = "watch";
    let Some(watch) = store.watch() else {
        return Ok(());
    };
    let first = lane(1);
    let key = first.key();
    wakes(&store, &watch, key, LaneState::Pending, |store| {
        block_on(store.insert(first.clone(), opened(&first))).map(|_| ())
    })?;
    let (approved, event) = moved(&first, LaneAction::Approve);
    wakes(&store, &watch, key, LaneState::Approved, |store| {
        block_on(store.transition(first.version(), approved.clone(), event))
    })?;
    let (running, event) = moved(&approved, LaneAction::StartExecution);
    wakes(&store, &watch, key, LaneState::ExecutionPending, |store| {
        store.transition_detached(approved.version(), running.clone(), event);
        Ok(())
    })
    .or_else(|violation| fail(CHECK, format!("a detached move: {}", violation.detail)))
}

/// Parks a waiter on another thread, makes `write`, and checks that the waiter wakes
/// and then finds the lane with `key` in `state` (woken before the commit, it would not).
fn wakes<S: ApprovalStore + 'static>(
    store: &Arc<S>,
    watch: &StoreWatch,
    key: IdempotencyKey,
    state: LaneState,
    write: impl FnOnce(&S) -> Result<(), StoreError>,
) -> Result<(), Violation> {
    const CHECK: &str = "watch";
    let barrier = Arc::new(Barrier::new(2));
    let seen = watch.generation();
    let waiter = {
        let (store, watch, barrier) = (Arc::clone(store), watch.clone(), Arc::clone(&barrier));
        std::thread::spawn(move || {
            barrier.wait();
            let deadline = Instant::now() + WAKE_WAIT;
            let mut seen = seen;
            let mut last = None;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if !block_on(watch.changed(seen, left)) {
                    return Err(format!(
                        "a waiter was not woken with the lane {state} within {WAKE_WAIT:?} \
                         (last read after a wake-up: {last:?})"
                    ));
                }
                seen = watch.generation();
                let found = block_on(store.get(&key)).map(|lane| lane.map(|lane| lane.state()));
                if found == Ok(Some(state)) {
                    return Ok(());
                }
                last = Some(found);
            }
        })
    };
    barrier.wait();
    write(store).or_else(|error| store_error(CHECK, &error))?;
    match waiter.join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(detail)) => fail(CHECK, detail),
        Err(_) => fail(CHECK, "the waiting thread panicked"),
    }
}

fn race<S: ApprovalStore + 'static>(store: Arc<S>, racers: usize) -> Result<(), Violation> {
    const CHECK: &str = "one claim";
    let first = lane(1);
    block_on(store.insert(first.clone(), opened(&first)))
        .or_else(|error| store_error(CHECK, &error))?;
    let (approved, event) = moved(&first, LaneAction::Approve);
    block_on(store.transition(first.version(), approved.clone(), event))
        .or_else(|error| store_error(CHECK, &error))?;
    let start = Arc::new(Barrier::new(racers));
    let handles: Vec<_> = (0..racers)
        .map(|racer| {
            let (store, start, approved) =
                (Arc::clone(&store), Arc::clone(&start), approved.clone());
            std::thread::spawn(move || {
                let (claimed, event) = moved(&approved, LaneAction::StartExecution);
                let claimed = claimed.claimed_by(&format!("racer-{racer}"), T0);
                start.wait();
                block_on(store.transition(approved.version(), claimed, event))
            })
        })
        .collect();
    let mut winners = 0;
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => winners += 1,
            Ok(Err(StoreError::Conflict)) => {}
            Ok(Err(error)) => return store_error(CHECK, &error),
            Err(_) => return fail(CHECK, "a racer panicked"),
        }
    }
    if winners != 1 {
        return fail(
            CHECK,
            format!("{winners} of {racers} racers claimed the lane"),
        );
    }
    let transitions = events(store.as_ref(), CHECK)?.len();
    if transitions != 3 {
        return fail(
            CHECK,
            format!("{transitions} events after an insert, an approval and one claim"),
        );
    }
    let holder = block_on(store.get(&first.key()))
        .or_else(|error| store_error(CHECK, &error))?
        .and_then(|lane| lane.claim().map(|claim| claim.holder().to_string()));
    if holder.is_none() {
        return fail(CHECK, "the claimed lane holds no claim");
    }
    Ok(())
}

/// A decision record that names its writer and its number.
fn marked(writer: usize, n: usize) -> AuditRecord {
    AuditRecord::Decision(AuditEvent::of_verdict(
        "kit_tool",
        Some(&SPEC),
        &Actor::new(&format!("writer-{writer}-{n}"), &[]),
        &crate::gate::Verdict::<()>::Blocked(crate::gate::Blocked::UnknownTool),
    ))
}

fn cursor_under_writers<S: ApprovalStore + 'static>(
    store: Arc<S>,
    writers: usize,
) -> Result<(), Violation> {
    const CHECK: &str = "cursor under concurrent writers";
    const EACH: usize = 40;
    let start = Arc::new(Barrier::new(writers + 1));
    let finished = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..writers)
        .map(|writer| {
            let (store, start, finished) = (
                Arc::clone(&store),
                Arc::clone(&start),
                Arc::clone(&finished),
            );
            std::thread::spawn(move || {
                start.wait();
                let result = (0..EACH).try_for_each(|n| block_on(store.append(marked(writer, n))));
                finished.fetch_add(1, Ordering::SeqCst);
                result
            })
        })
        .collect();
    start.wait();
    let expected = writers * EACH;
    let mut seen: Vec<AuditRecord> = Vec::with_capacity(expected);
    let mut cursor = 0;
    // A store may hold back records of writes still in flight elsewhere: read until all
    // are seen, or until a while after the last writer returned.
    let mut deadline = Instant::now() + Duration::from_secs(60);
    let mut all_returned = false;
    while seen.len() < expected || !all_returned {
        if !all_returned && finished.load(Ordering::SeqCst) == writers {
            all_returned = true;
            deadline = deadline.min(Instant::now() + Duration::from_secs(5));
        }
        let page =
            block_on(store.events_since(cursor, 7)).or_else(|error| store_error(CHECK, &error))?;
        for (position, record) in page {
            if position <= cursor {
                return fail(CHECK, format!("cursor {position} came after {cursor}"));
            }
            cursor = position;
            seen.push(record);
        }
        if seen.len() > expected {
            return fail(
                CHECK,
                format!("{} records read, {expected} written", seen.len()),
            );
        }
        if Instant::now() > deadline {
            return fail(
                CHECK,
                format!("{} of {expected} records read by the deadline", seen.len()),
            );
        }
    }
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return store_error(CHECK, &error),
            Err(_) => return fail(CHECK, "a writer panicked"),
        }
    }
    // Every record once: each one written is found among those read.
    for writer in 0..writers {
        for n in 0..EACH {
            let record = marked(writer, n);
            let times = seen.iter().filter(|read| **read == record).count();
            if times != 1 {
                return fail(
                    CHECK,
                    format!(
                        "record {n} of writer {writer} was read {times} times through the cursor"
                    ),
                );
            }
        }
    }
    let all = events(store.as_ref(), CHECK)?;
    if all.len() != expected || all.iter().map(|(_, record)| record).ne(seen.iter()) {
        return fail(
            CHECK,
            "the log read from the start differs from what the cursor gave",
        );
    }
    Ok(())
}

fn sweepers<S: ApprovalStore + 'static>(store: Arc<S>, sweepers: usize) -> Result<(), Violation> {
    const CHECK: &str = "sweeps in a crowd";
    const LANES: u64 = 24;
    for n in 0..LANES {
        let lane = lane(n);
        block_on(store.insert(lane.clone(), opened(&lane)))
            .or_else(|error| store_error(CHECK, &error))?;
    }
    let start = Arc::new(Barrier::new(sweepers));
    let handles: Vec<_> = (0..sweepers)
        .map(|_| {
            let (store, start) = (Arc::clone(&store), Arc::clone(&start));
            std::thread::spawn(move || -> Result<usize, StoreError> {
                start.wait();
                // As a sweep does: page through the pending lanes, expire each.
                let (mut moved_here, mut after) = (0, None);
                loop {
                    let page = block_on(store.list(LaneState::Pending, after.as_ref(), 5))?;
                    for lane in &page {
                        let (expired, event) = moved(lane, LaneAction::Expire);
                        match block_on(store.transition(lane.version(), expired, event)) {
                            Ok(()) => moved_here += 1,
                            Err(StoreError::Conflict) => {}
                            Err(error) => return Err(error),
                        }
                    }
                    if page.len() < 5 {
                        return Ok(moved_here);
                    }
                    after = page.last().map(ApprovalLane::key);
                }
            })
        })
        .collect();
    let mut total = 0;
    for handle in handles {
        match handle.join() {
            Ok(Ok(moved_here)) => total += moved_here,
            Ok(Err(error)) => return store_error(CHECK, &error),
            Err(_) => return fail(CHECK, "a sweeper panicked"),
        }
    }
    if total != LANES as usize {
        return fail(CHECK, format!("{total} expiries won for {LANES} lanes"));
    }
    for n in 0..LANES {
        match block_on(store.get(&lane(n).key())) {
            Ok(Some(stored)) if stored.state() == LaneState::Expired => {}
            other => return fail(CHECK, format!("after the sweeps lane {n} is {other:?}")),
        }
    }
    let count = events(store.as_ref(), CHECK)?.len();
    if count != 2 * LANES as usize {
        return fail(
            CHECK,
            format!("{count} events after {LANES} inserts and {LANES} expiries"),
        );
    }
    Ok(())
}

/// The tasks of one lane and its owners; a store that keeps none (it answers
/// [`StoreError::Unsupported`]) skips this check.
fn tasks<S: ApprovalStore + 'static>(store: Arc<S>, racers: usize) -> Result<(), Violation> {
    const CHECK: &str = "tasks";
    let key = lane(1).key();
    let task = |n: u8, owner: &str, at: u64| {
        TaskRecord::new(
            TaskId::from_random([n; 16]),
            key,
            owner,
            Timestamp::from_unix_millis(at),
        )
    };
    let open = |task: TaskRecord| block_on(store.open_task(task));
    let first = task(1, "agent-7", 1_000);
    match open(first.clone()) {
        Err(StoreError::Unsupported(_)) => return Ok(()),
        Ok((kept, true)) if kept == first => {}
        Ok(other) => return fail(CHECK, format!("a new task came back as {other:?}")),
        Err(error) => return store_error(CHECK, &error),
    }
    match open(task(2, "agent-7", 2_000)) {
        Ok((kept, false)) if kept == first => {}
        other => {
            return fail(
                CHECK,
                format!("the same lane and owner opened {other:?}, not the first task"),
            );
        }
    }
    let other = task(3, "agent-8", 3_000);
    match open(other.clone()) {
        Ok((kept, true)) if kept == other => {}
        answer => return fail(CHECK, format!("another owner was given {answer:?}")),
    }
    let read = |id: &TaskId| block_on(store.task(id));
    if read(first.id()) != Ok(Some(first.clone())) {
        return fail(
            CHECK,
            format!("the first task read back as {:?}", read(first.id())),
        );
    }
    let unknown = TaskId::from_random([4; 16]);
    if read(&unknown) != Ok(None) {
        return fail(CHECK, "an unknown id named a task");
    }
    let issue = |id: &TaskId, issued: u32| block_on(store.issue_task_input(id, issued));
    let counted = [
        issue(first.id(), 0),
        issue(first.id(), 0),
        issue(first.id(), 1),
        issue(&unknown, 0),
    ];
    let expected = [
        Ok(()),
        Err(StoreError::Conflict),
        Ok(()),
        Err(StoreError::Missing),
    ];
    if counted != expected {
        return fail(
            CHECK,
            format!("question counts answered {counted:?}, not {expected:?}"),
        );
    }
    match read(first.id()) {
        Ok(Some(kept)) if kept.inputs_issued() == 2 => {}
        kept => return fail(CHECK, format!("two questions read back as {kept:?}")),
    }
    match block_on(store.forget_tasks(Timestamp::from_unix_millis(2_000))) {
        Ok(1) => {}
        forgot => {
            return fail(
                CHECK,
                format!("forgetting the oldest task answered {forgot:?}"),
            );
        }
    }
    if read(first.id()) != Ok(None) || read(other.id()) != Ok(Some(other.clone())) {
        return fail(
            CHECK,
            "forgetting tasks before a time forgot the wrong ones",
        );
    }
    tasks_raced(&store, racers)
}

/// `racers` threads opening one lane's task for one owner at once.
fn tasks_raced<S: ApprovalStore + 'static>(store: &Arc<S>, racers: usize) -> Result<(), Violation> {
    const CHECK: &str = "tasks";
    let key = lane(2).key();
    let start = Arc::new(Barrier::new(racers));
    let handles: Vec<_> = (0..racers)
        .map(|racer| {
            let (store, start) = (Arc::clone(store), Arc::clone(&start));
            std::thread::spawn(move || {
                let mut id = [0xa0; 16];
                id[0] = u8::try_from(racer).unwrap_or(u8::MAX);
                let task = TaskRecord::new(TaskId::from_random(id), key, "racer", T0);
                start.wait();
                block_on(store.open_task(task))
            })
        })
        .collect();
    let mut kept = Vec::new();
    for handle in handles {
        match handle.join() {
            Ok(Ok(answer)) => kept.push(answer),
            Ok(Err(error)) => return store_error(CHECK, &error),
            Err(_) => return fail(CHECK, "a racer panicked"),
        }
    }
    let new = kept.iter().filter(|(_, new)| *new).count();
    let same = kept.windows(2).all(|pair| pair[0].0 == pair[1].0);
    if new != 1 || !same {
        return fail(
            CHECK,
            format!(
                "{racers} racers opening one task: {new} told it was new, all the same: {same}"
            ),
        );
    }
    Ok(())
}

/// Many lanes read in one call: exactly the stored ones among the keys asked for.
fn read_together<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "read together";
    let lanes: Vec<ApprovalLane> = (1..=3).map(lane).collect();
    for stored in &lanes {
        block_on(store.insert(stored.clone(), opened(stored)))
            .or_else(|error| store_error(CHECK, &error))?;
    }
    let unknown = lane(99).key();
    let asked = [lanes[0].key(), unknown, lanes[2].key(), lanes[0].key()];
    let mut found: Vec<_> = block_on(store.get_many(&asked))
        .or_else(|error| store_error(CHECK, &error))?
        .iter()
        .map(ApprovalLane::key)
        .collect();
    found.sort();
    found.dedup();
    let mut expected = [lanes[0].key(), lanes[2].key()];
    expected.sort();
    // Their versions alone, as a waiter reads them: the same lanes, at the versions kept.
    let mut versions =
        block_on(store.versions_of(&asked)).or_else(|error| store_error(CHECK, &error))?;
    versions.sort();
    versions.dedup();
    let mut kept = [&lanes[0], &lanes[2]].map(|lane| (lane.key(), lane.version()));
    kept.sort();
    if versions != kept {
        return fail(
            CHECK,
            format!(
                "asked for the versions of two stored lanes and an unknown one, got {versions:?}"
            ),
        );
    }
    if found != expected {
        return fail(
            CHECK,
            format!(
                "asked for two stored lanes and an unknown one, got {} lanes",
                found.len()
            ),
        );
    }
    Ok(())
}

/// What `holder` claims for `target` at `now`, for a lease of 1,000 ms.
fn claim<S: ApprovalStore>(
    store: &S,
    target: &str,
    holder: &str,
    now: u64,
) -> Result<Vec<DueNotice>, StoreError> {
    let (at, until) = (
        Timestamp::from_unix_millis(now),
        Timestamp::from_unix_millis(now + 1_000),
    );
    block_on(store.claim_notices(&NoticeClaim::new(target, holder, at, until).limit(100)))
}

/// The lanes' inputs (`{"n":N}`) and attempts of `notices`, sorted (the kit's lanes are
/// all proposed at one time: their order among themselves is the store's).
fn numbered(notices: &[DueNotice]) -> Vec<(String, u32)> {
    let mut numbered: Vec<(String, u32)> = notices
        .iter()
        .map(|notice| {
            (
                notice.lane().proposal().input().to_string(),
                notice.attempt(),
            )
        })
        .collect();
    numbered.sort();
    numbered
}

/// The outbox: a notice due for each pending lane and target, held by one claim, settled
/// by its holder only, retried when due, never again once delivered or given up.
fn outbox<S: ApprovalStore>(store: &S) -> Result<(), Violation> {
    const CHECK: &str = "outbox";
    let lanes: Vec<ApprovalLane> = (1..=3).map(lane).collect();
    for stored in &lanes {
        block_on(store.insert(stored.clone(), opened(stored)))
            .or_else(|error| store_error(CHECK, &error))?;
    }
    // Lane 3 is decided: nobody needs telling any more.
    let (approved, event) = moved(&lanes[2], LaneAction::Approve);
    block_on(store.transition(lanes[2].version(), approved, event))
        .or_else(|error| store_error(CHECK, &error))?;
    let t = T0.unix_millis() + 10;
    let first = match claim(store, "hook", "a", t) {
        Err(StoreError::Unsupported(_)) => return Ok(()),
        Err(error) => return store_error(CHECK, &error),
        Ok(first) => first,
    };
    let one = |n: u32, attempt: u32| (format!("{{\"n\":{n}}}"), attempt);
    let expect =
        |what: &str, got: Result<Vec<DueNotice>, StoreError>, want: Vec<(String, u32)>| match got {
            Ok(got) if numbered(&got) == want => Ok(got),
            other => fail(
                CHECK,
                format!(
                    "{what}: {:?}, not {want:?}",
                    other.map(|got| numbered(&got))
                ),
            ),
        };
    let first = expect("the first claim", Ok(first), vec![one(1, 1), one(2, 1)])?;
    expect(
        "a claim while they are held",
        claim(store, "hook", "b", t),
        vec![],
    )?;
    // Each target has its own notices.
    expect(
        "another target's claim",
        claim(store, "pager", "b", t),
        vec![one(1, 1), one(2, 1)],
    )?;
    let settle = |notice: &DueNotice, holder: &str, outcome| {
        // The notice as `holder` presents it.
        let as_holder = NoticeClaim::new(notice.claim().target(), holder, T0, T0);
        let notice = DueNotice::claimed(notice.lane().clone(), &as_holder, notice.attempt());
        block_on(store.settle_notice(&notice, outcome)).or_else(|error| store_error(CHECK, &error))
    };
    let retry_at = NoticeOutcome::Retry(Timestamp::from_unix_millis(t + 500));
    let settled = [
        settle(&first[1], "b", NoticeOutcome::Delivered)?,
        settle(&first[0], "a", NoticeOutcome::Delivered)?,
        settle(&first[1], "a", retry_at)?,
        settle(&first[0], "a", NoticeOutcome::Delivered)?,
    ];
    if settled != [false, true, true, false] {
        return fail(
            CHECK,
            format!(
                "another holder's settle, two of the holder's and a second one of a settled notice answered {settled:?}, not [false, true, true, false]"
            ),
        );
    }
    expect(
        "a claim before the retry is due",
        claim(store, "hook", "b", t + 499),
        vec![],
    )?;
    let again = expect(
        "a claim when the retry is due",
        claim(store, "hook", "b", t + 500),
        vec![one(2, 2)],
    )?;
    // Its holder goes quiet: past the lease another takes it, and the first can no
    // longer settle it.
    expect(
        "a claim within the lease",
        claim(store, "hook", "c", t + 1_499),
        vec![],
    )?;
    let taken = expect(
        "a claim past the lease",
        claim(store, "hook", "c", t + 1_500),
        vec![one(2, 3)],
    )?;
    let late = settle(&again[0], "b", NoticeOutcome::Delivered)?;
    let given_up = settle(&taken[0], "c", NoticeOutcome::GaveUp)?;
    if late || !given_up {
        return fail(
            CHECK,
            format!("a lapsed holder's settle answered {late}, the new holder's {given_up}"),
        );
    }
    expect(
        "a claim after every notice was settled",
        claim(store, "hook", "d", t + 100_000),
        vec![],
    )?;
    // Long after the lanes were proposed, and after passes that found nothing due: a
    // notice due again is still claimed, and a lane proposed since is still told.
    let fresh = expect(
        "a new target's claim",
        claim(store, "late", "e", t),
        vec![one(1, 1), one(2, 1)],
    )?;
    let retry_late = NoticeOutcome::Retry(Timestamp::from_unix_millis(t + 300_000));
    settle(&fresh[0], "e", NoticeOutcome::Delivered)?;
    settle(&fresh[1], "e", retry_late)?;
    expect(
        "a claim before the late retry",
        claim(store, "late", "f", t + 200_000),
        vec![],
    )?;
    let newer = ApprovalLane::open(
        lane(4).proposal().clone(),
        Timestamp::from_unix_millis(t + 250_000),
        Timestamp::from_unix_millis(u64::MAX),
    );
    block_on(store.insert(newer.clone(), opened(&newer)))
        .or_else(|error| store_error(CHECK, &error))?;
    expect(
        "a claim when the late retry is due, with a lane proposed since",
        claim(store, "late", "f", t + 300_000),
        vec![one(2, 2), one(4, 1)],
    )?;
    Ok(())
}

/// `racers` threads released together, each claiming the notices of eight pending lanes
/// for one target: every notice claimed by exactly one of them.
fn outbox_raced<S: ApprovalStore + 'static>(store: Arc<S>, racers: usize) -> Result<(), Violation> {
    const CHECK: &str = "outbox under racing claims";
    for n in 1..=8 {
        let stored = lane(n);
        block_on(store.insert(stored.clone(), opened(&stored)))
            .or_else(|error| store_error(CHECK, &error))?;
    }
    let start = Arc::new(Barrier::new(racers));
    let handles: Vec<_> = (0..racers)
        .map(|racer| {
            let (store, start) = (Arc::clone(&store), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                claim(
                    &*store,
                    "hook",
                    &format!("racer-{racer}"),
                    T0.unix_millis() + 10,
                )
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for handle in handles {
        match handle.join() {
            Ok(Ok(notices)) => claimed.extend(numbered(&notices)),
            Ok(Err(StoreError::Unsupported(_))) => return Ok(()),
            Ok(Err(error)) => return store_error(CHECK, &error),
            Err(_) => return fail(CHECK, "a racer panicked"),
        }
    }
    claimed.sort();
    let mut distinct = claimed.clone();
    distinct.dedup();
    if claimed.len() != 8 || distinct.len() != 8 {
        return fail(
            CHECK,
            format!(
                "{racers} racers claimed {} notices of 8 lanes ({} distinct)",
                claimed.len(),
                distinct.len()
            ),
        );
    }
    Ok(())
}

/// Tokens taken once: the first offer takes it, later ones do not until it is forgotten,
/// and of `racers` threads released together with one token, exactly one takes it.
fn accepted_once<S: ApprovalStore + 'static>(
    store: Arc<S>,
    racers: usize,
) -> Result<(), Violation> {
    const CHECK: &str = "tokens taken once";
    let at = |millis: u64| Timestamp::from_unix_millis(T0.unix_millis() + millis);
    let offer = |token: &str, now: u64, forget: u64| {
        block_on(store.accept_once(token, at(now), at(forget)))
    };
    let first = match offer("v0=aa", 0, 1_000) {
        Err(StoreError::Unsupported(_)) => return Ok(()),
        Err(error) => return store_error(CHECK, &error),
        Ok(first) => first,
    };
    let answers = [
        first,
        offer("v0=aa", 10, 1_000).or_else(|error| store_error(CHECK, &error))?,
        offer("v0=bb", 10, 1_000).or_else(|error| store_error(CHECK, &error))?,
        offer("v0=aa", 999, 2_000).or_else(|error| store_error(CHECK, &error))?,
        offer("v0=aa", 1_000, 2_000).or_else(|error| store_error(CHECK, &error))?,
    ];
    if answers != [true, false, true, false, true] {
        return fail(
            CHECK,
            format!(
                "a token offered, again, another, again before it is forgotten and again once it is answered {answers:?}, not [true, false, true, false, true]"
            ),
        );
    }
    let start = Arc::new(Barrier::new(racers));
    let handles: Vec<_> = (0..racers)
        .map(|_| {
            let (store, start) = (Arc::clone(&store), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                block_on(store.accept_once("v0=raced", at(5), at(60_000)))
            })
        })
        .collect();
    let mut taken = 0;
    for handle in handles {
        match handle.join() {
            Ok(Ok(true)) => taken += 1,
            Ok(Ok(false)) => {}
            Ok(Err(error)) => return store_error(CHECK, &error),
            Err(_) => return fail(CHECK, "a racer panicked"),
        }
    }
    if taken != 1 {
        return fail(
            CHECK,
            format!("{racers} racers offering one token at once: {taken} took it, not 1"),
        );
    }
    Ok(())
}
