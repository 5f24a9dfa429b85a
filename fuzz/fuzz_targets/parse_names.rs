//! Tier, mode and key parsing on arbitrary text: exact wire names only, and anything else
//! derives `always_block`.
#![no_main]

use cairnloop::{ApprovalMode, IdempotencyKey, RiskTier, derive_approval_mode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match RiskTier::parse(text) {
        Some(tier) => assert_eq!(tier.as_str(), text),
        None => {
            assert_eq!(derive_approval_mode(RiskTier::parse(text)), ApprovalMode::AlwaysBlock);
            assert!(text.parse::<RiskTier>().is_err());
        }
    }
    match ApprovalMode::parse(text) {
        Some(mode) => assert_eq!(mode.as_str(), text),
        None => assert!(text.parse::<ApprovalMode>().is_err()),
    }
    if let Ok(key) = text.parse::<IdempotencyKey>() {
        assert_eq!(key.to_string(), text);
    }
});
