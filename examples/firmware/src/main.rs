//! A governed agent on a Cortex-M4 with no heap and no operating system.
//!
//! The host link (here, `link.txt`, fed a byte at a time) carries what a model and an
//! operator send: `call AGENT {json}` for a tool call as a model writes it, `approve SLOT
//! CODE OPERATOR` and `reject SLOT CODE OPERATOR REASON` for the operator's buttons,
//! `tick MILLIS` for the clock, `sweep` to expire what ran out. Every reply, and the audit
//! ring at the end, goes to the host over semihosting; the run exits with status 0 when
//! the plant ended as the approvals allowed.
#![no_std]
#![no_main]
// Without a heap, field errors are kept inline: a `Result` that carries them is larger
// than clippy's default threshold, by design.
#![allow(clippy::result_large_err)]

mod link;
mod plant;

use cortex_m_rt::entry;
#[cfg(not(feature = "direct"))]
use cortex_m_semihosting::hprint;
use cortex_m_semihosting::{debug, hprintln};

#[cfg(not(feature = "direct"))]
use link::Words;
use link::{LineBuffer, Shown};
use plant::Plant;

/// What arrives on the host link, in order.
static LINK: &[u8] = include_bytes!("../link.txt");

/// Eight lanes, a 32-record audit ring.
#[cfg(not(feature = "direct"))]
type Device = cairnloop::device::DeviceGovernor<Plant, 8, 32>;

/// The governor's whole state, in static RAM (built at compile time: no heap, no
/// start-up work), reached with interrupts masked.
#[cfg(not(feature = "direct"))]
static DEVICE: cortex_m::interrupt::Mutex<core::cell::RefCell<Device>> =
    cortex_m::interrupt::Mutex::new(core::cell::RefCell::new(
        Device::new(&plant::TOOLS).with_ttl(cairnloop::gate::Ttl::from_secs(30)),
    ));

/// The scopes each agent holds: an agent is configured on the device, not trusted from
/// the link.
#[cfg(not(feature = "direct"))]
fn scopes_of(agent: &str) -> &'static [&'static str] {
    match agent {
        "agent-1" => &["sensors:read", "actuator:write"],
        "agent-2" => &["sensors:read"],
        _ => &[],
    }
}

#[entry]
fn main() -> ! {
    let plant = Plant::new();
    let ok = run(&plant);
    hprintln!(
        "plant: actuator at {} mm, vessel {}",
        plant.position(),
        if plant.purged() { "purged" } else { "intact" }
    );
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    #[allow(clippy::empty_loop, reason = "semihosting has ended the emulator")]
    loop {}
}

#[cfg(not(feature = "direct"))]
fn run(plant: &Plant) -> bool {
    cortex_m::interrupt::free(|cs| governed(plant, &mut DEVICE.borrow(cs).borrow_mut()))
}

