//! Registering a tool for calls by name: its `Codec`, a zero-sized shim per tool type
//! around code compiled once for all tools, and the constructors that attach it to a
//! `ToolEntry`.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use core::fmt;
use core::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::declare::{
    Actor, AskedTier, Codec, ErasedInput, IdempotencyKey, InputErrors, InputLimits, Invocation,
    RunError, RunFuture, RunKey, Tool, ToolEntry,
};
use crate::gate::execute;
use crate::json::canonical_text;
use crate::json::canonical_writer::canonical_text_with_preview;
use crate::json::strict::decode_text;

impl<C: ?Sized + 'static> ToolEntry<C> {
    /// The entry for tool `T`, callable by name with JSON arguments through a
    /// [`Governor`](crate::Governor): its input is decoded strictly with serde, its output
    /// encoded as JSON. Checked like [`ToolEntry::of`]. The input is also serialised, once
    /// a call needs its canonical form (a proposal, or a tool asking for its run key).
    ///
    /// ```
    /// # use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// #[derive(serde::Deserialize, serde::Serialize)]
    /// struct Ping { count: u8 }
    /// struct PingTool;
    /// impl Tool for PingTool {
    ///     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers pong.", RiskTier::ReadOnly);
    ///     const SCOPES: &'static [Scope] = &[];
    ///     type Input = Ping;
    ///     type Output = String;
    ///     type Error = String;
    ///     type Context = ();
    ///     fn validate(_: &Ping) -> Result<(), InputErrors> { Ok(()) }
    ///     async fn run(call: Invocation<'_, Self>) -> Result<String, String> {
    ///         Ok("pong".repeat(call.input().count.into()))
    ///     }
    /// }
    /// static PING: ToolEntry<()> = ToolEntry::json::<PingTool>();
    /// assert!(PING.is_callable_by_name());
    /// ```
    #[must_use]
    pub const fn json<T>() -> Self
    where
        T: Tool<Context = C> + 'static,
        T::Input: DeserializeOwned + Serialize + Send + 'static,
        T::Output: Serialize,
        T::Error: fmt::Display,
        C: Sync,
    {
        Self::of::<T>().with_codec(Json::<T>::ERASED)
    }

    /// [`ToolEntry::json`], and also the JSON Schemas of the tool's input and output, for
    /// listing the tool over MCP.
    ///
    /// ```
    /// # use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    /// struct Ping { count: u8 }
    /// struct PingTool;
    /// impl Tool for PingTool {
    ///     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers pong.", RiskTier::ReadOnly);
    ///     const SCOPES: &'static [Scope] = &[];
    ///     type Input = Ping; type Output = String; type Error = String; type Context = ();
    ///     fn validate(_: &Ping) -> Result<(), InputErrors> { Ok(()) }
    ///     async fn run(_: Invocation<'_, Self>) -> Result<String, String> { Ok("pong".into()) }
    /// }
    /// static PING: ToolEntry<()> = ToolEntry::mcp::<PingTool>();
    /// assert_eq!(PING.input_schema().unwrap()["properties"]["count"]["type"], "integer");
    /// ```
    #[cfg(feature = "schemars")]
    #[must_use]
    pub const fn mcp<T>() -> Self
    where
        T: Tool<Context = C> + 'static,
        T::Input: DeserializeOwned + Serialize + schemars::JsonSchema + Send + 'static,
        T::Output: Serialize + schemars::JsonSchema,
        T::Error: fmt::Display,
        C: Sync,
    {
        Self::of::<T>().with_codec(Json::<T, Listed>::ERASED)
    }

    /// Whether the tool can be called by name (it was registered with
    /// [`ToolEntry::json`] or [`ToolEntry::mcp`]).
    ///
    /// [`ToolEntry::mcp`]: https://docs.rs/cairnloop/latest/cairnloop/declare/struct.ToolEntry.html#method.mcp
    ///
    /// ```
    /// # use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// # struct Ping;
    /// # impl Tool for Ping {
    /// #     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers pong.", RiskTier::ReadOnly);
    /// #     const SCOPES: &'static [Scope] = &[];
    /// #     type Input = (); type Output = (); type Error = (); type Context = ();
    /// #     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// # }
    /// assert!(!ToolEntry::<()>::of::<Ping>().is_callable_by_name());
    /// ```
    #[must_use]
    pub const fn is_callable_by_name(&self) -> bool {
        self.codec().is_some()
    }

    /// The JSON Schema of the tool's input (every object closed, `required` explicit), or
    /// `None` when it was not registered with [`ToolEntry::mcp`].
    ///
    /// ```
    /// # use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// # struct Ping;
    /// # impl Tool for Ping {
    /// #     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers pong.", RiskTier::ReadOnly);
    /// #     const SCOPES: &'static [Scope] = &[];
    /// #     type Input = (); type Output = (); type Error = (); type Context = ();
    /// #     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// # }
    /// assert!(ToolEntry::<()>::of::<Ping>().input_schema().is_none());
    /// ```
    #[cfg(feature = "schemars")]
    #[must_use]
    pub fn input_schema(&self) -> Option<Value> {
        self.codec().and_then(|codec| codec.schema())
    }

    /// The JSON Schema of the tool's output, or `None` when it was not registered with
    /// [`ToolEntry::mcp`].
    ///
    /// ```
    /// # use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// # #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    /// # struct Ping { count: u8 }
    /// # struct PingTool;
    /// # impl Tool for PingTool {
    /// #     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers pong.", RiskTier::ReadOnly);
    /// #     const SCOPES: &'static [Scope] = &[];
    /// #     type Input = Ping; type Output = u32; type Error = String; type Context = ();
    /// #     fn validate(_: &Ping) -> Result<(), InputErrors> { Ok(()) }
    /// #     async fn run(_: Invocation<'_, Self>) -> Result<u32, String> { Ok(1) }
    /// # }
    /// static PING: ToolEntry<()> = ToolEntry::mcp::<PingTool>();
    /// assert_eq!(PING.output_schema().unwrap()["type"], "integer");
    /// ```
    #[cfg(feature = "schemars")]
    #[must_use]
    pub fn output_schema(&self) -> Option<Value> {
        self.codec().and_then(|codec| codec.output_schema())
    }
}

