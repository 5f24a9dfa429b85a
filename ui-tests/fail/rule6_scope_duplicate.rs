// Rule 6: a tool requires the same scope twice; the registry `static` catches it.
use cairnloop::{InputErrors, Invocation, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};

struct LookupOrder;

impl Tool for LookupOrder {
    const SPEC: ToolSpec =
        ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly);
    const SCOPES: &'static [Scope] = &[Scope::new("orders:read"), Scope::new("orders:read")];
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

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<LookupOrder>()]);

fn main() {
    let _ = TOOLS.get("lookup_order");
}
