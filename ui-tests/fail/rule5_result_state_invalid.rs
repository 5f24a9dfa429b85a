// Rule 5: result states are [a-z0-9_].
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly).with_result_states(&["found", "Not Found"]);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
