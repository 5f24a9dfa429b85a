// Every quorum a waiting tool may ask: 1 to 5 approvers, on any tier whose calls wait,
// and on a read-only tool made to wait.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const fn spec(tier: RiskTier) -> ToolSpec {
    ToolSpec::new("a_tool", "A tool", "Does a thing.", tier)
}

const QUORUMS: [ToolSpec; 6] = [
    spec(RiskTier::LowWrite).with_quorum(1),
    spec(RiskTier::LowWrite).with_quorum(2),
    spec(RiskTier::HighWrite).with_quorum(3),
    spec(RiskTier::HighWrite).with_quorum(5),
    spec(RiskTier::ReadOnly)
        .with_approval(ApprovalMode::RequiresApproval)
        .with_quorum(2),
    // A quorum of one on a tool that runs at once is no quorum: allowed.
    spec(RiskTier::ReadOnly).with_quorum(1),
];

fn main() {
    assert_eq!(QUORUMS.map(|spec| spec.quorum()), [1, 2, 3, 5, 2, 1]);
}
