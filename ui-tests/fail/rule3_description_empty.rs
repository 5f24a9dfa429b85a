// Rule 3: an empty description.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up order", "", RiskTier::ReadOnly);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
