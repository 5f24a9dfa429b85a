//! Nothing here: the crate exists for its benchmark, `governance.rs`.
