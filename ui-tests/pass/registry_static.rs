// A registry in a `static`, with a policy, scopes and a lookup that only matches exactly.
use cairnloop::{
    Actor, InputErrors, Invocation, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolEntry,
    ToolSpec,
};

#[macro_use]
#[path = "../tool.rs"]
mod tool;

struct LookupOrder;

impl Tool for LookupOrder {
    const SPEC: ToolSpec =
        ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly);
    const SCOPES: &'static [Scope] = &[Scope::new("orders:read")];
    type Input = u32;
    type Output = ();
    type Error = ();
    type Context = ();

    fn validate(_: &u32) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

tool!(
    DeleteCustomer,
    ToolSpec::new("delete_customer", "Delete customer", "Deletes a customer.", RiskTier::Destructive),
    &[Scope::new("customers:delete")]
);

static TOOLS: Registry<()> =
    Registry::new(&[ToolEntry::of::<LookupOrder>(), ToolEntry::of::<DeleteCustomer>()]);

fn main() {
    assert!(TOOLS.get("lookup_order").is_some());
    assert!(TOOLS.get("Lookup_Order").is_none());
    let admin = Actor::new("admin", &["orders:read", "customers:delete"]);
    let visible: Vec<_> = cairnloop::gate::visible(&TOOLS, &admin, &(), &cairnloop::ModePolicy::new())
        .map(|t| t.spec().name())
        .collect();
    // No policy on delete_customer: hidden even from an actor holding its scope.
    assert_eq!(visible, ["lookup_order"]);
}
