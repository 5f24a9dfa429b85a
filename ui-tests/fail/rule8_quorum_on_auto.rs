// Rule 8: a read-only tool runs at once; nobody approves its calls, so no quorum.
use cairnloop::{RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly).with_quorum(2);

fn main() {
    let _ = SPEC;
}
