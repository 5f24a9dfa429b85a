//! A read-only tool with an explicit policy: it runs at once, for the right people only.
//! This example uses the typed core alone (no `serde`, no allocation), as a `no_std`
//! agent would; `support_desk` shows the same gates through a `Governor`.
//!
//! `cargo run --example lookup_order`

use cairnloop::{
    Actor, Decision, FieldError, InputErrors, Invocation, ModePolicy, PolicyDenial, Registry,
    RiskTier, Scope, Tool, ToolEntry, ToolSpec, decide, execute,
};

/// The host's data: orders by number, each in one account.
struct Shop {
    orders: &'static [(u32, &'static str, &'static str)], // (number, account, status)
}

struct LookupOrder;

impl Tool for LookupOrder {
    const SPEC: ToolSpec = ToolSpec::new(
        "lookup_order",
        "Look up order",
        "Finds an order of the caller's account by its number and returns its status.",
        RiskTier::ReadOnly,
    )
    .with_result_states(&["found", "not_found"])
    .idempotent()
    .closed_world();
    const SCOPES: &'static [Scope] = &[Scope::new("orders:read")];

    type Input = u32;
    type Output = &'static str;
    type Error = &'static str;
    type Context = Shop;

    fn validate(number: &u32) -> Result<(), InputErrors> {
        if *number == 0 {
            return Err(InputErrors::one(FieldError::new(
                "",
                "out_of_range",
                "order numbers start at 1",
            )));
        }
        Ok(())
    }

    // The explicit policy: only actors acting in an account may look orders up.
    fn authorize(actor: &Actor<'_>, _: &Shop) -> Result<(), PolicyDenial> {
        match actor.account() {
            Some(_) => Ok(()),
            None => Err(PolicyDenial::Denied("order lookups need an account")),
        }
    }

    async fn run(call: Invocation<'_, Self>) -> Result<&'static str, &'static str> {
        let account = call.actor().account();
        call.context()
            .orders
            .iter()
            .find(|(number, owner, _)| number == call.input() && Some(*owner) == account)
            .map(|(_, _, status)| *status)
            .ok_or("not_found")
    }
}

static TOOLS: Registry<Shop> = Registry::new(&[ToolEntry::of::<LookupOrder>()]);

fn main() {
    let shop = Shop {
        orders: &[(1001, "acme", "shipped"), (1002, "globex", "packing")],
    };
    let spec = LookupOrder::SPEC;
    println!(
        "tool {:?}: tier {}, approval mode {} (derived {})",
        spec.name(),
        spec.risk_tier(),
        spec.approval_mode(),
        spec.derived_approval_mode()
    );

    let clerk = Actor::new("clerk-1", &["orders:read"]).with_account("acme");
    let guest = Actor::new("guest", &[]).with_account("acme");
    let robot = Actor::new("robot", &["orders:read"]);
    for actor in [&clerk, &guest, &robot] {
        let visible: Vec<_> = cairnloop::gate::visible(&TOOLS, actor, &shop, &ModePolicy::new())
            .map(|t| t.spec().name())
            .collect();
        println!("{:<8} sees {:?}", actor.id(), visible);
    }

    let policy = ModePolicy::new();
    for (actor, number) in [
        (&clerk, 1001),
        (&clerk, 1002),
        (&clerk, 0),
        (&guest, 1001),
        (&robot, 1001),
    ] {
        let outcome = match decide::<LookupOrder>(number, actor, &shop, &policy) {
            Decision::Execute { call, .. } => match pollster::block_on(execute(call)) {
                Ok(status) => format!("execute -> {status}"),
                Err(state) => format!("execute -> {state}"),
            },
            Decision::AwaitApproval(_) => "await approval".to_owned(),
            Decision::Blocked(blocked) => format!("blocked ({}): {blocked}", blocked.code()),
        };
        println!("{:<8} lookup_order({number}): {outcome}", actor.id());
    }
}
