use core::fmt;
use core::future::Future;

use crate::declare::{
    Actor, ApprovalMode, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolEntry,
    ToolSpec,
};
use crate::gate::{MissingScopes, ModePolicy, ModeResolution, ModeSource, check_scopes};

/// Why the pipeline blocked a call. The first failing gate wins, in this order:
/// unknown tool, input, scopes, policy, approval mode.
///
/// The `Display` text is fit for the model and for an operator: it names the gate and the
/// tool author's reason, never internals.
///
/// ```
/// use cairnloop::{Blocked, PolicyDenial};
///
/// let blocked = Blocked::PolicyDenied { reason: PolicyDenial::NoPolicyDefined };
/// assert_eq!(blocked.code(), "policy_denied");
/// assert_eq!(blocked.to_string(), "policy denied: no policy defined");
/// ```
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "code", rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Blocked {
    /// Gate 0: no tool has exactly this name.
    #[error("unknown tool")]
    UnknownTool,
    /// Gate 0: the tool is registered for typed calls only
    /// ([`ToolEntry::of`](crate::ToolEntry::of), not `ToolEntry::json`).
    #[error("this tool cannot be called by name")]
    NotCallableByName,
    /// Gate 1: the input is invalid; every field error found.
    #[error("invalid input: {errors}")]
    NeedsInput {
        /// The field errors.
        errors: InputErrors,
    },
    /// Gate 2: required scopes are not granted.
    #[error("missing scope: {missing}")]
    ScopeMissing {
        /// The missing scopes, in declared order.
        missing: MissingScopes,
    },
    /// Gate 3: the tool's policy refused.
    #[error("policy denied: {reason}")]
    PolicyDenied {
        /// The policy's reason.
        reason: PolicyDenial,
    },
    /// Gate 4: the approval mode in force is `AlwaysBlock`.
    ///
    /// ```
    /// use cairnloop::{Blocked, gate::ModeSource};
    /// let tool = Blocked::AlwaysBlocked { decided_by: ModeSource::Spec };
    /// assert_eq!(tool.to_string(), "this tool is blocked and never runs");
    /// let call = Blocked::AlwaysBlocked { decided_by: ModeSource::CallTier };
    /// assert_eq!(call.to_string(), "this call is destructive by its input, and never runs");
    /// ```
    #[error("{}", if matches!(decided_by, ModeSource::CallTier) {
        "this call is destructive by its input, and never runs"
    } else {
        "this tool is blocked and never runs"
    })]
    AlwaysBlocked {
        /// Which source set `AlwaysBlock`.
        decided_by: ModeSource,
    },
    /// The tool's rule for a call's tier ([`Tool::risk_tier_for`]) failed (it panicked):
    /// the call's risk is not known, so it does not run.
    #[error("the tool's rule for this call's risk tier failed")]
    TierRuleFailed,
}

impl Blocked {
    /// A stable machine code: `unknown_tool`, `needs_input`, `scope_missing`,
    /// `policy_denied` or `always_blocked`.
    ///
    /// ```
    /// assert_eq!(cairnloop::Blocked::UnknownTool.code(), "unknown_tool");
    /// ```
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::NotCallableByName => "not_callable_by_name",
            Self::NeedsInput { .. } => "needs_input",
            Self::ScopeMissing { .. } => "scope_missing",
            Self::PolicyDenied { .. } => "policy_denied",
            Self::AlwaysBlocked { .. } => "always_blocked",
            Self::TierRuleFailed => "tier_rule_failed",
        }
    }
}

impl fmt::Debug for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTool => f.write_str("UnknownTool"),
            Self::NotCallableByName => f.write_str("NotCallableByName"),
            Self::NeedsInput { errors } => f.debug_tuple("NeedsInput").field(errors).finish(),
            Self::ScopeMissing { missing } => f.debug_tuple("ScopeMissing").field(missing).finish(),
            Self::PolicyDenied { reason } => f.debug_tuple("PolicyDenied").field(reason).finish(),
            Self::AlwaysBlocked { decided_by } => {
                f.debug_tuple("AlwaysBlocked").field(decided_by).finish()
            }
            Self::TierRuleFailed => f.write_str("TierRuleFailed"),
        }
    }
}

