//! The device front door as a model and an operator meet it: calls as JSON text, the
//! gates, the lane table's approval flow and every bad input, with no heap in the crate.
#![cfg(feature = "device")]

use cairnloop::device::{
    Args, AuditEvent, DeviceEntry, DeviceGovernor, DeviceRegistry, DeviceTool, Field, Refusal,
    Reply,
};
use cairnloop::gate::{LaneState, Timestamp, Ttl};
use cairnloop::{Actor, Blocked, FieldError, InputErrors, RiskTier, ToolSpec};
use std::sync::atomic::{AtomicU32, Ordering};

#[macro_use]
#[path = "fixtures/plain_tool.rs"]
mod plain_tool;

struct Rig {
    moves: AtomicU32,
}

plain_tool!(ReadSensor(i64) -> Result<i64, &'static str>, Rig,
    ToolSpec::new("read_sensor", "Read sensor", "Reads a temperature sensor.", RiskTier::ReadOnly),
    ["sensors:read"],
    |call| { Ok(200 + call.input()) }
);
impl DeviceTool for ReadSensor {
    const FIELDS: &'static [Field] = &[Field::integer("sensor", 0, 3)];
    fn input(args: &Args) -> Result<i64, InputErrors> {
        args.integer(0).ok_or_else(missing)
    }
}

plain_tool!(MoveActuator((i64, i64)) -> Result<&'static str, &'static str>, Rig,
    ToolSpec::new("move_actuator", "Move actuator", "Moves the actuator.", RiskTier::HighWrite),
    [],
    |call| {
        call.context().moves.fetch_add(1, Ordering::Relaxed);
        Ok("moved")
    }
);
impl DeviceTool for MoveActuator {
    const FIELDS: &'static [Field] = &[
        Field::integer("position", 0, 100),
        Field::integer("speed", 1, 10),
    ];
    fn input(args: &Args) -> Result<(i64, i64), InputErrors> {
        Ok((
            args.integer(0).ok_or_else(missing)?,
            args.integer(1).ok_or_else(missing)?,
        ))
    }
}

plain_tool!(Purge(bool) -> Result<&'static str, &'static str>, Rig,
    ToolSpec::new("purge", "Purge", "Empties the vessel.", RiskTier::Destructive),
    [],
    |call| { Ok("purged") }
);
impl DeviceTool for Purge {
    const FIELDS: &'static [Field] = &[Field::boolean("confirm")];
    fn input(args: &Args) -> Result<bool, InputErrors> {
        args.boolean(0).ok_or_else(missing)
    }
}

fn missing() -> InputErrors {
    InputErrors::one(FieldError::new("", "required", "is required"))
}

static TOOLS: DeviceRegistry<Rig> = DeviceRegistry::new(&[
    DeviceEntry::of::<ReadSensor>(),
    DeviceEntry::of::<MoveActuator>(),
    DeviceEntry::of::<Purge>(),
]);

type Device = DeviceGovernor<Rig, 4, 64>;

const AGENT: Actor<'static> = Actor::new("agent-1", &["sensors:read"]);
const MOVE_40: &[u8] = br#"{"name":"move_actuator","arguments":{"position":40,"speed":5}}"#;

fn at(millis: u64) -> Timestamp {
    Timestamp::from_unix_millis(millis)
}

fn device() -> (Device, Rig) {
    (
        Device::new(&TOOLS).with_ttl(Ttl::from_millis(1000)),
        Rig {
            moves: AtomicU32::new(0),
        },
    )
}

fn awaiting(reply: &Reply) -> (usize, u32) {
    match reply {
        Reply::Awaiting { slot, code, .. } => (*slot, *code),
        other => panic!("expected awaiting approval, got {other}"),
    }
}

