//! A PostgreSQL server stopped mid-run and started again: typed errors while it is down,
//! nothing committed lost after. A test binary of its own, so that no other test uses
//! the server while it is stopped.

use cairnloop::approvals::StoreError;
use cairnloop::gate::LaneState;
use cairnloop::stores::PostgresStore;
use cairnloop::{
    Actor, ApprovalError, Governor, InputErrors, Invocation, Outcome, PolicyDenial, Registry,
    RiskTier, Scope, Tool, ToolCall, ToolEntry, ToolSpec,
};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize)]
struct Job {
    id: u32,
}

struct Ship;

impl Tool for Ship {
    const SPEC: ToolSpec = ToolSpec::new("ship", "Ship", "Ships an order.", RiskTier::HighWrite);
    const SCOPES: &'static [Scope] = &[];
    type Input = Job;
    type Output = u32;
    type Error = String;
    type Context = ();
    fn validate(_: &Job) -> Result<(), InputErrors> {
        Ok(())
    }
    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }
    async fn run(call: Invocation<'_, Self>) -> Result<u32, String> {
        Ok(call.input().id)
    }
}

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<Ship>()]);

fn shell(command: &str) {
    let status = std::process::Command::new("sh")
        .args(["-c", command])
        .status()
        .unwrap();
    assert!(status.success(), "{command}");
}

#[test]
fn a_server_stopped_mid_run_gives_typed_errors_and_loses_nothing_committed() {
    let (Ok(config), Ok(stop), Ok(start)) = (
        std::env::var("CAIRNLOOP_POSTGRES"),
        std::env::var("CAIRNLOOP_POSTGRES_STOP"),
        std::env::var("CAIRNLOOP_POSTGRES_START"),
    ) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test under scripts/with_postgres.sh"
        );
        eprintln!("no server to stop: run under scripts/with_postgres.sh");
        return;
    };
    let agent = Actor::new("agent-7", &[]);
    let governor = Governor::new(&TOOLS).with_store(PostgresStore::connect(&config).unwrap());
    let call = ToolCall::new("ship", r#"{"id": 1}"#);
    let Ok(Outcome::AwaitingApproval(lane)) = pollster::block_on(governor.call(&call, &agent, &()))
    else {
        panic!("a proposal")
    };
    let key = lane.key();

    shell(&stop);
    // Down: every operation is a typed store error, and the call is not decided.
    let approve = pollster::block_on(governor.approve(&key, "ops-lead"));
    assert!(
        matches!(approve, Err(ApprovalError::Store(StoreError::Backend(_)))),
        "{approve:?}"
    );
    let other = ToolCall::new("ship", r#"{"id": 2}"#);
    let refused = pollster::block_on(governor.call(&other, &agent, &()));
    assert!(
        matches!(refused, Err(ApprovalError::Store(StoreError::Backend(_)))),
        "{refused:?}"
    );
    assert!(matches!(
        PostgresStore::connect(&config),
        Err(StoreError::Backend(_))
    ));
    shell(&start);

    // Up again: a new connection finds what was committed, as it was, and goes on.
    let after = Governor::new(&TOOLS).with_store(PostgresStore::connect(&config).unwrap());
    assert_eq!(
        pollster::block_on(after.lane(&key)).unwrap().state(),
        LaneState::Pending
    );
    pollster::block_on(after.approve(&key, "ops-lead")).unwrap();
    assert_eq!(
        pollster::block_on(after.execute(&key, &agent, &())),
        Ok(serde_json::json!(1))
    );
}
