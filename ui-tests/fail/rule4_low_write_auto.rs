// Rule 4: low_write derives requires_approval; auto is weaker.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("add_note", "Add note", "Adds an internal note.", RiskTier::LowWrite).with_approval(ApprovalMode::Auto);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
