use alloc::string::String;
use core::fmt;

use crate::declare::{
    Actor, Codec, ErasedInput, InputLimits, Registry, RiskTier, RunFuture, RunKey, ToolEntry,
};
use crate::gate::{Blocked, InputGate, ModePolicy, Subject, Verdict, run_gates};
use crate::json::proposal::Draft;
use crate::json::{Preview, Proposal};

/// What the host sets for every call: the approval-mode overrides and the input limits.
///
/// ```
/// use cairnloop::{ApprovalMode, Governance, ModePolicy, RiskTier, declare::InputLimits};
///
/// const GOVERNANCE: Governance<()> = Governance::new()
///     .with_mode_policy(ModePolicy::new().with_tier(RiskTier::LowWrite, ApprovalMode::AlwaysBlock))
///     .with_limits(InputLimits::new().with_max_bytes(8 * 1024));
/// assert_eq!(GOVERNANCE.limits().max_bytes(), 8192);
/// ```
pub struct Governance<C: ?Sized> {
    mode_policy: ModePolicy<C>,
    limits: InputLimits,
}

impl<C: ?Sized> Governance<C> {
    /// No overrides and the default [`InputLimits`].
    ///
    /// ```
    /// assert_eq!(cairnloop::Governance::<()>::new().limits(), &cairnloop::declare::InputLimits::new());
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            mode_policy: ModePolicy::new(),
            limits: InputLimits::new(),
        }
    }

    /// Sets the approval-mode overrides (which only tighten).
    ///
    /// ```
    /// # use cairnloop::{Governance, ModePolicy};
    /// let governance = Governance::<()>::new().with_mode_policy(ModePolicy::new());
    /// ```
    #[must_use]
    pub const fn with_mode_policy(self, mode_policy: ModePolicy<C>) -> Self {
        Self {
            mode_policy,
            limits: self.limits,
        }
    }

    /// Sets the input limits.
    ///
    /// ```
    /// # use cairnloop::{Governance, declare::InputLimits};
    /// let governance = Governance::<()>::new().with_limits(InputLimits::new().with_max_depth(4));
    /// assert_eq!(governance.limits().max_depth(), 4);
    /// ```
    #[must_use]
    pub const fn with_limits(self, limits: InputLimits) -> Self {
        Self {
            mode_policy: self.mode_policy,
            limits,
        }
    }

    /// The approval-mode overrides.
    ///
    /// ```
    /// # use cairnloop::{ApprovalMode, Governance, RiskTier};
    /// assert_eq!(Governance::<()>::new().mode_policy().tier_floor(RiskTier::ReadOnly), ApprovalMode::Auto);
    /// ```
    #[must_use]
    pub const fn mode_policy(&self) -> &ModePolicy<C> {
        &self.mode_policy
    }

    /// The input limits.
    ///
    /// ```
    /// assert_eq!(cairnloop::Governance::<()>::new().limits().max_depth(), 32);
    /// ```
    #[must_use]
    pub const fn limits(&self) -> &InputLimits {
        &self.limits
    }
}

impl<C: ?Sized> Clone for Governance<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: ?Sized> Copy for Governance<C> {}

impl<C: ?Sized> Default for Governance<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: ?Sized> fmt::Debug for Governance<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Governance")
            .field("mode_policy", &self.mode_policy)
            .field("limits", &self.limits)
            .finish()
    }
}

/// A tool call as a model proposed it: a name and the JSON text of the arguments, both
/// untrusted, and an optional dedupe token chosen by the host.
///
/// ```
/// let call = cairnloop::ToolCall::new("lookup_order", r#"{"order": 1001}"#).with_dedupe_token("turn-7");
/// assert_eq!(call.name(), "lookup_order");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolCall<'a> {
    name: &'a str,
    arguments: &'a str,
    dedupe_token: Option<&'a str>,
}

impl<'a> ToolCall<'a> {
    /// A call of the tool named `name` with `arguments`, the JSON text of an object.
    ///
    /// ```
    /// let call = cairnloop::ToolCall::new("ping", "{}");
    /// assert_eq!(call.arguments(), "{}");
    /// ```
    #[must_use]
    pub const fn new(name: &'a str, arguments: &'a str) -> Self {
        Self {
            name,
            arguments,
            dedupe_token: None,
        }
    }

