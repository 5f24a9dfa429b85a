use alloc::vec::Vec;

use alloc::sync::Arc;

use crate::approvals::{ApprovalLane, AuditRecord, StoreError, TransitionEvent};
use crate::declare::IdempotencyKey;
use crate::gate::LaneState;

/// Where approval lanes and their audit trail live: a host's database, or
/// [`MemoryStore`]. Each method is one atomic step.
///
/// The lifecycle's guarantees rest on two of them: [`insert`](ApprovalStore::insert)
/// keeps one lane per idempotency key, and [`transition`](ApprovalStore::transition) is a
/// compare-and-set on the lane's version, so of two racing moves exactly one wins.
///
/// ```
/// use cairnloop::approvals::{ApprovalStore, MemoryStore};
///
/// fn backlog(store: &impl ApprovalStore) -> usize {
///     store.events().map(|events| events.len()).unwrap_or(0)
/// }
/// assert_eq!(backlog(&MemoryStore::new()), 0);
/// ```
pub trait ApprovalStore {
    /// Stores `lane` and appends `event`, unless a lane with the same key exists: then
    /// returns that lane and stores nothing. The flag says whether `lane` was inserted.
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(ApprovalLane, bool), StoreError>;

    /// The lane with this key.
    fn get(&self, key: &IdempotencyKey) -> Result<Option<ApprovalLane>, StoreError>;

    /// Replaces the stored lane with `lane` and appends `event`, only if the stored lane's
    /// version is still `expected_version`; else [`StoreError::Conflict`] and nothing
    /// changes.
    fn transition(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(), StoreError>;

    /// Every event, in the order appended.
    fn events(&self) -> Result<Vec<AuditRecord>, StoreError>;

    /// Appends a record that moves no lane (a decision of the gates) to the event log.
    ///
    /// # Errors
    ///
    /// The backend's error; the record is then not in the log.
    fn append(&self, record: AuditRecord) -> Result<(), StoreError>;

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
    ) -> Result<Vec<ApprovalLane>, StoreError>;
}

impl<S: ApprovalStore + ?Sized> ApprovalStore for Arc<S> {
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(ApprovalLane, bool), StoreError> {
        (**self).insert(lane, event)
    }

    fn get(&self, key: &IdempotencyKey) -> Result<Option<ApprovalLane>, StoreError> {
        (**self).get(key)
    }

    fn transition(
        &self,
        expected_version: u64,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(), StoreError> {
        (**self).transition(expected_version, lane, event)
    }

    fn events(&self) -> Result<Vec<AuditRecord>, StoreError> {
        (**self).events()
    }

    fn append(&self, record: AuditRecord) -> Result<(), StoreError> {
        (**self).append(record)
    }

    fn list(
        &self,
        state: LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> Result<Vec<ApprovalLane>, StoreError> {
        (**self).list(state, after, limit)
    }
}

/// An in-memory [`ApprovalStore`], safe to share between threads, for tests and hosts
/// that keep nothing across restarts.
///
/// It is bounded: it holds at most `capacity` lanes, and a new proposal past that is
/// refused with [`StoreError::Full`]. Nothing is evicted on its own; terminal lanes and
/// their events leave only through [`MemoryStore::compact`], an explicit host call.
///
/// ```
/// use cairnloop::approvals::{ApprovalStore, MemoryStore};
///
/// let store = MemoryStore::new();
/// assert!(store.events().unwrap().is_empty());
/// assert_eq!(store.capacity(), MemoryStore::DEFAULT_CAPACITY);
/// ```
#[cfg(feature = "std")]
#[derive(Debug)]
pub struct MemoryStore {
    inner: std::sync::Mutex<Memory>,
    capacity: usize,
}

#[cfg(feature = "std")]
#[derive(Debug, Default)]
struct Memory {
    lanes: std::collections::BTreeMap<IdempotencyKey, ApprovalLane>,
    events: Vec<AuditRecord>,
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
            inner: std::sync::Mutex::new(Memory::default()),
            capacity,
        }
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
        let Memory { lanes, events } = &mut *memory;
        events.retain(|record| match record {
            AuditRecord::Transition(event) => lanes.contains_key(&event.key),
            AuditRecord::Decision(event) => event
                .idempotency_key
                .is_none_or(|key| lanes.contains_key(&key)),
        });
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
impl ApprovalStore for MemoryStore {
    fn insert(
        &self,
        lane: ApprovalLane,
        event: TransitionEvent,
    ) -> Result<(ApprovalLane, bool), StoreError> {
        let mut memory = self.lock()?;
        if let Some(existing) = memory.lanes.get(&lane.key()) {
            return Ok((existing.clone(), false));
        }
        if memory.lanes.len() >= self.capacity {
            return Err(StoreError::Full {
                capacity: self.capacity,
            });
        }
        memory.lanes.insert(lane.key(), lane.clone());
        memory.events.push(AuditRecord::Transition(event));
        Ok((lane, true))
    }

    fn get(&self, key: &IdempotencyKey) -> Result<Option<ApprovalLane>, StoreError> {
        Ok(self.lock()?.lanes.get(key).cloned())
    }

    fn transition(
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
        memory.events.push(AuditRecord::Transition(event));
        Ok(())
    }

    fn events(&self) -> Result<Vec<AuditRecord>, StoreError> {
        Ok(self.lock()?.events.clone())
    }

    fn append(&self, record: AuditRecord) -> Result<(), StoreError> {
        self.lock()?.events.push(record);
        Ok(())
    }

    fn list(
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
}
