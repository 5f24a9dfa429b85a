//! Waiting for a store's future on a thread of one's own: the stores' futures need no
//! particular runtime (a notifier's thread writing its report, the conformance kit).

use alloc::sync::Arc;
use core::future::Future;
use core::task::{Context, Poll, Waker};
use std::task::Wake;

/// Blocks this thread on `future`.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = core::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}
