// Rule 1: 65 characters is one too many.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("a_tool_name_that_goes_on_and_on_far_past_what_any_model_vendor_ok", "Long", "Has a long name.", RiskTier::ReadOnly);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