#[test]
fn a_read_runs_at_once_and_a_destructive_call_never_runs() {
    let (mut device, rig) = device();
    let reply = device.call(
        br#"{"name":"read_sensor","arguments":{"sensor":2}}"#,
        &AGENT,
        &rig,
        at(0),
    );
    assert_eq!(reply.to_string(), "executed read_sensor: 202");
    let reply = device.call(
        br#"{"name":"purge","arguments":{"confirm":true}}"#,
        &AGENT,
        &rig,
        at(0),
    );
    assert!(matches!(
        reply,
        Reply::Blocked {
            blocked: Blocked::AlwaysBlocked { .. },
            ..
        }
    ));
    // Without the scope, the read is blocked at gate 2.
    let guest = Actor::new("guest", &[]);
    let reply = device.call(
        br#"{"name":"read_sensor","arguments":{"sensor":2}}"#,
        &guest,
        &rig,
        at(0),
    );
    assert!(reply.to_string().contains("scope_missing"), "{reply}");
    assert_eq!(device.lanes().iter().count(), 0);
}

#[test]
fn an_approved_call_runs_once_for_its_exact_arguments() {
    let (mut device, rig) = device();
    let (slot, code) = awaiting(&device.call(MOVE_40, &AGENT, &rig, at(0)));
    // The same call again finds its lane; nothing runs.
    assert!(matches!(
        device.call(MOVE_40, &AGENT, &rig, at(10)),
        Reply::Awaiting { new: false, .. }
    ));
    // The proposer cannot approve, in any ASCII case.
    assert_eq!(
        device.approve(slot, code, "AGENT-1", at(20)),
        Reply::Refused(Refusal::SelfApproval)
    );
    // An approval quoting another call's code binds nothing.
    assert_eq!(
        device.approve(slot, code ^ 1, "op-7", at(20)),
        Reply::Refused(Refusal::CodeMismatch)
    );
    assert_eq!(
        device.approve(slot, code, "op 7", at(20)),
        Reply::Refused(Refusal::InvalidId)
    );
    assert_eq!(
        device.approve(slot, code, "op-7", at(30)).to_string(),
        "approved move_actuator: slot 0"
    );
    // Replayed: the lane is no longer pending.
    assert!(matches!(
        device.approve(slot, code, "op-8", at(40)),
        Reply::Refused(Refusal::Transition(_))
    ));
    // Other arguments are another call: proposed, not run.
    let other = br#"{"name":"move_actuator","arguments":{"speed":5,"position":90}}"#;
    assert!(matches!(
        device.call(other, &AGENT, &rig, at(50)),
        Reply::Awaiting { new: true, .. }
    ));
    assert_eq!(rig.moves.load(Ordering::Relaxed), 0);
    // Key order and whitespace do not make another call: the approved one runs, once.
    let reordered = br#"{ "arguments": {"speed": 5, "position": 40}, "name": "move_actuator" }"#;
    assert_eq!(
        device.call(reordered, &AGENT, &rig, at(60)).to_string(),
        "executed move_actuator: moved"
    );
    assert_eq!(
        device.call(MOVE_40, &AGENT, &rig, at(70)).to_string(),
        "not run move_actuator: slot 0 is executed"
    );
    assert_eq!(rig.moves.load(Ordering::Relaxed), 1);
    assert_eq!(
        device.lanes().get(slot).unwrap().state(),
        LaneState::Executed
    );
    // The same call by another agent is another lane.
    let other_agent = Actor::new("agent-2", &[]);
    assert!(matches!(
        device.call(MOVE_40, &other_agent, &rig, at(80)),
        Reply::Awaiting { new: true, .. }
    ));
}

#[test]
fn approvals_expire() {
    let (mut device, rig) = device();
    let (slot, code) = awaiting(&device.call(MOVE_40, &AGENT, &rig, at(0)));
    assert_eq!(
        device.approve(slot, code, "op-7", at(1000)),
        Reply::Refused(Refusal::Expired)
    );
    assert_eq!(
        device.lanes().get(slot).unwrap().state(),
        LaneState::Expired
    );
    assert_eq!(
        device.call(MOVE_40, &AGENT, &rig, at(1001)).to_string(),
        "not run move_actuator: slot 0 is expired"
    );

    // An approved lane that is not run in time expires too, and never runs.
    let (mut device, rig) = self::device();
    let (slot, code) = awaiting(&device.call(MOVE_40, &AGENT, &rig, at(0)));
    assert!(matches!(
        device.approve(slot, code, "op-7", at(500)),
        Reply::Decided { .. }
    ));
    assert_eq!(device.sweep(at(999)), 0);
    assert_eq!(device.sweep(at(1000)), 1);
    assert!(matches!(
        device.call(MOVE_40, &AGENT, &rig, at(1001)),
        Reply::Ended {
            state: LaneState::Expired,
            ..
        }
    ));
    assert_eq!(rig.moves.load(Ordering::Relaxed), 0);
    // A clock that went back refuses the decision.
    let (mut device, rig) = self::device();
    let (slot, code) = awaiting(&device.call(MOVE_40, &AGENT, &rig, at(500)));
    assert_eq!(
        device.approve(slot, code, "op-7", at(400)),
        Reply::Refused(Refusal::ClockWentBackwards)
    );
}

