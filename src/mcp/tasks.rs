//! The approval wait as a task (the MCP Tasks extension, protocol 2026-07-28): what a task
//! says of its lane, who may follow it, and when a request may be given one.

use alloc::format;
use alloc::string::{String, ToString};

use rmcp::RoleServer;
use rmcp::model::{ProtocolVersion, Task, TaskStatus};
use rmcp::service::RequestContext;

use crate::approvals::{ApprovalLane, Caller, TaskId, TaskRecord};
use crate::gate::{LaneState, Timestamp};

/// How often a client is asked to poll `tasks/get`: a person decides in seconds to hours,
/// and a poll costs one read of the store.
pub(crate) const POLL_INTERVAL_MS: u64 = 2_000;

/// How long a task stays readable after its lane's expiry: a last-minute approval, or the
/// expiry itself, can still be read by a client that polls late.
pub(crate) const RETENTION_MS: u64 = 24 * 3_600 * 1_000;

/// Whether this request may be answered with a task: the protocol is 2026-07-28 or later
/// and the request's own `_meta` declares the extension. What `initialize` said does not
/// count: the extension forbids a task to a request that did not ask for one.
pub(crate) fn wants_task(context: &RequestContext<RoleServer>) -> bool {
    let declared = context
        .meta
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks());
    declared
        && context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// The key of a task's `n`th question to the client (`approval-1`, `approval-2`, …): never
/// reused within a task, so a late answer to an earlier one is told apart.
pub(crate) fn question_key(n: u32) -> String {
    format!("approval-{n}")
}

/// Who may follow a task: the caller's actor, account and person (the OAuth subject
/// behind a token), in one unambiguous text.
pub(crate) fn owner_of(caller: &Caller) -> String {
    serde_json::json!([caller.id(), caller.account(), caller.person()]).to_string()
}

/// A fresh task id from the operating system's generator.
pub(crate) fn new_task_id() -> Result<TaskId, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| format!("no random task id: {error}"))?;
    Ok(TaskId::from_random(bytes))
}

/// The status a lane gives its task: waiting or running is `working`; withdrawn (its
/// client cancelled it) is `cancelled`; every other state is an outcome, `completed` with
/// the result a repeated call gets.
pub(crate) fn status_of(lane: &ApprovalLane) -> TaskStatus {
    match lane.state() {
        LaneState::Pending | LaneState::Approved | LaneState::ExecutionPending => {
            TaskStatus::Working
        }
        LaneState::Withdrawn => TaskStatus::Cancelled,
        _ => TaskStatus::Completed,
    }
}

/// The task object of `record` following `lane`, in `status`.
pub(crate) fn task_object(
    record: &TaskRecord,
    lane: &ApprovalLane,
    status: TaskStatus,
    decided_where: Option<&str>,
) -> Task {
    let until = lane.expires_at().unix_millis();
    let ttl = until
        .saturating_sub(record.opened_at().unix_millis())
        .saturating_add(RETENTION_MS);
    let updated = lane.updated_at().max(record.opened_at());
    Task::new(
        record.id().as_str(),
        status,
        iso(record.opened_at()),
        iso(updated),
    )
    .with_status_message(status_message(lane, decided_where))
    .with_ttl_ms(ttl)
    .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// What the task's person is told: who must decide, where, and until when; or what
/// became of the call.
pub(crate) fn status_message(lane: &ApprovalLane, decided_where: Option<&str>) -> String {
    let proposal = lane.proposal();
    match lane.state() {
        LaneState::Pending => {
            let place = decided_where.map_or_else(
                || "in the approval console or with `operator approve`".to_string(),
                |place| format!("at {place}"),
            );
            let people = lane
                .quorum_progress()
                .map(|progress| {
                    format!(" It needs {} different people: {progress}.", lane.quorum())
                })
                .unwrap_or_default();
            let raised = proposal
                .raised_because()
                .map(|why| format!(" (this one raised: {why})"))
                .unwrap_or_default();
            format!(
                "Waits for a person with the right to approve {} calls{raised}, other than {}, to decide {place}, until {}.{people}",
                proposal.risk_tier(),
                proposal.actor_id(),
                lane.expires_at().utc()
            )
        }
        LaneState::Approved | LaneState::ExecutionPending => {
            "Approved; the call is running.".to_string()
        }
        LaneState::Withdrawn => format!(
            "Withdrawn by {}; it can no longer be approved.",
            lane.decided_by().unwrap_or("its caller")
        ),
        state => format!("The call is {}.", state.words()),
    }
}

/// An ISO 8601 time, as the extension's timestamps are written.
fn iso(at: Timestamp) -> String {
    at.utc().to_string()
}
