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
/// Build it in a `static` item: then `cargo check` evaluates every tool's
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
    /// Name → position, built on the first lookup (with `std`), so that resolving a name
    /// costs the same among 10 or 10,000 tools.
    #[cfg(feature = "std")]
    index: std::sync::OnceLock<std::collections::HashMap<&'static str, usize>>,
}

/// Most tools one registry holds. The compile-time check for duplicate names sorts the
/// names' hashes in a scratch array of this size, so it stays fast for large registries.
pub const MAX_TOOLS: usize = 1 << 16;

/// Rule 7 for a whole registry.
const fn check_registry<C: ?Sized>(tools: &[ToolEntry<C>]) -> Result<(), SpecError> {
    if tools.len() > MAX_TOOLS {
        return Err(SpecError::TooManyTools);
    }
    if has_duplicate_name(tools) {
        return Err(SpecError::DuplicateToolName);
    }
    Ok(())
}

/// FNV-1a over the ASCII-lowercased name: equal for names equal ignoring ASCII case.
const fn folded_hash(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i].to_ascii_lowercase() as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// Rule 7 in O(n log n): sort (hash, position) keys, then compare names only where the
/// hashes agree.
const fn has_duplicate_name<C: ?Sized>(tools: &[ToolEntry<C>]) -> bool {
    let n = tools.len();
    if n < 2 {
        return false;
    }
    // The low 16 bits carry the position (n <= MAX_TOOLS), the rest the hash.
    let mut keys = [0u64; MAX_TOOLS];
    let mut i = 0;
    while i < n {
        keys[i] = (folded_hash(tools[i].spec.name()) & !0xffff) | i as u64;
        i += 1;
    }
    heapsort(&mut keys, n);
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && keys[j] >> 16 == keys[i] >> 16 {
            let (a, b) = ((keys[i] & 0xffff) as usize, (keys[j] & 0xffff) as usize);
            if text::eq_ignore_ascii_case(tools[a].spec.name(), tools[b].spec.name()) {
                return true;
            }
            j += 1;
        }
        i += 1;
    }
    false
}

/// Sorts `keys[..n]` ascending, in place, in a `const` context.
const fn heapsort(keys: &mut [u64; MAX_TOOLS], n: usize) {
    let mut start = n / 2;
    while start > 0 {
        start -= 1;
        sift_down(keys, start, n);
    }
    let mut end = n;
    while end > 1 {
        end -= 1;
        let top = keys[0];
        keys[0] = keys[end];
        keys[end] = top;
        sift_down(keys, 0, end);
    }
}

const fn sift_down(keys: &mut [u64; MAX_TOOLS], mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && keys[child] < keys[child + 1] {
            child += 1;
        }
        if keys[root] >= keys[child] {
            return;
        }
        let swap = keys[root];
        keys[root] = keys[child];
        keys[child] = swap;
        root = child;
    }
}

impl<C: ?Sized + 'static> Registry<C> {
    /// A registry of `tools`. In a `static` item, two names that are equal or equal
    /// ignoring ASCII case fail compilation (rule 7), as do more than [`MAX_TOOLS`] tools.
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
        // Checked apart from construction: a `Result<Registry, _>` cannot be dropped in a
        // `const fn` (the registry owns a lazily built index).
        if let Err(err) = check_registry(tools) {
            panic!("{}", err.message());
        }
        Self::unchecked(tools)
    }

    const fn unchecked(tools: &'static [ToolEntry<C>]) -> Self {
        Self {
            tools,
            #[cfg(feature = "std")]
            index: std::sync::OnceLock::new(),
        }
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
        match check_registry(tools) {
            Ok(()) => Ok(Self::unchecked(tools)),
            Err(err) => Err(err),
        }
    }

    /// The tool a model named, by exact byte equality, or `None`.
    ///
    /// With `std` the first lookup builds a hash index, and every lookup after costs the
    /// same whatever the number of tools; without `std` it is a scan. An empty name or one
    /// longer than 64 bytes is refused before any work.
    ///
    /// ```
    /// # use cairnloop::Registry;
    /// static EMPTY: Registry<()> = Registry::new(&[]);
    /// assert!(EMPTY.get("anything").is_none());
    /// ```
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&'static ToolEntry<C>> {
        // No registered name is empty or longer than 64 bytes: refuse those before any
        // hashing, so a megabyte of name costs nothing.
        if name.is_empty() || name.len() > text::MAX_NAME_LEN {
            return None;
        }
        let tools: &'static [ToolEntry<C>] = self.tools;
        #[cfg(feature = "std")]
        {
            let index = self.index.get_or_init(|| {
                tools
                    .iter()
                    .enumerate()
                    .map(|(position, entry)| (entry.spec.name(), position))
                    .collect()
            });
            index.get(name).map(|&position| &tools[position])
        }
        #[cfg(not(feature = "std"))]
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

