// Every tier with every mode it allows: the derived one, every tightening, and the
// justified loosenings.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const fn spec(tier: RiskTier) -> ToolSpec {
    ToolSpec::new("a_tool", "A tool", "Does a thing.", tier)
}

const DERIVED: [ToolSpec; 4] = [
    spec(RiskTier::ReadOnly),
    spec(RiskTier::LowWrite),
    spec(RiskTier::HighWrite),
    spec(RiskTier::Destructive),
];

const TIGHTENED: [ToolSpec; 9] = [
    spec(RiskTier::ReadOnly).with_approval(ApprovalMode::Auto),
    spec(RiskTier::ReadOnly).with_approval(ApprovalMode::RequiresApproval),
    spec(RiskTier::ReadOnly).with_approval(ApprovalMode::AlwaysBlock),
    spec(RiskTier::LowWrite).with_approval(ApprovalMode::RequiresApproval),
    spec(RiskTier::LowWrite).with_approval(ApprovalMode::AlwaysBlock),
    spec(RiskTier::HighWrite).with_approval(ApprovalMode::RequiresApproval),
    spec(RiskTier::HighWrite).with_approval(ApprovalMode::AlwaysBlock),
    spec(RiskTier::Destructive).with_approval(ApprovalMode::AlwaysBlock),
    // Tightening after a loosening takes the loosening back.
    spec(RiskTier::LowWrite)
        .loosen_approval(ApprovalMode::Auto, "cosmetic")
        .with_approval(ApprovalMode::RequiresApproval),
];

const LOOSENED: [ToolSpec; 3] = [
    spec(RiskTier::LowWrite).loosen_approval(ApprovalMode::Auto, "tags are cosmetic"),
    spec(RiskTier::HighWrite).loosen_approval(ApprovalMode::Auto, "sandbox account only"),
    spec(RiskTier::Destructive)
        .loosen_approval(ApprovalMode::RequiresApproval, "deletes only test fixtures"),
];

const FULL: ToolSpec = ToolSpec::new(
    "lookup-order_2",
    "Look up order — café ✓",
    "Finds an order.\n\tReturns its status.",
    RiskTier::ReadOnly,
)
.with_result_states(&["found", "not_found", "error_42"])
.idempotent()
.closed_world();

fn main() {
    let modes: Vec<_> = DERIVED.iter().map(|s| s.approval_mode().as_str()).collect();
    assert_eq!(modes, ["auto", "requires_approval", "requires_approval", "always_block"]);
    assert!(TIGHTENED.iter().all(|s| s.approval_mode() >= s.derived_approval_mode()));
    assert!(TIGHTENED.iter().all(|s| s.loosened_because().is_none()));
    assert!(LOOSENED.iter().all(|s| s.approval_mode() < s.derived_approval_mode()));
    assert!(LOOSENED.iter().all(|s| s.loosened_because().is_some()));
    assert_eq!(FULL.result_states().len(), 3);
}
