// Rule 2: a blank title.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("lookup_order", "  ", "Finds an order.", RiskTier::ReadOnly);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