/// A call that passed every gate but needs a human's approval before it may run.
///
/// It holds the validated input, and nothing can run it. A host with `std` hands the
/// call to its [`Governor`](crate::Governor) instead (`Governor::call_typed`), which
/// records the proposal so that a human can approve it and the approved call can run once;
/// here, without `alloc`, a `Pending` shows what would be proposed (its mode and preview).
///
/// ```
/// use cairnloop::{Actor, Decision, InputErrors, Invocation, ModePolicy, PolicyDenial, RiskTier, Scope, Tool, ToolSpec, decide};
///
/// struct Refund;
/// impl Tool for Refund {
///     const SPEC: ToolSpec = ToolSpec::new("refund", "Refund", "Refunds an order.", RiskTier::HighWrite);
///     const SCOPES: &'static [Scope] = &[];
///     type Input = u32; type Output = (); type Error = (); type Context = ();
///     fn validate(_: &u32) -> Result<(), InputErrors> { Ok(()) }
///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
///     fn preview(cents: &u32, out: &mut dyn core::fmt::Write) -> Option<core::fmt::Result> {
///         Some(write!(out, "Refund {cents} cents"))
///     }
///     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
/// }
///
/// let actor = Actor::new("agent", &[]);
/// let Decision::AwaitApproval(pending) = decide::<Refund>(1250, &actor, &(), &ModePolicy::new()) else {
///     unreachable!("a high-write tool waits for approval");
/// };
/// let mut preview = String::new();
/// pending.write_preview(&mut preview);
/// assert_eq!(preview, "Refund 1250 cents");
/// ```
pub struct Pending<'a, T: Tool + ?Sized> {
    call: Invocation<'a, T>,
    mode: ModeResolution,
}

impl<'a, T: Tool + ?Sized> Pending<'a, T> {
    /// The validated input awaiting approval.
    ///
    /// ```
    /// # use cairnloop::{Tool, gate::Pending};
    /// fn show<T: Tool<Input = u32>>(pending: &Pending<'_, T>) -> u32 { *pending.input() }
    /// ```
    pub fn input(&self) -> &T::Input {
        self.call.input()
    }

    /// The actor the call is for.
    ///
    /// ```
    /// # use cairnloop::{Tool, gate::Pending};
    /// fn who<'a, T: Tool>(pending: &Pending<'a, T>) -> &'a str { pending.actor().id() }
    /// ```
    pub fn actor(&self) -> &'a Actor<'a> {
        self.call.actor()
    }

    /// How the approval mode was resolved.
    ///
    /// ```
    /// # use cairnloop::{ApprovalMode, Tool, gate::Pending};
    /// fn mode<T: Tool>(pending: &Pending<'_, T>) -> ApprovalMode { pending.mode().resolved() }
    /// ```
    pub fn mode(&self) -> &ModeResolution {
        &self.mode
    }

    /// Writes the tool's own preview of the call to `out`; `None` when the tool has none.
    ///
    /// ```
    /// # use cairnloop::{Tool, gate::Pending};
    /// fn has_preview<T: Tool>(pending: &Pending<'_, T>) -> bool {
    ///     let mut sink = String::new();
    ///     pending.write_preview(&mut sink).is_some()
    /// }
    /// ```
    pub fn write_preview(&self, out: &mut dyn fmt::Write) -> Option<fmt::Result> {
        T::preview(self.call.input(), out)
    }

    /// The call, to run once: only for a lane whose approval was just claimed (a device's
    /// lane table, after its `start_execution` move).
    #[cfg(feature = "device")]
    pub(crate) fn into_approved_call(self) -> Invocation<'a, T> {
        self.call
    }
}

