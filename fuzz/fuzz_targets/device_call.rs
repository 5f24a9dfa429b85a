//! The device's front door under arbitrary bytes: call text and operator inputs in any
//! order. It must never panic; the destructive tool never runs; the high-write tool runs
//! at most once per approval the device granted; and text the device reads as a call is
//! JSON that serde_json reads too, except for numbers past a double's range (which
//! serde_json refuses and the device's integer fields cannot hold): such a call is
//! blocked (at gate 0 when the tool is unknown, else at gate 1).
#![no_main]

use std::sync::atomic::{AtomicU32, Ordering};

use cairnloop::device::{
    Args, CallText, DeviceEntry, DeviceGovernor, DeviceRegistry, DeviceTool, Field, Reply,
};
use cairnloop::gate::{LaneState, Timestamp, Ttl};
use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolSpec};
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Counts {
    moves: AtomicU32,
    purges: AtomicU32,
}

struct Move;
impl Tool for Move {
    const SPEC: ToolSpec = ToolSpec::new("move", "Move", "Moves.", RiskTier::HighWrite);
    const SCOPES: &'static [Scope] = &[];
    type Input = (i64, bool);
    type Output = &'static str;
    type Error = &'static str;
    type Context = Counts;
    fn validate(_: &(i64, bool)) -> Result<(), InputErrors> {
        Ok(())
    }
    fn authorize(_: &Actor<'_>, _: &Counts) -> Result<(), PolicyDenial> {
        Ok(())
    }
    async fn run(call: Invocation<'_, Self>) -> Result<&'static str, &'static str> {
        call.context().moves.fetch_add(1, Ordering::Relaxed);
        Ok("moved")
    }
}
impl DeviceTool for Move {
    const FIELDS: &'static [Field] = &[Field::boolean("fast"), Field::integer("to", -5, 5)];
    fn input(args: &Args) -> Result<(i64, bool), InputErrors> {
        Ok((args.integer(1).unwrap_or(0), args.boolean(0).unwrap_or(false)))
    }
}

struct Purge;
impl Tool for Purge {
    const SPEC: ToolSpec = ToolSpec::new("purge", "Purge", "Purges.", RiskTier::Destructive);
    const SCOPES: &'static [Scope] = &[];
    type Input = ();
    type Output = &'static str;
    type Error = &'static str;
    type Context = Counts;
    fn validate(_: &()) -> Result<(), InputErrors> {
        Ok(())
    }
    fn authorize(_: &Actor<'_>, _: &Counts) -> Result<(), PolicyDenial> {
        Ok(())
    }
    async fn run(call: Invocation<'_, Self>) -> Result<&'static str, &'static str> {
        call.context().purges.fetch_add(1, Ordering::Relaxed);
        Ok("purged")
    }
}
impl DeviceTool for Purge {
    const FIELDS: &'static [Field] = &[Field::text("note", 8)];
    fn input(_: &Args) -> Result<(), InputErrors> {
        Ok(())
    }
}

static TOOLS: DeviceRegistry<Counts> =
    DeviceRegistry::new(&[DeviceEntry::of::<Move>(), DeviceEntry::of::<Purge>()]);

fuzz_target!(|data: &[u8]| {
    let mut device = DeviceGovernor::<Counts, 3, 8>::new(&TOOLS).with_ttl(Ttl::from_millis(50));
    let counts = Counts::default();
    let agent = Actor::new("agent", &[]);
    let mut approvals = 0;
    // Each chunk, split at 0xff, is one input; its first byte says which kind.
    for (tick, chunk) in data.split(|&b| b == 0xff).enumerate() {
        let now = Timestamp::from_unix_millis(tick as u64 * 7);
        let Some((&kind, rest)) = chunk.split_first() else {
            continue;
        };
        match kind % 4 {
            0 | 1 => {
                let read = CallText::parse(rest).is_ok();
                let reply = device.call(rest, &agent, &counts, now);
                if let (true, Err(error)) =
                    (read, serde_json::from_slice::<serde_json::Value>(rest))
                {
                    assert!(
                        error.to_string().starts_with("number out of range")
                            && matches!(reply, Reply::Blocked { .. }),
                        "the device read text serde_json refuses ({error}): {:?} → {reply}",
                        String::from_utf8_lossy(rest)
                    );
                }
            }
            2 => {
                // Approve a lane, quoting its real code, as a person would.
                let slot = usize::from(rest.first().copied().unwrap_or(0) % 4);
                let code = device.lanes().get(slot).map_or(0, |lane| lane.code());
                let operator = if rest.get(1).is_some_and(|b| b % 2 == 0) { "agent" } else { "op" };
                if let Reply::Decided { state: LaneState::Approved, .. } =
                    device.approve(slot, code, operator, now)
                {
                    approvals += 1;
                }
            }
            _ => {
                let _ = device.sweep(now);
            }
        }
        assert_eq!(counts.purges.load(Ordering::Relaxed), 0, "the destructive tool ran");
        assert!(counts.moves.load(Ordering::Relaxed) <= approvals, "a move ran without an approval");
    }
});