    /// Adds a dedupe token: part of the idempotency key, so that a deliberate repeat of
    /// the same call is a new call.
    ///
    /// ```
    /// let call = cairnloop::ToolCall::new("ping", "{}").with_dedupe_token("2");
    /// assert_eq!(call.dedupe_token(), Some("2"));
    /// ```
    #[must_use]
    pub const fn with_dedupe_token(self, token: &'a str) -> Self {
        Self {
            dedupe_token: Some(token),
            ..self
        }
    }

    /// The requested tool name.
    ///
    /// ```
    /// assert_eq!(cairnloop::ToolCall::new("ping", "{}").name(), "ping");
    /// ```
    #[must_use]
    pub const fn name(&self) -> &'a str {
        self.name
    }

    /// The argument text.
    ///
    /// ```
    /// assert_eq!(cairnloop::ToolCall::new("ping", "[]").arguments(), "[]");
    /// ```
    #[must_use]
    pub const fn arguments(&self) -> &'a str {
        self.arguments
    }

    /// The dedupe token, if any.
    ///
    /// ```
    /// assert_eq!(cairnloop::ToolCall::new("ping", "{}").dedupe_token(), None);
    /// ```
    #[must_use]
    pub const fn dedupe_token(&self) -> Option<&'a str> {
        self.dedupe_token
    }
}

/// A call by name that passed gate 1: the tool it resolved to, the functions that call it
/// by name, and its input, decoded once and kept type-erased for the run or the proposal.
pub(crate) struct Admitted<C: ?Sized + 'static> {
    pub(crate) entry: &'static ToolEntry<C>,
    pub(crate) codec: &'static dyn Codec<C>,
    pub(crate) input: ErasedInput,
    /// Why the tool's rule raised this call above the tool's tier, when it raised it and
    /// said why.
    pub(crate) raised_because: Option<String>,
}

/// The gates' verdict on a call by name, with the tool it resolved to (`None` for an
/// unknown name). A verdict that is not blocked carries everything needed to go on.
pub(crate) fn gate_call<C: ?Sized + 'static>(
    registry: &Registry<C>,
    call: &ToolCall<'_>,
    actor: &Actor<'_>,
    context: &C,
    governance: &Governance<C>,
) -> (Option<&'static ToolEntry<C>>, Verdict<Admitted<C>>) {
    // A tool withdrawn by its upstream is not there for a caller.
    let entry = registry.get(call.name()).filter(|entry| entry.is_offered());
    let verdict = run_gates(
        entry.map(Subject::of),
        ByName {
            entry,
            arguments: call.arguments(),
            limits: governance.limits(),
            actor,
        },
        actor,
        context,
        governance.mode_policy(),
    );
    (entry, verdict)
}

/// Gate 1 of a call by name: its argument text, through the tool's codec.
struct ByName<'a, C: ?Sized + 'static> {
    entry: Option<&'static ToolEntry<C>>,
    arguments: &'a str,
    limits: &'a InputLimits,
    /// Who calls: a tool's tier rule may read it.
    actor: &'a Actor<'a>,
}

impl<C: ?Sized + 'static> ByName<'_, C> {
    fn codec(&self) -> Result<(&'static ToolEntry<C>, &'static dyn Codec<C>), Blocked> {
        let entry = self.entry.ok_or(Blocked::UnknownTool)?;
        Ok((entry, entry.codec().ok_or(Blocked::NotCallableByName)?))
    }
}

impl<C: ?Sized + 'static> InputGate for ByName<'_, C> {
    type Input = Admitted<C>;

    fn decode(self) -> Result<(Admitted<C>, Option<RiskTier>), Blocked> {
        let (entry, codec) = self.codec()?;
        let input = codec
            .decode(self.arguments, self.limits)
            .map_err(|errors| Blocked::NeedsInput { errors })?;
        let asked = codec
            .tier(&input, self.actor)
            .map_err(|()| Blocked::TierRuleFailed)?;
        let declared = entry.spec().risk_tier();
        let (asked, raised_because) = match asked {
            Some((tier, because)) => (Some(tier), because.filter(|_| tier > declared)),
            None => (None, None),
        };
        let admitted = Admitted {
            entry,
            codec,
            input,
            raised_because,
        };
        Ok((admitted, asked))
    }

    fn check(self) -> Result<(), Blocked> {
        let (_, codec) = self.codec()?;
        codec
            .check(self.arguments, self.limits)
            .map_err(|errors| Blocked::NeedsInput { errors })
    }
}

