// Rule 6: a tool requires the same scope twice; the registry `static` catches it.
use cairnloop::{Registry, RiskTier, Scope, ToolEntry, ToolSpec};

#[macro_use]
#[path = "../tool.rs"]
mod tool;

tool!(
    LookupOrder,
    ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly),
    &[Scope::new("orders:read"), Scope::new("orders:read")]
);

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<LookupOrder>()]);

fn main() {
    let _ = TOOLS.get("lookup_order");
}
