//! Registering a tool for calls by name: its `Codec`, a zero-sized shim per tool type
//! around code compiled once for all tools, and the constructors that attach it to a
//! `ToolEntry`.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use core::fmt;
use core::marker::PhantomData;

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
        Self::of::<T>().with_codec(Mcp::<T>::ERASED)
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

/// The codec of a tool registered with [`ToolEntry::json`]: zero-sized, one per type.
struct Json<T>(PhantomData<fn() -> T>);

impl<T: 'static> Json<T> {
    const ERASED: &'static Self = &Self(PhantomData);
}

/// The codec of a tool registered with [`ToolEntry::mcp`]: [`Json`] and its schemas.
#[cfg(feature = "schemars")]
struct Mcp<T>(PhantomData<fn() -> T>);

#[cfg(feature = "schemars")]
impl<T: 'static> Mcp<T> {
    const ERASED: &'static Self = &Self(PhantomData);
}

/// Gate 1 for a call by name: decoded strictly (every field error), then the tool's own
/// validation. Both of a codec's ways in go through this one function, so each tool's
/// decoding is compiled once.
fn decode_input<T>(arguments: &str, limits: &InputLimits) -> Result<T::Input, InputErrors>
where
    T: Tool,
    T::Input: DeserializeOwned,
{
    let input: T::Input = decode_text(arguments, limits)?;
    T::validate(&input)?;
    Ok(input)
}

impl<T, C> Codec<C> for Json<T>
where
    C: ?Sized + Sync + 'static,
    T: Tool<Context = C> + 'static,
    T::Input: DeserializeOwned + Serialize + Send + 'static,
    T::Output: Serialize,
    T::Error: fmt::Display,
{
    fn decode(&self, arguments: &str, limits: &InputLimits) -> Result<ErasedInput, InputErrors> {
        decode_input::<T>(arguments, limits).map(|input| Box::new(input) as ErasedInput)
    }

    fn check(&self, arguments: &str, limits: &InputLimits) -> Result<(), InputErrors> {
        decode_input::<T>(arguments, limits).map(drop)
    }

    fn preview(&self, input: &ErasedInput, out: &mut dyn fmt::Write) -> Option<fmt::Result> {
        T::preview(input.downcast_ref::<T::Input>()?, out)
    }

    fn canonical(&self, input: &ErasedInput) -> Result<String, String> {
        let input = input
            .downcast_ref::<T::Input>()
            .ok_or_else(|| RunError::InputType.to_string())?;
        canonical_text(input)
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
}

#[cfg(feature = "schemars")]
impl<T, C> Codec<C> for Mcp<T>
where
    C: ?Sized + Sync + 'static,
    T: Tool<Context = C> + 'static,
    T::Input: DeserializeOwned + Serialize + schemars::JsonSchema + Send + 'static,
    T::Output: Serialize + schemars::JsonSchema,
    T::Error: fmt::Display,
{
    fn decode(&self, arguments: &str, limits: &InputLimits) -> Result<ErasedInput, InputErrors> {
        Json::<T>::ERASED.decode(arguments, limits)
    }

    fn check(&self, arguments: &str, limits: &InputLimits) -> Result<(), InputErrors> {
        Json::<T>::ERASED.check(arguments, limits)
    }

    fn preview(&self, input: &ErasedInput, out: &mut dyn fmt::Write) -> Option<fmt::Result> {
        Json::<T>::ERASED.preview(input, out)
    }

    fn canonical(&self, input: &ErasedInput) -> Result<String, String> {
        Json::<T>::ERASED.canonical(input)
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

    fn schema(&self) -> Option<Value> {
        Some(crate::json::schema::input_schema::<T::Input>())
    }

    fn output_schema(&self) -> Option<Value> {
        Some(crate::json::schema::output_schema::<T::Output>())
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
