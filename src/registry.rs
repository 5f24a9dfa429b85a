use core::fmt;

use crate::access::check_access;
use crate::spec_error::expect_valid;
use crate::{AccessDenied, Actor, PolicyDenial, Scope, SpecError, Tool, ToolSpec, text};

/// One tool of a [`Registry`], with its type erased: the spec, the scopes and the policy.
///
/// Made in a `const` context by [`ToolEntry::of`], which evaluates the tool's `SPEC` and
/// checks its `SCOPES`, so a bad declaration fails compilation where the registry is
/// built.
///
/// ```
/// use cairnloop::{Actor, InputErrors, Invocation, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
///
/// struct Ping;
/// impl Tool for Ping {
///     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers pong.", RiskTier::ReadOnly);
///     const SCOPES: &'static [Scope] = &[];
///     type Input = ();
///     type Output = &'static str;
///     type Error = core::convert::Infallible;
///     type Context = ();
///     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
///     async fn run(_: Invocation<'_, Self>) -> Result<&'static str, Self::Error> { Ok("pong") }
/// }
///
/// const PING: ToolEntry<()> = ToolEntry::of::<Ping>();
/// assert_eq!(PING.spec().name(), "ping");
/// // No policy stated: denied by default.
/// assert!(PING.access(&Actor::new("a", &[]), &()).is_err());
/// ```
pub struct ToolEntry<C: ?Sized + 'static> {
    spec: ToolSpec,
    scopes: &'static [Scope],
    authorize: fn(&Actor<'_>, &C) -> Result<(), PolicyDenial>,
    custom_ui: fn() -> Option<&'static str>,
    #[cfg(feature = "serde")]
    json: Option<crate::call::JsonHooks<C>>,
}

