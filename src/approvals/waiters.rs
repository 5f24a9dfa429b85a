//! Calls waiting for a person, woken by lane. A store's change signal says only that
//! something changed; a thousand waiters that each read their lane on every change would
//! make a thousand reads of one decision, and a thousand wake-ups of every other. Instead
//! one waiter at a time leads: it alone follows the store's signal, reads every
//! waited-for lane in one batch ([`ApprovalStore::get_many`]) and signals the waiters of
//! the lanes that moved. The others sleep on their own lane's signal. A leader that stops
//! waiting hands the lead on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::vec::Vec;

use crate::approvals::{ApprovalStore, StoreError, StoreWatch};
use crate::declare::IdempotencyKey;

/// The lanes being waited for in one process, each with the version its waiters last
/// saw and a signal of its own.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    lanes: Mutex<HashMap<IdempotencyKey, Waited>>,
    /// Set while one waiter reads for all.
    reading: AtomicBool,
    /// Set while a waiter follows the store's signal for all.
    leading: AtomicBool,
    /// The newest change generation a waiter woke for, and the newest one a finished
    /// read began after: one read covers every waiter woken by the same change.
    wanted: AtomicU64,
    covered: AtomicU64,
}

#[derive(Debug)]
struct Waited {
    version: u64,
    waiters: usize,
    moved: StoreWatch,
}

/// A waiter's place: its lane's own signal, given up when dropped.
pub(crate) struct Waiting {
    waiters: Arc<Waiters>,
    key: IdempotencyKey,
    moved: StoreWatch,
}

impl Waiting {
    /// The signal that moves when this lane's version moves.
    pub(crate) fn moved(&self) -> &StoreWatch {
        &self.moved
    }

    /// The waiter read its lane at `version`, after it began to wait: a batch read that
    /// finds another version signals it.
    pub(crate) fn saw(&self, version: u64) {
        if let Some(waited) = self.waiters.lock().get_mut(&self.key) {
            waited.version = match waited.version {
                UNREAD => version,
                known => known.max(version),
            };
        }
    }
}

/// The version of a lane no waiter has read yet: any batch read signals it.
const UNREAD: u64 = u64::MAX;

/// The lead, held by one waiter; handed on when dropped.
pub(crate) struct Leading {
    waiters: Arc<Waiters>,
    key: IdempotencyKey,
}

impl Drop for Leading {
    fn drop(&mut self) {
        self.waiters.leading.store(false, Ordering::Release);
        // Another waiter wakes, reads its lane, and takes the lead.
        let lanes = self.waiters.lock();
        let next = lanes
            .iter()
            .find(|(key, _)| **key != self.key)
            .or_else(|| lanes.iter().next());
        if let Some((_, waited)) = next {
            waited.moved.notify();
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut lanes = self.waiters.lock();
        if let Some(waited) = lanes.get_mut(&self.key) {
            waited.waiters -= 1;
            if waited.waiters == 0 {
                lanes.remove(&self.key);
            }
        }
    }
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IdempotencyKey, Waited>> {
        self.lanes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The lead, for a waiter on `key`, when nobody holds it.
    pub(crate) fn lead(self: &Arc<Self>, key: IdempotencyKey) -> Option<Leading> {
        (!self.leading.swap(true, Ordering::AcqRel)).then(|| Leading {
            waiters: Arc::clone(self),
            key,
        })
    }

    /// Waits on the lane `key`; the waiter reads it next, and says what it saw
    /// ([`Waiting::saw`]), so that no change between its read and its wait is missed.
    pub(crate) fn wait(self: &Arc<Self>, key: IdempotencyKey) -> Waiting {
        let mut lanes = self.lock();
        let waited = lanes.entry(key).or_insert_with(|| Waited {
            version: UNREAD,
            waiters: 0,
            moved: StoreWatch::new(),
        });
        waited.waiters += 1;
        Waiting {
            waiters: Arc::clone(self),
            key,
            moved: waited.moved.clone(),
        }
    }

    /// After the store's signal moved to `generation`: unless a read that began after it
    /// has finished, or another waiter is reading (it then reads again for this change),
    /// reads every waited-for lane at once and signals those whose version moved.
    pub(crate) async fn read_for_all<S: ApprovalStore + ?Sized>(
        &self,
        store: &S,
        generation: u64,
    ) -> Result<(), StoreError> {
        self.wanted.fetch_max(generation, Ordering::AcqRel);
        loop {
            if self.covered.load(Ordering::Acquire) >= generation
                || self.reading.swap(true, Ordering::AcqRel)
            {
                return Ok(());
            }
            loop {
                let target = self.wanted.load(Ordering::Acquire);
                if self.covered.load(Ordering::Acquire) >= target {
                    break;
                }
                if let Err(error) = self.read(store).await {
                    self.reading.store(false, Ordering::Release);
                    return Err(error);
                }
                self.covered.fetch_max(target, Ordering::AcqRel);
            }
            self.reading.store(false, Ordering::Release);
            // A change asked for after the last read and before letting go is read too.
            if self.covered.load(Ordering::Acquire) >= self.wanted.load(Ordering::Acquire) {
                return Ok(());
            }
        }
    }

    /// Reads every waited-for lane and signals the waiters of those that moved.
    async fn read<S: ApprovalStore + ?Sized>(&self, store: &S) -> Result<(), StoreError> {
        let keys: Vec<IdempotencyKey> = self.lock().keys().copied().collect();
        let read = store.versions_of(&keys).await?;
        let mut lanes = self.lock();
        for (key, version) in read {
            if let Some(waited) = lanes.get_mut(&key)
                && waited.version != version
            {
                waited.version = version;
                waited.moved.notify();
            }
        }
        Ok(())
    }
}
