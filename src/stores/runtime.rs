//! The small tokio runtime a network store owns: it drives the store's connections, so a
//! host awaits the store's futures on any executor (or blocks on them) and is never asked
//! to run tokio itself.

use std::boxed::Box;
use std::format;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;
use std::vec::Vec;

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use crate::approvals::StoreError;

/// How long dropping a store waits for the moves handed over without waiting.
const DETACHED_GRACE: Duration = Duration::from_secs(10);

/// A multi-threaded runtime and the detached moves still running on it.
pub(crate) struct StoreRuntime {
    runtime: Option<Runtime>,
    detached: Mutex<Vec<JoinHandle<()>>>,
}

impl StoreRuntime {
    /// A runtime of `threads` worker threads named `name`.
    pub(crate) fn start(name: &str, threads: usize) -> Result<Self, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name(name)
            .enable_all()
            .build()
            .map_err(|error| {
                StoreError::Backend(format!("cannot start the store's runtime: {error}"))
            })?;
        Ok(Self {
            runtime: Some(runtime),
            detached: Mutex::new(Vec::new()),
        })
    }

    fn runtime(&self) -> &Runtime {
        // Taken only in `drop`.
        self.runtime.as_ref().unwrap_or_else(|| unreachable!())
    }

    /// Runs `future` to its end and waits for it, from a thread of its own: the caller may
    /// itself be inside an async runtime, where blocking on another one is refused.
    pub(crate) fn block_on<T: Send>(
        &self,
        future: impl Future<Output = T> + Send,
    ) -> Result<T, StoreError> {
        let runtime = self.runtime();
        std::thread::scope(|scope| {
            scope
                .spawn(|| runtime.block_on(future))
                .join()
                .map_err(|_| StoreError::Backend("the store's connect step panicked".into()))
        })
    }

    /// Starts `future` now; the returned future resolves to its output. Dropping the
    /// returned future does not stop the work: a move once started ends on its own.
    pub(crate) fn spawn<T, F>(
        &self,
        future: F,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + use<T, F>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let handle = self.runtime().spawn(future);
        async move {
            handle.await.unwrap_or_else(|error| {
                Err(StoreError::Backend(format!("a store task failed: {error}")))
            })
        }
    }

    /// Starts `future`, which runs as long as the runtime does (it ends with the store).
    pub(crate) fn background(&self, future: impl Future<Output = ()> + Send + 'static) {
        drop(self.runtime().spawn(future));
    }

    /// Starts `future` without a reply; dropping the store waits for it (a while).
    pub(crate) fn detach(&self, future: impl Future<Output = ()> + Send + 'static) {
        let handle = self.runtime().spawn(future);
        if let Ok(mut detached) = self.detached.lock() {
            detached.retain(|handle| !handle.is_finished());
            detached.push(handle);
        }
    }
}

impl StoreRuntime {
    /// Waits (a while) for the moves handed over without waiting, from a thread of its
    /// own: the caller may be inside an async runtime.
    pub(crate) fn settle(&self) {
        let pending = self
            .detached
            .lock()
            .map(|mut detached| std::mem::take(&mut *detached))
            .unwrap_or_default();
        if pending.is_empty() {
            return;
        }
        let _ = self.block_on(async {
            let _ = tokio::time::timeout(DETACHED_GRACE, async {
                for handle in pending {
                    let _ = handle.await;
                }
            })
            .await;
        });
    }
}

impl Drop for StoreRuntime {
    fn drop(&mut self) {
        self.settle();
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        // On a thread of its own: a store may be dropped inside an async runtime, where
        // dropping another runtime is refused.
        let finish: Box<dyn FnOnce() + Send> = Box::new(move || drop(runtime));
        let _ = std::thread::spawn(finish).join();
    }
}
