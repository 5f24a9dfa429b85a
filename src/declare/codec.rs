//! The type-erased tool a registry entry carries so that the tool can be called by name
//! with JSON arguments. The JSON layer makes it (`ToolEntry::json`); the entry only holds
//! a reference to it, so the core knows nothing of how JSON is decoded.

// Without `std` there is no governor to read these.
#![cfg_attr(not(feature = "std"), allow(dead_code))]

use alloc::boxed::Box;
use alloc::string::String;
use core::any::Any;
use core::fmt;
use core::future::Future;
use core::pin::Pin;

use serde_json::Value;

use crate::declare::{Actor, IdempotencyKey, InputErrors, InputLimits, RiskTier};

/// A decoded input whose type only the tool's own functions know.
pub(crate) type ErasedInput = Box<dyn Any + Send>;

/// The future of a call run by name: the tool's output as JSON, or why it failed.
pub type RunFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, RunError>> + Send + 'a>>;

/// The future of a call whose output is an MCP `CallToolResult` as the JSON text a server
/// wrote: handed to an MCP client without being read into a tree and written again.
#[cfg(feature = "rmcp")]
pub type CallResultFuture<'a> = Pin<
    Box<
        dyn Future<Output = Result<alloc::boxed::Box<serde_json::value::RawValue>, RunError>>
            + Send
            + 'a,
    >,
>;

/// The tier one call asks for, and why when its rule says (shown to whoever approves it).
pub(crate) type AskedTier = (RiskTier, Option<String>);

/// The run key a call by name is given: the approval lane's key, or one computed only
/// if the tool asks for it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RunKey<'a> {
    /// The key of the approved lane being executed.
    Known(IdempotencyKey),
    /// A call that runs at once: the key is derived if and when the tool asks.
    OnDemand { dedupe_token: Option<&'a str> },
}

/// A tool called by name with JSON arguments, its type erased: what an entry holds beside
/// its spec, scopes and policy. A Rust tool's is a zero-sized shim per type, made in a
/// `const` (`ToolEntry::json`); a value with data of its own (a declaration read at run
/// time) is called the same way, through the same gates.
pub(crate) trait Codec<C: ?Sized>: Sync {
    /// Argument text → the tool's input, strictly (every field error), then its own
    /// validation.
    fn decode(&self, arguments: &str, limits: &InputLimits) -> Result<ErasedInput, InputErrors>;
    /// The same verdict as `decode`, for a call that will be blocked anyway: the input is
    /// decoded and validated, then dropped (never type-erased).
    fn check(&self, arguments: &str, limits: &InputLimits) -> Result<(), InputErrors>;
    /// The tool's own preview of an input.
    fn preview(&self, input: &ErasedInput, out: &mut dyn fmt::Write) -> Option<fmt::Result>;
    /// The tier the call asks for, from its decoded input and who makes it, and why, when
    /// the rule says (`Ok(None)`: no rule); `Err` when the rule failed.
    fn tier(&self, input: &ErasedInput, actor: &Actor<'_>) -> Result<Option<AskedTier>, ()> {
        let _ = (input, actor);
        Ok(None)
    }
    /// The input as the tool receives it, as RFC 8785 canonical JSON: the text its
    /// snapshot, key and fallback preview are made from.
    fn canonical(&self, input: &ErasedInput) -> Result<String, String> {
        self.canonical_with_preview(input, None)
            .map(|(text, _)| text)
    }
    /// `canonical`, and, given the fallback preview's `head`, the whole fallback of an
    /// input it can write as it goes (a flat object's fields, in the order they are
    /// written): `None` when the preview is to be read from the text. One method, not
    /// two, so that each tool type compiles one.
    fn canonical_with_preview(
        &self,
        input: &ErasedInput,
        head: Option<String>,
    ) -> Result<(String, Option<String>), String>;
    /// Runs the tool through the one function that calls it.
    fn run<'a>(
        &'a self,
        input: ErasedInput,
        actor: &'a Actor<'a>,
        context: &'a C,
        key: RunKey<'a>,
    ) -> RunFuture<'a>;
    /// Whether the run's output is an MCP `CallToolResult` (a tool forwarded to an MCP
    /// server): its content blocks reach an MCP client as they are, not as JSON text.
    #[cfg(feature = "rmcp")]
    fn output_is_call_result(&self) -> bool {
        false
    }
    /// `run`, its output the text of the `CallToolResult`, for a tool whose output is
    /// one; the input back, untouched, for any other.
    #[cfg(feature = "rmcp")]
    fn run_call_result<'a>(
        &'a self,
        input: ErasedInput,
        actor: &'a Actor<'a>,
        context: &'a C,
    ) -> Result<CallResultFuture<'a>, ErasedInput> {
        let _ = (actor, context);
        Err(input)
    }
    /// The input's JSON Schema, if the tool has one to list.
    #[cfg(feature = "schemars")]
    fn schema(&self) -> Option<Value> {
        None
    }
    /// The output's JSON Schema, if the tool has one to list.
    #[cfg(feature = "schemars")]
    fn output_schema(&self) -> Option<Value> {
        None
    }
}

/// Why a call run by name did not produce a JSON result.
///
/// ```
/// let error = cairnloop::declare::RunError::Failed("order is already refunded".into());
/// assert_eq!(error.to_string(), "tool failed: order is already refunded");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The tool returned its error, shown with `Display`.
    #[error("tool failed: {0}")]
    Failed(String),
    /// The tool's output could not be serialised as JSON.
    #[error("tool output is not JSON: {0}")]
    Output(String),
    /// The decoded input was not of the tool's input type (a bug in cairnloop).
    #[error("internal error: input of the wrong type")]
    InputType,
    /// Whether the call did its work cannot be known (the server it was forwarded to
    /// went away or stopped answering mid-call). Never retried: an approved call's lane
    /// becomes `outcome_unknown`, for a person to resolve.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(String),
}
