#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Without `alloc`, a device keeps field errors inline (no heap), each with a path of its
// own: results that carry them are larger than clippy's default threshold, by design.
#![cfg_attr(
    all(feature = "device", not(feature = "alloc")),
    allow(clippy::result_large_err, clippy::large_enum_variant)
)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

// The layers, lowest first: declare, gate, device, json, declared, approvals, stores,
// notifiers, rig, mcp, remote, console. Each builds only on the ones below it
// (`tests/layers.rs` checks it); the guide's "Layers and features" draws them.
#[cfg(all(feature = "serde", feature = "std"))]
pub mod approvals;
#[cfg(feature = "console")]
pub mod console;
pub mod declare;
#[cfg(feature = "declared")]
pub mod declared;
#[cfg(feature = "device")]
pub mod device;
pub mod gate;
#[cfg(feature = "serde")]
pub mod json;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "webhook")]
pub mod notifiers;
#[cfg(feature = "remote")]
pub mod remote;
#[cfg(feature = "rig")]
pub mod rig;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod stores;

#[cfg(all(feature = "serde", feature = "std"))]
pub use approvals::{ApprovalError, ApprovalLane, Governor, Outcome};
pub use declare::{
    Actor, ApprovalMode, FieldError, IdempotencyKey, InputErrors, Invocation, PolicyDenial,
    Registry, RiskTier, Scope, SpecError, Tool, ToolEntry, ToolSpec, derive_approval_mode,
};
pub use gate::{Blocked, Decision, ModePolicy, decide, execute};
#[cfg(feature = "serde")]
pub use json::{Governance, ToolCall};

/// The guide, rendered where the API docs are: every feature, with examples (each one
/// compiled and run as a test, through `GuideDoctests` below, when every feature it shows
/// is on).
#[cfg(all(doc, not(doctest)))]
pub mod _guide {
    #![doc = include_str!("../docs/guide.md")]

    /// The compile-time rules, and when each bad declaration is caught.
    pub mod rules {
        #![doc = include_str!("../docs/rules.md")]
    }
    /// Calls, approval lanes, four eyes, expiry, and the stores that keep them.
    pub mod approvals {
        #![doc = include_str!("../docs/approvals.md")]
    }
    /// The MCP projection and server, the approval loop, remote MCP over HTTP, and
    /// tools declared from data.
    pub mod mcp {
        #![doc = include_str!("../docs/mcp.md")]
    }
    /// Policy that fits the call: a tier raised by the call's input or its caller, in
    /// Rust or in the gateway's CEL rules.
    pub mod policy {
        #![doc = include_str!("../docs/policy.md")]
    }
    /// Quorum approvals: several different people approve one call.
    pub mod quorum {
        #![doc = include_str!("../docs/quorum.md")]
    }
    /// Approve with changes: a person fixes a call instead of rejecting it.
    pub mod changes {
        #![doc = include_str!("../docs/changes.md")]
    }
    /// The audit trail's chain: what it proves, in each store, and from the command line.
    pub mod audit {
        #![doc = include_str!("../docs/audit.md")]
    }
    /// The approval console.
    pub mod console {
        #![doc = include_str!("../docs/console.md")]
    }
    /// Governed tools for rig agents.
    pub mod rig {
        #![doc = include_str!("../docs/rig.md")]
    }
    /// The layers, the cargo features, and the governed agent on a microcontroller.
    pub mod layers {
        #![doc = include_str!("../docs/layers.md")]
    }
}

/// The guide's chapters as doctests, under the default features as the README's are.
#[cfg(doctest)]
mod chapter_doctests {
    #[doc = include_str!("../docs/rules.md")]
    struct Rules;
    #[doc = include_str!("../docs/approvals.md")]
    struct Approvals;
    #[doc = include_str!("../docs/mcp.md")]
    struct Mcp;
    #[doc = include_str!("../docs/console.md")]
    struct Console;
    #[doc = include_str!("../docs/audit.md")]
    struct Audit;
    #[doc = include_str!("../docs/policy.md")]
    struct Policy;
    #[doc = include_str!("../docs/quorum.md")]
    struct Quorum;
    #[doc = include_str!("../docs/changes.md")]
    struct Changes;
    #[doc = include_str!("../docs/rig.md")]
    struct Rig;
    #[doc = include_str!("../docs/layers.md")]
    struct Layers;
}

/// The Elixir library this crate re-imagines, part by part.
#[cfg(doc)]
pub mod _from_elixir {
    #![doc = include_str!("../docs/from-elixir.md")]
}

/// How the crate is tested for reliability: adversarial, property, fuzz and mutation
/// testing, with figures.
#[cfg(doc)]
pub mod _reliability {
    #![doc = include_str!("../docs/reliability.md")]
}

#[cfg(all(
    doctest,
    feature = "rmcp",
    feature = "sqlite",
    feature = "console",
    feature = "remote",
    feature = "rig"
))]
#[doc = include_str!("../docs/guide.md")]
pub struct GuideDoctests;
