use core::fmt;

use crate::declare::{Actor, ApprovalMode, RiskTier, ToolSpec};

/// A run-time hook that may demand a stricter approval mode for one call (a tenant in
/// incident mode, a call outside business hours). It can only tighten: the pipeline takes
/// the strictest of the spec, the tier override and the hook.
///
/// ```
/// use cairnloop::{Actor, ApprovalMode, ToolSpec, gate::ModeHook};
///
/// fn outside_business_hours(spec: &ToolSpec, _: &Actor<'_>, clock: &u8) -> ApprovalMode {
///     let hour = *clock;
///     if spec.is_open_world() && !(9..17).contains(&hour) {
///         ApprovalMode::RequiresApproval
///     } else {
///         ApprovalMode::Auto
///     }
/// }
/// const HOOK: ModeHook<u8> = outside_business_hours;
/// ```
pub type ModeHook<C> = fn(&ToolSpec, &Actor<'_>, &C) -> ApprovalMode;

/// The host's part of gate 4: a minimum approval mode per risk tier and an optional
/// [`ModeHook`]. Both only tighten what a tool's spec says.
///
/// ```
/// use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, ToolSpec, gate::ModeSource};
///
/// // This host wants a human on every write, and blocks high-risk writes entirely.
/// const POLICY: ModePolicy<()> = ModePolicy::new()
///     .with_tier(RiskTier::HighWrite, ApprovalMode::AlwaysBlock);
///
/// let refund = ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::HighWrite);
/// let mode = POLICY.resolve(&refund, &Actor::new("a", &[]), &());
/// assert_eq!(mode.resolved(), ApprovalMode::AlwaysBlock);
/// assert_eq!(mode.source(), ModeSource::TierOverride);
///
/// // An override can never loosen: asking for `Auto` leaves the spec's mode in force.
/// const LAX: ModePolicy<()> = ModePolicy::new().with_tier(RiskTier::HighWrite, ApprovalMode::Auto);
/// assert_eq!(LAX.resolve(&refund, &Actor::new("a", &[]), &()).resolved(), ApprovalMode::RequiresApproval);
/// ```
pub struct ModePolicy<C: ?Sized> {
    tier_floor: [ApprovalMode; 4],
    tier_quorum: [u8; 4],
    hook: Option<ModeHook<C>>,
}

impl<C: ?Sized> ModePolicy<C> {
    /// No overrides: every tool's spec decides.
    ///
    /// ```
    /// # use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly);
    /// let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
    /// assert_eq!(mode.resolved(), ApprovalMode::Auto);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            tier_floor: [ApprovalMode::Auto; 4],
            tier_quorum: [1; 4],
            hook: None,
        }
    }

    /// Demands at least `mode` for every tool of `tier`. A mode weaker than what a spec
    /// already says has no effect.
    ///
    /// ```
    /// # use cairnloop::{ApprovalMode, ModePolicy, RiskTier};
    /// const P: ModePolicy<()> = ModePolicy::new().with_tier(RiskTier::ReadOnly, ApprovalMode::RequiresApproval);
    /// assert_eq!(P.tier_floor(RiskTier::ReadOnly), ApprovalMode::RequiresApproval);
    /// ```
    #[must_use]
    pub const fn with_tier(mut self, tier: RiskTier, mode: ApprovalMode) -> Self {
        let i = tier as usize;
        self.tier_floor[i] = self.tier_floor[i].strictest(mode);
        self
    }

    /// Asks at least `n` approvers of every call of `tier` that waits for a person (a
    /// tool's own [`quorum`](ToolSpec::quorum) may ask more). A call's tier is its own: a
    /// call the tool's rule raised to `tier` needs this quorum too. `n` is 1 to
    /// [`MAX_QUORUM`](crate::declare::MAX_QUORUM): outside it, a `const` fails to compile
    /// (and the call panics at run time).
    ///
    /// ```
    /// # use cairnloop::{Actor, ModePolicy, RiskTier, ToolSpec};
    /// const P: ModePolicy<()> = ModePolicy::new().with_quorum(RiskTier::HighWrite, 2);
    /// let deploy = ToolSpec::new("deploy", "Deploy", "Deploys.", RiskTier::HighWrite);
    /// assert_eq!(P.resolve(&deploy, &Actor::new("a", &[]), &()).quorum(), 2);
    /// ```
    #[must_use]
    #[track_caller]
    pub const fn with_quorum(mut self, tier: RiskTier, n: u8) -> Self {
        assert!(
            n >= 1 && n <= crate::declare::MAX_QUORUM,
            "a quorum is 1 to 5 approvers"
        );
        self.tier_quorum[tier as usize] = n;
        self
    }

    /// The fewest approvers this policy asks of a waiting call of `tier`.
    ///
    /// ```
    /// # use cairnloop::{ModePolicy, RiskTier};
    /// assert_eq!(ModePolicy::<()>::new().tier_quorum(RiskTier::HighWrite), 1);
    /// ```
    #[must_use]
    pub const fn tier_quorum(&self, tier: RiskTier) -> u8 {
        self.tier_quorum[tier as usize]
    }

    /// Adds a run-time hook consulted on every call (replacing an earlier one).
    ///
    /// ```
    /// # use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, ToolSpec, gate::ModeSource};
    /// fn frozen(_: &ToolSpec, actor: &Actor<'_>, _: &()) -> ApprovalMode {
    ///     if actor.account() == Some("frozen-co") { ApprovalMode::AlwaysBlock } else { ApprovalMode::Auto }
    /// }
    /// const P: ModePolicy<()> = ModePolicy::new().with_hook(frozen);
    /// let spec = ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly);
    /// let actor = Actor::new("a", &[]).with_account("frozen-co");
    /// assert_eq!(P.resolve(&spec, &actor, &()).source(), ModeSource::Hook);
    /// ```
    #[must_use]
    pub const fn with_hook(self, hook: ModeHook<C>) -> Self {
        Self {
            hook: Some(hook),
            ..self
        }
    }

    /// The minimum mode this policy demands for `tier`.
    ///
    /// ```
    /// # use cairnloop::{ApprovalMode, ModePolicy, RiskTier};
    /// assert_eq!(ModePolicy::<()>::new().tier_floor(RiskTier::Destructive), ApprovalMode::Auto);
    /// ```
    #[must_use]
    pub const fn tier_floor(&self, tier: RiskTier) -> ApprovalMode {
        self.tier_floor[tier as usize]
    }

    /// Gate 4: the strictest of the spec's mode, this policy's floor for the tier and the
    /// hook's answer, with where it came from. On a tie the earlier source is named (the
    /// spec, then the tier override, then the hook).
    ///
    /// ```
    /// # use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, ToolSpec, gate::ModeSource};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
    /// let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
    /// assert_eq!(mode.declared(), ApprovalMode::RequiresApproval);
    /// assert_eq!(mode.source(), ModeSource::Spec);
    /// ```
    pub fn resolve(&self, spec: &ToolSpec, actor: &Actor<'_>, context: &C) -> ModeResolution {
        self.resolve_call(spec, None, actor, context)
    }

    /// Gate 4 for a call whose input asked for `asked` (the tool's
    /// [`risk_tier_for`](crate::Tool::risk_tier_for)): the call's tier is the higher of
    /// the spec's and `asked` (a lower one is ignored, and kept to be recorded), and the
    /// rest of the gate sees that tier: its derived mode, the host's floor for it, and the
    /// hook (given the spec at that tier).
    ///
    /// ```
    /// # use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, ToolSpec, gate::ModeSource};
    /// let spec = ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::LowWrite)
    ///     .loosen_approval(ApprovalMode::Auto, "small refunds");
    /// let policy = ModePolicy::<()>::new();
    /// let large = policy.resolve_call(&spec, Some(RiskTier::HighWrite), &Actor::new("a", &[]), &());
    /// assert_eq!((large.tier(), large.resolved()), (RiskTier::HighWrite, ApprovalMode::RequiresApproval));
    /// assert_eq!(large.source(), ModeSource::CallTier);
    /// let lower = policy.resolve_call(&spec, Some(RiskTier::ReadOnly), &Actor::new("a", &[]), &());
    /// assert_eq!((lower.tier(), lower.ignored_tier()), (RiskTier::LowWrite, Some(RiskTier::ReadOnly)));
    /// ```
    pub fn resolve_call(
        &self,
        spec: &ToolSpec,
        asked: Option<RiskTier>,
        actor: &Actor<'_>,
        context: &C,
    ) -> ModeResolution {
        let declared = spec.approval_mode();
        let mut resolved = declared;
        let mut source = ModeSource::Spec;
        let declared_tier = spec.risk_tier();
        let tier = asked.map_or(declared_tier, |asked| asked.max(declared_tier));
        let raised = spec.raised_to(tier);
        let spec = &raised;
        if tier > declared_tier && tier.derived_approval_mode() > resolved {
            resolved = tier.derived_approval_mode();
            source = ModeSource::CallTier;
        }
        let floor = self.tier_floor(tier);
        if floor > resolved {
            resolved = floor;
            source = ModeSource::TierOverride;
        }
        if let Some(hook) = self.hook {
            let asked = hook(spec, actor, context);
            if asked > resolved {
                resolved = asked;
                source = ModeSource::Hook;
            }
        }
        // Only a call that waits has approvers to count.
        let quorum = if matches!(resolved, ApprovalMode::RequiresApproval) {
            spec.quorum().max(self.tier_quorum(tier))
        } else {
            1
        };
        ModeResolution {
            declared,
            resolved,
            source,
            loosened_because: spec.loosened_because(),
            tier,
            declared_tier,
            ignored_tier: asked.filter(|asked| *asked < declared_tier),
            quorum,
        }
    }
}

