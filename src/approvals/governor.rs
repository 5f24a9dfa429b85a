use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::approvals::Notifier;
use crate::approvals::identity::check_id;
use crate::approvals::recent::{CallParts, RecentKeys};
use crate::approvals::{
    ApprovalConfig, ApprovalError, ApprovalLane, ApprovalStore, Approvals, AuditRecord, AuditSink,
    Clock, MemoryStore, OutboxPass, OutboxPolicy, RefusalEvent, SystemClock,
};
use crate::declare::{
    Actor, Codec, ErasedInput, IdempotencyKey, Registry, RiskTier, RunError, RunKey, Tool,
    ToolEntry,
};
use crate::gate::{Blocked, Decision, LaneAction, LaneState, Timestamp, Verdict, decide, execute};
use crate::json::{
    Admitted, AuditEvent, Draft, Governance, Proposal, ToolCall, derive_key, gate_call, keyed_call,
    proposal_key, propose_call, run_ready,
};

/// The one front door: a host builds one governor and every call, listing, decision and
/// execution goes through it.
///
/// It holds the static [`Registry`], the host's [`Governance`] (tier overrides, the
/// run-time mode hook, input limits), the approval service with its store, a clock and an
/// audit sink. It records every decision and every lane transition itself, so no caller
/// can lose an audit record.
///
/// ```
/// use cairnloop::{Actor, Governor, InputErrors, Invocation, Outcome, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolCall, ToolEntry, ToolSpec};
///
/// #[derive(serde::Deserialize, serde::Serialize)]
/// #[serde(deny_unknown_fields)]
/// struct Refund { order: u32, cents: u64 }
///
/// struct RefundOrder;
/// impl Tool for RefundOrder {
///     const SPEC: ToolSpec = ToolSpec::new("refund_order", "Refund order", "Refunds an order.", RiskTier::HighWrite);
///     const SCOPES: &'static [Scope] = &[Scope::new("refunds:write")];
///     type Input = Refund; type Output = String; type Error = String; type Context = ();
///     fn validate(_: &Refund) -> Result<(), InputErrors> { Ok(()) }
///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
///     async fn run(call: Invocation<'_, Self>) -> Result<String, String> {
///         Ok(format!("refunded {} cents", call.input().cents))
///     }
/// }
///
/// static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<RefundOrder>()]);
/// let governor = Governor::new(&TOOLS);
///
/// // The model asks; a high-write tool waits for a human.
/// let agent = Actor::new("agent-7", &["refunds:write"]);
/// let call = ToolCall::new("refund_order", r#"{"order": 42, "cents": 1250}"#);
/// let Outcome::AwaitingApproval(lane) = pollster::block_on(governor.call(&call, &agent, &()))? else {
///     unreachable!()
/// };
///
/// // A person approves; the approved call runs once.
/// pollster::block_on(governor.approve(&lane.key(), "ops-lead"))?;
/// let output = pollster::block_on(governor.execute(&lane.key(), &agent, &()))?;
/// assert_eq!(output, "refunded 1250 cents");
/// assert!(pollster::block_on(governor.execute(&lane.key(), &agent, &())).is_err());
/// # Ok::<(), cairnloop::ApprovalError>(())
/// ```
pub struct Governor<C: ?Sized + 'static, S = MemoryStore> {
    registry: &'static Registry<C>,
    governance: Governance<C>,
    approvals: Approvals<S>,
    clock: Box<dyn Clock>,
    sink: Option<Arc<dyn AuditSink>>,
    holder: String,
    /// Keys of calls that awaited approval lately, by their exact text.
    recent: RecentKeys,
    /// The lanes calls in this process wait on for a decision.
    waiters: Arc<crate::approvals::Waiters>,
}

/// What became of a call by name.
///
/// ```
/// use cairnloop::Outcome;
///
/// fn tell_the_model(outcome: &Outcome) -> String {
///     match outcome {
///         Outcome::Executed(output) => output.to_string(),
///         Outcome::Failed(error) => error.to_string(),
///         Outcome::AwaitingApproval(lane) => format!("awaiting approval: {}", lane.key()),
///         Outcome::Blocked(blocked) => format!("blocked: {blocked}"),
///         Outcome::Superseded { edited, .. } => format!("changed by a person, then: {}", tell_the_model(edited)),
///     }
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The call ran at once (mode `Auto`); its output as JSON.
    Executed(Value),
    /// The call ran at once and the tool returned an error.
    Failed(RunError),
    /// The call has a lane: waiting for a human (pending or deferred), or in the state a
    /// repeated call finds it (rejected, expired, running, invalidated, …). Read the
    /// lane's state, or [`Outcome::code`], which names it: only a lane that waits is
    /// `awaiting_approval`.
    AwaitingApproval(Box<ApprovalLane>),
    /// A gate blocked the call; nothing ran.
    Blocked(Blocked),
    /// A person approved the call with changed arguments
    /// ([`Governor::approve_with_changes`]): this call never runs; `edited` is what became
    /// of the changed one (its output once it ran, or its lane).
    Superseded {
        /// This call's lane, `superseded`, linked to the changed call
        /// ([`ApprovalLane::replaced_by`]).
        original: Box<ApprovalLane>,
        /// The changed call's lane, as it was found (its proposal holds the arguments a
        /// person gave).
        replacement: Box<ApprovalLane>,
        /// What became of the changed call.
        edited: Box<Outcome>,
    },
}

impl Outcome {
    /// `executed`, `failed`, `awaiting_approval` (a lane that waits for a person), the
    /// state of a lane that does not wait (`expired`, `rejected`, `execution_pending`,
    /// …), `superseded`, or the block's code: the `status` a model is told.
    ///
    /// ```
    /// assert_eq!(cairnloop::Outcome::Blocked(cairnloop::Blocked::UnknownTool).code(), "unknown_tool");
    /// ```
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Executed(_) => "executed",
            Self::Failed(_) => "failed",
            Self::AwaitingApproval(lane) if lane.state().waits_for_a_person() => {
                "awaiting_approval"
            }
            Self::AwaitingApproval(lane) => lane.state().as_str(),
            Self::Blocked(blocked) => blocked.code(),
            Self::Superseded { .. } => "superseded",
        }
    }

    /// Whether the call waits for a person's decision: a lane pending or deferred. A
    /// lane in any other state will not run on its own.
    ///
    /// ```
    /// assert!(!cairnloop::Outcome::Blocked(cairnloop::Blocked::UnknownTool).is_awaiting_approval());
    /// ```
    #[must_use]
    pub const fn is_awaiting_approval(&self) -> bool {
        matches!(self, Self::AwaitingApproval(lane) if lane.state().waits_for_a_person())
    }
}

/// The fields a change adds that neither the call had nor the tool's input schema names
/// (a schema that lets any field through lets a change add anything otherwise): each an
/// `unknown_field` error, or `None` when there are none.
fn added_fields<C: ?Sized + 'static>(
    entry: &ToolEntry<C>,
    original: &str,
    changed: &str,
) -> Option<crate::declare::InputErrors> {
    let keys = |text: &str| match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => object.into_iter().map(|(key, _)| key).collect(),
        _ => Vec::new(),
    };
    let had: Vec<String> = keys(original);
    #[cfg(feature = "schemars")]
    let named: Vec<String> = entry
        .input_schema()
        .and_then(|schema| match schema.get("properties") {
            Some(Value::Object(properties)) => Some(properties.keys().cloned().collect()),
            _ => None,
        })
        .unwrap_or_default();
    #[cfg(not(feature = "schemars"))]
    let named: Vec<String> = {
        let _ = entry;
        Vec::new()
    };
    let mut errors = crate::declare::InputErrors::new();
    for key in keys(changed) {
        if !had.contains(&key) && !named.contains(&key) {
            let mut path = String::from("/");
            crate::json::strict::push_pointer_token(&mut path, &key);
            errors.push(crate::declare::FieldError::owned(
                path,
                "unknown_field",
                "a change may not add a field the call did not have and the tool does not name"
                    .to_string(),
            ));
        }
    }
    (!errors.is_empty()).then_some(errors)
}

