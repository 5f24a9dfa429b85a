// Rule 8: a quorum, then a loosening to `Auto`: the loosening is refused.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("add_tag", "Add tag", "Tags a ticket.", RiskTier::LowWrite)
    .with_quorum(2)
    .loosen_approval(ApprovalMode::Auto, "tags are cosmetic");

fn main() {
    let _ = SPEC;
}