impl<T: Tool + ?Sized> fmt::Debug for Pending<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending")
            .field("tool", &T::SPEC.name())
            .field("actor", &self.call.actor().id())
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// What the pipeline says of one call: execute, await a human's approval, or block.
///
/// ```
/// use cairnloop::{Actor, Blocked, Decision, InputErrors, Invocation, ModePolicy, RiskTier, Scope, Tool, ToolSpec, decide};
///
/// struct Forgotten; // no `authorize`: denied by default
/// impl Tool for Forgotten {
///     const SPEC: ToolSpec = ToolSpec::new("forgotten", "Forgotten", "Has no policy.", RiskTier::ReadOnly);
///     const SCOPES: &'static [Scope] = &[];
///     type Input = (); type Output = (); type Error = (); type Context = ();
///     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
///     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
/// }
///
/// let actor = Actor::new("a", &[]);
/// let decision = decide::<Forgotten>((), &actor, &(), &ModePolicy::new());
/// assert!(matches!(decision, Decision::Blocked(Blocked::PolicyDenied { .. })));
/// ```
#[must_use = "a decision that is not acted on does nothing"]
pub enum Decision<'a, T: Tool + ?Sized> {
    /// Every gate passed and the mode is `Auto`: run it with [`execute`].
    Execute {
        /// The proof that the call was allowed.
        call: Invocation<'a, T>,
        /// How the approval mode was resolved.
        mode: ModeResolution,
    },
    /// Every gate passed and the mode is `RequiresApproval`.
    AwaitApproval(Pending<'a, T>),
    /// A gate failed.
    Blocked(Blocked),
}

impl<T: Tool + ?Sized> Decision<'_, T> {
    /// A stable machine code: `execute`, `await_approval` or `blocked`.
    ///
    /// ```
    /// # use cairnloop::{Decision, Tool};
    /// fn label<T: Tool>(decision: &Decision<'_, T>) -> &'static str { decision.code() }
    /// ```
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Execute { .. } => "execute",
            Self::AwaitApproval(_) => "await_approval",
            Self::Blocked(_) => "blocked",
        }
    }
}

impl<T: Tool + ?Sized> fmt::Debug for Decision<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Execute { mode, .. } => f
                .debug_struct("Execute")
                .field("tool", &T::SPEC.name())
                .field("mode", mode)
                .finish_non_exhaustive(),
            Self::AwaitApproval(pending) => f.debug_tuple("AwaitApproval").field(pending).finish(),
            Self::Blocked(blocked) => f.debug_tuple("Blocked").field(blocked).finish(),
        }
    }
}

/// The typed pipeline: gates 1 to 4 for a call whose input is already of the tool's type.
///
/// Allocates nothing and runs in `no_std`. Gate order, first failure wins:
/// [`Tool::validate`] → [`Blocked::NeedsInput`]; required scopes →
/// [`Blocked::ScopeMissing`]; [`Tool::authorize`] → [`Blocked::PolicyDenied`]; the
/// approval mode resolved by `policy` → [`Blocked::AlwaysBlocked`],
/// [`Decision::AwaitApproval`] or [`Decision::Execute`].
///
/// Building this function for a tool evaluates its `SPEC` and checks its `SCOPES`, so a bad
/// declaration fails `cargo build` even without a registry.
///
/// ```
/// use cairnloop::{Actor, Decision, InputErrors, Invocation, ModePolicy, PolicyDenial, RiskTier, Scope, Tool, ToolSpec, decide};
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
/// let clerk = Actor::new("clerk", &["orders:read"]);
/// let decision = decide::<LookupOrder>(1001, &clerk, &(), &ModePolicy::new());
/// assert_eq!(decision.code(), "execute");
///
/// let guest = Actor::new("guest", &[]);
/// let decision = decide::<LookupOrder>(1001, &guest, &(), &ModePolicy::new());
/// assert!(matches!(decision, Decision::Blocked(b) if b.code() == "scope_missing"));
/// ```
pub fn decide<'a, T: Tool + ?Sized>(
    input: T::Input,
    actor: &'a Actor<'a>,
    context: &'a T::Context,
    policy: &ModePolicy<T::Context>,
) -> Decision<'a, T> {
    // Post-monomorphization checks: a tool reached only through this function still has
    // its declaration checked at build time.
    let spec = const { &T::SPEC };
    const { crate::declare::rules::expect_valid(Scope::check_each(T::SCOPES)) };

    let subject = Subject::new(spec, T::SCOPES, T::authorize);
    let gate = Raising {
        decode: || validated::<T>(input),
        tier: |input: &T::Input| Ok(Some(T::risk_tier_for(input))),
    };
    let verdict = run_gates(Some(subject), gate, actor, context, policy);
    match verdict {
        Verdict::Execute { input, mode } => Decision::Execute {
            call: Invocation::new(input, actor, context),
            mode,
        },
        Verdict::AwaitApproval { input, mode } => Decision::AwaitApproval(Pending {
            call: Invocation::new(input, actor, context),
            mode,
        }),
        Verdict::Blocked(blocked) => Decision::Blocked(blocked),
    }
}

