use core::fmt;
use core::future::Future;

use crate::declare::{Actor, IdempotencyKey, InputErrors, PolicyDenial, RiskTier, Scope, ToolSpec};

/// A governed tool: what a host crate implements for each tool an agent may call.
///
/// This is the contract of the Elixir `Cairnloop.Tool` behaviour. Required: the frozen
/// [`SPEC`](Tool::SPEC), the required [`SCOPES`](Tool::SCOPES), input validation
/// ([`validate`](Tool::validate), the Elixir `changeset/2`) and [`run`](Tool::run).
/// Provided: [`authorize`](Tool::authorize), which denies everyone with
/// [`PolicyDenial::NoPolicyDefined`] until the tool states a policy,
/// [`custom_ui`](Tool::custom_ui) and [`preview`](Tool::preview).
///
/// No code outside this crate can call `run`: it takes an [`Invocation`], which only the
/// pipeline makes once every gate has passed.
///
/// ```
/// use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolSpec};
///
/// struct LookupOrder;
///
/// impl Tool for LookupOrder {
///     const SPEC: ToolSpec = ToolSpec::new(
///         "lookup_order",
///         "Look up order",
///         "Finds an order by its number and returns its status.",
///         RiskTier::ReadOnly,
///     );
///     const SCOPES: &'static [Scope] = &[Scope::new("orders:read")];
///
///     type Input = u32;
///     type Output = &'static str;
///     type Error = core::convert::Infallible;
///     type Context = ();
///
///     fn validate(order: &u32) -> Result<(), InputErrors> {
///         Ok(())
///     }
///
///     fn authorize(_actor: &Actor<'_>, _context: &()) -> Result<(), PolicyDenial> {
///         Ok(()) // every actor holding `orders:read` may look orders up
///     }
///
///     async fn run(call: Invocation<'_, Self>) -> Result<&'static str, Self::Error> {
///         Ok(if *call.input() == 1001 { "shipped" } else { "unknown" })
///     }
/// }
/// # let _ = LookupOrder::SPEC;
/// ```
pub trait Tool {
    /// What the tool is: name, title, description, risk tier, approval mode and the rest,
    /// checked at compile time. See [`ToolSpec`] for when a bad spec is caught.
    const SPEC: ToolSpec;

    /// The scopes an actor must hold, each granted exactly. Empty means none; a registry
    /// rejects a scope listed twice at compile time.
    const SCOPES: &'static [Scope];

    /// The validated input the tool runs with.
    type Input;
    /// What a successful run returns.
    type Output;
    /// What a failed run returns.
    type Error;
    /// Host data the policy and the run need (a database handle, the tenant's settings).
    /// Every tool in one [`Registry`](crate::Registry) shares it.
    type Context: ?Sized;

    /// Checks an input beyond its type: ranges, formats, cross-field rules (the Elixir
    /// `changeset/2`). Return every problem found, each with its field's path.
    #[doc(alias = "changeset")]
    fn validate(input: &Self::Input) -> Result<(), InputErrors>;