#[test]
fn a_full_table_refuses_a_new_proposal_and_moves_nothing() {
    let (mut device, rig) = device();
    let mut codes = Vec::new();
    for position in 0..4 {
        let call = format!(
            r#"{{"name":"move_actuator","arguments":{{"position":{position},"speed":1}}}}"#
        );
        codes.push(awaiting(&device.call(call.as_bytes(), &AGENT, &rig, at(0))));
    }
    let before: Vec<_> = device.lanes().iter().map(|(_, l)| *l).collect();
    assert_eq!(
        device.call(MOVE_40, &AGENT, &rig, at(1)),
        Reply::Refused(Refusal::LaneTableFull)
    );
    let after: Vec<_> = device.lanes().iter().map(|(_, l)| *l).collect();
    assert_eq!(before, after);
    // A lane that ended makes room; the live ones stay.
    let (slot, code) = codes[2];
    assert!(matches!(
        device.reject(slot, code, "op-7", "not now", at(2)),
        Reply::Decided {
            state: LaneState::Rejected,
            ..
        }
    ));
    assert_eq!(
        device.reject(0, codes[0].1, "op-7", " ", at(2)),
        Reply::Refused(Refusal::ReasonRequired)
    );
    assert_eq!(awaiting(&device.call(MOVE_40, &AGENT, &rig, at(3))).0, slot);
}

