//! Sign-in sessions, their single-use form tokens, and the sign-in rate limit.

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The name of the session cookie.
pub(crate) const COOKIE: &str = "cairnloop_console";

/// How many unused form tokens a session keeps (one per form rendered); the oldest go
/// first.
const TOKENS_KEPT: usize = 64;

/// Most sessions of each kind kept at once: past it, the oldest of that kind are dropped
/// (their holders sign in again), so that a flood of sign-in pages cannot grow memory
/// without bound. Anonymous sessions (a sign-in form's) and signed-in ones are kept
/// apart: nothing an anonymous client does can end an operator's session.
const MAX_SESSIONS: usize = 10_000;

/// `at + span`, or a time far enough ahead when a host configured a span past what an
/// `Instant` can hold: a long setting must not become a panic.
fn after(at: Instant, span: Duration) -> Instant {
    at.checked_add(span)
        .or_else(|| at.checked_add(Duration::from_secs(100 * 365 * 24 * 3_600)))
        .unwrap_or(at)
}

/// 32 random bytes as hex: a session id or a form token.
pub(crate) fn random_token() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

struct Session {
    /// Who signed in; `None` before sign-in (the sign-in form's own session).
    operator: Option<String>,
    expires: Instant,
    /// Form tokens handed out and not yet used.
    tokens: VecDeque<String>,
}

/// Every live session, by id.
#[derive(Default)]
pub(crate) struct Sessions {
    map: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    /// Sessions of signed-in operators.
    signed_in: HashMap<String, Session>,
    /// Sessions before sign-in, and their ids oldest first (all last as long, so this
    /// is also the order they expire in; an id already gone is skipped).
    anonymous: HashMap<String, Session>,
    anonymous_order: VecDeque<String>,
}

impl Kept {
    fn get(&self, id: &str) -> Option<&Session> {
        self.signed_in.get(id).or_else(|| self.anonymous.get(id))
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Session> {
        match self.signed_in.get_mut(id) {
            Some(session) => Some(session),
            None => self.anonymous.get_mut(id),
        }
    }

    fn remove(&mut self, id: &str) {
        if self.signed_in.remove(id).is_none() {
            self.anonymous.remove(id);
        }
    }

    /// Room for one more signed-in session: the expired go, then the one that would
    /// expire first.
    fn make_room_signed_in(&mut self, now: Instant) {
        if self.signed_in.len() < MAX_SESSIONS {
            return;
        }
        self.signed_in.retain(|_, session| session.expires > now);
        if self.signed_in.len() >= MAX_SESSIONS {
            let oldest = self
                .signed_in
                .iter()
                .min_by_key(|(_, session)| session.expires)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                self.signed_in.remove(&oldest);
            }
        }
    }

    /// Room for one more anonymous session: the oldest anonymous one goes.
    fn make_room_anonymous(&mut self) {
        // Ids of sessions already gone are dropped from the order as they come up.
        while self.anonymous.len() >= MAX_SESSIONS || self.anonymous_order.len() >= 2 * MAX_SESSIONS
        {
            let Some(oldest) = self.anonymous_order.pop_front() else {
                break;
            };
            self.anonymous.remove(&oldest);
        }
    }
}

