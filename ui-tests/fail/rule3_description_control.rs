// Rule 3: a carriage return (only \n and \t are allowed).
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up order", "Finds an order.\r\nReturns its status.", RiskTier::ReadOnly);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
