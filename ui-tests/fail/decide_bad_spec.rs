// A bad `SPEC` reached only through the typed pipeline fails `cargo build`
// (post-monomorphization), even without a registry.
use cairnloop::{Actor, ModePolicy, RiskTier, Scope, ToolSpec, decide};

#[macro_use]
#[path = "../tool.rs"]
mod tool;

tool!(
    WipeDisk,
    // Rule 2: a title with a line break.
    ToolSpec::new("wipe_disk", "Wipe\ndisk", "Erases a disk.", RiskTier::Destructive),
    &[Scope::new("disks:erase")]
);

fn main() {
    let actor = Actor::new("ops", &["disks:erase"]);
    let _ = decide::<WipeDisk>(1, &actor, &(), &ModePolicy::new()).code();
}
