use crate::declare::{Actor, Registry, ToolEntry};
use crate::gate::{ModePolicy, Verdict, verdict_for};

/// The tools `actor` may call in `context`, in registration order: those whose verdict
/// is *execute* or *await approval*, through the very gates a call goes through. A tool
/// that is always blocked for this actor is not listed, so a model is never shown a tool
/// it cannot call.
///
/// ```
/// use cairnloop::{Actor, InputErrors, Invocation, ModePolicy, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
///
/// struct Wipe;
/// impl Tool for Wipe {
///     const SPEC: ToolSpec = ToolSpec::new("wipe", "Wipe", "Wipes a disk.", RiskTier::Destructive);
///     const SCOPES: &'static [Scope] = &[];
///     type Input = (); type Output = (); type Error = (); type Context = ();
///     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
///     async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
/// }
/// static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<Wipe>()]);
///
/// let admin = Actor::new("admin", &[]);
/// assert_eq!(cairnloop::gate::visible(&TOOLS, &admin, &(), &ModePolicy::new()).count(), 0);
/// ```
pub fn visible<'q, C: ?Sized + 'static>(
    registry: &Registry<C>,
    actor: &'q Actor<'q>,
    context: &'q C,
    policy: &'q ModePolicy<C>,
) -> impl Iterator<Item = &'static ToolEntry<C>> + 'q {
    verdicts(registry, actor, context, policy)
        .filter(|(_, verdict)| !matches!(verdict, Verdict::Blocked(_)))
        .map(|(entry, _)| entry)
}

/// Every tool on offer with its verdict for `actor`, in registration order: the operator's view,
/// which also shows what is blocked and why.
///
/// ```
/// use cairnloop::{Actor, ModePolicy, Registry};
///
/// static EMPTY: Registry<()> = Registry::new(&[]);
/// let actor = Actor::new("a", &[]);
/// assert_eq!(cairnloop::gate::verdicts(&EMPTY, &actor, &(), &ModePolicy::new()).count(), 0);
/// ```
pub fn verdicts<'q, C: ?Sized + 'static>(
    registry: &Registry<C>,
    actor: &'q Actor<'q>,
    context: &'q C,
    policy: &'q ModePolicy<C>,
) -> impl Iterator<Item = (&'static ToolEntry<C>, Verdict<()>)> + 'q {
    let tools: &'static [ToolEntry<C>] = registry.tools();
    tools
        .iter()
        .filter(|entry| entry.is_offered())
        .map(move |entry| (entry, verdict_for(entry, actor, context, policy)))
}