/// Gate 1 for an input that is already of the tool's type: the tool's own validation.
fn validated<T: Tool + ?Sized>(input: T::Input) -> Result<T::Input, Blocked> {
    match T::validate(&input) {
        Ok(()) => Ok(input),
        Err(errors) => Err(Blocked::NeedsInput { errors }),
    }
}

/// The tool a call names, as the gates see it: its spec, required scopes and policy.
pub(crate) struct Subject<'e, C: ?Sized> {
    spec: &'e ToolSpec,
    scopes: &'static [Scope],
    authorize: fn(&Actor<'_>, &C) -> Result<(), PolicyDenial>,
    /// The accounts a caller must act in (a declared tool's rule), part of its policy.
    #[cfg(feature = "declared")]
    accounts: Option<&'static alloc::vec::Vec<alloc::string::String>>,
}

impl<'e, C: ?Sized> Subject<'e, C> {
    pub(crate) const fn new(
        spec: &'e ToolSpec,
        scopes: &'static [Scope],
        authorize: fn(&Actor<'_>, &C) -> Result<(), PolicyDenial>,
    ) -> Self {
        Self {
            spec,
            scopes,
            authorize,
            #[cfg(feature = "declared")]
            accounts: None,
        }
    }

    /// Whether `actor` may call the tool as its policy says: its account rule, if it
    /// has one, then its `authorize`.
    fn authorize(&self, actor: &Actor<'_>, context: &C) -> Result<(), PolicyDenial> {
        #[cfg(feature = "declared")]
        if let Some(accounts) = self.accounts {
            account_rule(accounts, actor)?;
        }
        (self.authorize)(actor, context)
    }
}

/// A declared tool's account rule, out of line: the gates around it stay small enough
/// to be inlined into a listing's loop, where no Rust tool has such a rule.
#[cfg(feature = "declared")]
#[inline(never)]
fn account_rule(accounts: &[alloc::string::String], actor: &Actor<'_>) -> Result<(), PolicyDenial> {
    if accounts
        .iter()
        .any(|account| actor.account() == Some(account.as_str()))
    {
        Ok(())
    } else {
        Err(PolicyDenial::Denied(
            "the tool is offered only to callers acting in other accounts",
        ))
    }
}

impl<C: ?Sized + 'static> Subject<'static, C> {
    /// The registered tool of `entry`.
    pub(crate) fn of(entry: &'static ToolEntry<C>) -> Self {
        #[cfg_attr(not(feature = "declared"), allow(unused_mut))]
        let mut subject = Self::new(entry.spec(), entry.scopes(), entry.authorize_fn());
        #[cfg(feature = "declared")]
        {
            subject.accounts = entry.accounts();
        }
        subject
    }
}

/// What the gates say of one call: execute, await approval (each with the input that
/// passed gate 1 and how the mode was resolved), or blocked with the first failing gate.
///
/// Every entrance (a typed call, a call by name, the listing of what an actor may see, and
/// the re-validation before an approved call runs) gets its answer from the same sequence
/// of gates and so speaks this one type. For a listing, the input is `()`: a tool is
/// listed when its verdict is not blocked.
///
/// ```
/// use cairnloop::gate::Verdict;
///
/// fn callable<I>(verdict: &Verdict<I>) -> bool {
///     !matches!(verdict, Verdict::Blocked(_))
/// }
/// ```
#[derive(Debug)]
pub enum Verdict<I> {
    /// Every gate passed and the mode in force is `Auto`.
    Execute {
        /// The input that passed gate 1.
        input: I,
        /// How the approval mode was resolved.
        mode: ModeResolution,
    },
    /// Every gate passed and the mode in force is `RequiresApproval`.
    AwaitApproval {
        /// The input that passed gate 1.
        input: I,
        /// How the approval mode was resolved.
        mode: ModeResolution,
    },
    /// A gate failed; the first failure in gate order.
    Blocked(Blocked),
}

impl<I> Verdict<I> {
    /// A stable machine code: `execute`, `await_approval` or `blocked`.
    ///
    /// ```
    /// use cairnloop::{Blocked, gate::Verdict};
    ///
    /// assert_eq!(Verdict::<()>::Blocked(Blocked::UnknownTool).code(), "blocked");
    /// ```
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Execute { .. } => "execute",
            Self::AwaitApproval { .. } => "await_approval",
            Self::Blocked(_) => "blocked",
        }
    }

    /// How the approval mode in force was resolved, for a verdict that lets the call
    /// through; `None` for a blocked one.
    ///
    /// ```
    /// use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, gate::Verdict};
    /// # use cairnloop::{InputErrors, Invocation, Registry, Scope, Tool, ToolEntry, ToolSpec};
    /// # struct Lookup;
    /// # impl Tool for Lookup {
    /// #     const SPEC: ToolSpec = ToolSpec::new("lookup", "Look up", "Finds.", RiskTier::ReadOnly);
    /// #     const SCOPES: &'static [Scope] = &[];
    /// #     type Input = (); type Output = (); type Error = String; type Context = ();
    /// #     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), cairnloop::PolicyDenial> { Ok(()) }
    /// #     async fn run(_: Invocation<'_, Self>) -> Result<(), String> { Ok(()) }
    /// # }
    /// static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<Lookup>()]);
    /// // The host wants a person to approve even reads.
    /// let policy = ModePolicy::new().with_tier(RiskTier::ReadOnly, ApprovalMode::RequiresApproval);
    /// let actor = Actor::new("agent", &[]);
    /// let (_, verdict) = cairnloop::gate::verdicts(&TOOLS, &actor, &(), &policy).next().unwrap();
    /// assert_eq!(verdict.mode().map(|mode| mode.resolved()), Some(ApprovalMode::RequiresApproval));
    /// ```
    #[must_use]
    pub const fn mode(&self) -> Option<&ModeResolution> {
        match self {
            Self::Execute { mode, .. } | Self::AwaitApproval { mode, .. } => Some(mode),
            Self::Blocked(_) => None,
        }
    }
}

