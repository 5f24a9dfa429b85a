// Rule 4: a loosening needs a reason.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("add_tag", "Add tag", "Tags a ticket.", RiskTier::LowWrite).loosen_approval(ApprovalMode::Auto, "");

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
