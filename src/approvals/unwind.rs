//! Running a tool's future so that a panic inside it becomes a value: the approval service
//! records it as a failed run and the process keeps serving.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use core::any::Any;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A future that resolves to `Err(message)` when the inner future panics while polled.
pub(crate) struct CatchPanic<F>(Pin<Box<F>>);

impl<F: Future> CatchPanic<F> {
    pub(crate) fn new(future: F) -> Self {
        Self(Box::pin(future))
    }
}

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The inner future is dropped after a panic and never polled again, so no broken
        // invariant of it can be observed: asserting unwind safety is sound here.
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic_message(panic.as_ref()))),
        }
    }
}

/// The text a panic carried (`panic!("...")` gives a `&str` or a `String`).
fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        return (*text).to_string();
    }
    if let Some(text) = panic.downcast_ref::<String>() {
        return text.clone();
    }
    "a panic without a message".to_string()
}