/// What became of a typed call ([`Governor::call_typed`]).
///
/// ```
/// use cairnloop::{Tool, approvals::TypedOutcome};
///
/// fn ran<T: Tool>(outcome: &TypedOutcome<T>) -> bool {
///     matches!(outcome, TypedOutcome::Executed(_) | TypedOutcome::Failed(_))
/// }
/// ```
pub enum TypedOutcome<T: Tool + ?Sized> {
    /// The call ran at once and returned its output.
    Executed(T::Output),
    /// The call ran at once and the tool returned an error.
    Failed(T::Error),
    /// The call waits for a human: approve it and execute it by its key, as any other.
    AwaitingApproval(Box<ApprovalLane>),
    /// A gate blocked the call; nothing ran.
    Blocked(Blocked),
}

impl<T: Tool + ?Sized> fmt::Debug for TypedOutcome<T>
where
    T::Output: fmt::Debug,
    T::Error: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Executed(output) => f.debug_tuple("Executed").field(output).finish(),
            Self::Failed(error) => f.debug_tuple("Failed").field(error).finish(),
            Self::AwaitingApproval(lane) => f.debug_tuple("AwaitingApproval").field(lane).finish(),
            Self::Blocked(blocked) => f.debug_tuple("Blocked").field(blocked).finish(),
        }
    }
}

/// How many changes of a call are followed (a change of a change, …).
#[cfg(feature = "rmcp")]
pub(crate) const MAX_CHANGES: usize = 8;

/// How long a changed call's lane may take to appear once its original is closed: a
/// store round trip, unless the process making the change ended between the two.
#[cfg(feature = "rmcp")]
const OPENING: core::time::Duration = core::time::Duration::from_secs(5);

impl<C: ?Sized + Sync + 'static> Governor<C, MemoryStore> {
    /// A governor over `registry`: no host overrides, the default limits and approval
    /// configuration, an in-memory store, the system clock, and the store's event log as
    /// the audit trail.
    ///
    /// ```
    /// use cairnloop::{Governor, Registry};
    ///
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// assert!(pollster::block_on(governor.events())?.is_empty());
    /// # Ok::<(), cairnloop::ApprovalError>(())
    /// ```
    #[must_use]
    pub fn new(registry: &'static Registry<C>) -> Self {
        Self {
            registry,
            governance: Governance::new(),
            approvals: Approvals::new(MemoryStore::new(), ApprovalConfig::new()),
            clock: Box::new(SystemClock),
            sink: None,
            holder: alloc::format!("process-{}", std::process::id()),
            recent: RecentKeys::new(),
            waiters: Arc::default(),
        }
    }
}