/// What a session id stands for now.
pub(crate) enum Lookup {
    /// Signed in as this operator.
    SignedIn(String),
    /// A session before sign-in.
    Anonymous,
    /// Unknown, or past its time (and now forgotten).
    Expired,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, Kept> {
        // A panic elsewhere with the lock held leaves sessions that are still valid.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new session (anonymous when `operator` is `None`), lasting `ttl`; its id.
    pub(crate) fn open(&self, operator: Option<&str>, ttl: Duration) -> Option<String> {
        let id = random_token()?;
        let now = Instant::now();
        let session = Session {
            operator: operator.map(str::to_string),
            expires: after(now, ttl),
            tokens: VecDeque::new(),
        };
        let mut kept = self.lock();
        if operator.is_some() {
            kept.make_room_signed_in(now);
            kept.signed_in.insert(id.clone(), session);
        } else {
            kept.make_room_anonymous();
            kept.anonymous.insert(id.clone(), session);
            kept.anonymous_order.push_back(id.clone());
        }
        Some(id)
    }

    pub(crate) fn lookup(&self, id: &str) -> Lookup {
        let mut kept = self.lock();
        match kept.get(id) {
            Some(session) if session.expires > Instant::now() => match &session.operator {
                Some(operator) => Lookup::SignedIn(operator.clone()),
                None => Lookup::Anonymous,
            },
            Some(_) => {
                kept.remove(id);
                Lookup::Expired
            }
            None => Lookup::Expired,
        }
    }

    /// Ends a session.
    pub(crate) fn close(&self, id: &str) {
        self.lock().remove(id);
    }

    /// A fresh single-use token for one form of this session.
    pub(crate) fn issue_token(&self, id: &str) -> Option<String> {
        let token = random_token()?;
        let mut kept = self.lock();
        let session = kept.get_mut(id)?;
        if session.tokens.len() >= TOKENS_KEPT {
            session.tokens.pop_front();
        }
        session.tokens.push_back(token.clone());
        Some(token)
    }

    /// Uses up `token`: true once for a token this live session handed out, false for a
    /// missing, forged, foreign or replayed one.
    pub(crate) fn use_token(&self, id: &str, token: &str) -> bool {
        let mut kept = self.lock();
        let Some(session) = kept.get_mut(id) else {
            return false;
        };
        if session.expires <= Instant::now() || token.is_empty() {
            return false;
        }
        match session.tokens.iter().position(|one| one == token) {
            Some(at) => {
                session.tokens.remove(at);
                true
            }
            None => false,
        }
    }
}

/// Failed sign-ins counted per key (an operator name, a client address) in a window.
#[derive(Default)]
pub(crate) struct LoginLimiter {
    failures: Mutex<HashMap<String, (Instant, u32)>>,
}

impl LoginLimiter {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, (Instant, u32)>> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When any of `keys` has used up its attempts in the window: how long until it
    /// may try again.
    pub(crate) fn blocked(
        &self,
        keys: &[String],
        attempts: u32,
        window: Duration,
    ) -> Option<Duration> {
        let now = Instant::now();
        let map = self.lock();
        keys.iter()
            .filter_map(|key| map.get(key))
            .filter(|(start, count)| *count >= attempts && now < after(*start, window))
            .map(|(start, _)| after(*start, window) - now)
            .max()
    }

    pub(crate) fn failed(&self, keys: &[String], window: Duration) {
        let now = Instant::now();
        let mut map = self.lock();
        if map.len() > MAX_SESSIONS {
            map.retain(|_, (start, _)| now < after(*start, window));
        }
        for key in keys {
            let entry = map.entry(key.clone()).or_insert((now, 0));
            if now >= after(entry.0, window) {
                *entry = (now, 0);
            }
            entry.1 += 1;
        }
    }

