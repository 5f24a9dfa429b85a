//! Tools declared from data (feature `declared`): a configuration file, an upstream MCP
//! server's listing, rather than Rust types. A [`DeclaredTool`] carries its declaration
//! (its spec and scopes built with the checked constructors, its input's JSON Schema, a
//! preview [`Template`]) and a [`Forward`] that runs it; [`ToolEntry::declared`]
//! registers it, and from there it goes through the same gates, binding, lanes and audit
//! as a Rust tool. It builds on [`declare`](crate::declare) and [`json`](crate::json).
//!
//! [`ToolEntry::declared`]: crate::declare::ToolEntry::declared

mod template;
mod tool;

pub use template::{Template, TemplateError};
pub use tool::{
    DeclaredTool, Forward, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, SchemaError, check_input_schema,
};
