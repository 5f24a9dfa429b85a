// A device field name too long for a field error to name it without a heap.
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
    const FIELDS: &'static [Field] = &[Field::integer("position_in_millimetres", 0, 100)];

    fn input(_: &Args) -> Result<(), InputErrors> {
        Ok(())
    }
}

static TOOLS: DeviceRegistry<()> = DeviceRegistry::new(&[DeviceEntry::of::<MoveArm>()]);

fn main() {
    let _ = TOOLS.get("move_arm");
}
