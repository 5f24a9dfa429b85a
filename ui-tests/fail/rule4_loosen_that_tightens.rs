// Rule 4: `loosen_approval` with a mode that does not loosen.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("add_tag", "Add tag", "Tags a ticket.", RiskTier::LowWrite).loosen_approval(ApprovalMode::AlwaysBlock, "paranoid");

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
