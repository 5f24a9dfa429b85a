// Rule 5: a result state declared twice.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly).with_result_states(&["found", "not_found", "found"]);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
