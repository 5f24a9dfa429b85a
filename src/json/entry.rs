//! Registering a tool for calls by name: the functions of its `Codec`, monomorphised
//! once per tool, and the constructors that attach them to a `ToolEntry`.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use core::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
#[cfg(feature = "schemars")]
use serde_json::Value;

use crate::declare::{
    Actor, Codec, ErasedInput, IdempotencyKey, InputErrors, InputLimits, Invocation, RunError,
    RunFuture, RunKey, Tool, ToolEntry,
};
use crate::gate::execute;
use crate::json::canonical_text;
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
        T: Tool<Context = C>,
        T::Input: DeserializeOwned + Serialize + Send + 'static,
        T::Output: Serialize,
        T::Error: fmt::Display,
        C: Sync,
    {
        Self::of::<T>().with_codec(codec::<T, C>())
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
        T: Tool<Context = C>,
        T::Input: DeserializeOwned + Serialize + schemars::JsonSchema + Send + 'static,
        T::Output: Serialize + schemars::JsonSchema,
        T::Error: fmt::Display,
        C: Sync,
    {
        let mut codec = codec::<T, C>();
        codec.schema = Some(crate::json::schema::input_schema::<T::Input>);
        codec.output_schema = Some(crate::json::schema::output_schema::<T::Output>);
        Self::of::<T>().with_codec(codec)
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
        self.codec()
            .and_then(|codec| codec.schema)
            .map(|schema| schema())
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
        self.codec()
            .and_then(|codec| codec.output_schema)
            .map(|schema| schema())
    }
}

const fn codec<T, C>() -> Codec<C>
where
    C: ?Sized + Sync + 'static,
    T: Tool<Context = C>,
    T::Input: DeserializeOwned + Serialize + Send + 'static,
    T::Output: Serialize,
    T::Error: fmt::Display,
{
    Codec {
        decode: decode_input::<T>,
        check: check_input::<T>,
        preview: preview_input::<T>,
        canonical: input_canonical::<T>,
        run: run_input::<T>,
        #[cfg(feature = "schemars")]
        schema: None,
        #[cfg(feature = "schemars")]
        output_schema: None,
    }
}

/// Gate 1 for a call by name: decode strictly (every field error), then the tool's own
/// validation.
fn decode_input<T>(arguments: &str, limits: &InputLimits) -> Result<ErasedInput, InputErrors>
where
    T: Tool,
    T::Input: DeserializeOwned + Send + 'static,
{
    let input: T::Input = decode_text(arguments, limits)?;
    T::validate(&input)?;
    Ok(Box::new(input))
}

fn check_input<T>(arguments: &str, limits: &InputLimits) -> Result<(), InputErrors>
where
    T: Tool,
    T::Input: DeserializeOwned + Send + 'static,
{
    let input: T::Input = decode_text(arguments, limits)?;
    T::validate(&input)
}

fn preview_input<T>(input: &ErasedInput, out: &mut dyn fmt::Write) -> Option<fmt::Result>
where
    T: Tool,
    T::Input: 'static,
{
    T::preview(input.downcast_ref::<T::Input>()?, out)
}

fn input_canonical<T>(input: &ErasedInput) -> Result<String, String>
where
    T: Tool,
    T::Input: Serialize + 'static,
{
    let input = input
        .downcast_ref::<T::Input>()
        .ok_or_else(|| RunError::InputType.to_string())?;
    canonical_text(input)
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

fn run_input<'a, T>(
    input: ErasedInput,
    actor: &'a Actor<'a>,
    context: &'a T::Context,
    key: RunKey<'a>,
) -> RunFuture<'a>
where
    T: Tool,
    T::Context: Sync,
    T::Input: Serialize + Send + 'static,
    T::Output: Serialize,
    T::Error: fmt::Display,
{
    // Unboxed before the future is made, so the input is never held twice at once.
    let input = match input.downcast::<T::Input>() {
        Ok(input) => *input,
        Err(_) => return Box::pin(core::future::ready(Err(RunError::InputType))),
    };
    Box::pin(async move {
        let call = Invocation::new(input, actor, context);
        let call = match key {
            RunKey::Known(key) => call.with_run_key(key),
            RunKey::OnDemand { dedupe_token } => {
                call.with_key_on_demand(dedupe_token, derive_key::<T>)
            }
        };
        let output = execute::<T>(call)
            .await
            .map_err(|error| RunError::Failed(error.to_string()))?;
        serde_json::to_value(output).map_err(|error| RunError::Output(error.to_string()))
    })
}