impl<C: ?Sized + Sync + 'static, S: ApprovalStore> Governor<C, S> {
    /// The same governor over another store (a shared one, or a durable one).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use cairnloop::{Governor, Registry, approvals::MemoryStore};
    ///
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let shared = Arc::new(MemoryStore::new());
    /// let one = Governor::new(&TOOLS).with_store(Arc::clone(&shared));
    /// let two = Governor::new(&TOOLS).with_store(shared);
    /// ```
    #[must_use]
    pub fn with_store<T: ApprovalStore + 'static>(self, store: T) -> Governor<C, T> {
        let telling = self.approvals.telling();
        let (config, sink, tap) = self.approvals.into_parts();
        let mut approvals = Approvals::new(store, config);
        approvals.set_sink(sink);
        approvals.set_tap(tap);
        approvals.set_telling(telling);
        Governor {
            registry: self.registry,
            governance: self.governance,
            approvals,
            clock: self.clock,
            sink: self.sink,
            holder: self.holder,
            recent: self.recent,
            waiters: Arc::default(),
        }
    }

    /// Tells `notifier` of each new proposal this governor opens (once per proposal,
    /// however many processes propose the same call: only the one whose insert opened
    /// the lane notifies). What became of each notice is written to the audit trail as
    /// an [`AuditRecord::Notice`]; a notifier that fails never blocks or loses the
    /// proposal.
    ///
    /// ```
    /// use cairnloop::approvals::{Notice, NoticeReport, Notifier};
    /// use cairnloop::{Governor, Registry};
    ///
    /// struct Log;
    /// impl Notifier for Log {
    ///     fn proposed(&self, notice: Notice, report: NoticeReport) {
    ///         eprintln!("{} waits for a person: {}", notice.title, notice.preview);
    ///         report.delivered("stderr", 1);
    ///     }
    /// }
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS).with_notifier(Log);
    /// ```
    #[must_use]
    pub fn with_notifier(mut self, notifier: impl Notifier + 'static) -> Self {
        self.approvals.telling_mut().notifier = Some(Arc::new(notifier));
        self
    }

    /// Tells `target` of each call that waits for a person through the store's outbox:
    /// the notice is owed from the moment the lane is stored, and whichever process runs
    /// [`Governor::deliver_notices`] first (on any replica sharing the store) claims it,
    /// hands it to `notifier` and records what became of it, retrying by the
    /// [`OutboxPolicy`]. A process killed before the notice went out loses nothing: the
    /// next pass, there or elsewhere, sends it. Delivery never delays or changes the lane.
    /// `target` names the notices in the store: keep it stable across restarts (a new
    /// name owes a notice for every call waiting then). The store must keep an outbox
    /// (SQLite, PostgreSQL, the memory store).
    ///
    /// ```
    /// use cairnloop::approvals::{Notice, NoticeReport, Notifier};
    /// use cairnloop::{Governor, Registry};
    ///
    /// struct Pager;
    /// impl Notifier for Pager {
    ///     fn proposed(&self, notice: Notice, report: NoticeReport) {
    ///         report.delivered("pager", 1);
    ///     }
    /// }
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS).with_outbox("pager", Pager);
    /// let pass = pollster::block_on(governor.deliver_notices("replica-1"))?;
    /// assert_eq!(pass.delivered, 0, "nothing waits yet");
    /// # Ok::<(), cairnloop::ApprovalError>(())
    /// ```
    #[must_use]
    pub fn with_outbox(
        mut self,
        target: impl Into<String>,
        notifier: impl Notifier + 'static,
    ) -> Self {
        (self.approvals.telling_mut().outbox).push((target.into(), Arc::new(notifier)));
        self
    }

    /// How the outbox claims, retries and gives up ([`OutboxPolicy::new`] by default).
    ///
    /// ```
    /// use cairnloop::approvals::OutboxPolicy;
    /// use cairnloop::{Governor, Registry};
    ///
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS).with_outbox_policy(OutboxPolicy::new().attempts(10));
    /// ```
    #[must_use]
    pub fn with_outbox_policy(mut self, policy: OutboxPolicy) -> Self {
        self.approvals.telling_mut().policy = policy;
        self
    }

    /// One pass of the outbox, for `holder` (this process's name among the replicas): the
    /// notices due now, to every target of [`Governor::with_outbox`], claimed, handed to
    /// their notifiers, and settled by what each says within the claim's lease. Run it
    /// now and then (every second, say) and when the store says something changed.
    ///
    /// # Errors
    ///
    /// The clock's or the store's error (`StoreError::Unsupported` for a store that keeps
    /// no outbox).
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let pass = pollster::block_on(Governor::new(&TOOLS).deliver_notices("replica-1"))?;
    /// assert_eq!(pass, Default::default());
    /// # Ok::<(), cairnloop::ApprovalError>(())
    /// ```
    pub async fn deliver_notices(&self, holder: &str) -> Result<OutboxPass, ApprovalError> {
        self.approvals.deliver_notices(holder, || self.now()).await
    }

    /// Names this governor in the claims it takes to run approved calls (by default
    /// `process-<pid>`): an operator looking at an unknown outcome sees who held it.
    ///
    /// ```
    /// use cairnloop::{Governor, Registry};
    ///
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS).with_holder("worker-3");
    /// ```
    #[must_use]
    pub fn with_holder(mut self, holder: impl Into<String>) -> Self {
        self.holder = holder.into();
        self
    }

    /// Sets the host's governance: tier overrides, the mode hook and the input limits.
    ///
    /// ```
    /// use cairnloop::{ApprovalMode, Governance, Governor, ModePolicy, Registry, RiskTier};
    ///
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let strict = Governance::new()
    ///     .with_mode_policy(ModePolicy::new().with_tier(RiskTier::ReadOnly, ApprovalMode::RequiresApproval));
    /// let governor = Governor::new(&TOOLS).with_governance(strict);
    /// ```
    #[must_use]
    pub fn with_governance(mut self, governance: Governance<C>) -> Self {
        self.governance = governance;
        self
    }

    /// Sets how approvals are run: time to live, self-approval, attempts.
    ///
    /// ```
    /// use cairnloop::{Governor, Registry, approvals::ApprovalConfig, gate::Ttl};
    ///
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS)
    ///     .with_config(ApprovalConfig::new().with_ttl(Ttl::from_secs(3600)));
    /// ```
    #[must_use]
    pub fn with_config(mut self, config: ApprovalConfig) -> Self {
        self.approvals.set_config(config);
        self
    }

    /// Sets the clock: the time source, unless the store keeps one of its own (a store
    /// shared by hosts, such as PostgreSQL's: see [`ApprovalStore::now`]).
    ///
    /// ```
    /// use cairnloop::{Governor, Registry, approvals::ManualClock, gate::Timestamp};
    ///
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let clock = ManualClock::new(Timestamp::from_unix_millis(0));
    /// let governor = Governor::new(&TOOLS).with_clock(clock.clone());
    /// ```
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Sends every record to `sink` instead of the store's event log. The store still
    /// keeps each lane's transitions with the lane; decisions go to the sink alone.
    ///
    /// ```
    /// use cairnloop::{Governor, Registry, approvals::DiscardAudit};
    ///
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS).with_audit_sink(DiscardAudit);
    /// ```
    #[must_use]
    pub fn with_audit_sink(mut self, sink: impl AuditSink + 'static) -> Self {
        let sink: Arc<dyn AuditSink> = Arc::new(sink);
        self.approvals.set_sink(Some(Arc::clone(&sink)));
        self.sink = Some(sink);
        self
    }

    /// Hands `tap` a copy of every record this governor writes or hands its sink:
    /// decisions, lane moves, notices' outcomes, refusals; where each record goes is
    /// unchanged. For what a host counts as it happens (metrics): `record` must be quick,
    /// it is called on the call's path.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use cairnloop::{Governor, Registry};
    /// use cairnloop::approvals::{AuditRecord, AuditSink};
    ///
    /// #[derive(Default)]
    /// struct Decisions(AtomicUsize);
    /// impl AuditSink for Decisions {
    ///     fn record(&self, record: &AuditRecord) {
    ///         if matches!(record, AuditRecord::Decision(_)) {
    ///             self.0.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     }
    /// }
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS).with_audit_tap(Decisions::default());
    /// ```
    #[must_use]
    pub fn with_audit_tap(mut self, tap: impl AuditSink + 'static) -> Self {
        self.approvals.set_tap(Some(Arc::new(tap)));
        self
    }

    /// The registry.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// assert!(Governor::new(&TOOLS).registry().tools().is_empty());
    /// ```
    #[must_use]
    pub const fn registry(&self) -> &'static Registry<C> {
        self.registry
    }

    /// The host's governance.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// assert_eq!(Governor::new(&TOOLS).governance().limits().max_depth(), 32);
    /// ```
    #[must_use]
    pub const fn governance(&self) -> &Governance<C> {
        &self.governance
    }

    /// The approval store.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry, approvals::ApprovalStore};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// assert!(pollster::block_on(governor.store().events_since(0, 10))?.is_empty());
    /// # Ok::<(), cairnloop::approvals::StoreError>(())
    /// ```
    #[must_use]
    pub fn store(&self) -> &S {
        self.approvals.store()
    }

    /// The approval configuration.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// assert!(!Governor::new(&TOOLS).config().allows_self_approval());
    /// ```
    #[must_use]
    pub const fn config(&self) -> &ApprovalConfig {
        self.approvals.config()
    }

    /// The tools `actor` may call by name (what a model is shown): those whose verdict
    /// is *execute* or *await approval*, through the very gates a call goes through. An
    /// always-blocked tool is not listed, nor one registered for typed calls only
    /// ([`ToolEntry::of`]), which a call by name would find blocked.
    ///
    /// ```
    /// # use cairnloop::{Actor, Governor, Registry};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// assert_eq!(governor.visible(&Actor::new("a", &[]), &()).count(), 0);
    /// ```
    pub fn visible<'q>(
        &'q self,
        actor: &'q Actor<'q>,
        context: &'q C,
    ) -> impl Iterator<Item = &'static ToolEntry<C>> + 'q {
        self.visible_typed(actor, context)
            .filter(|entry| entry.is_callable_by_name())
    }

    /// The tools `actor` may call from host code ([`Governor::call_typed`]), by the same
    /// gates: every tool [`Governor::visible`] lists, and those registered for typed calls
    /// only. A typed-only tool that would await approval is among them by its verdict,
    /// but [`Governor::call_typed`] blocks it, since a proposal is approved by name.
    ///
    /// ```
    /// # use cairnloop::{Actor, Governor, Registry};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// assert_eq!(governor.visible_typed(&Actor::new("a", &[]), &()).count(), 0);
    /// ```
    pub fn visible_typed<'q>(
        &'q self,
        actor: &'q Actor<'q>,
        context: &'q C,
    ) -> impl Iterator<Item = &'static ToolEntry<C>> + 'q {
        crate::gate::visible(self.registry, actor, context, self.governance.mode_policy())
    }

    /// Every tool with its verdict for `actor`: the operator's view.
    ///
    /// ```
    /// # use cairnloop::{Actor, Governor, Registry};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// assert_eq!(governor.verdicts(&Actor::new("a", &[]), &()).count(), 0);
    /// ```
    pub fn verdicts<'q>(
        &'q self,
        actor: &'q Actor<'q>,
        context: &'q C,
    ) -> impl Iterator<Item = (&'static ToolEntry<C>, Verdict<()>)> + 'q {
        crate::gate::verdicts(self.registry, actor, context, self.governance.mode_policy())
    }

    /// A call by name, as a model proposed it: through the gates, then run at once
    /// (`Auto`), recorded as a pending proposal (`RequiresApproval`), or blocked. The
    /// decision is recorded before this returns: committed, or, for a call run at once
    /// on a store that takes records to write soon ([`ApprovalStore::append_soon`]: the
    /// SQLite store), handed to the store, which commits it before it serves anything
    /// else and within 25 ms. Nothing here panics on any input.
    ///
    /// The same call made again (the same idempotency key) finds its lane: pending, the
    /// same proposal; approved, it runs now, once; executed, its recorded output comes
    /// back and nothing runs; any other state, the lane as it stands.
    ///
    /// # Errors
    ///
    /// Only when the decision cannot be recorded: the store's error, an unavailable clock
    /// for a proposal, or an input that cannot be encoded. Nothing ran then.
    pub async fn call(
        &self,
        call: &ToolCall<'_>,
        actor: &Actor<'_>,
        context: &C,
    ) -> Result<Outcome, ApprovalError> {
        let gated = self.gate(call, actor, context)?;
        self.decide(gated, call, actor, context).await
    }

    /// A call through the gates, nothing recorded and nothing run yet: what the MCP
    /// transport reads to answer a call that runs at once itself, and hands on one that
    /// waits for a person. Gating has no effect of its own.
    ///
    /// # Errors
    ///
    /// An actor whose id the identity rule refuses.
    #[cfg_attr(
        not(feature = "rmcp"),
        allow(dead_code, reason = "used by the MCP transport")
    )]
    pub(crate) fn gate(
        &self,
        call: &ToolCall<'_>,
        actor: &Actor<'_>,
        context: &C,
    ) -> Result<Gated<C>, ApprovalError> {
        check_actor(actor)?;
        let (entry, verdict) = gate_call(self.registry, call, actor, context, &self.governance);
        Ok(Gated { entry, verdict })
    }

    /// [`Governor::decide`] for a call the MCP transport answers itself: a call that runs
    /// at once is recorded and run here as `decide` records and runs it, a tool whose
    /// output is an MCP `CallToolResult` for the result's text; any other call (one that
    /// is blocked) is decided by `decide`.
    #[cfg(feature = "rmcp")]
    pub(crate) async fn decide_handing_on(
        &self,
        gated: Gated<C>,
        call: &ToolCall<'_>,
        actor: &Actor<'_>,
        context: &C,
    ) -> Result<HandingOn, ApprovalError> {
        if !matches!(gated.verdict, Verdict::Execute { .. }) {
            // Boxed: a call that runs at once carries no room for one that waits.
            let deciding = Box::pin(self.decide(gated, call, actor, context));
            return deciding.await.map(HandingOn::Outcome);
        }
        let Gated { entry, verdict } = gated;
        let mut record = self.verdict_record(call, entry, actor, &verdict);
        let (codec, input) = match verdict {
            Verdict::Execute {
                input: Admitted { codec, input, .. },
                ..
            } => (codec, input),
            // Not met (checked above); decided as any other call.
            verdict => {
                let deciding =
                    Box::pin(self.decide(Gated { entry, verdict }, call, actor, context));
                return deciding.await.map(HandingOn::Outcome);
            }
        };
        // As `decide` runs it: the record handed to be written soon, then the run.
        self.record_soon(&mut record).await?;
        Ok(match codec.run_call_result(input, actor, context) {
            Ok(run) => run.await.map_or_else(
                |error| HandingOn::Outcome(Outcome::Failed(error)),
                HandingOn::CallResult,
            ),
            Err(input) => HandingOn::Outcome(run_now(codec, input, call, actor, context).await),
        })
    }

    /// The record of `verdict` on `call` (of `entry`, by `actor`), when decisions are
    /// audited.
    fn verdict_record(
        &self,
        call: &ToolCall<'_>,
        entry: Option<&'static ToolEntry<C>>,
        actor: &Actor<'_>,
        verdict: &Verdict<Admitted<C>>,
    ) -> Option<AuditEvent> {
        self.audits().then(|| {
            AuditEvent::of_verdict(call.name(), entry.map(ToolEntry::spec), actor, verdict)
                .with_raise_reason(verdict)
        })
    }

    /// [`Governor::call`] past its gates: `gated` is `call` as [`Governor::gate`] let it
    /// through, for the same actor and context.
    pub(crate) async fn decide(
        &self,
        gated: Gated<C>,
        call: &ToolCall<'_>,
        actor: &Actor<'_>,
        context: &C,
    ) -> Result<Outcome, ApprovalError> {
        let Gated { entry, verdict } = gated;
        let mut record = self.verdict_record(call, entry, actor, &verdict);
        match verdict {
            Verdict::Blocked(blocked) => {
                self.record(&mut record).await?;
                Ok(Outcome::Blocked(blocked))
            }
            Verdict::Execute {
                input: Admitted { codec, input, .. },
                ..
            } => {
                // A call that runs at once does not wait on its record's commit where the
                // store can take it to write soon (see `ApprovalStore::append_soon`).
                self.record_soon(&mut record).await?;
                Ok(run_now(codec, input, call, actor, context).await)
            }
            Verdict::AwaitApproval {
                input:
                    Admitted {
                        entry,
                        codec,
                        input,
                        raised_because,
                    },
                mode,
            } => {
                // The clock first: without a time nothing is decided, nor recorded.
                let now = self.now()?;
                let parts = CallParts {
                    tool: entry.spec().name(),
                    arguments: call.arguments(),
                    actor,
                    dedupe_token: call.dedupe_token(),
                };
                // A repeated call (the model asks again while a person decides) finds its
                // lane by one lookup: no preview, no snapshots, no opening event; and when
                // its text is the same as last time, its key is not computed again. A lane
                // closed by a person is proposed afresh, below.
                let known = self.recent.get(&parts);
                if let Some(key) = known
                    && let Some(lane) = self.approvals.store().get(&key).await?
                    && lane.state() != LaneState::Closed
                {
                    if let Some(record) = &mut record {
                        record.idempotency_key = Some(key);
                    }
                    self.record(&mut record).await?;
                    return self.reissued(lane, now, actor, context).await;
                }
                let keyed = keyed_call(
                    entry,
                    codec,
                    &input,
                    actor,
                    call.dedupe_token(),
                    Some(&mode),
                )
                .map_err(ApprovalError::Encoding)?;
                let key = keyed.key;
                if known.is_none() {
                    self.recent.insert(&parts, key);
                }
                if let Some(record) = &mut record {
                    record.idempotency_key = Some(key);
                }
                if known.is_none()
                    && let Some(lane) = self.approvals.store().get(&key).await?
                    && lane.state() != LaneState::Closed
                {
                    self.record(&mut record).await?;
                    return self.reissued(lane, now, actor, context).await;
                }
                let proposal = propose_call(
                    entry,
                    codec,
                    &input,
                    actor,
                    keyed,
                    mode,
                    self.governance.mode_policy(),
                    raised_because,
                );
                self.record(&mut record).await?;
                let lane = match self.approvals.propose(proposal, now).await {
                    Ok(lane) => lane,
                    Err(error) => {
                        // The trail says what happened: the decision to await approval,
                        // then that no proposal was opened, and why. Appended, never
                        // rewritten; if this too cannot be kept, the error still stands.
                        let mut failed = self.audits().then(|| {
                            let mut failed = AuditEvent::decided(
                                entry.spec().name().into(),
                                actor.id(),
                                actor.account(),
                                "proposal_failed",
                            );
                            failed.code = Some("proposal_failed".into());
                            failed.reason = Some(error.to_string());
                            failed.idempotency_key = Some(key);
                            failed.mode = Some(mode.resolved());
                            failed
                        });
                        let _ = self.record(&mut failed).await;
                        return Err(error);
                    }
                };
                self.reissued(lane, now, actor, context).await
            }
        }
    }

    /// The key a call would be proposed under, without recording or running anything:
    /// `None` for a call that would not await approval. For checking what a client
    /// echoes back against the call it comes with.
    #[cfg_attr(
        not(feature = "rmcp"),
        allow(dead_code, reason = "used by the MCP server")
    )]
    pub(crate) fn proposal_key(
        &self,
        call: &ToolCall<'_>,
        actor: &Actor<'_>,
        context: &C,
    ) -> Option<IdempotencyKey> {
        let (_, verdict) = gate_call(self.registry, call, actor, context, &self.governance);
        let Verdict::AwaitApproval {
            input:
                Admitted {
                    entry,
                    codec,
                    input,
                    ..
                },
            ..
        } = verdict
        else {
            return None;
        };
        proposal_key(entry, codec, &input, actor, call.dedupe_token())
    }

    /// What a call that awaits approval gives back, by the state of its lane: an approved
    /// call runs now (once: the claim decides between racing repeats); an executed one
    /// gives back its recorded output without running; any other state is the lane.
    async fn reissued(
        &self,
        lane: ApprovalLane,
        now: Timestamp,
        actor: &Actor<'_>,
        context: &C,
    ) -> Result<Outcome, ApprovalError> {
        match lane.state() {
            // Its time ran out and no sweep has expired it yet: expired now, and said so.
            // Boxed, like the other rare paths below: every call's future would carry it.
            LaneState::Pending if now >= lane.expires_at() => {
                let expired = Box::pin(self.approvals.expire_if_due(&lane.key(), now)).await?;
                Ok(Outcome::AwaitingApproval(Box::new(expired)))
            }
            // Boxed: the run of an approved call is most of this state, and every call
            // (also one that runs at once or is blocked) would otherwise carry and move
            // it; a repeat of an approved call is the rare case.
            LaneState::Approved => {
                match Box::pin(self.execute(&lane.key(), actor, context)).await {
                    Ok(output) => Ok(Outcome::Executed(output)),
                    Err(ApprovalError::ExecutionFailed { error, .. }) => Ok(Outcome::Failed(error)),
                    // Refused before anything ran (invalidated, expired, another caller won
                    // the claim), or ran with its outcome unrecorded: the lane says where it
                    // stands now.
                    Err(_) => Ok(Outcome::AwaitingApproval(Box::new(
                        self.lane(&lane.key()).await?,
                    ))),
                }
            }
            LaneState::Executed => match lane.output() {
                Some(output) => Ok(Outcome::Executed(output.clone())),
                None => Ok(Outcome::AwaitingApproval(Box::new(lane))),
            },
            // Approved with changes: what became of the changed call, run now if it is
            // approved (it is the same caller's). Boxed: rare, and a chain of changes
            // recurses.
            LaneState::Superseded => match lane.replaced_by() {
                Some(edited_key) => {
                    let replacement = self.lane(&edited_key).await?;
                    let edited =
                        Box::pin(self.reissued(replacement.clone(), now, actor, context)).await?;
                    Ok(Outcome::Superseded {
                        original: Box::new(lane),
                        replacement: Box::new(replacement),
                        edited: Box::new(edited),
                    })
                }
                None => Ok(Outcome::AwaitingApproval(Box::new(lane))),
            },
            _ => Ok(Outcome::AwaitingApproval(Box::new(lane))),
        }
    }

    /// A call whose input is already of the tool's type, from host code: through the
    /// same gates, recorded the same way. A call that awaits approval is proposed like a
    /// call by name, so it is approved and executed by its key; for that the tool must be
    /// in this governor's registry as a JSON entry ([`ToolEntry::json`]), else the call
    /// is blocked as [`Blocked::NotCallableByName`] and nothing is proposed.
    ///
    /// # Errors
    ///
    /// As [`Governor::call`].
    pub async fn call_typed<T>(
        &self,
        input: T::Input,
        actor: &Actor<'_>,
        context: &C,
    ) -> Result<TypedOutcome<T>, ApprovalError>
    where
        T: Tool<Context = C>,
        T::Input: Serialize,
    {
        check_actor(actor)?;
        let reason = T::risk_reason_for(&input);
        let decision = decide::<T>(input, actor, context, self.governance.mode_policy());
        let spec = &T::SPEC;
        let verdict: Verdict<()> = match &decision {
            Decision::Execute { mode, .. } => Verdict::Execute {
                input: (),
                mode: *mode,
            },
            Decision::AwaitApproval(pending) => Verdict::AwaitApproval {
                input: (),
                mode: *pending.mode(),
            },
            Decision::Blocked(blocked) => Verdict::Blocked(blocked.clone()),
        };
        // Said only for a call the rule raised.
        let raised_because = match &verdict {
            Verdict::Execute { mode, .. } | Verdict::AwaitApproval { mode, .. } => reason
                .filter(|_| mode.tier() > mode.declared_tier())
                .map(String::from),
            Verdict::Blocked(_) => None,
        };
        let mut record = self.audits().then(|| {
            let mut event = AuditEvent::of_verdict(spec.name(), Some(spec), actor, &verdict);
            event.raised_because.clone_from(&raised_because);
            event
        });
        match decision {
            Decision::Blocked(blocked) => {
                self.record(&mut record).await?;
                Ok(TypedOutcome::Blocked(blocked))
            }
            Decision::Execute { call, .. } => {
                self.record(&mut record).await?;
                let call = call.with_key_on_demand(None, derive_key::<T>);
                Ok(match execute(call).await {
                    Ok(output) => TypedOutcome::Executed(output),
                    Err(error) => TypedOutcome::Failed(error),
                })
            }
            Decision::AwaitApproval(pending) => {
                let registered = self
                    .registry
                    .get(spec.name())
                    .filter(|entry| entry.spec() == spec && entry.is_callable_by_name());
                let Some(entry) = registered else {
                    let blocked = Blocked::NotCallableByName;
                    let refused = AuditEvent::of_verdict(
                        spec.name(),
                        Some(spec),
                        actor,
                        &Verdict::<()>::Blocked(blocked.clone()),
                    );
                    self.record(&mut Some(refused)).await?;
                    return Ok(TypedOutcome::Blocked(blocked));
                };
                let mut own = String::new();
                let own_preview = match pending.write_preview(&mut own) {
                    Some(Ok(())) => Some(own),
                    _ => None,
                };
                let input = crate::json::canonical_text(pending.input())
                    .map_err(ApprovalError::Encoding)?;
                let proposal = Proposal::from_draft(Draft {
                    spec,
                    scopes: entry.scopes(),
                    actor,
                    dedupe_token: None,
                    idempotency_key: IdempotencyKey::for_canonical_call(
                        spec.name(),
                        &input,
                        Some(actor.id()),
                        actor.account(),
                        None,
                    ),
                    input,
                    own_preview,
                    fallback: None,
                    mode: *pending.mode(),
                    host_floor: self
                        .governance
                        .mode_policy()
                        .tier_floor(pending.mode().tier()),
                    raised_because,
                });
                if let Some(record) = &mut record {
                    record.idempotency_key = Some(proposal.idempotency_key());
                }
                self.record(&mut record).await?;
                let lane = self.approvals.propose(proposal, self.now()?).await?;
                Ok(TypedOutcome::AwaitingApproval(Box::new(lane)))
            }
        }
    }

    /// Approves a pending proposal, by `approver`. The approver may not be the proposer
    /// (the same person by [`same_person`](crate::approvals::same_person): caseless,
    /// compatibility-normalised, look-alikes alike) unless the configuration allows it.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::SelfApproval`], [`ApprovalError::MissingDecider`] for an empty id,
    /// [`ApprovalError::InvalidDecider`] for one the identity rule refuses, [`ApprovalError::Expired`], a refused transition,
    /// the clock's or the store's error.
    pub async fn approve(
        &self,
        key: &IdempotencyKey,
        approver: &str,
    ) -> Result<ApprovalLane, ApprovalError> {
        self.approvals.approve(key, approver, self.now()?).await
    }

    /// Approves a pending proposal with changed arguments, by `approver`: an operator who
    /// would rather fix a call than reject it. The changed call goes through the gates as
    /// the proposer's (the tool's decoder and validation, its scopes and policy, its
    /// mode), becomes a proposal of its own bound to the change, and is approved by
    /// `approver`, who must be one who could approve the original (never its proposer).
    /// The original is closed as `superseded` and linked to it
    /// ([`ApprovalLane::replaced_by`]); a re-issued original gets
    /// [`Outcome::Superseded`] with what became of the changed call. The answer is the
    /// changed call's lane: approved, or pending while its quorum wants more approvals.
    ///
    /// `context` is the context the proposer's calls are gated with; `may_decide` says
    /// whether `approver` may decide calls of a tier (the console's and Slack's tier
    /// rights), asked of the changed call's tier, which a change may raise.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::EditRefused`] when the changed call does not pass the gates (a
    /// field the tool does not take, a value its validation refuses, a scope the proposer
    /// lacks): nothing changed. [`ApprovalError::EditOutsideRights`] when `may_decide`
    /// refuses the changed call's tier, [`ApprovalError::EditUnchanged`] when the change
    /// is no change: nothing changed either. Otherwise as [`Governor::approve`].
    ///
    /// ```
    /// # use cairnloop::{Actor, Governor, InputErrors, Invocation, Outcome, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolCall, ToolEntry, ToolSpec};
    /// # use cairnloop::gate::LaneState;
    /// # #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    /// # #[serde(deny_unknown_fields)]
    /// # struct Email { to: String }
    /// # struct SendEmail;
    /// # impl Tool for SendEmail {
    /// #     const SPEC: ToolSpec = ToolSpec::new("send_email", "Send email", "Sends an email.", RiskTier::LowWrite);
    /// #     const SCOPES: &'static [Scope] = &[];
    /// #     type Input = Email; type Output = String; type Error = String; type Context = ();
    /// #     fn validate(_: &Email) -> Result<(), InputErrors> { Ok(()) }
    /// #     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
    /// #     async fn run(call: Invocation<'_, Self>) -> Result<String, String> { Ok(call.input().to.clone()) }
    /// # }
    /// # static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<SendEmail>()]);
    /// # let registry = &TOOLS;
    /// let governor = Governor::new(registry);
    /// let agent = Actor::new("agent", &[]);
    /// let typo = ToolCall::new("send_email", r#"{"to": "bob@exmaple.com"}"#);
    /// let Outcome::AwaitingApproval(lane) = pollster::block_on(governor.call(&typo, &agent, &()))? else { panic!() };
    ///
    /// let fixed = r#"{"to": "bob@example.com"}"#;
    /// let fixed = pollster::block_on(governor.approve_with_changes(&lane.key(), "ops", fixed, &(), |_| true))?;
    /// assert_eq!(fixed.state(), LaneState::Approved);
    /// assert_eq!(fixed.replaces(), Some(lane.key()));
    ///
    /// // The agent asks again with its own arguments: what ran instead.
    /// let Outcome::Superseded { edited, .. } = pollster::block_on(governor.call(&typo, &agent, &()))? else { panic!() };
    /// assert_eq!(*edited, Outcome::Executed(serde_json::json!("bob@example.com")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn approve_with_changes(
        &self,
        key: &IdempotencyKey,
        approver: &str,
        arguments: &str,
        context: &C,
        may_decide: impl FnOnce(RiskTier) -> bool,
    ) -> Result<ApprovalLane, ApprovalError> {
        let now = self.now()?;
        let original = self.lane(key).await?;
        let proposal = original.proposal();
        // The proposer as the proposal recorded them: the changed call is theirs, with
        // the scopes they held, in their account.
        let scopes: Vec<&str> = proposal.granted_scopes().iter().collect();
        let actor = Actor::new(proposal.actor_id(), &scopes);
        let actor = match proposal.account_id() {
            Some(account) => actor.with_account(account),
            None => actor,
        };
        let call = ToolCall::new(proposal.tool(), arguments);
        let call = match proposal.dedupe_token() {
            Some(token) => call.with_dedupe_token(token),
            None => call,
        };
        let (entry, verdict) = gate_call(self.registry, &call, &actor, context, &self.governance);
        let mut record = self.verdict_record(&call, entry, &actor, &verdict);
        let (
            Admitted {
                entry,
                codec,
                input,
                raised_because,
            },
            mode,
        ) = match verdict {
            Verdict::Blocked(blocked) => {
                self.record(&mut record).await?;
                return Err(ApprovalError::EditRefused(blocked));
            }
            Verdict::Execute { input, mode } | Verdict::AwaitApproval { input, mode } => {
                (input, mode)
            }
        };
        if let Some(errors) = added_fields(entry, proposal.input(), arguments) {
            self.record(&mut record).await?;
            return Err(ApprovalError::EditRefused(Blocked::NeedsInput { errors }));
        }
        if !may_decide(mode.tier()) {
            self.record(&mut record).await?;
            return Err(ApprovalError::EditOutsideRights(mode.tier()));
        }
        let keyed = keyed_call(
            entry,
            codec,
            &input,
            &actor,
            call.dedupe_token(),
            Some(&mode),
        )
        .map_err(ApprovalError::Encoding)?;
        if let Some(record) = &mut record {
            record.idempotency_key = Some(keyed.key);
        }
        let edited = propose_call(
            entry,
            codec,
            &input,
            &actor,
            keyed,
            mode,
            self.governance.mode_policy(),
            raised_because,
        );
        self.record(&mut record).await?;
        self.approvals
            .approve_with_changes(key, edited, approver, now)
            .await
    }

    /// Rejects a pending proposal, with a reason.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::ReasonRequired`] for an empty or multi-line reason; otherwise as
    /// [`Governor::approve`].
    pub async fn reject(
        &self,
        key: &IdempotencyKey,
        by: &str,
        reason: &str,
    ) -> Result<ApprovalLane, ApprovalError> {
        self.decide_with_reason(key, LaneAction::Reject, by, reason)
            .await
    }

    /// A move that takes a reason (reject, defer, withdraw), now.
    async fn decide_with_reason(
        &self,
        key: &IdempotencyKey,
        action: LaneAction,
        by: &str,
        reason: &str,
    ) -> Result<ApprovalLane, ApprovalError> {
        let now = self.now()?;
        self.approvals
            .decide_with_reason(key, action, by, reason, now)
            .await
    }

    /// Withdraws a pending proposal on its caller's word (a client that cancelled its
    /// task), with a reason: it can no longer be approved, and the audit trail says who
    /// withdrew it. The server checks that `by` is the proposal's caller; the four-eyes
    /// rule is for approvals, not for giving a call up.
    ///
    /// # Errors
    ///
    /// As [`Governor::reject`]; a lane no longer pending is a refused transition.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// # let governor = Governor::new(&TOOLS);
    /// let key = cairnloop::IdempotencyKey::from_bytes([1; 32]);
    /// // No such proposal: nothing to withdraw.
    /// assert!(pollster::block_on(governor.withdraw(&key, "agent-7", "cancelled")).is_err());
    /// ```
    pub async fn withdraw(
        &self,
        key: &IdempotencyKey,
        by: &str,
        reason: &str,
    ) -> Result<ApprovalLane, ApprovalError> {
        self.decide_with_reason(key, LaneAction::Withdraw, by, reason)
            .await
    }

    /// Defers a pending proposal, with a reason.
    ///
    /// # Errors
    ///
    /// As [`Governor::reject`].
    pub async fn defer(
        &self,
        key: &IdempotencyKey,
        by: &str,
        reason: &str,
    ) -> Result<ApprovalLane, ApprovalError> {
        self.decide_with_reason(key, LaneAction::Defer, by, reason)
            .await
    }

    /// Expires a pending or approved lane whose time is up, and marks the outcome of a
    /// claim whose lease ran out unknown (its holder died mid-run), as [`Governor::sweep`]
    /// would for every lane; returns the lane, moved or not.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::ClockWentBackwards`], the clock's or the store's error.
    pub async fn expire_if_due(&self, key: &IdempotencyKey) -> Result<ApprovalLane, ApprovalError> {
        self.approvals.expire_if_due(key, self.now()?).await
    }

    /// Executes an approved call, for the actor who proposed it: the stored call goes
    /// through the gates again as they are now, and everything the approval binds (tool,
    /// risk tier, required scopes, mode, host policy, arguments, actor, account) is
    /// compared with its current value; any change invalidates the lane with a reason
    /// that names it, and nothing runs. Otherwise the lane is claimed once and the tool
    /// runs with the lane's key as its run key.
    ///
    /// # Errors
    ///
    /// Every error but [`ApprovalError::ExecutionFailed`] means the tool did not run.
    pub async fn execute(
        &self,
        key: &IdempotencyKey,
        actor: &Actor<'_>,
        context: &C,
    ) -> Result<Value, ApprovalError> {
        let now = self.now()?;
        self.approvals
            .execute(
                self.registry,
                key,
                actor,
                context,
                &self.governance,
                &self.holder,
                now,
            )
            .await
    }

    /// Marks every claim whose lease ran out as an unknown outcome, and expires every
    /// proposal whose time is up. Run it when the host starts (a process that died left
    /// its claims behind) and now and then. A lane whose outcome is unknown is never run
    /// again on its own: it waits for [`Governor::reconcile`]. Returns how many lanes
    /// moved.
    ///
    /// # Errors
    ///
    /// The clock's or the store's error.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// assert_eq!(pollster::block_on(Governor::new(&TOOLS).sweep()), Ok(0));
    /// ```
    pub async fn sweep(&self) -> Result<usize, ApprovalError> {
        self.approvals.sweep(self.now()?, 256).await
    }

    /// A person resolves a lane whose run was interrupted or whose outcome is unknown:
    /// it ran ([`Reconciliation::Executed`]), it did not
    /// ([`Reconciliation::Failed`]), or it is closed so that the same call can be
    /// proposed afresh ([`Reconciliation::Closed`]). A note is required.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::ReasonRequired`] without a usable note,
    /// [`ApprovalError::MissingDecider`], a refused transition (the lane is not
    /// interrupted or unknown), the clock's or the store's error.
    pub async fn reconcile(
        &self,
        key: &IdempotencyKey,
        by: &str,
        resolution: Reconciliation,
        note: &str,
    ) -> Result<ApprovalLane, ApprovalError> {
        let action = match resolution {
            Reconciliation::Executed => LaneAction::MarkExecuted,
            Reconciliation::Failed => LaneAction::MarkFailed,
            Reconciliation::Closed => LaneAction::Close,
        };
        self.approvals
            .reconcile(key, action, by, note, self.now()?)
            .await
    }

    /// Up to `limit` lanes in `state`, in key order, after `after`: a page of an
    /// operator's queue (`LaneState::Pending`) or of the outcomes to reconcile
    /// (`LaneState::Interrupted`, `LaneState::OutcomeUnknown`).
    ///
    /// # Errors
    ///
    /// The store's error.
    pub async fn lanes(
        &self,
        state: crate::gate::LaneState,
        after: Option<&IdempotencyKey>,
        limit: usize,
    ) -> Result<Vec<ApprovalLane>, ApprovalError> {
        Ok(self.approvals.store().list(state, after, limit).await?)
    }

    /// Up to `limit` lanes that `query` asks for, newest first: a page of a filtered
    /// queue (the next page is the query after the last lane's
    /// [`LaneMark`](crate::approvals::LaneMark)).
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry, approvals::LaneQuery, gate::LaneState};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// let page = pollster::block_on(governor.query_lanes(&LaneQuery::new(LaneState::Pending), 20))?;
    /// assert!(page.is_empty());
    /// # Ok::<(), cairnloop::ApprovalError>(())
    /// ```
    pub async fn query_lanes(
        &self,
        query: &crate::approvals::LaneQuery,
        limit: usize,
    ) -> Result<Vec<ApprovalLane>, ApprovalError> {
        Ok(self.approvals.store().query_lanes(query, limit).await?)
    }

    /// How many lanes `query` asks for, counted up to `cap`.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry, approvals::LaneQuery, gate::LaneState};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// let waiting = pollster::block_on(governor.count_lanes(&LaneQuery::new(LaneState::Pending), 10_000))?;
    /// assert_eq!(waiting, 0);
    /// # Ok::<(), cairnloop::ApprovalError>(())
    /// ```
    pub async fn count_lanes(
        &self,
        query: &crate::approvals::LaneQuery,
        cap: usize,
    ) -> Result<usize, ApprovalError> {
        Ok(self.approvals.store().count_lanes(query, cap).await?)
    }

    /// The lane with this key.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::UnknownLane`], or the store's error.
    pub async fn lane(&self, key: &IdempotencyKey) -> Result<ApprovalLane, ApprovalError> {
        self.approvals.lane(key).await
    }

    /// The store's change signal, when its store can be watched: it moves on after every
    /// lane change (in any process, for a shared store). A page or a worker notes its
    /// generation, reads, and waits for it to move on.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// assert!(governor.watch().is_some());
    /// ```
    pub fn watch(&self) -> Option<crate::approvals::StoreWatch> {
        self.approvals.store().watch()
    }

    /// Waits until a person decides the lane with this key (approves, rejects or defers
    /// it), or it leaves `pending` otherwise (it expires, or is invalidated), or `timeout`
    /// passes; returns the lane as it is then (still `pending` after a timeout). A host
    /// holds a workflow here until a person decides, in this process or, with a shared
    /// store, in any other: the store's [`StoreWatch`](crate::approvals::StoreWatch)
    /// wakes it, and a store that cannot be watched is read every 50 ms. A lane whose
    /// time is up is expired here, so the wait ends with it. A store that fails once the
    /// wait has begun (a database restarting) is read again every half second until it
    /// answers or the timeout ends the wait with the lane as last read: the wait goes on
    /// through an outage.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::UnknownLane`], the clock's error, or the store's error when the
    /// lane cannot be read at the start.
    ///
    /// ```
    /// use std::time::Duration;
    /// # use cairnloop::{Actor, Governor, InputErrors, Invocation, Outcome, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolCall, ToolEntry, ToolSpec};
    /// # use cairnloop::gate::LaneState;
    /// # #[derive(serde::Deserialize, serde::Serialize)]
    /// # struct Refund { cents: u64 }
    /// # struct RefundTool;
    /// # impl Tool for RefundTool {
    /// #     const SPEC: ToolSpec = ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::HighWrite);
    /// #     const SCOPES: &'static [Scope] = &[];
    /// #     type Input = Refund; type Output = u64; type Error = String; type Context = ();
    /// #     fn validate(_: &Refund) -> Result<(), InputErrors> { Ok(()) }
    /// #     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
    /// #     async fn run(call: Invocation<'_, Self>) -> Result<u64, String> { Ok(call.input().cents) }
    /// # }
    /// # static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<RefundTool>()]);
    /// let governor = std::sync::Arc::new(Governor::new(&TOOLS));
    /// let agent = Actor::new("agent-7", &[]);
    /// let call = ToolCall::new("refund", r#"{"cents": 500}"#);
    /// let Outcome::AwaitingApproval(lane) = pollster::block_on(governor.call(&call, &agent, &()))? else {
    ///     unreachable!()
    /// };
    /// let key = lane.key();
    /// let person = std::sync::Arc::clone(&governor);
    /// std::thread::spawn(move || pollster::block_on(person.approve(&key, "ops-lead")));
    /// let decided = pollster::block_on(governor.await_decision(&key, Duration::from_secs(30)))?;
    /// assert_eq!(decided.state(), LaneState::Approved);
    /// # Ok::<(), cairnloop::ApprovalError>(())
    /// ```
    pub async fn await_decision(
        &self,
        key: &IdempotencyKey,
        timeout: std::time::Duration,
    ) -> Result<ApprovalLane, ApprovalError> {
        self.await_move(key, timeout, None).await
    }

    /// As [`Governor::await_decision`], and with `past` (a version of the lane) it ends
    /// too when the lane moves on from that version while it stays pending: an approval
    /// of a quorum that still needs more, which a held call's client is told of.
    pub(crate) async fn await_move(
        &self,
        key: &IdempotencyKey,
        timeout: std::time::Duration,
        past: Option<u64>,
    ) -> Result<ApprovalLane, ApprovalError> {
        use std::time::{Duration, Instant};
        /// How often a store that cannot be watched is read.
        const POLL: Duration = Duration::from_millis(50);
        /// How often a waiter reads its lane whatever it was told: a change that slipped
        /// past the signals still ends the wait.
        const ANYWAY: Duration = Duration::from_secs(5);
        /// How soon a read that failed is made again.
        const RETRY: Duration = Duration::from_millis(500);
        let deadline = Instant::now().checked_add(timeout);
        let watch = self.watch();
        let polled = watch.is_none();
        let watch = watch.unwrap_or_default();
        let mut seen = watch.generation();
        // Waiting by lane: a change elsewhere wakes this waiter without a read of its own.
        let waiting = self.waiters.wait(*key);
        let mut seen_here = waiting.moved().generation();
        let mut lane = self.expire_if_due(key).await?;
        waiting.saw(lane.version());
        let mut leading = None;
        let mut failing = false;
        loop {
            if lane.state() != LaneState::Pending || past.is_some_and(|v| v != lane.version()) {
                return Ok(lane);
            }
            if leading.is_none() {
                leading = self.waiters.lead(*key);
            }
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if left.is_zero() {
                return Ok(lane);
            }
            // Wake when the lane's time is up too, to expire it.
            let due = lane
                .expires_at()
                .unix_millis()
                .saturating_sub(self.now()?.unix_millis())
                .saturating_add(1);
            let mut wait = left.min(Duration::from_millis(due)).min(ANYWAY);
            if polled {
                wait = wait.min(POLL);
            }
            if failing {
                wait = wait.min(RETRY);
            }
            let (anywhere, here) = (
                watch.changed(seen, wait),
                waiting.moved().changed(seen_here, wait),
            );
            let (mut anywhere, mut here) = (core::pin::pin!(anywhere), core::pin::pin!(here));
            let follows = leading.is_some() || polled;
            let woken = core::future::poll_fn(|cx| {
                if let core::task::Poll::Ready(moved) = here.as_mut().poll(cx) {
                    return core::task::Poll::Ready(Some(moved));
                }
                // Only the leader follows the store's signal (and, for a store that cannot
                // be watched, every waiter's short wait ends on its own).
                if !follows {
                    return core::task::Poll::Pending;
                }
                match anywhere.as_mut().poll(cx) {
                    core::task::Poll::Ready(true) => core::task::Poll::Ready(None),
                    core::task::Poll::Ready(false) => core::task::Poll::Ready(Some(false)),
                    core::task::Poll::Pending => core::task::Poll::Pending,
                }
            })
            .await;
            match woken {
                // The store changed somewhere: one waiter reads every waited lane, and this
                // one reads its own only if it moved.
                None => {
                    seen = watch.generation();
                    failing = (self.waiters)
                        .read_for_all(self.approvals.store(), seen)
                        .await
                        .is_err();
                }
                // This lane moved, or the wait ran out (its time may be up): read it.
                Some(_) => {
                    seen_here = waiting.moved().generation();
                    seen = watch.generation();
                    match self.expire_if_due(key).await {
                        Ok(read) => {
                            lane = read;
                            waiting.saw(lane.version());
                            failing = false;
                        }
                        // The store is away: the lane as last read, read again soon.
                        Err(ApprovalError::Store(_)) => failing = true,
                        Err(error) => return Err(error),
                    }
                }
            }
        }
    }

    /// What became of `lane` once a person approved it with changes: the changed call's
    /// lane (a change of that followed too, up to [`MAX_CHANGES`]) once it leaves
    /// `pending` or `timeout` passes; any other lane as it is. A change closes the
    /// original before it opens and approves the changed call, so a waiter the close
    /// wakes would otherwise find the changed call not there yet, or not yet approved.
    #[cfg(feature = "rmcp")]
    pub(crate) async fn await_changed(
        &self,
        mut lane: ApprovalLane,
        timeout: std::time::Duration,
    ) -> Result<ApprovalLane, ApprovalError> {
        let deadline = std::time::Instant::now().checked_add(timeout);
        let left = || {
            deadline.map_or(std::time::Duration::MAX, |at| {
                at.saturating_duration_since(std::time::Instant::now())
            })
        };
        for _ in 0..MAX_CHANGES {
            let (LaneState::Superseded, Some(next)) = (lane.state(), lane.replaced_by()) else {
                break;
            };
            let opened = self.await_opened(&next, left()).await?;
            lane = if opened.state() == LaneState::Pending {
                self.await_move(&next, left(), None).await?
            } else {
                opened
            };
        }
        Ok(lane)
    }

    /// The lane `key` names, read again as the store changes while it is not there yet
    /// (a changed call's lane, opened just after its original is closed), until `timeout`
    /// or five seconds pass.
    #[cfg(feature = "rmcp")]
    pub(crate) async fn await_opened(
        &self,
        key: &IdempotencyKey,
        timeout: std::time::Duration,
    ) -> Result<ApprovalLane, ApprovalError> {
        use std::time::{Duration, Instant};
        /// How often a store that cannot be watched is read.
        const POLL: Duration = Duration::from_millis(20);
        let deadline = Instant::now().checked_add(timeout.min(OPENING));
        let watch = self.watch().unwrap_or_default();
        loop {
            let seen = watch.generation();
            match self.expire_if_due(key).await {
                Err(ApprovalError::UnknownLane) => {}
                read => return read,
            }
            let left = deadline.map_or(Duration::MAX, |at| {
                at.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Err(ApprovalError::UnknownLane);
            }
            watch.changed(seen, left.min(POLL)).await;
        }
    }

    /// The store's event log: every transition, and every decision unless a sink of the
    /// host's takes them (a [`MemoryStore`](crate::approvals::MemoryStore) keeps the
    /// newest of them, a durable store all).
    ///
    /// # Errors
    ///
    /// The store's error.
    pub async fn events(&self) -> Result<Vec<AuditRecord>, ApprovalError> {
        Ok(self
            .approvals
            .store()
            .events_since(0, usize::MAX)
            .await?
            .into_iter()
            .map(|(_, record)| record)
            .collect())
    }

    /// Up to `limit` records of the store's event log after the sequence number `after`
    /// (0 for the start), each with its own number: one page of an audit view.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// assert!(pollster::block_on(Governor::new(&TOOLS).audit_log(0, 50))?.is_empty());
    /// # Ok::<(), cairnloop::ApprovalError>(())
    /// ```
    pub async fn audit_log(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, AuditRecord)>, ApprovalError> {
        Ok(self.approvals.store().events_since(after, limit).await?)
    }

    /// Writes a refusal at a human surface (a forged or replayed chat callback, a person
    /// who may not decide) to the host's sink, or else to the store's log, beside the
    /// lane moves it did not make.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry};
    /// use cairnloop::approvals::{AuditRecord, RefusalEvent};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// let refused = RefusalEvent::new("slack", "stale", governor.now()?);
    /// pollster::block_on(governor.record_refusal(refused))?;
    /// assert!(matches!(&pollster::block_on(governor.events())?[0], AuditRecord::Refusal(_)));
    /// # Ok::<(), cairnloop::ApprovalError>(())
    /// ```
    pub async fn record_refusal(&self, event: RefusalEvent) -> Result<(), ApprovalError> {
        self.write(AuditRecord::Refusal(event)).await
    }

    /// The time expiries, leases and sweeps are decided by, so that a view of the time
    /// left agrees with them: the store's, when it keeps one (a store shared by hosts:
    /// see [`ApprovalStore::now`]), else the governor's clock.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::ClockUnavailable`] when the clock cannot tell.
    ///
    /// ```
    /// # use cairnloop::{Governor, Registry, approvals::ManualClock, gate::Timestamp};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let clock = ManualClock::new(Timestamp::from_unix_millis(60_000));
    /// let governor = Governor::new(&TOOLS).with_clock(clock);
    /// assert_eq!(governor.now()?.unix_millis(), 60_000);
    /// # Ok::<(), cairnloop::ApprovalError>(())
    /// ```
    pub fn now(&self) -> Result<Timestamp, ApprovalError> {
        self.approvals
            .store()
            .now()
            .or_else(|| self.clock.now())
            .ok_or(ApprovalError::ClockUnavailable)
    }

    /// Whether decisions are recorded at all: not when the host's sink discards them,
    /// so that a record nobody keeps is never built.
    fn audits(&self) -> bool {
        self.approvals.is_tapped() || self.sink.as_ref().is_none_or(|sink| sink.keeps_records())
    }

    /// Records the decision of a call that runs at once: as [`Governor::record`], but
    /// handed to the store to write soon when it takes it so.
    async fn record_soon(&self, event: &mut Option<AuditEvent>) -> Result<(), ApprovalError> {
        if self.sink.is_some() {
            return self.record(event).await;
        }
        let Some(taken) = event.take() else {
            return Ok(());
        };
        let record = AuditRecord::Decision(taken);
        self.approvals.tapped(&record);
        match self.approvals.store().append_soon(record) {
            None => Ok(()),
            Some(record) => Ok(self.approvals.store().append(record).await?),
        }
    }

    /// Records a decision: to the host's sink, or to the store's log. By reference: a
    /// call's future then carries no copy of a record that is not kept.
    async fn record(&self, event: &mut Option<AuditEvent>) -> Result<(), ApprovalError> {
        let Some(event) = event.take() else {
            return Ok(());
        };
        self.write(AuditRecord::Decision(event)).await
    }

    /// Writes a record to the tap, and to the host's sink or else the store's log.
    async fn write(&self, record: AuditRecord) -> Result<(), ApprovalError> {
        self.approvals.tapped(&record);
        match &self.sink {
            Some(sink) => {
                sink.record(&record);
                Ok(())
            }
            None => Ok(self.approvals.store().append(record).await?),
        }
    }
}

