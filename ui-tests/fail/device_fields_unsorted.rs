// Device fields out of alphabetical order: their canonical JSON, and so the call's key,
// would differ from the one a host computes for the same call.
use cairnloop::device::{Args, DeviceEntry, DeviceRegistry, DeviceTool, Field};
use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolSpec};

struct MoveArm;

impl Tool for MoveArm {
    const SPEC: ToolSpec = ToolSpec::new("move_arm", "Move arm", "Moves the arm.", RiskTier::HighWrite);
    const SCOPES: &'static [Scope] = &[];
    type Input = ();
    type Output = &'static str;
    type Error = &'static str;
    type Context = ();

    fn validate(_: &()) -> Result<(), InputErrors> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<&'static str, &'static str> {
        Ok("moved")
    }
}

impl DeviceTool for MoveArm {
    const FIELDS: &'static [Field] = &[Field::integer("speed", 1, 10), Field::integer("position", 0, 100)];

    fn input(_: &Args) -> Result<(), InputErrors> {
        Ok(())
    }
}

static TOOLS: DeviceRegistry<()> = DeviceRegistry::new(&[DeviceEntry::of::<MoveArm>()]);

fn main() {
    let _ = TOOLS.get("move_arm");
}
