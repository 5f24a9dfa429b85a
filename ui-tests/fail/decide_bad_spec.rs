// A bad `SPEC` reached only through the typed pipeline fails `cargo build`
// (post-monomorphization), even without a registry.
use cairnloop::{Actor, InputErrors, Invocation, ModePolicy, RiskTier, Scope, Tool, ToolSpec, decide};

struct WipeDisk;

impl Tool for WipeDisk {
    // Rule 2: a title with a line break.
    const SPEC: ToolSpec =
        ToolSpec::new("wipe_disk", "Wipe\ndisk", "Erases a disk.", RiskTier::Destructive);
    const SCOPES: &'static [Scope] = &[Scope::new("disks:erase")];
    type Input = u32;
    type Output = ();
    type Error = ();
    type Context = ();

    fn validate(_: &u32) -> Result<(), InputErrors> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

fn main() {
    let actor = Actor::new("ops", &["disks:erase"]);
    let _ = decide::<WipeDisk>(1, &actor, &(), &ModePolicy::new()).code();
}