impl<C: ?Sized> Default for ModePolicy<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: ?Sized> Clone for ModePolicy<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: ?Sized> Copy for ModePolicy<C> {}

impl<C: ?Sized> fmt::Debug for ModePolicy<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModePolicy")
            .field("tier_floor", &self.tier_floor)
            .field("tier_quorum", &self.tier_quorum)
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

/// Which source decided a call's approval mode.
///
/// ```
/// assert_eq!(cairnloop::gate::ModeSource::TierOverride.as_str(), "tier_override");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ModeSource {
    /// The tool's spec (derived from the tier, tightened, or loosened with a justification).
    Spec,
    /// The host's minimum for the tool's tier.
    TierOverride,
    /// The host's run-time hook.
    Hook,
    /// The call's own input: the tool's rule raised this call's tier
    /// ([`Tool::risk_tier_for`](crate::Tool::risk_tier_for)).
    CallTier,
}

impl ModeSource {
    /// The wire name: `spec`, `tier_override`, `hook` or `call_tier`.
    ///
    /// ```
    /// assert_eq!(cairnloop::gate::ModeSource::Hook.as_str(), "hook");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Spec => "spec",
            Self::TierOverride => "tier_override",
            Self::Hook => "hook",
            Self::CallTier => "call_tier",
        }
    }
}

