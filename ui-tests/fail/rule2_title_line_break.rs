// Rule 2: a title on two lines.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up\norder", "Finds an order.", RiskTier::ReadOnly);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
