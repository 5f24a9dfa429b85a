//! Which caller each MCP session belongs to: a session id is accepted only with a token
//! of the caller who opened it.

use std::prelude::rust_2024::*;

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

/// Most sessions remembered: past it, the oldest is forgotten, and its id is then
/// refused like an unknown one (its client opens a new session).
const MAX_SESSIONS: usize = 100_000;

/// Session ids and their owners (a token's subject and client).
#[derive(Default)]
pub(crate) struct SessionOwners {
    owners: Mutex<Owners>,
}

#[derive(Default)]
struct Owners {
    by_id: HashMap<String, String>,
    /// Ids oldest first; an id already ended is skipped when its turn comes.
    order: VecDeque<String>,
}

/// Whether a request may use the session it names.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// Opened by this caller.
    Owned,
    /// Opened by another caller.
    Foreign,
    /// Never opened here, ended, or forgotten.
    Unknown,
}

impl SessionOwners {
    fn lock(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `owner` may use session `id`.
    pub(crate) fn check(&self, id: &str, owner: &str) -> Ownership {
        match self.lock().by_id.get(id) {
            Some(known) if known == owner => Ownership::Owned,
            Some(_) => Ownership::Foreign,
            None => Ownership::Unknown,
        }
    }

    /// Session `id` was opened by `owner`.
    pub(crate) fn opened(&self, id: &str, owner: &str) {
        let mut owners = self.lock();
        while owners.by_id.len() >= MAX_SESSIONS || owners.order.len() >= 2 * MAX_SESSIONS {
            let Some(oldest) = owners.order.pop_front() else {
                break;
            };
            owners.by_id.remove(&oldest);
        }
        owners.by_id.insert(id.to_string(), owner.to_string());
        owners.order.push_back(id.to_string());
    }

    /// Session `id` ended.
    pub(crate) fn ended(&self, id: &str) {
        self.lock().by_id.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_its_openers_alone_and_ends_for_good() {
        let sessions = SessionOwners::default();
        sessions.opened("s1", "alice via app");
        assert_eq!(sessions.check("s1", "alice via app"), Ownership::Owned);
        assert_eq!(sessions.check("s1", "bob via app"), Ownership::Foreign);
        assert_eq!(sessions.check("s2", "alice via app"), Ownership::Unknown);
        sessions.ended("s1");
        assert_eq!(sessions.check("s1", "alice via app"), Ownership::Unknown);
    }
}