/// The approval mode resolved for one call: what the spec declared, what is in force, why,
/// and the justification if the spec loosened its tier's mode.
///
/// ```
/// # use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, ToolSpec};
/// let spec = ToolSpec::new("tag", "Tag", "Tags.", RiskTier::LowWrite)
///     .loosen_approval(ApprovalMode::Auto, "tags are cosmetic");
/// let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
/// assert_eq!(mode.resolved(), ApprovalMode::Auto);
/// assert_eq!(mode.loosened_because(), Some("tags are cosmetic"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ModeResolution {
    declared: ApprovalMode,
    resolved: ApprovalMode,
    source: ModeSource,
    loosened_because: Option<&'static str>,
    tier: RiskTier,
    declared_tier: RiskTier,
    ignored_tier: Option<RiskTier>,
    quorum: u8,
}

impl ModeResolution {
    /// How many approvers the call needs: the tool's quorum or the host's for the call's
    /// tier, whichever is higher; 1 for a call that does not wait for a person.
    ///
    /// ```
    /// # use cairnloop::{Actor, ModePolicy, RiskTier, ToolSpec};
    /// let deploy = ToolSpec::new("deploy", "Deploy", "Deploys.", RiskTier::HighWrite).with_quorum(3);
    /// assert_eq!(ModePolicy::<()>::new().resolve(&deploy, &Actor::new("a", &[]), &()).quorum(), 3);
    /// ```
    #[must_use]
    pub const fn quorum(&self) -> u8 {
        self.quorum
    }

    /// The call's risk tier: the spec's, or higher where the call's input raised it.
    /// What the proposal, the preview, the approvers' tier rights and the binding see.
    ///
    /// ```
    /// # use cairnloop::{Actor, ModePolicy, RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
    /// assert_eq!(ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &()).tier(), RiskTier::LowWrite);
    /// ```
    #[must_use]
    pub const fn tier(&self) -> RiskTier {
        self.tier
    }

    /// The tier the tool declares (the listing's).
    ///
    /// ```
    /// # use cairnloop::{Actor, ModePolicy, RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
    /// let mode = ModePolicy::<()>::new().resolve_call(&spec, Some(RiskTier::Destructive), &Actor::new("a", &[]), &());
    /// assert_eq!((mode.declared_tier(), mode.tier()), (RiskTier::LowWrite, RiskTier::Destructive));
    /// ```
    #[must_use]
    pub const fn declared_tier(&self) -> RiskTier {
        self.declared_tier
    }