#[cfg(not(feature = "direct"))]
fn governed(plant: &Plant, device: &mut Device) -> bool {
    use cairnloop::Actor;
    use cairnloop::device::Refusal;
    use cairnloop::gate::Timestamp;

    let mut now = Timestamp::from_unix_millis(0);
    let mut buffer = LineBuffer::new();
    for &byte in LINK {
        let Some((line, seen)) = buffer.push(byte) else {
            continue;
        };
        hprintln!("> {}", Shown { line, seen });
        if seen > line.len() {
            // The link's buffer overflowed: what it holds is not the whole call.
            hprintln!("  {}", device.refuse_input(Refusal::Oversized, now));
            continue;
        }
        if let Some(call) = line.strip_prefix(b"call ") {
            let (agent, text) = split_agent(call);
            let actor = Actor::new(agent, scopes_of(agent));
            hprintln!("  {}", device.call(text, &actor, plant, now));
            continue;
        }
        let Ok(line) = core::str::from_utf8(line) else {
            hprintln!("  not an operator input");
            continue;
        };
        let mut words = Words::of(line);
        match words.word() {
            Some("tick") => match words.number() {
                Some(millis) => now = Timestamp::from_unix_millis(millis),
                None => hprintln!("  tick needs milliseconds"),
            },
            Some("sweep") => hprintln!("  expired {}", device.sweep(now)),
            Some(verb @ ("approve" | "reject")) => {
                let (Some(slot), Some(code), Some(operator)) =
                    (words.number(), words.hex(), words.word())
                else {
                    hprintln!("  {} needs a slot, a code and an operator", verb);
                    continue;
                };
                if verb == "approve" && words.word().is_some() {
                    hprintln!("  an operator's id is one word");
                    continue;
                }
                let slot = usize::try_from(slot).unwrap_or(usize::MAX);
                let reply = if verb == "approve" {
                    device.approve(slot, code, operator, now)
                } else {
                    let reason = line.splitn(5, ' ').nth(4).unwrap_or("");
                    device.reject(slot, code, operator, reason, now)
                };
                hprintln!("  {}", reply);
            }
            Some(comment) if comment.starts_with('#') => {}
            _ => hprintln!("  not an operator input"),
        }
    }
    hprintln!("lanes:");
    for (slot, lane) in device.lanes().iter() {
        hprintln!(
            "  {}: {} {} by {}, code {:08x}, {}",
            slot,
            device
                .tools()
                .tools()
                .get(lane.tool())
                .map_or("?", |tool| tool.entry().spec().name()),
            lane.args(),
            lane.proposer(),
            lane.code(),
            lane.state()
        );
    }
    let mut out = Semihosted;
    let _ = device.write_audit(&mut out);
    // The plant must be where the approvals put it: one approved move ran, nothing
    // destructive did.
    plant.position() == 40 && !plant.purged()
}

/// The same calls, dispatched straight to the plant: the decoder and the link as above,
/// no gates, lanes, keys or audit. Only built to measure what governance costs.
#[cfg(feature = "direct")]
fn run(plant: &Plant) -> bool {
    use cairnloop::device::{Args, CallText, DeviceTool};

    let mut buffer = LineBuffer::new();
    for &byte in LINK {
        let Some((line, seen)) = buffer.push(byte) else {
            continue;
        };
        hprintln!("> {}", Shown { line, seen });
        let Some(call) = line.strip_prefix(b"call ").filter(|_| seen == line.len()) else {
            continue;
        };
        let (_, text) = split_agent(call);
        let call = match CallText::parse(text) {
            Ok(call) => call,
            Err(refusal) => {
                hprintln!("  refused: {}", refusal);
                continue;
            }
        };
        let mut name = [0; 64];
        let tool = call.name(&mut name).unwrap_or("");
        // The fields of each tool, named directly: the registry (and with it the gates)
        // stays out of this build.
        let fields = match tool {
            "read_sensor" => plant::ReadSensor::FIELDS,
            "move_actuator" => plant::MoveActuator::FIELDS,
            "purge" => plant::Purge::FIELDS,
            _ => {
                hprintln!("  unknown tool");
                continue;
            }
        };
        match Args::decode(call.arguments(), fields) {
            Err(errors) => hprintln!("  invalid input: {}", errors),
            Ok(args) => match tool {
                "read_sensor" => {
                    let sensor = plant::integer(&args, 0, "/sensor").unwrap_or(0);
                    hprintln!("  {}", plant.read(u8::try_from(sensor).unwrap_or(0)));
                }
                "move_actuator" => {
                    let position = plant::integer(&args, 0, "/position").unwrap_or(0);
                    let speed = plant::integer(&args, 1, "/speed").unwrap_or(1);
                    hprintln!("  {}", plant.move_to(position, speed));
                }
                _ => hprintln!("  {}", plant.purge()),
            },
        }
    }
    true
}

/// `AGENT {json}` → the agent's id and the call's text.
fn split_agent(call: &[u8]) -> (&str, &[u8]) {
    let at = call.iter().position(|&b| b == b' ').unwrap_or(call.len());
    let (agent, text) = call.split_at(at);
    (
        core::str::from_utf8(agent).unwrap_or(""),
        text.get(1..).unwrap_or(&[]),
    )
}

/// Writes formatted text to the host's standard output over semihosting.
#[cfg(not(feature = "direct"))]
struct Semihosted;

#[cfg(not(feature = "direct"))]
impl core::fmt::Write for Semihosted {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        hprint!("{}", s);
        Ok(())
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    hprintln!("panic: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    #[allow(clippy::empty_loop, reason = "semihosting has ended the emulator")]
    loop {}
}
