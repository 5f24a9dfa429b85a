// Rule 4: not even a justified loosening makes a destructive tool auto.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("delete_customer", "Delete customer", "Deletes a customer.", RiskTier::Destructive).loosen_approval(ApprovalMode::Auto, "we have nightly backups");

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
