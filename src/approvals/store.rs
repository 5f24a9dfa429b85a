use alloc::vec::Vec;

use alloc::sync::Arc;

use crate::approvals::{ApprovalLane, AuditRecord, StoreError, TransitionEvent};
use crate::declare::IdempotencyKey;

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
}

/// An in-memory [`ApprovalStore`], safe to share between threads.
///
/// ```
/// use cairnloop::approvals::{ApprovalStore, MemoryStore};
///
/// let store = MemoryStore::new();
/// assert!(store.events().unwrap().is_empty());
/// ```
#[cfg(feature = "std")]
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: std::sync::Mutex<Memory>,
}

#[cfg(feature = "std")]
#[derive(Debug, Default)]
struct Memory {
    lanes: std::collections::HashMap<IdempotencyKey, ApprovalLane>,
    events: Vec<AuditRecord>,
}

#[cfg(feature = "std")]
impl MemoryStore {
    /// An empty store.
    ///
    /// ```
    /// let store = cairnloop::approvals::MemoryStore::new();
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::default()
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
}
