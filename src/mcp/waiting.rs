//! How many calls wait for a person in this process: held open for their clients, or
//! followed by a task's runner. Counted for a host's metrics.

use core::sync::atomic::{AtomicUsize, Ordering};

static HELD: AtomicUsize = AtomicUsize::new(0);
static RUNNERS: AtomicUsize = AtomicUsize::new(0);

/// The calls waiting for a person in this process, across every [`McpServer`]: each held
/// open for its client, or each task's runner waiting to run its call once approved.
///
/// [`McpServer`]: crate::mcp::McpServer
///
/// ```
/// let now = cairnloop::mcp::WaitingCalls::now();
/// println!("{} held, {} tasks", now.held_calls(), now.task_runners());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitingCalls {
    held: usize,
    runners: usize,
}

impl WaitingCalls {
    /// The counts as they are now.
    ///
    /// ```
    /// assert_eq!(cairnloop::mcp::WaitingCalls::now().held_calls(), 0);
    /// ```
    #[must_use]
    pub fn now() -> Self {
        Self {
            held: HELD.load(Ordering::Relaxed),
            runners: RUNNERS.load(Ordering::Relaxed),
        }
    }

    /// Calls held open until a person decides or the hold ends.
    ///
    /// ```
    /// let held = cairnloop::mcp::WaitingCalls::now().held_calls();
    /// ```
    #[must_use]
    pub const fn held_calls(self) -> usize {
        self.held
    }

    /// Tasks whose runner waits in this process for the call's decision.
    ///
    /// ```
    /// let runners = cairnloop::mcp::WaitingCalls::now().task_runners();
    /// ```
    #[must_use]
    pub const fn task_runners(self) -> usize {
        self.runners
    }
}

/// One waiting call, counted while it lives.
pub(crate) struct Counted(&'static AtomicUsize);

impl Counted {
    pub(crate) fn held() -> Self {
        HELD.fetch_add(1, Ordering::Relaxed);
        Self(&HELD)
    }

    pub(crate) fn runner() -> Self {
        RUNNERS.fetch_add(1, Ordering::Relaxed);
        Self(&RUNNERS)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
