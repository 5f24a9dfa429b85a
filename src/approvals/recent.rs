use alloc::boxed::Box;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};

use crate::declare::{Actor, IdempotencyKey};

/// The keys of calls that awaited approval lately, by the call's exact text: a model that
/// asks again while a person decides sends the same text, and its key (canonical JSON
/// and SHA-256 of the decoded input) is then looked up instead of computed. The key is a
/// pure function of what an entry holds (tool, argument text, actor, account, dedupe
/// token), so an entry is never stale; the map is cleared when it is full, so it stays
/// small.
pub(crate) struct RecentKeys {
    // Keyed by the call's hash, hashed again by a fixed fold (a `u64` needs no seed).
    entries: Mutex<HashMap<u64, Entry, foldhash::fast::FixedState>>,
    // Seeded per map. Not SipHash: every call hashes its whole argument text here, and
    // a crafted collision costs only a recomputed key (entries are compared whole).
    hasher: foldhash::fast::RandomState,
}

/// Most entries kept before the map starts again.
const CAPACITY: usize = 1024;

/// Longest argument text kept: a repeat of a longer call computes its key.
const MAX_TEXT: usize = 4096;

struct Entry {
    tool: &'static str,
    arguments: Box<str>,
    actor: Box<str>,
    account: Option<Box<str>>,
    dedupe_token: Option<Box<str>>,
    key: IdempotencyKey,
}

/// The parts of a call its key depends on.
#[derive(Clone, Copy)]
pub(crate) struct CallParts<'a> {
    pub(crate) tool: &'static str,
    pub(crate) arguments: &'a str,
    pub(crate) actor: &'a Actor<'a>,
    pub(crate) dedupe_token: Option<&'a str>,
}

impl Entry {
    fn is(&self, call: &CallParts<'_>) -> bool {
        *self.tool == *call.tool
            && *self.arguments == *call.arguments
            && *self.actor == *call.actor.id()
            && self.account.as_deref() == call.actor.account()
            && self.dedupe_token.as_deref() == call.dedupe_token
    }
}

impl RecentKeys {
    pub(crate) fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::default()),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    fn hash(&self, call: &CallParts<'_>) -> u64 {
        let mut hasher = self.hasher.build_hasher();
        // `str`'s hash ends each string with a marker, so parts cannot run together.
        call.tool.hash(&mut hasher);
        call.arguments.hash(&mut hasher);
        call.actor.id().hash(&mut hasher);
        call.actor.account().hash(&mut hasher);
        call.dedupe_token.hash(&mut hasher);
        hasher.finish()
    }

    /// The key of this exact call, if it was seen lately.
    pub(crate) fn get(&self, call: &CallParts<'_>) -> Option<IdempotencyKey> {
        if call.arguments.len() > MAX_TEXT {
            return None;
        }
        let hash = self.hash(call);
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(&hash)
            .filter(|entry| entry.is(call))
            .map(|entry| entry.key)
    }

    /// Keeps the key of this call.
    pub(crate) fn insert(&self, call: &CallParts<'_>, key: IdempotencyKey) {
        if call.arguments.len() > MAX_TEXT {
            return;
        }
        let hash = self.hash(call);
        let entry = Entry {
            tool: call.tool,
            arguments: call.arguments.into(),
            actor: call.actor.id().into(),
            account: call.actor.account().map(Into::into),
            dedupe_token: call.dedupe_token.map(Into::into),
            key,
        };
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        // Two calls whose hashes collide: the newer one is kept; the other computes its
        // key again when it comes back.
        entries.insert(hash, entry);
    }
}

impl core::fmt::Debug for RecentKeys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecentKeys").finish_non_exhaustive()
    }
}
