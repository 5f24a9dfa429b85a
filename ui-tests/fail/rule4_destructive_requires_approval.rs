// Rule 4: destructive derives always_block; requires_approval is weaker.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("delete_customer", "Delete customer", "Deletes a customer.", RiskTier::Destructive).with_approval(ApprovalMode::RequiresApproval);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
