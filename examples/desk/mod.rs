//! The support desk the examples share: its four tools (`tools.rs`), registered.
#![allow(dead_code, reason = "each example uses a part")]

#[macro_use]
mod tools;

use cairnloop::Registry;
pub use tools::*;

pub static DESK: Registry<Desk> = Registry::new(&[
    by_name!(LookupOrder),
    by_name!(InternalNote),
    by_name!(RefundOrder),
    by_name!(DeleteCustomer),
]);
