//! The device's hardware, as the tools see it: four temperature sensors, an actuator
//! and a vessel that can be purged. On a real board these would be registers; here they
//! are atomics, so the tools' futures are `Send` as the `Tool` trait asks.

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use cairnloop::device::{Args, DeviceTool, Field};
use cairnloop::{
    Actor, FieldError, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolSpec,
};

/// The plant the tools act on.
pub struct Plant {
    position: AtomicI32,
    purged: AtomicBool,
}

impl Plant {
    pub const fn new() -> Self {
        Self {
            position: AtomicI32::new(0),
            purged: AtomicBool::new(false),
        }
    }

    /// Sensor `n` in tenths of a degree Celsius.
    pub fn read(&self, sensor: u8) -> Celsius {
        const READINGS: [i32; 4] = [215, 198, 402, 377];
        Celsius(READINGS[usize::from(sensor) % READINGS.len()])
    }

    /// Moves the actuator; where it stands after.
    pub fn move_to(&self, position: i32, _speed: i32) -> Millimetres {
        self.position.store(position, Ordering::Relaxed);
        Millimetres(self.position.load(Ordering::Relaxed))
    }

    /// Empties the vessel.
    pub fn purge(&self) -> &'static str {
        self.purged.store(true, Ordering::Relaxed);
        "vessel purged"
    }

    pub fn position(&self) -> i32 {
        self.position.load(Ordering::Relaxed)
    }

    pub fn purged(&self) -> bool {
        self.purged.load(Ordering::Relaxed)
    }
}

/// A temperature in tenths of a degree.
pub struct Celsius(i32);

impl fmt::Display for Celsius {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{} C", self.0 / 10, self.0 % 10)
    }
}

/// A position in millimetres.
pub struct Millimetres(i32);

impl fmt::Display for Millimetres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "actuator at {} mm", self.0)
    }
}

/// A field a tool's input needs was not where its declaration said.
fn missing(path: &'static str) -> InputErrors {
    InputErrors::one(FieldError::new(path, "required", "is required"))
}

pub fn integer(args: &Args, index: usize, path: &'static str) -> Result<i32, InputErrors> {
    args.integer(index)
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| missing(path))
}

/// Reads a sensor: read-only, so it runs without asking anyone.
pub struct ReadSensor;

impl Tool for ReadSensor {
    const SPEC: ToolSpec = ToolSpec::new(
        "read_sensor",
        "Read sensor",
        "Reads one of the four temperature sensors.",
        RiskTier::ReadOnly,
    )
    .closed_world();
    const SCOPES: &'static [Scope] = &[Scope::new("sensors:read")];
    type Input = u8;
    type Output = Celsius;
    type Error = &'static str;
    type Context = Plant;

    fn validate(_: &u8) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &Plant) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(call: Invocation<'_, Self>) -> Result<Celsius, &'static str> {
        Ok(call.context().read(*call.input()))
    }
}

impl DeviceTool for ReadSensor {
    const FIELDS: &'static [Field] = &[Field::integer("sensor", 0, 3)];

    fn input(args: &Args) -> Result<u8, InputErrors> {
        let sensor = integer(args, 0, "/sensor")?;
        u8::try_from(sensor).map_err(|_| missing("/sensor"))
    }
}

/// Moves the actuator: a high write, so a person at the device approves each move.
pub struct MoveActuator;

impl Tool for MoveActuator {
    const SPEC: ToolSpec = ToolSpec::new(
        "move_actuator",
        "Move actuator",
        "Moves the actuator to a position, in millimetres, at a speed from 1 to 10.",
        RiskTier::HighWrite,
    )
    .closed_world();
    const SCOPES: &'static [Scope] = &[Scope::new("actuator:write")];
    type Input = (i32, i32);
    type Output = Millimetres;
    type Error = &'static str;
    type Context = Plant;

    fn validate(&(_, speed): &(i32, i32)) -> Result<(), InputErrors> {
        if speed > 5 {
            return Err(InputErrors::one(FieldError::new(
                "/speed",
                "out_of_range",
                "above 5 only in maintenance mode",
            )));
        }
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &Plant) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(call: Invocation<'_, Self>) -> Result<Millimetres, &'static str> {
        let (position, speed) = *call.input();
        Ok(call.context().move_to(position, speed))
    }
}

impl DeviceTool for MoveActuator {
    const FIELDS: &'static [Field] = &[
        Field::integer("position", 0, 100),
        Field::integer("speed", 1, 10),
    ];

    fn input(args: &Args) -> Result<(i32, i32), InputErrors> {
        Ok((integer(args, 0, "/position")?, integer(args, 1, "/speed")?))
    }
}

/// Purges the vessel: destructive, so it is blocked and never runs.
pub struct Purge;

impl Tool for Purge {
    const SPEC: ToolSpec = ToolSpec::new(
        "purge",
        "Purge vessel",
        "Empties the vessel.",
        RiskTier::Destructive,
    )
    .closed_world();
    const SCOPES: &'static [Scope] = &[];
    type Input = bool;
    type Output = &'static str;
    type Error = &'static str;
    type Context = Plant;

    fn validate(_: &bool) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, _: &Plant) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(call: Invocation<'_, Self>) -> Result<&'static str, &'static str> {
        Ok(call.context().purge())
    }
}

impl DeviceTool for Purge {
    const FIELDS: &'static [Field] = &[Field::boolean("confirm")];

    fn input(args: &Args) -> Result<bool, InputErrors> {
        args.boolean(0).ok_or_else(|| missing("/confirm"))
    }
}

#[cfg(not(feature = "direct"))]
pub static TOOLS: cairnloop::device::DeviceRegistry<Plant> =
    cairnloop::device::DeviceRegistry::new(&[
        cairnloop::device::DeviceEntry::of::<ReadSensor>(),
        cairnloop::device::DeviceEntry::of::<MoveActuator>(),
        cairnloop::device::DeviceEntry::of::<Purge>(),
    ]);