/// The codec of a tool registered with [`ToolEntry::json`] (`L` = [`Unlisted`]) or
/// [`ToolEntry::mcp`] (`L` = [`Listed`]): zero-sized, one per type. Its code is kept
/// small, as each tool of a host compiles its own: no closures (each would be compiled
/// again per type), and helpers generic only over what they need.
struct Json<T, L = Unlisted>(PhantomData<fn() -> (T, L)>);

impl<T: 'static, L: 'static> Json<T, L> {
    const ERASED: &'static Self = &Self(PhantomData);
}

/// How a codec lists its tool's schemas: not at all, or from its types.
trait Listing<T: Tool> {
    #[cfg(feature = "schemars")]
    fn schema() -> Option<Value>;
    #[cfg(feature = "schemars")]
    fn output_schema() -> Option<Value>;
}

/// A tool registered with [`ToolEntry::json`]: no schemas to list.
struct Unlisted;

impl<T: Tool> Listing<T> for Unlisted {
    #[cfg(feature = "schemars")]
    fn schema() -> Option<Value> {
        None
    }
    #[cfg(feature = "schemars")]
    fn output_schema() -> Option<Value> {
        None
    }
}

/// A tool registered with [`ToolEntry::mcp`]: the schemas of its input and output.
#[cfg(feature = "schemars")]
struct Listed;

#[cfg(feature = "schemars")]
impl<T> Listing<T> for Listed
where
    T: Tool,
    T::Input: schemars::JsonSchema,
    T::Output: schemars::JsonSchema,
{
    fn schema() -> Option<Value> {
        Some(crate::json::schema::input_schema::<T::Input>())
    }
    fn output_schema() -> Option<Value> {
        Some(crate::json::schema::output_schema::<T::Output>())
    }
}

/// The error of an erased input that is not the tool's (never, through a registry).
fn not_this_input() -> String {
    RunError::InputType.to_string()
}

