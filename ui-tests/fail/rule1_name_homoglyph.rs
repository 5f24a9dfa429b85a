// Rule 1: the "е" is Cyrillic.
use cairnloop::{ApprovalMode, RiskTier, ToolSpec};

const SPEC: ToolSpec = ToolSpec::new("dеlete_file", "Delete file", "Deletes a file.", RiskTier::Destructive);

fn main() {
    let _ = (SPEC, ApprovalMode::Auto);
}