#[test]
fn every_field_error_is_reported_at_once() {
    let (mut device, rig) = device();
    let reply = device.call(
        br#"{"name":"move_actuator","arguments":{"position":"forty","zzz":true}}"#,
        &AGENT,
        &rig,
        at(0),
    );
    let Reply::Blocked {
        blocked: Blocked::NeedsInput { errors },
        ..
    } = reply
    else {
        panic!("expected needs_input, got {reply}");
    };
    let found: Vec<_> = errors.iter().map(|e| (e.path(), e.code())).collect();
    assert_eq!(
        found,
        [
            ("/position", "invalid_type"),
            ("/zzz", "unknown_field"),
            ("/speed", "required"),
        ]
    );
    for (arguments, path, code) in [
        (
            r#"{"position":1,"position":2,"speed":1}"#,
            "/position",
            "duplicate_key",
        ),
        (
            r#"{"position":9007199254740992,"speed":1}"#,
            "/position",
            "number_out_of_range",
        ),
        (r#"{"position":1.5,"speed":1}"#, "/position", "invalid_type"),
        (
            r#"{"position":101,"speed":1}"#,
            "/position",
            "invalid_value",
        ),
        (r#"{"position":1,"speed":null}"#, "/speed", "invalid_type"),
        (r#"[1,2]"#, "", "not_an_object"),
        (
            r#"{"position":1,"speed":1,"a_field_name_longer_than_fits":0}"#,
            "",
            "unknown_field",
        ),
    ] {
        let call = format!(r#"{{"name":"move_actuator","arguments":{arguments}}}"#);
        let reply = device.call(call.as_bytes(), &AGENT, &rig, at(0));
        let Reply::Blocked {
            blocked: Blocked::NeedsInput { errors },
            ..
        } = &reply
        else {
            panic!("{arguments}: expected needs_input, got {reply}");
        };
        assert!(
            errors.iter().any(|e| e.path() == path && e.code() == code),
            "{arguments}: {reply}"
        );
    }
    assert_eq!(device.lanes().iter().count(), 0);
    assert_eq!(rig.moves.load(Ordering::Relaxed), 0);
}

#[test]
fn text_that_is_not_a_call_is_refused_before_any_gate() {
    let (mut device, rig) = device();
    let deep = format!(
        r#"{{"name":"move_actuator","arguments":{{"position":{}1{}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let long = format!(
        r#"{{"name":"read_sensor","arguments":{{"sensor":1{}}}}}"#,
        " ".repeat(600)
    );
    let cases: [(&[u8], &str); 9] = [
        (
            br#"{"name":"move_actuator","arguments":{"position":4"#,
            "invalid_json",
        ),
        (b"{\"name\":\"read_sensor\xff\"}", "not_utf8"),
        (deep.as_bytes(), "too_large"),
        (long.as_bytes(), "too_large"),
        (
            br#"{"name":"read_sensor","arguments":{"sensor":1},"extra":1}"#,
            "invalid_call",
        ),
        (br#"{"name":"read_sensor","name":"purge"}"#, "duplicate_key"),
        (br#"{"name":7}"#, "invalid_call"),
        (br#"["read_sensor"]"#, "invalid_call"),
        (b"", "invalid_json"),
    ];
    for (line, code) in cases {
        let reply = device.call(line, &AGENT, &rig, at(0));
        match &reply {
            Reply::Refused(refusal) => assert_eq!(refusal.code(), code, "{reply}"),
            other => panic!(
                "{:?}: expected a refusal, got {other}",
                String::from_utf8_lossy(line)
            ),
        }
    }
    // Depth is checked before descending, within the size the device reads.
    let nested = format!(
        r#"{{"name":"read_sensor","arguments":{{"sensor":{}0{}}}}}"#,
        "[".repeat(40),
        "]".repeat(40)
    );
    assert_eq!(
        device.call(nested.as_bytes(), &AGENT, &rig, at(0)),
        Reply::Refused(Refusal::Malformed {
            code: "too_deep",
            message: "nested deeper than the limit of arrays and objects"
        })
    );
    let unknown = device.call(br#"{"name":"Purge","arguments":{}}"#, &AGENT, &rig, at(0));
    assert_eq!(unknown.to_string(), "blocked: unknown tool (unknown_tool)");
    assert_eq!(device.lanes().iter().count(), 0);
}

#[test]
fn the_audit_ring_keeps_the_newest_records_and_counts_the_rest() {
    let mut device = DeviceGovernor::<Rig, 4, 3>::new(&TOOLS);
    let rig = Rig {
        moves: AtomicU32::new(0),
    };
    for sensor in 0..5 {
        let call = format!(r#"{{"name":"read_sensor","arguments":{{"sensor":{sensor}}}}}"#);
        device.call(call.as_bytes(), &AGENT, &rig, at(sensor));
    }
    let seqs: Vec<_> = device.audit().iter().map(|e| e.seq()).collect();
    assert_eq!(seqs, [2, 3, 4]);
    assert_eq!(device.audit().dropped(), 2);
    // Sensor 4 is out of range: blocked, and the trail says so.
    assert_eq!(
        device.audit().iter().last().map(|e| e.event()),
        Some(AuditEvent::Decided("needs_input"))
    );
}

#[cfg(feature = "serde")]
#[test]
fn a_device_keys_a_call_as_a_host_does() {
    use cairnloop::IdempotencyKey;
    let (mut device, rig) = device();
    let (slot, _) = awaiting(&device.call(MOVE_40, &AGENT, &rig, at(0)));
    let lane = device.lanes().get(slot).unwrap();
    let host = IdempotencyKey::for_call(
        "move_actuator",
        &serde_json::json!({"speed": 5, "position": 40}),
        Some("agent-1"),
        None,
        None,
    );
    assert_eq!(*lane.key(), host);
    assert_eq!(lane.args(), r#"{"position":40,"speed":5}"#);
    assert_eq!(
        lane.code(),
        u32::from_be_bytes(host.as_bytes()[..4].try_into().unwrap())
    );
}
