// Rule 7: "refund_order" and "Refund_Order" cannot share a registry.
use cairnloop::{Registry, RiskTier, Scope, ToolEntry, ToolSpec};

#[macro_use]
#[path = "../tool.rs"]
mod tool;

tool!(
    RefundOrder,
    ToolSpec::new("refund_order", "Refund order", "Refunds an order.", RiskTier::HighWrite),
    &[Scope::new("refunds:write")]
);

tool!(
    RefundOrderV2,
    ToolSpec::new("Refund_Order", "Refund order", "Refunds an order, v2.", RiskTier::HighWrite),
    &[Scope::new("refunds:write")]
);

static TOOLS: Registry<()> =
    Registry::new(&[ToolEntry::of::<RefundOrder>(), ToolEntry::of::<RefundOrderV2>()]);

fn main() {
    let _ = TOOLS.get("refund_order");
}
