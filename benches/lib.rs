//! What the benchmarks share: a call by name with a five-field JSON object, to a tool of
//! each kind the budgets name (one that runs, one that awaits approval, one whose policy
//! refuses), and the floor each is measured against.
//!
//! `governance.rs` times them with criterion, `allocations.rs` counts their allocations,
//! and `profile.rs` runs one path in a loop for callgrind.

use cairnloop::approvals::{
    ApprovalLane, ApprovalStore, AuditRecord, AuditSink, DiscardAudit, MemoryStore, StoreError,
    TransitionEvent,
};
use cairnloop::gate::LaneState;
use cairnloop::{
    Actor, Governor, IdempotencyKey, InputErrors, Invocation, PolicyDenial, Registry, RiskTier,
    Scope, Tool, ToolCall, ToolEntry, ToolSpec,
};
use serde::{Deserialize, Serialize};

#[macro_use]
#[path = "../tests/fixtures/plain_tool.rs"]
mod plain_tool;

/// A refund's input, for the store and concurrency benchmarks.
#[derive(Deserialize, Serialize)]
pub struct Refund {
    /// The order refunded.
    pub order: u64,
    /// How much, in cents: the tool's output.
    pub cents: u64,
}

plain_tool!(
    /// Refunds an order: a person approves each call.
    pub RefundOrder(Refund) -> Result<u64, String>, (),
    ToolSpec::new("refund_order", "Refund order", "Refunds an order.", RiskTier::HighWrite),
    ["refunds:write"],
    |call| { Ok(call.input().cents) }
);

plain_tool!(
    /// Looks a refund up: runs at once.
    pub LookupRefund(Refund) -> Result<u64, String>, (),
    ToolSpec::new("lookup_refund", "Look up refund", "Looks a refund up.", RiskTier::ReadOnly),
    ["refunds:write"],
    |call| { Ok(call.input().cents) }
);

/// The input: five fields, as a model would send them.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[allow(dead_code, reason = "decoded, not read")]
pub struct Shipment {
    pub order: u32,
    pub carrier: String,
    pub weight_grams: u32,
    pub express: bool,
    pub note: String,
}

/// The argument text of every call.
pub const SHIPMENT: &str = r#"{"order": 1001, "carrier": "DHL", "weight_grams": 1250, "express": true, "note": "leave at the door"}"#;

macro_rules! shipping_tool {
    ($ty:ident, $name:literal, $tier:expr, $allowed:expr) => {
        /// A shipping tool (see the module).
        pub struct $ty;

        impl Tool for $ty {
            const SPEC: ToolSpec = ToolSpec::new($name, "Ship", "Ships an order.", $tier);
            const SCOPES: &'static [Scope] = &[Scope::new("orders:write")];
            type Input = Shipment;
            type Output = ();
            type Error = String;
            type Context = ();
            fn validate(_: &Shipment) -> Result<(), InputErrors> {
                Ok(())
            }
            fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
                if $allowed {
                    Ok(())
                } else {
                    Err(PolicyDenial::Denied("shipping is paused"))
                }
            }
            async fn run(_: Invocation<'_, Self>) -> Result<(), String> {
                Ok(())
            }
        }
    };
}

shipping_tool!(Ship, "ship", RiskTier::ReadOnly, true);
shipping_tool!(ShipLater, "ship_later", RiskTier::HighWrite, true);
shipping_tool!(ShipPaused, "ship_paused", RiskTier::ReadOnly, false);

/// The three tools, callable by name.
pub static SHIPPING: Registry<()> = Registry::new(&[
    ToolEntry::json::<Ship>(),
    ToolEntry::json::<ShipLater>(),
    ToolEntry::json::<ShipPaused>(),
]);

/// The paths the budgets name, each a call by name of [`SHIPMENT`].
/// The same auto tool with its input schema, as rig needs it.
pub static SHIPPING_WITH_SCHEMAS: Registry<()> = Registry::new(&[ToolEntry::mcp::<Ship>()]);

/// The same tool written for rig alone: no governance, rig's own typed dispatch.
pub struct RigShip;

impl rig_agent::core::tool::PortableTool for RigShip {
    const NAME: &'static str = "ship";
    type Args = Shipment;
    type Output = ();
    type Error = std::convert::Infallible;

    fn description(&self) -> String {
        "Ships an order.".into()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Shipment)).unwrap_or_default()
    }

    async fn call(&self, _: Shipment) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// rig's tool set holding `RigShip`.