/// Runs a call by name that passed the gates: through the tool's codec, which calls the
/// one function that runs a tool. The run key is derived only if the tool asks for it.
pub(crate) fn run_ready<'a, C: ?Sized + 'static>(
    codec: &'a dyn Codec<C>,
    input: ErasedInput,
    actor: &'a Actor<'a>,
    context: &'a C,
    key: RunKey<'a>,
) -> RunFuture<'a> {
    codec.run(input, actor, context, key)
}

/// The proposal for a call by name that awaits approval: the only place (with the typed
/// twin in the governor) where a call's canonical form and idempotency key are computed.
#[allow(
    clippy::too_many_arguments,
    reason = "each argument has its own type, so none can be swapped unnoticed"
)]
pub(crate) fn propose_call<C: ?Sized + 'static>(
    entry: &ToolEntry<C>,
    codec: &dyn Codec<C>,
    input: &ErasedInput,
    actor: &Actor<'_>,
    keyed: Keyed<'_>,
    mode: crate::gate::ModeResolution,
    policy: &ModePolicy<C>,
    raised_because: Option<String>,
) -> Proposal {
    let spec = entry.spec();
    let mut own = String::new();
    let own_preview = match codec.preview(input, &mut own) {
        Some(Ok(())) => Some(own),
        // No preview, or one that failed to write: the fallback never fails.
        _ => None,
    };
    Proposal::from_draft(Draft {
        spec,
        scopes: entry.scopes(),
        actor,
        dedupe_token: keyed.dedupe_token,
        input: keyed.canonical,
        idempotency_key: keyed.key,
        own_preview,
        fallback: keyed.fallback,
        host_floor: policy.tier_floor(mode.tier()),
        mode,
        raised_because,
    })
}

/// A call that awaits approval, as far as finding its lane needs: its input as canonical
/// JSON and its key (and a flat input's fallback preview, written on the way). A repeated
/// call stops here (one store lookup finds its lane); only a new one goes on to the
/// tool's own preview and the snapshots ([`propose_call`]).
pub(crate) struct Keyed<'a> {
    pub(crate) canonical: String,
    /// The fallback preview, when the canonical writer wrote it on its way.
    pub(crate) fallback: Option<String>,
    pub(crate) key: crate::declare::IdempotencyKey,
    pub(crate) dedupe_token: Option<&'a str>,
}

/// The canonical input and key of a call that awaits approval; the error when the input
/// cannot be written as JSON. Given the mode it awaits approval in, also the fallback
/// preview of a flat input, written with its canonical text (so a repeat whose text
/// differs pays for its rows, never for a preview read from the text, or the tool's).
pub(crate) fn keyed_call<'a, C: ?Sized + 'static>(
    entry: &ToolEntry<C>,
    codec: &dyn Codec<C>,
    input: &ErasedInput,
    actor: &Actor<'_>,
    dedupe_token: Option<&'a str>,
    mode: Option<&crate::gate::ModeResolution>,
) -> Result<Keyed<'a>, String> {
    let head = mode.map(|mode| Preview::fallback_head(entry.spec(), entry.scopes(), mode));
    let (canonical, fallback) = codec.canonical_with_preview(input, head)?;
    let key = crate::declare::IdempotencyKey::for_canonical_call(
        entry.spec().name(),
        &canonical,
        Some(actor.id()),
        actor.account(),
        dedupe_token,
    );
    Ok(Keyed {
        canonical,
        fallback,
        key,
        dedupe_token,
    })
}

/// The key a call that awaits approval is proposed under ([`propose_call`]'s), computed
/// alone: no preview, no snapshots.
pub(crate) fn proposal_key<C: ?Sized + 'static>(
    entry: &ToolEntry<C>,
    codec: &dyn Codec<C>,
    input: &ErasedInput,
    actor: &Actor<'_>,
    dedupe_token: Option<&str>,
) -> Option<crate::declare::IdempotencyKey> {
    keyed_call(entry, codec, input, actor, dedupe_token, None)
        .ok()
        .map(|keyed| keyed.key)
}

/// Decodes the stored canonical input of an approved call, for the run.
pub(crate) fn decode_stored<C: ?Sized + 'static>(
    codec: &dyn Codec<C>,
    input: &str,
    limits: &InputLimits,
) -> Result<ErasedInput, Blocked> {
    codec
        .decode(input, limits)
        .map_err(|errors| Blocked::NeedsInput { errors })
}