impl<C: ?Sized + 'static> fmt::Debug for Registry<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|entry| entry.spec.name()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heapsort_sorts_any_prefix() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for n in [0, 1, 2, 3, 7, 64, 1000, 4097] {
            let mut keys = [0u64; MAX_TOOLS];
            for key in keys.iter_mut().take(n) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *key = state % 50; // many equal keys
            }
            let mut expected = keys[..n].to_vec();
            expected.sort_unstable();
            heapsort(&mut keys, n);
            assert_eq!(&keys[..n], &expected[..], "n = {n}");
        }
    }

    #[test]
    fn heapsort_sorts_every_permutation_of_small_inputs() {
        fn permutations(items: &mut [u64], k: usize, out: &mut std::vec::Vec<std::vec::Vec<u64>>) {
            if k == items.len() {
                out.push(items.to_vec());
                return;
            }
            for i in k..items.len() {
                items.swap(k, i);
                permutations(items, k + 1, out);
                items.swap(k, i);
            }
        }
        for n in 2..=6 {
            let mut items: std::vec::Vec<u64> = (1..=n as u64).collect();
            let mut all = std::vec::Vec::new();
            permutations(&mut items, 0, &mut all);
            for permutation in all {
                let mut keys = [0u64; MAX_TOOLS];
                keys[..n].copy_from_slice(&permutation);
                heapsort(&mut keys, n);
                assert_eq!(&keys[..n], &items[..], "from {permutation:?}");
            }
        }
    }

    #[test]
    fn folded_hashes_ignore_ascii_case_only() {
        assert_eq!(folded_hash("Refund_Order"), folded_hash("refund_order"));
        assert_ne!(folded_hash("refund_order"), folded_hash("refund_orders"));
        assert_ne!(folded_hash("a"), folded_hash("b"));
    }
}

#[cfg(test)]
mod entry_tests {
    use super::*;
    use crate::{InputErrors, Invocation};
    use std::format;

    struct Card;

    impl Tool for Card {
        const SPEC: ToolSpec =
            ToolSpec::new("card", "Card", "Has a UI.", crate::RiskTier::ReadOnly);
        const SCOPES: &'static [Scope] = &[Scope::new("cards:read")];
        type Input = ();
        type Output = ();
        type Error = ();
        type Context = ();
        fn validate(_: &()) -> Result<(), InputErrors> {
            Ok(())
        }
        fn custom_ui() -> Option<&'static str> {
            Some("refund-card")
        }
        async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
            Ok(())
        }
    }

    #[test]
    fn an_entry_keeps_the_tools_ui_and_debugs_plainly() {
        let entry = ToolEntry::<()>::of::<Card>();
        assert_eq!(entry.custom_ui(), Some("refund-card"));
        let debug = format!("{entry:?}");
        assert!(
            debug.starts_with("ToolEntry { spec: ToolSpec { name: \"card\""),
            "{debug}"
        );
        assert!(debug.contains("scopes: [\"cards:read\"]"), "{debug}");
        static ONE: [ToolEntry<()>; 1] = [ToolEntry::of::<Card>()];
        assert_eq!(format!("{:?}", Registry::new(&ONE)), "[\"card\"]");
    }

    struct Longest;

    impl Tool for Longest {
        const SPEC: ToolSpec = ToolSpec::new(
            "a_tool_name_of_exactly_sixty_four_characters_which_is_the_limit_",
            "Longest",
            "Has the longest name.",
            crate::RiskTier::ReadOnly,
        );
        const SCOPES: &'static [Scope] = &[];
        type Input = ();
        type Output = ();
        type Error = ();
        type Context = ();
        fn validate(_: &()) -> Result<(), InputErrors> {
            Ok(())
        }
        async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
            Ok(())
        }
    }

    #[test]
    fn a_name_of_the_longest_length_resolves() {
        static TOOLS: Registry<()> =
            Registry::new(&[ToolEntry::of::<Card>(), ToolEntry::of::<Longest>()]);
        let longest = Longest::SPEC.name();
        assert_eq!(longest.len(), 64);
        assert_eq!(TOOLS.get(longest).map(|e| e.spec().name()), Some(longest));
        assert_eq!(TOOLS.get("card").map(|e| e.spec().name()), Some("card"));
        assert!(TOOLS.get(&std::format!("{longest}x")).is_none());
        assert!(TOOLS.get("").is_none());
    }

    #[test]
    fn exactly_max_tools_is_allowed_one_more_is_not() {
        let entry = ToolEntry::<()>::of::<Card>();
        let full: &'static [ToolEntry<()>] = std::vec::Vec::leak(std::vec![entry; MAX_TOOLS]);
        // The size passes; the (identical) names then fail rule 7.
        assert_eq!(
            Registry::try_new(full).err(),
            Some(SpecError::DuplicateToolName)
        );
    }

    #[test]
    fn folded_hashes_spread_similar_names() {
        let mut hashes: std::vec::Vec<u64> = (0..1000)
            .map(|i| folded_hash(&format!("tool_{i:04}")) >> 16)
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), 1000);
    }
}
