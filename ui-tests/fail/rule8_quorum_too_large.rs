// Rule 8: a quorum is 1 to 5 approvers.
use cairnloop::{RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("deploy", "Deploy", "Deploys to production.", RiskTier::HighWrite).with_quorum(6);

fn main() {
    let _ = SPEC;
}
