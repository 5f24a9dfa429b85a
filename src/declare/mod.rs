//! Declaring tools: the `no_std`, no-`alloc` core.
//!
//! Risk tiers and approval modes, [`ToolSpec`] and [`Scope`] with the compile-time rules,
//! the [`Tool`] trait and the static [`Registry`]. Nothing here decides a call; that is
//! the [`gate`](crate::gate) layer, one level up.

/// `Display` (the wire name) and `FromStr` (that exact name, or `$error`) for a sealed enum
/// with `as_str` and `parse`: the tier and the mode are read and written the same way.
macro_rules! wire_name_traits {
    ($ty:ty, $error:expr) => {
        impl core::fmt::Display for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl core::str::FromStr for $ty {
            type Err = $crate::declare::ParseError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s).ok_or($error)
            }
        }
    };
}

mod actor;
mod approval_mode;
#[cfg(feature = "serde")]
mod codec;
mod entry;
mod input_error;
mod key;
mod limits;
mod parse_error;
mod policy;
mod registry;
mod risk_tier;
pub(crate) mod rules;
mod scope;
mod spec;
pub(crate) mod text;
mod tool;

pub use actor::Actor;
pub use approval_mode::{ApprovalMode, derive_approval_mode};
#[cfg(feature = "rmcp")]
pub use codec::CallResultFuture;
#[cfg(feature = "serde")]
pub(crate) use codec::{AskedTier, Codec, ErasedInput, RunKey};
#[cfg(feature = "serde")]
pub use codec::{RunError, RunFuture};
pub use entry::ToolEntry;
#[cfg(feature = "declared")]
pub(crate) use entry::note_offers_changed;
#[cfg(feature = "std")]
pub(crate) use entry::offers_changed;
#[cfg(feature = "device")]
pub(crate) use input_error::INLINE_TEXT;
pub use input_error::{FieldError, InputErrors};
pub use key::IdempotencyKey;
pub use limits::InputLimits;
pub use parse_error::ParseError;
pub use policy::PolicyDenial;
pub use registry::{MAX_TOOLS, Registry};
pub use risk_tier::RiskTier;
pub use rules::SpecError;
pub use scope::{Scope, ScopeOf};
pub use spec::{MAX_QUORUM, ToolSpec, ToolSpecOf};
pub use tool::{Invocation, Tool};