    /// Runs the tool. Runtime-agnostic: the future needs no particular executor, so it runs
    /// under tokio as under a no_std executor. It is `Send`, so a multi-threaded server
    /// can move it between threads; `async fn run` in an impl gives one as long as
    /// nothing held across an `.await` is thread-bound.
    fn run(
        call: Invocation<'_, Self>,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;

    /// Whether `actor` may use the tool at all, in `context`. Deny by default: a tool that
    /// does not state a policy is refused with [`PolicyDenial::NoPolicyDefined`].
    ///
    /// It sees no input, so the pipeline asks it before the input is decoded (a listing
    /// asks it with no call at all); an invalid input is still the answer reported first.
    fn authorize(actor: &Actor<'_>, context: &Self::Context) -> Result<(), PolicyDenial> {
        let _ = (actor, context);
        Err(PolicyDenial::NoPolicyDefined)
    }

    /// This call's risk tier, from its decoded and validated input: the spec's tier by
    /// default. A call may be riskier than its tool (a refund of fifty thousand dollars,
    /// a write outside a scratch folder): return a higher tier, and the rest of the
    /// pipeline sees it — the mode it derives and the host's floor for it, the proposal,
    /// the preview's label, the approvers' tier rights, and the binding (an approved call
    /// whose rule now gives another tier does not run). A lower tier is ignored (a call
    /// is never less risky than its tool) and recorded. The listing shows the declared
    /// tier. Called by name, a rule that panics blocks the call
    /// ([`Blocked::TierRuleFailed`](crate::Blocked::TierRuleFailed)).
    ///
    /// ```
    /// use cairnloop::{Actor, Decision, InputErrors, Invocation, ModePolicy, PolicyDenial, RiskTier, Scope, Tool, ToolSpec, decide};
    ///
    /// struct Refund;
    /// impl Tool for Refund {
    ///     const SPEC: ToolSpec = ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::LowWrite);
    ///     const SCOPES: &'static [Scope] = &[];
    ///     type Input = u64; // cents
    ///     type Output = (); type Error = (); type Context = ();
    ///     fn validate(_: &u64) -> Result<(), InputErrors> { Ok(()) }
    ///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
    ///     fn risk_tier_for(cents: &u64) -> RiskTier {
    ///         if *cents > 100_000 { RiskTier::HighWrite } else { RiskTier::LowWrite }
    ///     }
    ///     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// }
    ///
    /// let actor = Actor::new("agent-7", &[]);
    /// let Decision::AwaitApproval(large) = decide::<Refund>(5_000_000, &actor, &(), &ModePolicy::new()) else { panic!() };
    /// assert_eq!(large.mode().tier(), RiskTier::HighWrite);
    /// ```
    fn risk_tier_for(input: &Self::Input) -> RiskTier {
        let _ = input;
        Self::SPEC.risk_tier()
    }

    /// Why [`risk_tier_for`](Tool::risk_tier_for) raised a call with `input` above the
    /// tool's tier, in words the person deciding it reads beside the tier (the amount or
    /// the path is in the preview already). Kept with the proposal
    /// ([`Proposal::raised_because`](crate::json::Proposal::raised_because)) and the
    /// decision's audit record, shown by the console, notices and the MCP prompt, and
    /// told to the agent; only for a call the rule raised. `None` (the default): no reason.
    ///
    /// ```
    /// use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolSpec};
    ///
    /// struct Refund;
    /// impl Tool for Refund {
    ///     const SPEC: ToolSpec = ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::LowWrite);
    ///     const SCOPES: &'static [Scope] = &[];
    ///     type Input = u64; // cents
    ///     type Output = (); type Error = (); type Context = ();
    ///     fn validate(_: &u64) -> Result<(), InputErrors> { Ok(()) }
    ///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
    ///     fn risk_tier_for(cents: &u64) -> RiskTier {
    ///         if *cents > 100_000 { RiskTier::HighWrite } else { RiskTier::LowWrite }
    ///     }
    ///     fn risk_reason_for(cents: &u64) -> Option<&'static str> {
    ///         (*cents > 100_000).then_some("over a thousand dollars")
    ///     }
    ///     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// }
    /// assert_eq!(Refund::risk_reason_for(&500), None);
    /// ```
    fn risk_reason_for(input: &Self::Input) -> Option<&'static str> {
        let _ = input;
        None
    }

    /// The name of a host UI component that shows this tool's calls, if it has one.
    fn custom_ui() -> Option<&'static str> {
        None
    }

    /// Writes a human-readable summary of what running with `input` would do, for the
    /// person who approves it. `None` (the default) means the tool has no preview of its
    /// own and the pipeline builds a structured one.
    fn preview(input: &Self::Input, out: &mut dyn fmt::Write) -> Option<fmt::Result> {
        let _ = (input, out);
        None
    }
}

/// A call the pipeline allowed: the validated input, the actor and the context.
///
/// It is the proof [`Tool::run`] takes; only this crate can make one, after every gate of
/// the pipeline (and, for a tool that requires approval, an approval) has passed.
///
/// ```
/// use cairnloop::{Invocation, Tool};
///
/// // What `Tool::run` can read of the call it was given.
/// fn describe<'a, T: Tool<Input = u32>>(call: &Invocation<'a, T>) -> (&'a str, u32) {
///     (call.actor().id(), *call.input())
/// }
/// ```
pub struct Invocation<'a, T: Tool + ?Sized> {
    input: T::Input,
    actor: &'a Actor<'a>,
    context: &'a T::Context,
    key_source: KeySource<'a, T>,
}

