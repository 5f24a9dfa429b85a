//! A destructive tool: blocked for everyone, whatever their scopes and policy, and a
//! loosening to "requires approval" is possible only with a written justification.
//!
//! `cargo run --example delete_customer`

use cairnloop::{
    Actor, ApprovalMode, Decision, InputErrors, Invocation, ModePolicy, PolicyDenial, RiskTier,
    Scope, Tool, ToolSpec, decide,
};

struct DeleteCustomer;

impl Tool for DeleteCustomer {
    const SPEC: ToolSpec = ToolSpec::new(
        "delete_customer",
        "Delete customer",
        "Deletes a customer account and all of its data.",
        RiskTier::Destructive,
    );
    const SCOPES: &'static [Scope] = &[Scope::new("customers:delete")];

    type Input = u64;
    type Output = ();
    type Error = ();
    type Context = ();

    fn validate(_: &u64) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(actor: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        if actor.id().starts_with("admin-") {
            Ok(())
        } else {
            Err(PolicyDenial::Denied("only administrators delete customers"))
        }
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        unreachable!("an always-blocked tool never runs")
    }
}

/// The same tool in a test environment, loosened on the record.
struct DeleteTestCustomer;

impl Tool for DeleteTestCustomer {
    const SPEC: ToolSpec = ToolSpec::new(
        "delete_test_customer",
        "Delete test customer",
        "Deletes a customer of the staging tenant.",
        RiskTier::Destructive,
    )
    .loosen_approval(
        ApprovalMode::RequiresApproval,
        "staging data is rebuilt every night",
    );
    const SCOPES: &'static [Scope] = &[Scope::new("customers:delete")];

    type Input = u64;
    type Output = ();
    type Error = ();
    type Context = ();

    fn validate(_: &u64) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

fn show<T: Tool<Input = u64, Context = ()>>(actor: &Actor<'_>) {
    let outcome = match decide::<T>(7, actor, &(), &ModePolicy::new()) {
        Decision::Execute { .. } => "execute".to_owned(),
        Decision::AwaitApproval(pending) => format!(
            "await approval (declared {}, loosened because {:?})",
            pending.mode().declared(),
            pending.mode().loosened_because().unwrap_or("-")
        ),
        Decision::Blocked(blocked) => format!("blocked ({}): {blocked}", blocked.code()),
    };
    println!("{:<9} {}(7): {outcome}", actor.id(), T::SPEC.name());
}

fn main() {
    for spec in [DeleteCustomer::SPEC, DeleteTestCustomer::SPEC] {
        println!(
            "tool {:?}: tier {}, derived {}, in force {}, loosened because {:?}",
            spec.name(),
            spec.risk_tier(),
            spec.derived_approval_mode(),
            spec.approval_mode(),
            spec.loosened_because()
        );
    }
    let admin = Actor::new("admin-1", &["customers:delete"]);
    let agent = Actor::new("agent-7", &["customers:delete"]);
    let nobody = Actor::new("nobody", &[]);
    for actor in [&admin, &agent, &nobody] {
        show::<DeleteCustomer>(actor);
    }
    show::<DeleteTestCustomer>(&admin);
}