impl<T, C, L> Codec<C> for Json<T, L>
where
    C: ?Sized + Sync + 'static,
    T: Tool<Context = C> + 'static,
    T::Input: DeserializeOwned + Serialize + Send + 'static,
    T::Output: Serialize,
    T::Error: fmt::Display,
    L: Listing<T> + 'static,
{
    // Gate 1 (decoded strictly, every field error, then the tool's own validation) is one
    // function per input type for both ways in. The erased input is an `Option`, so that
    // running takes it out of its box with less code than a downcast of the box.
    fn decode(&self, arguments: &str, limits: &InputLimits) -> Result<ErasedInput, InputErrors> {
        match decode_text::<T::Input>(arguments, limits, T::validate) {
            Ok(input) => Ok(Box::new(Some(input))),
            Err(errors) => Err(errors),
        }
    }

    fn check(&self, arguments: &str, limits: &InputLimits) -> Result<(), InputErrors> {
        match decode_text::<T::Input>(arguments, limits, T::validate) {
            Ok(_) => Ok(()),
            Err(errors) => Err(errors),
        }
    }

    fn preview(&self, input: &ErasedInput, out: &mut dyn fmt::Write) -> Option<fmt::Result> {
        match input.downcast_ref::<Option<T::Input>>() {
            Some(Some(input)) => T::preview(input, out),
            _ => None,
        }
    }

    fn tier(&self, input: &ErasedInput, _: &Actor<'_>) -> Result<Option<AskedTier>, ()> {
        let Some(Some(input)) = input.downcast_ref::<Option<T::Input>>() else {
            return Err(());
        };
        // A rule that panics leaves the call's risk unknown: the call is blocked, and the
        // process keeps serving.
        #[cfg(feature = "std")]
        {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let reason = T::risk_reason_for(input).map(String::from);
                Some((T::risk_tier_for(input), reason))
            }))
            .map_err(drop)
        }
        #[cfg(not(feature = "std"))]
        {
            let reason = T::risk_reason_for(input).map(String::from);
            Ok(Some((T::risk_tier_for(input), reason)))
        }
    }

    fn canonical_with_preview(
        &self,
        input: &ErasedInput,
        head: Option<String>,
    ) -> Result<(String, Option<String>), String> {
        match input.downcast_ref::<Option<T::Input>>() {
            Some(Some(input)) => canonical_text_with_preview(input, head),
            _ => Err(not_this_input()),
        }
    }

    fn run<'a>(
        &'a self,
        input: ErasedInput,
        actor: &'a Actor<'a>,
        context: &'a C,
        key: RunKey<'a>,
    ) -> RunFuture<'a> {
        run_input::<T>(input, actor, context, key)
    }

    #[cfg(feature = "schemars")]
    fn schema(&self) -> Option<Value> {
        L::schema()
    }

    #[cfg(feature = "schemars")]
    fn output_schema(&self) -> Option<Value> {
        L::output_schema()
    }
}

/// The key of a call that runs at once, derived only when its tool asks for it.
pub(crate) fn derive_key<T>(
    input: &T::Input,
    actor: &Actor<'_>,
    dedupe_token: Option<&str>,
) -> Option<IdempotencyKey>
where
    T: Tool + ?Sized,
    T::Input: Serialize,
{
    let input = canonical_text(input).ok()?;
    Some(IdempotencyKey::for_canonical_call(
        T::SPEC.name(),
        &input,
        Some(actor.id()),
        actor.account(),
        dedupe_token,
    ))
}

/// A run's result as JSON: generic over the output and error types alone, so tools that
/// share them share it.
fn output_value<O: Serialize, E: fmt::Display>(result: Result<O, E>) -> Result<Value, RunError> {
    match result {
        Ok(output) => match serde_json::to_value(output) {
            Ok(value) => Ok(value),
            Err(error) => Err(RunError::Output(error.to_string())),
        },
        Err(error) => Err(RunError::Failed(error.to_string())),
    }
}

fn run_input<'a, T>(
    input: ErasedInput,
    actor: &'a Actor<'a>,
    context: &'a T::Context,
    key: RunKey<'a>,
) -> RunFuture<'a>
where
    T: Tool + 'static,
    T::Context: Sync,
    T::Input: Serialize + Send + 'static,
    T::Output: Serialize,
    T::Error: fmt::Display,
{
    // Taken out of its box, and the box freed, before the future is made, so the input is
    // never held twice at once.
    let mut input = input;
    let taken = match input.downcast_mut::<Option<T::Input>>() {
        Some(slot) => slot.take(),
        None => None,
    };
    drop(input);
    let Some(input) = taken else {
        return Box::pin(core::future::ready(Err(RunError::InputType)));
    };
    let call = Invocation::new(input, actor, context);
    let call = match key {
        RunKey::Known(key) => call.with_run_key(key),
        RunKey::OnDemand { dedupe_token } => call.with_key_on_demand(dedupe_token, derive_key::<T>),
    };
    // The future holds only the call and the run's own future.
    Box::pin(async move { output_value(execute::<T>(call).await) })
}