pub fn rig_plain() -> rig_agent::tool::ToolSet {
    let mut set = rig_agent::tool::ToolSet::default();
    set.add_tool(RigShip);
    set
}

/// rig's tool set holding the governed `ship` (cairnloop's tool through rig).
pub fn rig_governed() -> rig_agent::tool::ToolSet {
    let governor =
        std::sync::Arc::new(Governor::new(&SHIPPING_WITH_SCHEMAS).with_audit_sink(DiscardAudit));
    let caller = cairnloop::approvals::Caller::new("agent", ["orders:write"]);
    let mut set = rig_agent::tool::ToolSet::default();
    cairnloop::rig::RigTools::new(governor, (), caller)
        .add_to(&mut set)
        .expect("the tool registers");
    set
}

/// One call of `ship` through a rig tool set, by name, as rig's agent loop makes it;
/// whether it succeeded.
pub fn rig_call(set: &rig_agent::tool::ToolSet, arguments: &str) -> bool {
    let mut context = rig_agent::tool::ToolContext::new();
    run(set.execute("ship", arguments, &mut context)).is_success()
}

#[derive(Clone, Copy, Debug)]
pub enum Path {
    /// Decode, gates, run, output as JSON.
    Executes,
    /// Gate 0: no such tool.
    UnknownTool,
    /// Gate 2: the actor lacks the scope.
    ScopeMissing,
    /// Gate 3: the policy refuses.
    PolicyDenied,
    /// Decode, gates, canonical JSON, key, preview, snapshots: a proposal.
    Proposal,
}

impl Path {
    /// Every path, with its name in reports.
    pub const ALL: [(Path, &'static str); 5] = [
        (Path::Executes, "executes"),
        (Path::UnknownTool, "blocked_gate0_unknown_tool"),
        (Path::ScopeMissing, "blocked_gate2_scope"),
        (Path::PolicyDenied, "blocked_gate3_policy"),
        (Path::Proposal, "proposal"),
    ];

    /// The tool the path calls and whether the actor holds the scope.
    fn call(self) -> (&'static str, bool) {
        match self {
            Path::Executes => ("ship", true),
            Path::UnknownTool => ("shop", true),
            Path::ScopeMissing => ("ship", false),
            Path::PolicyDenied => ("ship_paused", true),
            Path::Proposal => ("ship_later", true),
        }
    }
}

/// A governor over [`SHIPPING`] whose audit records go to `sink`.
pub fn governor(sink: impl AuditSink + 'static) -> Governor<(), MemoryStore> {
    Governor::new(&SHIPPING).with_audit_sink(sink)
}

/// A governor over [`SHIPPING`] whose audit records go to its memory store (the default).
pub fn governor_with_store_log() -> Governor<(), MemoryStore> {
    Governor::new(&SHIPPING)
}

/// A governor whose sink discards: the figures are the pipeline's.
pub fn discarding() -> Governor<(), MemoryStore> {
    governor(DiscardAudit)
}

/// A governor whose sink and store both discard: a proposal's figure is the pipeline's
/// (decode, gates, canonical text, key, preview, snapshots, the lane opened), without a
/// store's bookkeeping, which the store benches measure on their own.
pub fn discarding_all() -> Governor<(), DiscardStore> {
    Governor::new(&SHIPPING)
        .with_audit_sink(DiscardAudit)
        .with_store(DiscardStore)
}

/// A store that keeps nothing: every lane is new, nothing is found. For measuring the
/// pipeline alone; no host would use it.
#[derive(Clone, Copy, Debug, Default)]
pub struct DiscardStore;

impl ApprovalStore for DiscardStore {
    async fn insert(
        &self,
        lane: ApprovalLane,
        _: TransitionEvent,
    ) -> Result<(ApprovalLane, bool), StoreError> {
        Ok((lane, true))
    }

    async fn get(&self, _: &IdempotencyKey) -> Result<Option<ApprovalLane>, StoreError> {
        Ok(None)
    }