/// How a person resolves a run that was interrupted or whose outcome is unknown.
///
/// ```
/// use cairnloop::approvals::Reconciliation;
///
/// let resolution = Reconciliation::Closed; // propose it afresh if it is still wanted
/// assert_ne!(resolution, Reconciliation::Executed);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reconciliation {
    /// The run did its work: the lane becomes `executed`.
    Executed,
    /// The run did not do its work: the lane becomes `execution_failed`.
    Failed,
    /// Closed without an outcome: the same call may be proposed afresh.
    Closed,
}

impl<C: ?Sized + 'static, S> fmt::Debug for Governor<C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Governor")
            .field("registry", self.registry)
            .field("governance", &self.governance)
            .field("audit_sink", &self.sink.is_some())
            .finish_non_exhaustive()
    }
}

/// The actor's id and account by the identity rule, before anything is decided.
fn check_actor(actor: &Actor<'_>) -> Result<(), ApprovalError> {
    check_id(actor.id()).map_err(ApprovalError::InvalidActor)?;
    match actor.account() {
        Some(account) => check_id(account).map_err(ApprovalError::InvalidActor),
        None => Ok(()),
    }
}

/// Runs a call that runs at once, its record already handed over: its output, or why it
/// failed.
async fn run_now<C: ?Sized + 'static>(
    codec: &'static dyn Codec<C>,
    input: ErasedInput,
    call: &ToolCall<'_>,
    actor: &Actor<'_>,
    context: &C,
) -> Outcome {
    let dedupe_token = call.dedupe_token();
    match run_ready(
        codec,
        input,
        actor,
        context,
        RunKey::OnDemand { dedupe_token },
    )
    .await
    {
        Ok(output) => Outcome::Executed(output),
        Err(error) => Outcome::Failed(error),
    }
}

/// What became of a call [`Governor::decide_handing_on`] decided.
#[cfg(feature = "rmcp")]
pub(crate) enum HandingOn {
    /// The outcome, as [`Governor::decide`] gives it.
    Outcome(Outcome),
    /// The call ran; its output is the text of an MCP `CallToolResult`.
    CallResult(Box<serde_json::value::RawValue>),
}

/// A call through the gates, not yet recorded nor run (see [`Governor::gate`]).
pub(crate) struct Gated<C: ?Sized + 'static> {
    entry: Option<&'static ToolEntry<C>>,
    verdict: Verdict<Admitted<C>>,
}

impl<C: ?Sized + 'static> Gated<C> {
    /// Whether the call waits for a person (it would be proposed).
    #[cfg_attr(
        not(feature = "rmcp"),
        allow(dead_code, reason = "used by the MCP transport")
    )]
    pub(crate) fn awaits_approval(&self) -> bool {
        matches!(self.verdict, Verdict::AwaitApproval { .. })
    }
}