/// Gate 1 of [`run_gates`]: the call's input, decoded and validated. An input that gate 2
/// or 3 will block anyway is only checked, not kept (a call by name then builds no
/// type-erased input).
pub(crate) trait InputGate {
    /// What the call goes on with.
    type Input;

    /// The input, decoded and validated → `NeedsInput` (or what it says); and the tier
    /// it asks for, if the tool has a rule for it (→ `TierRuleFailed` when it failed).
    fn decode(self) -> Result<(Self::Input, Option<RiskTier>), Blocked>;

    /// The same verdict as [`InputGate::decode`], without keeping the input.
    fn check(self) -> Result<(), Blocked>;
}

impl<I, F: FnOnce() -> Result<I, Blocked>> InputGate for F {
    type Input = I;

    fn decode(self) -> Result<(I, Option<RiskTier>), Blocked> {
        self().map(|input| (input, None))
    }

    fn check(self) -> Result<(), Blocked> {
        self().map(drop)
    }
}

/// An input gate (`decode`) and the tool's rule for the call's tier (`tier`, asked once
/// the input is valid).
pub(crate) struct Raising<F, R> {
    pub(crate) decode: F,
    pub(crate) tier: R,
}

impl<I, F, R> InputGate for Raising<F, R>
where
    F: FnOnce() -> Result<I, Blocked>,
    R: FnOnce(&I) -> Result<Option<RiskTier>, Blocked>,
{
    type Input = I;

    fn decode(self) -> Result<(I, Option<RiskTier>), Blocked> {
        let input = (self.decode)()?;
        let tier = (self.tier)(&input)?;
        Ok((input, tier))
    }

    fn check(self) -> Result<(), Blocked> {
        (self.decode)().map(drop)
    }
}

