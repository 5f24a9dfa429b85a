#![no_std]
#![no_main]

use core::ffi::c_int;
use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use cairnloop::{
    Actor, ApprovalMode, Decision, FieldError, InputErrors, Invocation, ModePolicy, PolicyDenial,
    Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec, decide, derive_approval_mode, execute,
};

struct Sensors {
    celsius: i16,
}

struct ReadTemperature;

impl Tool for ReadTemperature {
    const SPEC: ToolSpec = ToolSpec::new(
        "read_temperature",
        "Read temperature",
        "Reads the temperature sensor.",
        RiskTier::ReadOnly,
    )
    .closed_world();
    const SCOPES: &'static [Scope] = &[Scope::new("sensors:read")];
    type Input = u8;
    type Output = i16;
    type Error = ();
    type Context = Sensors;

    fn validate(sensor: &u8) -> Result<(), InputErrors> {
        if *sensor < 4 {
            Ok(())
        } else {
            Err(InputErrors::one(FieldError::new(
                "",
                "out_of_range",
                "sensor 0 to 3",
            )))
        }
    }

    fn authorize(_: &Actor<'_>, _: &Sensors) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(call: Invocation<'_, Self>) -> Result<i16, ()> {
        Ok(call.context().celsius)
    }
}

struct OpenValve;

impl Tool for OpenValve {
    const SPEC: ToolSpec = ToolSpec::new(
        "open_valve",
        "Open valve",
        "Opens the relief valve.",
        RiskTier::HighWrite,
    );
    const SCOPES: &'static [Scope] = &[Scope::new("valves:write")];
    type Input = ();
    type Output = ();
    type Error = ();
    type Context = Sensors;

    fn validate(_: &()) -> Result<(), InputErrors> {
        Ok(())
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

static TOOLS: Registry<Sensors> = Registry::new(&[
    ToolEntry::of::<ReadTemperature>(),
    ToolEntry::of::<OpenValve>(),
]);

fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
    }
}

/// Exit code 0 when every check holds, else the number of the first that failed.
fn checks() -> c_int {
    if derive_approval_mode(RiskTier::parse("unknown")) != ApprovalMode::AlwaysBlock {
        return 1;
    }
    if TOOLS.get("read_temperature").is_none() || TOOLS.get("Read_Temperature").is_some() {
        return 2;
    }
    let sensors = Sensors { celsius: 21 };
    let actor = Actor::new("controller", &["sensors:read", "valves:write"]);
    let policy = ModePolicy::new();
    if cairnloop::gate::visible(&TOOLS, &actor, &sensors, &policy).count() != 1 {
        return 3; // open_valve states no policy: hidden
    }
    match decide::<ReadTemperature>(2, &actor, &sensors, &policy) {
        Decision::Execute { call, .. } => {
            if block_on(execute(call)) != Ok(21) {
                return 4;
            }
        }
        _ => return 5,
    }
    match decide::<ReadTemperature>(9, &actor, &sensors, &policy) {
        Decision::Blocked(blocked) if blocked.code() == "needs_input" => {}
        _ => return 6,
    }
    match decide::<OpenValve>((), &actor, &sensors, &policy) {
        Decision::Blocked(blocked) if blocked.code() == "policy_denied" => 0,
        _ => 7,
    }
}

// On the host, the C runtime starts `main` and provides `memcpy` and `memset`; no Rust
// `std`.
#[cfg(not(target_os = "none"))]
#[link(name = "c")]
unsafe extern "C" {}

#[cfg(not(target_os = "none"))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const u8) -> c_int {
    checks()
}

// The host's precompiled `core` was built with unwinding and names this symbol; with
// `panic = "abort"` nothing ever calls it.
#[cfg(not(target_os = "none"))]
#[unsafe(no_mangle)]
extern "C" fn rust_eh_personality() {}

// On bare metal (thumbv7em-none-eabihf), the reset handler runs the checks and keeps
// their result where a debugger sees it. The build proves the core links with no OS;
// its size is the core's code size.
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    core::hint::black_box(checks());
    loop {}
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}
