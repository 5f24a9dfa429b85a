use core::fmt;

#[cfg(feature = "declared")]
use alloc::string::String;
#[cfg(feature = "declared")]
use alloc::vec::Vec;

#[cfg(feature = "serde")]
use super::codec::Codec;
use super::rules::{Violation, expect_valid, to_spec_error};
use crate::declare::{Actor, PolicyDenial, Scope, SpecError, Tool, ToolSpec};

/// Moves on whenever a declared tool's offer changes (a new schema, a withdrawal): what
/// is derived from a registry's tools, such as its `tools/list` projection, is made
/// again when it has moved since.
#[cfg(feature = "declared")]
static OFFERS_CHANGED: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// How many times declared tools' offers changed in this process (always 0 without
/// declared tools).
#[cfg(feature = "std")]
#[inline]
pub(crate) fn offers_changed() -> u64 {
    #[cfg(feature = "declared")]
    return OFFERS_CHANGED.load(core::sync::atomic::Ordering::Acquire);
    #[cfg(not(feature = "declared"))]
    0
}

/// A declared tool's offer changed.
#[cfg(feature = "declared")]
pub(crate) fn note_offers_changed() {
    OFFERS_CHANGED.fetch_add(1, core::sync::atomic::Ordering::AcqRel);
}

/// One tool of a [`Registry`](crate::Registry), with its type erased: the spec, the scopes and the policy.
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
/// ```
pub struct ToolEntry<C: ?Sized + 'static> {
    spec: ToolSpec,
    scopes: &'static [Scope],
    authorize: fn(&Actor<'_>, &C) -> Result<(), PolicyDenial>,
    custom_ui: fn() -> Option<&'static str>,
    #[cfg(feature = "serde")]
    codec: Option<&'static dyn Codec<C>>,
    /// The accounts a caller must act in, for a tool declared with such a rule.
    #[cfg(feature = "declared")]
    accounts: Option<&'static Vec<String>>,
    /// For a declared tool: set while its upstream does not offer it (hidden, blocked).
    #[cfg(feature = "declared")]
    withdrawn: Option<&'static core::sync::atomic::AtomicBool>,
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
    #[track_caller]
    #[must_use]
    pub const fn of<T: Tool<Context = C>>() -> Self {
        expect_valid(Self::check::<T>())
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
        to_spec_error(Self::check::<T>())
    }

    const fn check<T: Tool<Context = C>>() -> Result<Self, Violation<'static>> {
        let spec = T::SPEC;
        if let Err(violation) = Scope::check_each(T::SCOPES) {
            return Err(violation);
        }
        Ok(Self {
            spec,
            scopes: T::SCOPES,
            authorize: T::authorize,
            custom_ui: T::custom_ui,
            #[cfg(feature = "serde")]
            codec: None,
            #[cfg(feature = "declared")]
            accounts: None,
            #[cfg(feature = "declared")]
            withdrawn: None,
        })
    }

    /// An entry made of checked parts, for a tool declared at run time (the JSON layer's
    /// `ToolEntry::declared`): no custom UI.
    #[cfg(feature = "declared")]
    pub(crate) const fn from_parts(
        spec: ToolSpec,
        scopes: &'static [Scope],
        authorize: fn(&Actor<'_>, &C) -> Result<(), PolicyDenial>,
    ) -> Self {
        const fn none() -> Option<&'static str> {
            None
        }
        Self {
            spec,
            scopes,
            authorize,
            custom_ui: none,
            #[cfg(feature = "serde")]
            codec: None,
            accounts: None,
            withdrawn: None,
        }
    }

    /// The entry, offered only to callers acting in one of `accounts`.
    #[cfg(feature = "declared")]
    #[allow(
        clippy::ptr_arg,
        reason = "a thin pointer: the gates carry it in a register beside the spec"
    )]
    pub(crate) const fn with_accounts(mut self, accounts: &'static Vec<String>) -> Self {
        self.accounts = Some(accounts);
        self
    }

    /// The accounts a caller must act in, if the entry has such a rule.
    #[cfg(feature = "declared")]
    pub(crate) const fn accounts(&self) -> Option<&'static Vec<String>> {
        self.accounts
    }

    /// The entry, hidden and blocked while `withdrawn` is set.
    #[cfg(feature = "declared")]
    pub(crate) const fn with_withdrawal(
        mut self,
        withdrawn: &'static core::sync::atomic::AtomicBool,
    ) -> Self {
        self.withdrawn = Some(withdrawn);
        self
    }

    /// Whether the tool can be withdrawn and offered again while the process runs (a tool
    /// declared from an upstream's listing): a listing of it can change.
    #[cfg(feature = "rmcp")]
    #[inline]
    pub(crate) fn may_change(&self) -> bool {
        #[cfg(feature = "declared")]
        return self.withdrawn.is_some();
        #[cfg(not(feature = "declared"))]
        false
    }

    /// Whether the tool is on offer now: a tool declared from an upstream's listing is not
    /// while the upstream no longer lists it; every other tool always is.
    #[inline]
    pub(crate) fn is_offered(&self) -> bool {
        #[cfg(feature = "declared")]
        if let Some(withdrawn) = self.withdrawn {
            return !withdrawn.load(core::sync::atomic::Ordering::Acquire);
        }
        true
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

    /// The tool's policy (gate 3), as the gates call it.
    pub(crate) const fn authorize_fn(&self) -> fn(&Actor<'_>, &C) -> Result<(), PolicyDenial> {
        self.authorize
    }

    /// The functions that call the tool by name, if it was registered for that.
    #[cfg(feature = "serde")]
    pub(crate) const fn codec(&self) -> Option<&'static dyn Codec<C>> {
        self.codec
    }

    /// Whether the entry's output is an MCP `CallToolResult` to hand on as it is.
    #[cfg(feature = "rmcp")]
    pub(crate) fn output_is_call_result(&self) -> bool {
        self.codec
            .is_some_and(|codec| codec.output_is_call_result())
    }

    /// The entry with the functions that call the tool by name (set by the JSON layer).
    #[cfg(feature = "serde")]
    pub(crate) const fn with_codec(mut self, codec: &'static dyn Codec<C>) -> Self {
        self.codec = Some(codec);
        self
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declare::MAX_TOOLS;
    use crate::declare::Registry;
    use crate::declare::{InputErrors, Invocation};
    use std::format;

    struct Card;

    impl Tool for Card {
        const SPEC: ToolSpec = ToolSpec::new(
            "card",
            "Card",
            "Has a UI.",
            crate::declare::RiskTier::ReadOnly,
        );
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
}