impl<C: ?Sized + 'static> ToolEntry<C> {
    /// The entry for tool `T`. In a `const` or `static` item, a bad `T::SPEC` or
    /// `T::SCOPES` fails compilation here.
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
    /// static PING: ToolEntry<()> = ToolEntry::of::<Ping>();
    /// assert_eq!(PING.scopes(), &[]);
    /// ```
    #[must_use]
    pub const fn of<T: Tool<Context = C>>() -> Self {
        expect_valid(Self::try_of::<T>())
    }

    /// [`ToolEntry::of`], returning the broken rule instead of failing (a spec is always
    /// valid; this checks the scopes).
    ///
    /// ```
    /// # use cairnloop::{InputErrors, Invocation, RiskTier, Scope, SpecError, Tool, ToolEntry, ToolSpec};
    /// struct Twice;
    /// impl Tool for Twice {
    ///     const SPEC: ToolSpec = ToolSpec::new("twice", "Twice", "Asks twice.", RiskTier::ReadOnly);
    ///     const SCOPES: &'static [Scope] = &[Scope::new("a:b"), Scope::new("a:b")];
    /// #   type Input = (); type Output = (); type Error = (); type Context = ();
    /// #   fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #   async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// }
    /// assert_eq!(ToolEntry::<()>::try_of::<Twice>().err(), Some(SpecError::DuplicateScope));
    /// ```
    pub const fn try_of<T: Tool<Context = C>>() -> Result<Self, SpecError> {
        let spec = T::SPEC;
        if let Err(err) = Scope::check_list(T::SCOPES) {
            return Err(err);
        }
        Ok(Self {
            spec,
            scopes: T::SCOPES,
            authorize: T::authorize,
            custom_ui: T::custom_ui,
            #[cfg(feature = "serde")]
            json: None,
        })
    }

    /// The entry for tool `T`, callable by name with JSON arguments through
    /// [`Registry::call`]: its input is decoded with serde, its output encoded as JSON.
    /// Checked like [`ToolEntry::of`].
    ///
    /// ```
    /// # use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// #[derive(serde::Deserialize)]
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
    #[cfg(feature = "serde")]
    #[must_use]
    pub const fn json<T>() -> Self
    where
        T: Tool<Context = C>,
        T::Input: serde::de::DeserializeOwned + Send + 'static,
        T::Output: serde::Serialize,
        T::Error: fmt::Display,
        C: Sync,
    {
        let mut entry = Self::of::<T>();
        entry.json = Some(crate::call::JsonHooks::of::<T>());
        entry
    }

    /// [`ToolEntry::json`], and also the JSON Schema of the tool's input, for listing the
    /// tool over MCP ([`ToolEntry::mcp_tool`]).
    ///
    /// ```
    /// # use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
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
        T::Input: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
        T::Output: serde::Serialize,
        T::Error: fmt::Display,
        C: Sync,
    {
        let mut entry = Self::of::<T>();
        entry.json = Some(crate::call::JsonHooks::of::<T>().with_schema::<T>());
        entry
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
    pub fn input_schema(&self) -> Option<serde_json::Value> {
        self.json
            .and_then(|hooks| hooks.schema)
            .map(|schema| schema())
    }

    /// Whether [`Registry::call`] can call this tool by name (it was registered with
    /// [`ToolEntry::json`]).
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
    #[cfg(feature = "serde")]
    #[must_use]
    pub const fn is_callable_by_name(&self) -> bool {
        self.json.is_some()
    }

    #[cfg(feature = "serde")]
    pub(crate) const fn json_hooks(&self) -> Option<crate::call::JsonHooks<C>> {
        self.json
    }

    /// The tool's spec.
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
    /// assert_eq!(ToolEntry::<()>::of::<Ping>().spec().risk_tier(), RiskTier::ReadOnly);
    /// ```
    #[must_use]
    pub const fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The scopes the tool requires, in declared order.
    ///
    /// ```
    /// # use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// # struct Ping;
    /// # impl Tool for Ping {
    /// #     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers pong.", RiskTier::ReadOnly);
    /// #     const SCOPES: &'static [Scope] = &[Scope::new("net:ping")];
    /// #     type Input = (); type Output = (); type Error = (); type Context = ();
    /// #     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// # }
    /// assert_eq!(ToolEntry::<()>::of::<Ping>().scopes(), &[Scope::new("net:ping")]);
    /// ```
    #[must_use]
    pub const fn scopes(&self) -> &'static [Scope] {
        self.scopes
    }

    /// The tool's custom UI component, if it names one.
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
    /// assert_eq!(ToolEntry::<()>::of::<Ping>().custom_ui(), None);
    /// ```
    #[must_use]
    pub fn custom_ui(&self) -> Option<&'static str> {
        (self.custom_ui)()
    }

    /// Gates 2 and 3 of the pipeline: every required scope granted exactly, then the
    /// tool's policy. The registry's visibility filter and the pipeline both use this one
    /// check, so a model is shown exactly the tools it may call.
    ///
    /// ```
    /// # use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// # struct Ping;
    /// # impl Tool for Ping {
    /// #     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers pong.", RiskTier::ReadOnly);
    /// #     const SCOPES: &'static [Scope] = &[Scope::new("net:ping")];
    /// #     type Input = (); type Output = (); type Error = (); type Context = ();
    /// #     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
    /// #     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// # }
    /// let entry = ToolEntry::<()>::of::<Ping>();
    /// assert!(entry.access(&Actor::new("a", &["net:ping"]), &()).is_ok());
    /// assert!(entry.access(&Actor::new("a", &["net:*"]), &()).is_err());
    /// ```
    pub fn access(&self, actor: &Actor<'_>, context: &C) -> Result<(), AccessDenied> {
        check_access(self.scopes, actor, || (self.authorize)(actor, context))
    }
}

impl<C: ?Sized + 'static> Clone for ToolEntry<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: ?Sized + 'static> Copy for ToolEntry<C> {}

impl<C: ?Sized + 'static> fmt::Debug for ToolEntry<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry")
            .field("spec", &self.spec)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// The tools an agent may call, fixed at compile time.
///
/// Build it in a `static` (or `const`) item: then `cargo check` evaluates every tool's
/// `SPEC` and `SCOPES`, and rejects two tools whose names are equal or equal ignoring ASCII
/// case (rule 7). Names from a model resolve by exact byte equality only: no trimming, no
/// case folding, no Unicode normalisation.
///
/// ```
/// use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
///
/// struct LookupOrder;
/// impl Tool for LookupOrder {
///     const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly);
///     const SCOPES: &'static [Scope] = &[Scope::new("orders:read")];
///     type Input = u32;
///     type Output = &'static str;
///     type Error = ();
///     type Context = ();
///     fn validate(_: &u32) -> Result<(), InputErrors> { Ok(()) }
///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
///     async fn run(_: Invocation<'_, Self>) -> Result<&'static str, ()> { Ok("shipped") }
/// }
///
/// static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<LookupOrder>()]);
///
/// assert!(TOOLS.get("lookup_order").is_some());
/// assert!(TOOLS.get("Lookup_Order").is_none());
/// assert!(TOOLS.get("lookup_order ").is_none());
///
/// let clerk = Actor::new("clerk", &["orders:read"]);
/// let guest = Actor::new("guest", &[]);
/// assert_eq!(TOOLS.visible(&clerk, &()).count(), 1);
/// assert_eq!(TOOLS.visible(&guest, &()).count(), 0);
/// ```
pub struct Registry<C: ?Sized + 'static> {
    tools: &'static [ToolEntry<C>],
}