    async fn transition(
        &self,
        _: u64,
        _: ApprovalLane,
        _: TransitionEvent,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    fn transition_detached(&self, _: u64, _: ApprovalLane, _: TransitionEvent) {}

    async fn append(&self, _: AuditRecord) -> Result<(), StoreError> {
        Ok(())
    }

    async fn events_since(&self, _: u64, _: usize) -> Result<Vec<(u64, AuditRecord)>, StoreError> {
        Ok(Vec::new())
    }

    async fn list(
        &self,
        _: LaneState,
        _: Option<&IdempotencyKey>,
        _: usize,
    ) -> Result<Vec<ApprovalLane>, StoreError> {
        Ok(Vec::new())
    }
}

/// One call of `path` through `governor`; its outcome's code. A proposal is made on a
/// fresh key each time only if the store is fresh: callers that repeat it measure the
/// repeat (the same proposal found again) unless they pass `fresh`.
pub fn call<S: ApprovalStore>(
    governor: &Governor<(), S>,
    path: Path,
    arguments: &str,
) -> &'static str {
    let (name, scoped) = path.call();
    let scopes: &[&str] = if scoped { &["orders:write"] } else { &[] };
    let actor = Actor::new("agent", scopes);
    let call = ToolCall::new(name, arguments);
    match run(governor.call(&call, &actor, &())) {
        Ok(outcome) => outcome.code(),
        Err(_) => "error",
    }
}

/// Drives a future as a host's runtime would drive one that never waits: polled once
/// (nothing in these paths waits), else to completion on this thread.
pub fn run<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => pollster::block_on(future),
    }
}

/// `count` argument texts like [`SHIPMENT`], each with its own order number (from
/// `first`): each is a new proposal to a governor that has not seen it.
pub fn distinct_shipments(first: u64, count: u64) -> Vec<String> {
    (first..first + count)
        .map(|order| SHIPMENT.replacen("1001", &order.to_string(), 1))
        .collect()
}

/// The floor: decode the same text with serde_json, call the tool's function directly,
/// and encode its output as JSON.
pub fn floor(arguments: &str) -> bool {
    let shipment = serde_json::from_str::<Shipment>(arguments).ok();
    std::hint::black_box(&shipment);
    serde_json::to_value(()).is_ok()
}

/// "tool_00000" to "tool_09999", built at compile time.
static NAMES: [[u8; 10]; 10_000] = {
    let mut names = [*b"tool_00000"; 10_000];
    let mut n = 0;
    while n < 10_000 {
        let mut digit = 9;
        let mut rest = n;
        while digit >= 5 {
            names[n][digit] = b'0' + (rest % 10) as u8;
            rest /= 10;
            digit -= 1;
        }
        n += 1;
    }
    names
};

/// The name of tool `n`, `tool_00042` for 42.
pub const fn name(n: usize) -> &'static str {
    match core::str::from_utf8(&NAMES[n]) {
        Ok(name) => name,
        Err(_) => panic!("names are ASCII"),
    }
}

/// The scopes of the actor a listing of [`R1000`] is made for (none that the numbered
/// tools require: every tool is decided by its policy).
pub const LISTING_SCOPES: [&str; 5] = [
    "orders:read",
    "tickets:write",
    "refunds:write",
    "customers:read",
    "notes:write",
];

/// The floor of a listing of [`R1000`]: per tool, the same subset check of its required
/// scopes (none) against [`LISTING_SCOPES`] and a call of a policy that denies, through a
/// function pointer as a registry holds it; the number of tools both let through.
pub fn visibility_floor() -> usize {
    fn deny() -> bool {
        false
    }
    // Built once, as a registry is.
    static REQUIRED: [&[&str]; 1000] = [&[]; 1000];
    REQUIRED
        .iter()
        .filter(|required| {
            required.iter().all(|scope| {
                std::hint::black_box(&LISTING_SCOPES)
                    .iter()
                    .any(|granted| granted.as_bytes() == scope.as_bytes())
            })
        })
        .filter(|_| std::hint::black_box(deny as fn() -> bool)())
        .count()
}

/// A read-only tool with no input, named by its number (see [`name`]).
pub struct Numbered<const N: usize>;

impl<const N: usize> Tool for Numbered<N> {
    const SPEC: ToolSpec =
        ToolSpec::new(name(N), "Numbered", "A numbered tool.", RiskTier::ReadOnly);
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

seq_macro::seq!(N in 0..10 { /// 10 numbered tools.
 pub static R10: Registry<()> = Registry::new(&[#(ToolEntry::of::<Numbered<N>>(),)*]); });
seq_macro::seq!(N in 0..100 { /// 100 numbered tools.
 pub static R100: Registry<()> = Registry::new(&[#(ToolEntry::of::<Numbered<N>>(),)*]); });
seq_macro::seq!(N in 0..1000 { /// 1000 numbered tools.
 pub static R1000: Registry<()> = Registry::new(&[#(ToolEntry::of::<Numbered<N>>(),)*]); });
seq_macro::seq!(N in 0..10000 { /// 10000 numbered tools.
 pub static R10000: Registry<()> = Registry::new(&[#(ToolEntry::of::<Numbered<N>>(),)*]); });