    pub(crate) fn succeeded(&self, keys: &[String]) {
        let mut map = self.lock();
        for key in keys {
            map.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_token_works_once_and_only_in_its_session() {
        let sessions = Sessions::default();
        let one = sessions.open(Some("bea"), Duration::from_secs(60)).unwrap();
        let two = sessions.open(Some("cy"), Duration::from_secs(60)).unwrap();
        let token = sessions.issue_token(&one).unwrap();
        assert!(!sessions.use_token(&two, &token), "another session's token");
        assert!(!sessions.use_token(&one, "forged"));
        assert!(!sessions.use_token(&one, ""));
        assert!(sessions.use_token(&one, &token));
        assert!(!sessions.use_token(&one, &token), "replayed");
    }

    #[test]
    fn a_flood_of_anonymous_sessions_ends_no_signed_in_one() {
        let sessions = Sessions::default();
        let operator = sessions.open(Some("bea"), Duration::from_secs(60)).unwrap();
        let first = sessions.open(None, Duration::from_secs(60)).unwrap();
        for _ in 0..MAX_SESSIONS + 10 {
            sessions.open(None, Duration::from_secs(60)).unwrap();
        }
        assert!(matches!(sessions.lookup(&operator), Lookup::SignedIn(_)));
        // The flood pushed out the oldest anonymous session, and stays bounded.
        assert!(matches!(sessions.lookup(&first), Lookup::Expired));
        let kept = sessions.lock();
        assert_eq!(kept.anonymous.len(), MAX_SESSIONS);
        assert!(kept.anonymous_order.len() <= 2 * MAX_SESSIONS);
    }

    #[test]
    fn signed_in_sessions_past_the_bound_drop_the_one_that_ends_first() {
        let sessions = Sessions::default();
        let first = sessions
            .open(Some("early"), Duration::from_secs(30))
            .unwrap();
        let second = sessions.open(Some("bea"), Duration::from_secs(60)).unwrap();
        // Below the bound nothing is dropped.
        assert!(matches!(sessions.lookup(&first), Lookup::SignedIn(_)));
        assert!(matches!(sessions.lookup(&second), Lookup::SignedIn(_)));
        for _ in 2..MAX_SESSIONS {
            sessions.open(Some("bea"), Duration::from_secs(60)).unwrap();
        }
        assert_eq!(sessions.lock().signed_in.len(), MAX_SESSIONS);
        let newest = sessions.open(Some("cy"), Duration::from_secs(60)).unwrap();
        assert_eq!(sessions.lock().signed_in.len(), MAX_SESSIONS);
        assert!(
            matches!(sessions.lookup(&first), Lookup::Expired),
            "the soonest to end"
        );
        assert!(matches!(sessions.lookup(&second), Lookup::SignedIn(_)));
        assert!(matches!(sessions.lookup(&newest), Lookup::SignedIn(_)));
    }

    #[test]
    fn a_closed_session_is_over_and_closed_ones_do_not_pile_up() {
        let sessions = Sessions::default();
        let operator = sessions.open(Some("bea"), Duration::from_secs(60)).unwrap();
        sessions.close(&operator);
        assert!(matches!(sessions.lookup(&operator), Lookup::Expired));
        // Sign-in forms opened and closed, over and over: what is kept stays bounded.
        for _ in 0..2 * MAX_SESSIONS + 10 {
            let form = sessions.open(None, Duration::from_secs(60)).unwrap();
            sessions.close(&form);
        }
        let kept = sessions.lock();
        assert!(kept.anonymous.is_empty());
        assert!(kept.anonymous_order.len() <= 2 * MAX_SESSIONS);
    }

    #[test]
    fn an_expired_session_is_forgotten() {
        let sessions = Sessions::default();
        let id = sessions.open(Some("bea"), Duration::ZERO).unwrap();
        assert!(matches!(sessions.lookup(&id), Lookup::Expired));
        assert!(matches!(sessions.lookup("nonsense"), Lookup::Expired));
    }

    #[test]
    fn a_span_too_long_for_the_clock_is_no_panic() {
        let sessions = Sessions::default();
        let id = sessions.open(Some("bea"), Duration::MAX).unwrap();
        assert!(matches!(sessions.lookup(&id), Lookup::SignedIn(_)));
        let limiter = LoginLimiter::default();
        let keys = ["id:bea".to_string()];
        limiter.failed(&keys, Duration::MAX);
        assert!(limiter.blocked(&keys, 1, Duration::MAX).is_some());
    }

    #[test]
    fn sign_ins_are_limited_per_key_and_reset_on_success() {
        let limiter = LoginLimiter::default();
        let keys = ["id:bea".to_string()];
        for _ in 0..3 {
            assert!(limiter.blocked(&keys, 3, Duration::from_secs(60)).is_none());
            limiter.failed(&keys, Duration::from_secs(60));
        }
        assert!(limiter.blocked(&keys, 3, Duration::from_secs(60)).is_some());
        limiter.succeeded(&keys);
        assert!(limiter.blocked(&keys, 3, Duration::from_secs(60)).is_none());
    }
}
