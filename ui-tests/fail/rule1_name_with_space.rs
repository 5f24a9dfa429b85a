// Rule 1: a space is outside [A-Za-z0-9_-].
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("delete customer", "Delete customer", "Deletes a customer.", RiskTier::Destructive);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