impl<C: ?Sized + 'static> Registry<C> {
    /// A registry of `tools`. In a `static` or `const` item, two names that are equal or
    /// equal ignoring ASCII case fail compilation (rule 7).
    ///
    /// ```compile_fail
    /// # use cairnloop::{InputErrors, Invocation, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// struct A;
    /// impl Tool for A {
    ///     const SPEC: ToolSpec = ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::HighWrite);
    /// #   const SCOPES: &'static [Scope] = &[];
    /// #   type Input = (); type Output = (); type Error = (); type Context = ();
    /// #   fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #   async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// }
    /// struct B;
    /// impl Tool for B {
    ///     const SPEC: ToolSpec = ToolSpec::new("Refund", "Refund", "Refunds.", RiskTier::HighWrite);
    /// #   const SCOPES: &'static [Scope] = &[];
    /// #   type Input = (); type Output = (); type Error = (); type Context = ();
    /// #   fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #   async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// }
    /// static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<A>(), ToolEntry::of::<B>()]);
    /// ```
    #[must_use]
    pub const fn new(tools: &'static [ToolEntry<C>]) -> Self {
        expect_valid(Self::try_new(tools))
    }

    /// [`Registry::new`], returning the broken rule instead of failing.
    ///
    /// ```
    /// use cairnloop::{Registry, SpecError};
    ///
    /// let empty: Result<Registry<()>, SpecError> = Registry::try_new(&[]);
    /// assert!(empty.is_ok());
    /// ```
    pub const fn try_new(tools: &'static [ToolEntry<C>]) -> Result<Self, SpecError> {
        let mut i = 0;
        while i < tools.len() {
            let mut j = i + 1;
            while j < tools.len() {
                if text::eq_ignore_ascii_case(tools[i].spec.name(), tools[j].spec.name()) {
                    return Err(SpecError::DuplicateToolName);
                }
                j += 1;
            }
            i += 1;
        }
        Ok(Self { tools })
    }

    /// The tool a model named, by exact byte equality, or `None`.
    ///
    /// ```
    /// # use cairnloop::Registry;
    /// static EMPTY: Registry<()> = Registry::new(&[]);
    /// assert!(EMPTY.get("anything").is_none());
    /// ```
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&'static ToolEntry<C>> {
        let tools: &'static [ToolEntry<C>] = self.tools;
        tools
            .iter()
            .find(|entry| entry.spec.name().as_bytes() == name.as_bytes())
    }

    /// Every tool, in registration order, whoever asks.
    ///
    /// ```
    /// # use cairnloop::Registry;
    /// static EMPTY: Registry<()> = Registry::new(&[]);
    /// assert_eq!(EMPTY.tools().len(), 0);
    /// ```
    #[must_use]
    pub const fn tools(&self) -> &'static [ToolEntry<C>] {
        self.tools
    }

    /// The tools `actor` may call in `context`, in registration order: those whose
    /// [`ToolEntry::access`] passes, the same check the pipeline applies to a call.
    ///
    /// ```
    /// # use cairnloop::{Actor, Registry};
    /// static EMPTY: Registry<()> = Registry::new(&[]);
    /// assert_eq!(EMPTY.visible(&Actor::new("a", &[]), &()).count(), 0);
    /// ```
    pub fn visible<'q>(
        &self,
        actor: &'q Actor<'q>,
        context: &'q C,
    ) -> impl Iterator<Item = &'static ToolEntry<C>> + 'q {
        let tools: &'static [ToolEntry<C>] = self.tools;
        tools
            .iter()
            .filter(move |entry| entry.access(actor, context).is_ok())
    }
}

impl<C: ?Sized + 'static> Clone for Registry<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: ?Sized + 'static> Copy for Registry<C> {}

impl<C: ?Sized + 'static> fmt::Debug for Registry<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|entry| entry.spec.name()))
            .finish()
    }
}
