// A bad associated `SPEC` is caught by `cargo check` once a registry `static` uses it.
use cairnloop::{ApprovalMode, Registry, RiskTier, Scope, ToolEntry, ToolSpec};

#[macro_use]
#[path = "../tool.rs"]
mod tool;

tool!(
    IssueRefund,
    // Rule 4: a high-write tool set to auto without a justified loosening.
    ToolSpec::new("issue_refund", "Issue refund", "Refunds a payment.", RiskTier::HighWrite)
        .with_approval(ApprovalMode::Auto),
    &[Scope::new("refunds:write")]
);

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<IssueRefund>()]);

fn main() {
    let _ = TOOLS.get("issue_refund");
}