/// The gate sequence, the one place it is written. In order, the first failure wins:
/// 0. the tool resolved (`subject` is `None` for a name no tool has) → `UnknownTool`;
/// 1. `input` decodes and validates the call's input → `NeedsInput` (or what it says);
/// 2. every required scope granted exactly → `ScopeMissing`;
/// 3. the tool's policy → `PolicyDenied`;
/// 4. the strictest mode of spec, host tier floor and hook → `AlwaysBlocked`, else
///    execute (`Auto`) or await approval.
///
/// Gates 2 and 3 need no input (a policy sees the actor and the context only), so they
/// are decided first; the answer still follows the order above.
#[inline]
pub(crate) fn run_gates<G: InputGate, C: ?Sized>(
    subject: Option<Subject<'_, C>>,
    input: G,
    actor: &Actor<'_>,
    context: &C,
    policy: &ModePolicy<C>,
) -> Verdict<G::Input> {
    let Some(subject) = subject else {
        return Verdict::Blocked(Blocked::UnknownTool);
    };
    // A call that gate 2 or 3 blocks has its input checked, not kept: an invalid input
    // is still the answer reported first.
    if let Err(missing) = check_scopes(subject.scopes, actor) {
        let blocked = input.check().err();
        return Verdict::Blocked(blocked.unwrap_or(Blocked::ScopeMissing { missing }));
    }
    if let Err(reason) = subject.authorize(actor, context) {
        let blocked = input.check().err();
        return Verdict::Blocked(blocked.unwrap_or(Blocked::PolicyDenied { reason }));
    }
    let (input, asked) = match input.decode() {
        Ok(decoded) => decoded,
        Err(blocked) => return Verdict::Blocked(blocked),
    };
    let mode = policy.resolve_call(subject.spec, asked, actor, context);
    match mode.resolved() {
        ApprovalMode::AlwaysBlock => Verdict::Blocked(Blocked::AlwaysBlocked {
            decided_by: mode.source(),
        }),
        ApprovalMode::RequiresApproval => Verdict::AwaitApproval { input, mode },
        ApprovalMode::Auto => Verdict::Execute { input, mode },
    }
}

/// The verdict on `entry` for `actor` without an input: gates 2 to 4, through the same
/// sequence as a call. What a listing shows.
///
/// ```
/// use cairnloop::{Actor, InputErrors, Invocation, ModePolicy, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
/// use cairnloop::gate::{Verdict, verdict_for};
///
/// struct Forgotten; // no `authorize`: denied by default
/// impl Tool for Forgotten {
///     const SPEC: ToolSpec = ToolSpec::new("forgotten", "Forgotten", "Has no policy.", RiskTier::ReadOnly);
///     const SCOPES: &'static [Scope] = &[];
///     type Input = (); type Output = (); type Error = (); type Context = ();
///     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
///     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
/// }
/// static FORGOTTEN: ToolEntry<()> = ToolEntry::of::<Forgotten>();
/// let verdict = verdict_for(&FORGOTTEN, &Actor::new("a", &[]), &(), &ModePolicy::new());
/// assert_eq!(verdict.code(), "blocked");
/// ```
pub fn verdict_for<C: ?Sized + 'static>(
    entry: &'static ToolEntry<C>,
    actor: &Actor<'_>,
    context: &C,
    policy: &ModePolicy<C>,
) -> Verdict<()> {
    run_gates(Some(Subject::of(entry)), || Ok(()), actor, context, policy)
}

/// Runs an allowed call: the one place in this crate that calls [`Tool::run`]. It takes
/// the [`Invocation`] by value, so a proof runs at most once.
///
/// ```
/// # use cairnloop::{Actor, Decision, InputErrors, Invocation, ModePolicy, PolicyDenial, RiskTier, Scope, Tool, ToolSpec, decide, execute};
/// # struct Echo;
/// # impl Tool for Echo {
/// #     const SPEC: ToolSpec = ToolSpec::new("echo", "Echo", "Echoes.", RiskTier::ReadOnly);
/// #     const SCOPES: &'static [Scope] = &[];
/// #     type Input = u32; type Output = u32; type Error = (); type Context = ();
/// #     fn validate(_: &u32) -> Result<(), InputErrors> { Ok(()) }
/// #     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
/// #     async fn run(call: Invocation<'_, Self>) -> Result<u32, ()> { Ok(call.into_input()) }
/// # }
/// let actor = Actor::new("a", &[]);
/// if let Decision::Execute { call, .. } = decide::<Echo>(7, &actor, &(), &ModePolicy::new()) {
///     let output = futures_lite_block_on(execute(call));
///     assert_eq!(output, Ok(7));
/// }
/// # fn futures_lite_block_on<F: core::future::Future>(f: F) -> F::Output {
/// #     let mut f = core::pin::pin!(f);
/// #     let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
/// #     loop { if let core::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
/// # }
/// ```
pub fn execute<T: Tool + ?Sized>(
    call: Invocation<'_, T>,
) -> impl Future<Output = Result<T::Output, T::Error>> + Send {
    T::run(call)
}