/// Where an invocation's run key comes from. A call that runs at once computes no key
/// unless the tool asks for one.
enum KeySource<'a, T: Tool + ?Sized> {
    None,
    #[cfg(feature = "serde")]
    Known(IdempotencyKey),
    #[cfg(feature = "serde")]
    OnDemand {
        dedupe_token: Option<&'a str>,
        derive: KeyDeriver<T>,
    },
    /// Keeps the lifetime in use when there are no keys (without `serde`).
    #[cfg(not(feature = "serde"))]
    #[allow(dead_code, reason = "never made; it only carries the lifetime")]
    Unused(core::marker::PhantomData<&'a T>),
}

/// Derives the idempotency key of a call from its input, actor and dedupe token.
#[cfg(feature = "serde")]
pub(crate) type KeyDeriver<T> =
    fn(&<T as Tool>::Input, &Actor<'_>, Option<&str>) -> Option<IdempotencyKey>;

impl<'a, T: Tool + ?Sized> Invocation<'a, T> {
    pub(crate) const fn new(
        input: T::Input,
        actor: &'a Actor<'a>,
        context: &'a T::Context,
    ) -> Self {
        Self {
            input,
            actor,
            context,
            key_source: KeySource::None,
        }
    }

    /// The same call, run with the key of the approval it executes.
    #[cfg(feature = "serde")]
    pub(crate) fn with_run_key(mut self, key: IdempotencyKey) -> Self {
        self.key_source = KeySource::Known(key);
        self
    }

    /// The same call, with a key derived only if the tool asks for it.
    #[cfg(feature = "serde")]
    pub(crate) fn with_key_on_demand(
        mut self,
        dedupe_token: Option<&'a str>,
        derive: KeyDeriver<T>,
    ) -> Self {
        self.key_source = KeySource::OnDemand {
            dedupe_token,
            derive,
        };
        self
    }

    /// A stable key for this call, the same on every attempt of an approved call's
    /// retries: the call's idempotency key. A tool that talks to another system passes it
    /// on so that a retried run is applied once. For a call that runs at once it is
    /// computed here, when asked for; `None` on the typed no_std path, which has no JSON
    /// form of the input to key.
    ///
    /// ```
    /// # use cairnloop::{Invocation, Tool};
    /// # use cairnloop::IdempotencyKey;
    /// fn key<T: Tool>(call: &Invocation<'_, T>) -> Option<IdempotencyKey> { call.run_key() }
    /// ```
    pub fn run_key(&self) -> Option<IdempotencyKey> {
        match &self.key_source {
            KeySource::None => None,
            #[cfg(feature = "serde")]
            KeySource::Known(key) => Some(*key),
            #[cfg(feature = "serde")]
            KeySource::OnDemand {
                dedupe_token,
                derive,
            } => derive(&self.input, self.actor, *dedupe_token),
            #[cfg(not(feature = "serde"))]
            KeySource::Unused(_) => None,
        }
    }

    /// The validated input.
    ///
    /// ```
    /// # use cairnloop::{Invocation, Tool};
    /// fn amount<T: Tool<Input = u64>>(call: &Invocation<'_, T>) -> u64 { *call.input() }
    /// ```
    pub fn input(&self) -> &T::Input {
        &self.input
    }

    /// The actor the call is made for.
    ///
    /// ```
    /// # use cairnloop::{Invocation, Tool};
    /// fn account<'a, T: Tool>(call: &Invocation<'a, T>) -> Option<&'a str> { call.actor().account() }
    /// ```
    pub fn actor(&self) -> &'a Actor<'a> {
        self.actor
    }

    /// The host's context.
    ///
    /// ```
    /// # use cairnloop::{Invocation, Tool};
    /// struct Db { rows: usize }
    /// fn rows<T: Tool<Context = Db>>(call: &Invocation<'_, T>) -> usize { call.context().rows }
    /// ```
    pub fn context(&self) -> &'a T::Context {
        self.context
    }

    /// The input, taken by value.
    ///
    /// ```
    /// # use cairnloop::{Invocation, Tool};
    /// fn take<T: Tool<Input = String>>(call: Invocation<'_, T>) -> String { call.into_input() }
    /// ```
    pub fn into_input(self) -> T::Input {
        self.input
    }
}

impl<T: Tool + ?Sized> fmt::Debug for Invocation<'_, T>
where
    T::Input: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Invocation")
            .field("tool", &T::SPEC.name())
            .field("input", &self.input)
            .field("actor", self.actor)
            .finish_non_exhaustive()
    }
}