    /// A tier the call's input asked for below the declared one: ignored (a call is never
    /// less risky than its tool), and recorded.
    ///
    /// ```
    /// # use cairnloop::{Actor, ModePolicy, RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
    /// assert_eq!(ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &()).ignored_tier(), None);
    /// ```
    #[must_use]
    pub const fn ignored_tier(&self) -> Option<RiskTier> {
        self.ignored_tier
    }

    /// The mode the spec declares.
    ///
    /// ```
    /// # use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("wipe", "Wipe", "Wipes.", RiskTier::Destructive);
    /// assert_eq!(ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &()).declared(), ApprovalMode::AlwaysBlock);
    /// ```
    #[must_use]
    pub const fn declared(&self) -> ApprovalMode {
        self.declared
    }

    /// The mode in force for this call.
    ///
    /// ```
    /// # use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("wipe", "Wipe", "Wipes.", RiskTier::Destructive);
    /// assert_eq!(ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &()).resolved(), ApprovalMode::AlwaysBlock);
    /// ```
    #[must_use]
    pub const fn resolved(&self) -> ApprovalMode {
        self.resolved
    }

    /// Which source decided the mode in force.
    ///
    /// ```
    /// # use cairnloop::{Actor, ModePolicy, RiskTier, ToolSpec, gate::ModeSource};
    /// let spec = ToolSpec::new("wipe", "Wipe", "Wipes.", RiskTier::Destructive);
    /// assert_eq!(ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &()).source(), ModeSource::Spec);
    /// ```
    #[must_use]
    pub const fn source(&self) -> ModeSource {
        self.source
    }

    /// The spec's justification for a loosened mode, if it has one.
    ///
    /// ```
    /// # use cairnloop::{Actor, ModePolicy, RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("wipe", "Wipe", "Wipes.", RiskTier::Destructive);
    /// assert_eq!(ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &()).loosened_because(), None);
    /// ```
    #[must_use]
    pub const fn loosened_because(&self) -> Option<&'static str> {
        self.loosened_because
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    const LOW: ToolSpec = ToolSpec::new("note", "Note", "Notes.", RiskTier::LowWrite);

    fn requires(_: &ToolSpec, _: &Actor<'_>, _: &()) -> ApprovalMode {
        ApprovalMode::RequiresApproval
    }

    #[test]
    fn on_a_tie_the_earlier_source_is_named() {
        let actor = Actor::new("a", &[]);
        let floor =
            ModePolicy::<()>::new().with_tier(RiskTier::LowWrite, ApprovalMode::RequiresApproval);
        assert_eq!(floor.resolve(&LOW, &actor, &()).source(), ModeSource::Spec);
        let hook = ModePolicy::<()>::new().with_hook(requires);
        assert_eq!(hook.resolve(&LOW, &actor, &()).source(), ModeSource::Spec);
        let both = ModePolicy::<()>::new()
            .with_tier(RiskTier::ReadOnly, ApprovalMode::RequiresApproval)
            .with_hook(requires);
        let read = ToolSpec::new("read", "Read", "Reads.", RiskTier::ReadOnly);
        assert_eq!(
            both.resolve(&read, &actor, &()).source(),
            ModeSource::TierOverride
        );
    }

    #[test]
    fn copies_keep_their_floors_and_hook_and_say_so() {
        let policy = ModePolicy::<()>::new()
            .with_tier(RiskTier::HighWrite, ApprovalMode::AlwaysBlock)
            .with_hook(requires);
        #[allow(clippy::clone_on_copy, reason = "the Clone impl is what is tested")]
        let copy = policy.clone();
        assert_eq!(
            copy.tier_floor(RiskTier::HighWrite),
            ApprovalMode::AlwaysBlock
        );
        assert_eq!(
            copy.resolve(&LOW, &Actor::new("a", &[]), &()).resolved(),
            ApprovalMode::RequiresApproval
        );
        assert_eq!(
            format!("{copy:?}"),
            "ModePolicy { tier_floor: [Auto, Auto, AlwaysBlock, Auto], tier_quorum: [1, 1, 1, 1], hook: true }"
        );
        assert_eq!(
            [ModeSource::Spec, ModeSource::TierOverride, ModeSource::Hook].map(ModeSource::as_str),
            ["spec", "tier_override", "hook"]
        );
    }
}
