// A bad associated `SPEC` is caught by `cargo check` once a registry `static` uses it.
use cairnloop::{ApprovalMode, InputErrors, Invocation, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};

struct IssueRefund;

impl Tool for IssueRefund {
    // Rule 4: a high-write tool set to auto without a justified loosening.
    const SPEC: ToolSpec =
        ToolSpec::new("issue_refund", "Issue refund", "Refunds a payment.", RiskTier::HighWrite)
            .with_approval(ApprovalMode::Auto);
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

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<IssueRefund>()]);

fn main() {
    let _ = TOOLS.get("issue_refund");
}
