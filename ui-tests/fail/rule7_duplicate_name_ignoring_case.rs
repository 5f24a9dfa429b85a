// Rule 7: "refund_order" and "Refund_Order" cannot share a registry.
use cairnloop::{InputErrors, Invocation, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};

struct RefundOrder;

impl Tool for RefundOrder {
    const SPEC: ToolSpec =
        ToolSpec::new("refund_order", "Refund order", "Refunds an order.", RiskTier::HighWrite);
    const SCOPES: &'static [Scope] = &[Scope::new("refunds:write")];
    type Input = u32;
    type Output = ();
    type Error = ();
    type Context = ();

    fn validate(_: &u32) -> Result<(), InputErrors> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

struct RefundOrderV2;

impl Tool for RefundOrderV2 {
    const SPEC: ToolSpec =
        ToolSpec::new("Refund_Order", "Refund order", "Refunds an order, v2.", RiskTier::HighWrite);
    const SCOPES: &'static [Scope] = &[Scope::new("refunds:write")];
    type Input = u32;
    type Output = ();
    type Error = ();
    type Context = ();

    fn validate(_: &u32) -> Result<(), InputErrors> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

static TOOLS: Registry<()> =
    Registry::new(&[ToolEntry::of::<RefundOrder>(), ToolEntry::of::<RefundOrderV2>()]);

fn main() {
    let _ = TOOLS.get("refund_order");
}
