//! The SQLite store's write-ahead log, copied back into the database file by a thread of
//! its own, so that no commit waits for it.
//!
//! SQLite checkpoints by default inside the commit that fills the log past 1,000 pages:
//! that one commit also copies the log into the file and syncs it, which is the slowest
//! one in a thousand (the tail a caller measures). Here the store's own connection never
//! checkpoints; this thread does, on a connection of its own, twice a second
//! (`PASSIVE`: it never blocks a writer or a reader, and skips what a reader still needs).

use std::format;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use crate::approvals::StoreError;

/// How often the log is copied back: each time costs a few syncs and the pages written
/// since; the log holds about this long's commits.
const EVERY: Duration = Duration::from_millis(500);

/// The thread, stopped and joined when dropped.
pub(crate) struct Checkpointer {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing on `connection`, a connection of its own to the store's
    /// file.
    pub(crate) fn spawn(connection: Connection, name: &str) -> Result<Self, StoreError> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("{name}-checkpoint"))
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(EVERY) {
                    // A failed checkpoint loses nothing (the log keeps every commit); the
                    // next one tries again.
                    let _ = connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
            })
            .map_err(|error| {
                StoreError::Backend(format!(
                    "cannot start the store's checkpoint thread: {error}"
                ))
            })?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
