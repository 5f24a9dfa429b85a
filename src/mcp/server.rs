//! An MCP server handler for rmcp over a governor: `tools/list` shows what the actor may
//! call, `tools/call` goes through the governor, which records every decision.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientResult,
    CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, Implementation, InputRequest,
    InputRequests, InputRequiredResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, ServerRequest, Task, TaskPayload,
    TaskStatus, Tool, UpdateTaskParams,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::approver::{
    APPROVAL_INPUT, Answer, ClientApprover, approval_prompt, read_answer, read_echoed_answer,
};
use super::frame::RawArguments;
use super::projection::META_APPROVAL_MODE;
use super::result::{handed_on, not_recorded, outcome_result, superseded_handed_on};
use super::tasks;
use crate::approvals::{
    ApprovalError, ApprovalLane, ApprovalStore, Caller, Governor, MemoryStore, Outcome, TaskId,
    TaskRecord,
};
use crate::approvals::{check_id, same_person};
use crate::declare::{ApprovalMode, IdempotencyKey, ToolEntry};
use crate::gate::{Blocked, LaneState, ModeResolution, Timestamp};
use crate::json::ToolCall;

/// Serves a [`Governor`](crate::Governor)'s tools over MCP with rmcp, for one actor:
/// `tools/list` answers with the tools the actor may call (the same gates as a call), and
/// `tools/call` goes through the governor, which records every decision in its audit
/// trail. Every result carries `structuredContent` with a `status`:
///
/// | the governor says | `tools/call` answers |
/// |---|---|
/// | *executed* (now, or earlier: a repeat gives back the recorded output) | `status: executed` and the tool's `output` |
/// | *awaiting approval* | `status: awaiting_approval`, the proposal's id, preview, tier, scopes and `expires_at`; the proposal is in the governor's store |
/// | rejected, expired, invalidated, … | a tool error (`isError: true`) with the lane's state and reason |
/// | *blocked* | a tool error with `blocked` (its code) and the reason; for invalid input, every field error, and the missing scopes for `scope_missing` |
/// | unknown tool | the protocol error the specification names: `-32602` (invalid params) |
///
/// **The approval loop.** A call that needs approval is proposed and stays in the store
/// until someone decides it; made again (the same arguments, so the same key) after an
/// approval, it runs once, and made again after that, it gives back the recorded output.
/// With a [`ClientApprover`] the person at the client is asked in the same call
/// (`elicitation/create`, or, with a peer on protocol 2026-07-28, an `input_required`
/// result whose `requestState` is the proposal's key): *accept* with `decision:
/// approve` approves and runs the call, *decline* rejects it, anything else leaves it
/// pending. The host names the tiers for which that person's answer counts; by default
/// none, and every approval comes from an operator out of band.
///
/// Served on [`LineTransport`](crate::mcp::LineTransport), each call's argument text is
/// decoded exactly as sent (duplicate keys, numbers past their type: field errors). On
/// another transport the arguments arrive as a parsed map, where a duplicate key is
/// already lost.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use cairnloop::{Governor, Registry, mcp::{LineTransport, McpServer}};
/// # static TOOLS: Registry<()> = Registry::new(&[]);
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// use rmcp::ServiceExt;
///
/// let governor = Arc::new(Governor::new(&TOOLS));
/// let server = McpServer::new(governor, (), "agent-7").with_scopes(["orders:read"]);
/// server.serve(LineTransport::stdio()).await?.waiting().await?;
/// # Ok(())
/// # }
/// ```
pub struct McpServer<
    C: Send + Sync + 'static,
    S: ApprovalStore + Send + Sync + 'static = MemoryStore,
> {
    governor: Arc<Governor<C, S>>,
    /// Shared with the runs a task's approval starts after its request has ended.
    context: Arc<C>,
    /// Where a person decides, for the message of a task that waits.
    decided_where: Option<String>,
    /// How long a call that waits for a person is held open, by default and per tool.
    hold: core::time::Duration,
    holds: alloc::collections::BTreeMap<String, core::time::Duration>,
    /// The one caller of a server made for one actor.
    caller: Caller,
    /// Whether each request names its caller (an authenticating transport's server).
    callers_from_requests: bool,
    approver: Option<ClientApprover>,
    /// Every tool's `tools/list` entry (its schemas included), projected once per
    /// registry in this process; a listing picks the ones the actor may call.
    /// With the count of declared tools' offer changes it was made at.
    projected: std::sync::Mutex<Option<(u64, Arc<Projections>)>>,
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> McpServer<C, S> {
    /// A server for `actor_id` over `governor`, with no scopes and no account.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
    /// ```
    pub fn new(governor: Arc<Governor<C, S>>, context: C, actor_id: impl Into<String>) -> Self {
        Self {
            governor,
            context: Arc::new(context),
            decided_where: None,
            hold: core::time::Duration::ZERO,
            holds: alloc::collections::BTreeMap::new(),
            caller: Caller::new(actor_id, Vec::<String>::new()),
            callers_from_requests: false,
            approver: None,
            projected: std::sync::Mutex::new(None),
        }
    }

    /// A server whose requests each name their [`Caller`]: an authenticating transport
    /// (the HTTP one of feature `remote`) puts it in the request after checking the
    /// access token. A request without one is refused; no fixed actor stands in.
    ///
    /// With a client approver, the person the caller names answers the prompts, trusted
    /// for the approver's tiers; a caller without a person is never prompted.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::for_callers(Arc::new(Governor::new(&TOOLS)), ());
    /// ```
    pub fn for_callers(governor: Arc<Governor<C, S>>, context: C) -> Self {
        Self {
            callers_from_requests: true,
            ..Self::new(governor, context, "")
        }
    }

    /// Sets the actor's account.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7").with_account("acme");
    /// ```
    #[must_use]
    pub fn with_account(mut self, account: impl Into<String>) -> Self {
        self.caller = self.caller.with_account(account);
        self
    }

    /// Sets the scopes granted to the actor.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7")
    ///     .with_scopes(["orders:read", "tickets:write"]);
    /// ```
    #[must_use]
    pub fn with_scopes<I: IntoIterator<Item = T>, T: Into<String>>(mut self, scopes: I) -> Self {
        let mut caller = Caller::new(self.caller.id(), scopes);
        if let Some(account) = self.caller.account() {
            caller = caller.with_account(account);
        }
        self.caller = caller;
        self
    }

    /// Names where a person decides a waiting call (the approval console's address), for
    /// the message of a task that waits.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7")
    ///     .with_decision_place("https://approvals.example.com");
    /// ```
    #[must_use]
    pub fn with_decision_place(mut self, place: impl Into<String>) -> Self {
        self.decided_where = Some(place.into());
        self
    }

    /// Holds a call that waits for a person open for up to `hold`, for a client that gets
    /// no task and no prompt: approved meanwhile, it runs once and its result answers the
    /// same request; rejected or expired, the request gets that; still waiting when the
    /// hold ends, the request gets the awaiting answer, and the call can be made again or
    /// decided out of band as before. A client that sent a `progressToken` is told who
    /// must decide at once, of each approval of a quorum as it is given, and every 15
    /// seconds after, which keeps a client that resets its timeout on progress waiting. A client that cancels or goes away leaves the call
    /// pending: never run, never lost. Off (zero) by default: a client's own request
    /// timeout (60 seconds in the TypeScript SDK) ends a longer hold with an error.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7")
    ///     .with_hold(Duration::from_secs(45));
    /// ```
    #[must_use]
    pub fn with_hold(mut self, hold: core::time::Duration) -> Self {
        self.hold = hold;
        self
    }

    /// Holds the calls of the tool `name` open for `hold`, in place of the server's hold.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7")
    ///     .with_hold(Duration::from_secs(45))
    ///     .with_tool_hold("wipe_disk", Duration::ZERO);
    /// ```
    #[must_use]
    pub fn with_tool_hold(mut self, name: impl Into<String>, hold: core::time::Duration) -> Self {
        self.holds.insert(name.into(), hold);
        self
    }

    /// The governor, shared with the host (its operator's queue, its approvals).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
    /// assert!(pollster::block_on(server.governor().events()).unwrap().is_empty());
    /// ```
    pub fn governor(&self) -> &Arc<Governor<C, S>> {
        &self.governor
    }

    /// Trusts the client's person to approve calls by answering a prompt
    /// (`elicitation/create`), for the tiers `approver` names. Without it (the default),
    /// every call that needs approval waits for an operator out of band.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, RiskTier, mcp::{ClientApprover, McpServer}};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7")
    ///     .with_client_approver(ClientApprover::new("user:alice").may_approve(RiskTier::LowWrite));
    /// ```
    #[must_use]
    pub fn with_client_approver(mut self, approver: ClientApprover) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The `tools/list` entries of the tools this actor may call, as the handler answers
    /// them: each tool's entry (its schemas included) is projected once per registry, on
    /// the first listing of any server over it, and reused by every server after.
    ///
    /// # Errors
    ///
    /// An internal error for a tool that cannot be listed (no input schema, or an input
    /// that is not a JSON object).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
    /// assert!(server.list_tools_for_actor().unwrap().is_empty());
    /// ```
    pub fn list_tools_for_actor(&self) -> Result<Vec<Tool>, ErrorData> {
        self.list_for(&self.caller)
    }

    fn list_for(&self, caller: &Caller) -> Result<Vec<Tool>, ErrorData> {
        let scopes = caller.scope_refs();
        let actor = caller.actor(&scopes);
        let registry = self.governor.registry();
        let projected = self.projections();
        let mut tools = Vec::new();
        for (entry, projection) in registry.tools().iter().zip(projected.iter()) {
            let Some(projection) = projection.as_ref().filter(|_| entry.is_offered()) else {
                continue;
            };
            let verdict = crate::gate::verdict_for(
                entry,
                &actor,
                &self.context,
                self.governor.governance().mode_policy(),
            );
            let Some(mode) = verdict.mode().map(ModeResolution::resolved) else {
                continue;
            };
            match projection {
                Ok(tool) => tools.push(with_mode(tool, mode, entry.spec().approval_mode())),
                Err(error) => return Err(ErrorData::internal_error(error.clone(), None)),
            }
        }
        Ok(tools)
    }

    /// Whether a tool of this server's registry can be withdrawn or offered again while it
    /// serves (one declared from an upstream's listing).
    fn tools_may_change(&self) -> bool {
        self.governor
            .registry()
            .tools()
            .iter()
            .any(ToolEntry::may_change)
    }

    /// The projections of this server's registry, made again when a declared tool's offer
    /// changed since (a listing never shows a stale schema or a withdrawn tool).
    fn projections(&self) -> Arc<Projections> {
        let now = crate::declare::offers_changed();
        let mut kept = self
            .projected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*kept {
            Some((made_at, projected)) if *made_at == now => Arc::clone(projected),
            _ => {
                let projected = projections(self.governor.registry());
                *kept = Some((now, Arc::clone(&projected)));
                projected
            }
        }
    }

    /// The caller of this request: the server's own, or the one the transport named.
    fn caller_of<'a>(
        &'a self,
        context: &'a RequestContext<RoleServer>,
    ) -> Result<&'a Caller, ErrorData> {
        if !self.callers_from_requests {
            return Ok(&self.caller);
        }
        let named = context.extensions.get::<Caller>();
        #[cfg(feature = "remote")]
        let named = named.or_else(|| {
            context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
        });
        named.ok_or_else(|| {
            ErrorData::invalid_request("no authenticated caller; nothing was done", None)
        })
    }

    /// Answers a `tools/call` of `name` whose arguments are the JSON text `arguments`, as
    /// the handler does for a client without approval prompts: through the governor,
    /// which records the decision in its audit trail before this returns (see
    /// [`Governor::call`](crate::Governor::call) for when that record is committed). A call that
    /// awaits approval answers `status: awaiting_approval` and stays in the store.
    ///
    /// # Errors
    ///
    /// The protocol error for an unknown tool (`-32602`); every other outcome is a result.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use cairnloop::{Governor, Registry, mcp::McpServer};
    /// # static TOOLS: Registry<()> = Registry::new(&[]);
    /// let server = McpServer::new(Arc::new(Governor::new(&TOOLS)), (), "agent-7");
    /// let answer = pollster::block_on(server.call_tool_text("drop_tables", "{}"));
    /// assert_eq!(answer.unwrap_err().code.0, -32602);
    /// assert_eq!(pollster::block_on(server.governor().events()).unwrap().len(), 1); // the decision, recorded
    /// ```
    pub async fn call_tool_text(
        &self,
        name: &str,
        arguments: &str,
    ) -> Result<CallToolResult, ErrorData> {
        let outcome = self.govern(&self.caller, name, arguments).await;
        self.respond(name, outcome, None)
    }

    /// The answer to a call (see [`answer`]).
    fn respond(
        &self,
        name: &str,
        outcome: Result<Outcome, ApprovalError>,
        note: Option<&str>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(self.governor.registry(), name, outcome, note)
    }

    /// What a transport needs to answer this server's calls that run at once itself:
    /// `None` for a server whose requests each name their caller.
    pub(crate) fn fast_calls(&self) -> Option<super::fast::FastCalls<C, S>> {
        (!self.callers_from_requests).then(|| {
            super::fast::FastCalls::new(
                Arc::clone(&self.governor),
                Arc::clone(&self.context),
                self.caller.clone(),
            )
        })
    }

    async fn govern(
        &self,
        caller: &Caller,
        name: &str,
        arguments: &str,
    ) -> Result<Outcome, ApprovalError> {
        let scopes = caller.scope_refs();
        let actor = caller.actor(&scopes);
        self.governor
            .call(&ToolCall::new(name, arguments), &actor, &self.context)
            .await
    }

    /// The call's proposal key, when it would await approval.
    fn proposal_key(&self, caller: &Caller, name: &str, arguments: &str) -> Option<IdempotencyKey> {
        let scopes = caller.scope_refs();
        let actor = caller.actor(&scopes);
        self.governor
            .proposal_key(&ToolCall::new(name, arguments), &actor, &self.context)
    }

    /// The client's person, when their answer may approve this lane now: nobody is asked
    /// whose answer could not count (an id the identity rule refuses, or the proposer
    /// themself where the host does not allow self-approval).
    fn approver_for(&self, caller: &Caller, lane: &ApprovalLane) -> Option<ClientApprover> {
        let approver = self.approver.as_ref().filter(|approver| {
            lane.state() == LaneState::Pending && approver.approves(lane.proposal().risk_tier())
        })?;
        let approver = if self.callers_from_requests {
            // The person the token names answers; without one, nobody is asked.
            approver.for_person(caller.person()?)
        } else {
            approver.clone()
        };
        let proposer = lane.proposal().actor_id();
        let counts = check_id(approver.id()).is_ok()
            && (self.governor.config().allows_self_approval()
                || !same_person(approver.id(), proposer));
        counts.then_some(approver)
    }

    /// Applies the person's answer to a pending lane, then answers the call: approved, it
    /// runs now through the governor (once); rejected, it says so; undecided, it stays
    /// pending.
    async fn decide(
        &self,
        caller: &Caller,
        name: &str,
        arguments: &str,
        lane: &ApprovalLane,
        approver: &ClientApprover,
        answer: Answer,
    ) -> Result<CallToolResult, ErrorData> {
        let key = lane.key();
        let refused = match answer {
            Answer::Approve => match self.governor.approve(&key, approver.id()).await {
                Ok(_) => {
                    return self.respond(name, self.govern(caller, name, arguments).await, None);
                }
                Err(error) => format!("the approval was not applied: {error}"),
            },
            Answer::Reject(reason) => {
                match self.governor.reject(&key, approver.id(), &reason).await {
                    Ok(lane) => {
                        return self.respond(
                            name,
                            Ok(Outcome::AwaitingApproval(Box::new(lane))),
                            None,
                        );
                    }
                    Err(error) => format!("the rejection was not applied: {error}"),
                }
            }
            Answer::Undecided(why) => why,
        };
        let now = self
            .governor
            .lane(&key)
            .await
            .map(|lane| Outcome::AwaitingApproval(Box::new(lane)));
        self.respond(name, now, Some(&refused))
    }
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> McpServer<C, S> {
    /// Opens (or finds again) the task of `caller` following the waiting `lane`, durable
    /// before it is answered. `None` when the store keeps no tasks or could not keep this
    /// one: the call is then answered as it would be without a task.
    async fn open_task(&self, caller: &Caller, lane: &ApprovalLane) -> Option<Task> {
        let id = tasks::new_task_id().ok()?;
        let opened_at = self.governor.now().ok()?;
        let store = self.governor.store();
        // Tasks whose lanes have expired and whose retention is over are forgotten here,
        // as new ones open: their lanes stay in the audit trail.
        let kept_for = self.governor.config().ttl().as_millis() + tasks::RETENTION_MS;
        let before = Timestamp::from_unix_millis(opened_at.unix_millis().saturating_sub(kept_for));
        let _ = store.forget_tasks(before).await;
        let record = TaskRecord::new(id, lane.key(), tasks::owner_of(caller), opened_at);
        let (record, opened) = store.open_task(record).await.ok()?;
        if opened {
            self.run_when_approved(caller, lane, opened_at);
        }
        Some(tasks::task_object(
            &record,
            lane,
            TaskStatus::Working,
            self.decided_where.as_deref(),
        ))
    }

    /// The task `id` names and its lane, for its owner; for anyone else, a malformed id,
    /// an unknown or forgotten one, the same error.
    async fn followed(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<(TaskRecord, ApprovalLane, Option<ApprovalLane>), ErrorData> {
        let unknown = || ErrorData::invalid_params("no such task", None);
        let id = TaskId::parse(id).ok_or_else(unknown)?;
        let record = match self.governor.store().task(&id).await {
            Ok(Some(record)) if record.owner() == tasks::owner_of(caller) => record,
            Ok(_) => return Err(unknown()),
            Err(error) => {
                return Err(ErrorData::internal_error(
                    format!("the task could not be read: {error}"),
                    None,
                ));
            }
        };
        // Read through expiry: a lane past its time is expired, not still waiting.
        let lane = self
            .governor
            .expire_if_due(&record.lane())
            .await
            .map_err(|error| {
                ErrorData::internal_error(
                    format!("the task's call could not be read: {error}"),
                    None,
                )
            })?;
        // Past its retention a task is unknown, whether or not it is forgotten yet.
        let now = self.governor.now().map_err(|error| {
            ErrorData::internal_error(format!("no time to read the task by: {error}"), None)
        })?;
        let kept_until = lane
            .expires_at()
            .unix_millis()
            .saturating_add(tasks::RETENTION_MS);
        if now.unix_millis() > kept_until {
            return Err(unknown());
        }
        // Approved with changes: the task follows the changed call (and a change of it),
        // and keeps its own lane to say so.
        let (mut lane, mut original) = (lane, None);
        for _ in 0..crate::approvals::MAX_CHANGES {
            let (LaneState::Superseded, Some(next)) = (lane.state(), lane.replaced_by()) else {
                break;
            };
            let replacement = self.governor.expire_if_due(&next).await.map_err(|error| {
                ErrorData::internal_error(
                    format!("the task's changed call could not be read: {error}"),
                    None,
                )
            })?;
            original.get_or_insert(lane);
            lane = replacement;
        }
        Ok((record, lane, original))
    }

    /// The question a waiting task puts to the client's person, when the host trusts that
    /// person for the call's tier and the client can show prompts: the approval prompt
    /// under the key of the question now open (the first is issued here, once).
    async fn question(
        &self,
        caller: &Caller,
        record: &TaskRecord,
        lane: &ApprovalLane,
        context: &RequestContext<RoleServer>,
    ) -> Option<InputRequests> {
        self.approver_for(caller, lane)
            .filter(|_| can_elicit(context))?;
        let mut asked = record.inputs_issued();
        if asked == 0 {
            let store = self.governor.store();
            asked = match store.issue_task_input(record.id(), 0).await {
                Ok(()) => 1,
                // Another poll issued it first: read what it issued.
                Err(_) => store.task(record.id()).await.ok()??.inputs_issued(),
            };
        }
        let mut requests = InputRequests::new();
        requests.insert(
            tasks::question_key(asked),
            InputRequest::Elicitation(approval_prompt(lane)),
        );
        Some(requests)
    }

    /// An approved lane's run, started in the background by a poll that finds it approved
    /// (its task's runner is gone, or has not woken yet: the lane's single-use claim lets
    /// one of them run it); the poll answers at once, never waiting for the tool. Returns
    /// the lane as it is now.
    async fn start_if_approved(&self, caller: &Caller, lane: ApprovalLane) -> ApprovalLane {
        if lane.state() == LaneState::Approved {
            let run = self.run(caller, &lane);
            tokio::spawn(run);
        }
        lane
    }

    /// The task's runner in the process that opened it: woken by the store's change
    /// signal when `lane` is decided, here or in another process, it runs the call once
    /// approved, so the next `tasks/get` finds the result. It waits no longer than the
    /// lane lives; a task whose process ends is run by the first `tasks/get` after the
    /// approval instead. The lane's single-use claim decides which of the two runs it.
    fn run_when_approved(&self, caller: &Caller, lane: &ApprovalLane, now: Timestamp) {
        let governor = Arc::clone(&self.governor);
        let run = self.run(caller, lane);
        let key = lane.key();
        let lives = lane
            .expires_at()
            .unix_millis()
            .saturating_sub(now.unix_millis());
        tokio::spawn(async move {
            let counted = super::waiting::Counted::runner();
            let decided = match governor
                .await_decision(&key, core::time::Duration::from_millis(lives))
                .await
            {
                // Approved with changes: the changed call, once it is opened and decided
                // (it lives a time of its own, and its expiry ends the wait).
                Ok(lane) if lane.state() == LaneState::Superseded => {
                    governor
                        .await_changed(lane, core::time::Duration::MAX)
                        .await
                }
                decided => decided,
            };
            drop(counted);
            // Approved with changes too: the call made again runs the changed one.
            if decided.is_ok_and(|lane| {
                matches!(lane.state(), LaneState::Approved | LaneState::Superseded)
            }) {
                run.await;
            }
        });
    }

    /// `lane`'s call, made for `caller` through the governor: run if it is approved and
    /// unclaimed. Its outcome is the lane's: a task reads it there.
    fn run(
        &self,
        caller: &Caller,
        lane: &ApprovalLane,
    ) -> impl Future<Output = ()> + Send + 'static {
        let (governor, context, caller) = (
            Arc::clone(&self.governor),
            Arc::clone(&self.context),
            caller.clone(),
        );
        let (tool, input) = (
            lane.proposal().tool().to_string(),
            lane.proposal().input().to_string(),
        );
        async move {
            let scopes = caller.scope_refs();
            let actor = caller.actor(&scopes);
            let _ = governor
                .call(&ToolCall::new(&tool, &input), &actor, &*context)
                .await;
        }
    }

    /// A finished lane's result, as a repeated call would get it.
    fn final_result(
        &self,
        lane: &ApprovalLane,
        original: Option<ApprovalLane>,
    ) -> Result<JsonObject, ErrorData> {
        let name = lane.proposal().tool();
        let mut outcome = match (lane.state(), lane.output()) {
            (LaneState::Executed, Some(output)) => Outcome::Executed(output.clone()),
            _ => Outcome::AwaitingApproval(Box::new(lane.clone())),
        };
        if let Some(original) = original {
            outcome = Outcome::Superseded {
                original: Box::new(original),
                replacement: Box::new(lane.clone()),
                edited: Box::new(outcome),
            };
        }
        let result = self.respond(name, Ok(outcome), None)?;
        match serde_json::to_value(result) {
            Ok(serde_json::Value::Object(result)) => Ok(result),
            _ => Err(ErrorData::internal_error(
                "the result is not an object",
                None,
            )),
        }
    }
}

/// How often a held call's client is told it still waits.
const PROGRESS_EVERY: core::time::Duration = core::time::Duration::from_secs(15);

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> McpServer<C, S> {
    /// A waiting call held open until a person decides or the hold ends (see
    /// [`McpServer::with_hold`]); answered at once when no hold applies.
    async fn hold(
        &self,
        caller: &Caller,
        name: &str,
        arguments: &str,
        lane: Box<ApprovalLane>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let hold = self.holds.get(name).copied().unwrap_or(self.hold);
        if hold.is_zero() || lane.state() != LaneState::Pending {
            return self.respond(name, Ok(Outcome::AwaitingApproval(lane)), None);
        }
        let token = context.meta.get_progress_token();
        let mut message = tasks::status_message(&lane, self.decided_where.as_deref());
        let mut version = lane.version();
        // The lane waited on: the call's own, or once a person approved it with changes,
        // the changed call's until that is decided too.
        let mut key = lane.key();
        let mut changes = 0;
        let _counted = super::waiting::Counted::held();
        let until = std::time::Instant::now() + hold;
        // A client that cancels ends the hold; the call stays pending, unrun.
        let mut cancelled = Box::pin(context.ct.clone().cancelled_owned());
        let mut told = 0u32;
        let decided = loop {
            if let Some(token) = &token {
                told += 1;
                let progress =
                    rmcp::model::ProgressNotificationParam::new(token.clone(), f64::from(told))
                        .with_message(message.clone());
                // A client that no longer listens still gets its answer, or none.
                let _ = context.peer.notify_progress(progress).await;
            }
            // Until a person decides, or one approval of a quorum that needs more is given
            // (the client is told at once), or it is time to say it still waits.
            let left = until.saturating_duration_since(std::time::Instant::now());
            let step = {
                let mut moved = Box::pin(self.governor.await_move(
                    &key,
                    left.min(PROGRESS_EVERY),
                    Some(version),
                ));
                core::future::poll_fn(|cx| {
                    if cancelled.as_mut().poll(cx).is_ready() {
                        return core::task::Poll::Ready(None);
                    }
                    moved.as_mut().poll(cx).map(Some)
                })
                .await
            };
            match step {
                None => return self.respond(name, Ok(Outcome::AwaitingApproval(lane)), None),
                Some(Ok(now)) if now.state() == LaneState::Pending => {
                    if now.version() != version {
                        message = tasks::status_message(&now, self.decided_where.as_deref());
                        version = now.version();
                    } else if left <= PROGRESS_EVERY {
                        // The hold is over: the call waits on, answered as waiting.
                        break Ok(now);
                    }
                }
                Some(Ok(now))
                    if now.state() == LaneState::Superseded
                        && changes < crate::approvals::MAX_CHANGES =>
                {
                    let Some(next) = now.replaced_by() else {
                        break Ok(now);
                    };
                    // The change opens the changed call just after it closes this one, and
                    // approves it after that: what the hold answers is its fate.
                    changes += 1;
                    let left = until.saturating_duration_since(std::time::Instant::now());
                    match self.governor.await_opened(&next, left).await {
                        Ok(changed) if changed.state() == LaneState::Pending => {
                            message =
                                tasks::status_message(&changed, self.decided_where.as_deref());
                            (key, version) = (next, changed.version());
                        }
                        decided => break decided,
                    }
                }
                Some(decided) => break decided,
            }
        };
        match decided {
            // Approved, or approved with changes (the re-issued call answers with what
            // became of the changed one, also one still waiting when the hold ends).
            Ok(lane)
                if changes > 0
                    || matches!(lane.state(), LaneState::Approved | LaneState::Superseded) =>
            {
                self.respond(name, self.govern(caller, name, arguments).await, None)
            }
            Ok(lane) => self.respond(name, Ok(Outcome::AwaitingApproval(Box::new(lane))), None),
            Err(error) => self.respond(name, Err(error), None),
        }
    }
}

/// Each tool's `tools/list` entry, or why it cannot be listed; `None` for a tool that is
/// not callable by name.
type Projections = Vec<Option<Result<Tool, String>>>;

/// The projections of `registry`, made once per registry in this process (a registry is
/// `'static`, so its address names it) and shared by every server over it.
fn projections<C: ?Sized + Sync + 'static>(
    registry: &'static crate::declare::Registry<C>,
) -> Arc<Projections> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock, PoisonError};
    type Made = HashMap<usize, (u64, Arc<Projections>)>;
    static MADE: OnceLock<Mutex<Made>> = OnceLock::new();
    let address = core::ptr::from_ref(registry).cast::<()>() as usize;
    let now = crate::declare::offers_changed();
    let mut made = MADE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some((made_at, projected)) = made.get(&address)
        && *made_at == now
    {
        return Arc::clone(projected);
    }
    // Made again when a declared tool's offer changed: the one made before is replaced.
    let projected = Arc::new(
        registry
            .tools()
            .iter()
            .map(|entry| {
                entry.is_callable_by_name().then(|| {
                    entry
                        .mcp_tool()
                        .map_err(|error| error.to_string())
                        .and_then(|value| {
                            serde_json::from_value::<Tool>(value).map_err(|error| error.to_string())
                        })
                        .map(|mut tool| {
                            // The spec's own 'static text: a listing copies none of it.
                            let spec = entry.spec();
                            tool.name = spec.name().into();
                            tool.description = Some(spec.description().into());
                            tool
                        })
                })
            })
            .collect(),
    );
    made.insert(address, (now, Arc::clone(&projected)));
    projected
}

/// A listed tool, carrying the approval mode in force for the caller; the shared
/// projection carries the declared one, which most listings keep.
fn with_mode(projected: &Tool, mode: ApprovalMode, declared: ApprovalMode) -> Tool {
    let mut tool = projected.clone();
    if mode != declared {
        tool.meta
            .get_or_insert_with(Default::default)
            .0
            .insert(META_APPROVAL_MODE.into(), mode.as_str().into());
    }
    tool
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> ServerHandler
    for McpServer<C, S>
{
    /// A session over tools that can change is told when they do
    /// (`notifications/tools/list_changed`), within a quarter of a second, for as long as
    /// its transport is open.
    fn on_initialized(
        &self,
        context: rmcp::service::NotificationContext<RoleServer>,
    ) -> impl core::future::Future<Output = ()> + Send + '_ {
        if self.tools_may_change() {
            let peer = context.peer;
            tokio::spawn(async move {
                let mut seen = crate::declare::offers_changed();
                while !peer.is_transport_closed() {
                    tokio::time::sleep(core::time::Duration::from_millis(250)).await;
                    let now = crate::declare::offers_changed();
                    if now != seen {
                        seen = now;
                        if peer.notify_tool_list_changed().await.is_err() {
                            break;
                        }
                    }
                }
            });
        }
        core::future::ready(())
    }

    fn get_info(&self) -> ServerConfig {
        // Tools declared from an upstream's listing change with it: say that the list
        // changes (each session is told, below).
        // A call that waits for a person may be answered with a task (when the request
        // asks for one and the store keeps tasks).
        let capabilities = if self.tools_may_change() {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_tasks()
                .build()
        } else {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("cairnloop", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.list_for(self.caller_of(&_context)?)?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The tool's own code can see the client cancel the request (and a tool that
        // forwards the call passes it on).
        super::cancel::within(&context.clone(), self.answer_call(request, context)).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = self.caller_of(&context)?;
        let (record, lane, original) = self.followed(caller, &request.task_id).await?;
        let lane = self.start_if_approved(caller, lane).await;
        let status = tasks::status_of(&lane);
        let payload = match status {
            TaskStatus::Completed => TaskPayload::Completed {
                result: self.final_result(&lane, original)?,
            },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            _ => match self.question(caller, &record, &lane, &context).await {
                Some(input_requests) => TaskPayload::InputRequired { input_requests },
                None => TaskPayload::Working,
            },
        };
        let task = tasks::task_object(
            &record,
            &lane,
            payload.status(),
            self.decided_where.as_deref(),
        );
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// The answer to the question the task asks now (`approval-N`) decides the call as the
    /// client's person, under the same rules as every approval; an answer to a key never
    /// issued, or already answered, is ignored. An unknown task, or another caller's, is
    /// refused.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller_of(&context)?;
        let (record, lane, _) = self.followed(caller, &request.task_id).await?;
        let asked = record.inputs_issued();
        let answer = request.input_responses.get(&tasks::question_key(asked));
        let Some(approver) = self.approver_for(caller, &lane).filter(|_| asked > 0) else {
            return Ok(());
        };
        if answer.is_none() {
            return Ok(());
        }
        let key = lane.key();
        // A decision that loses to another made meanwhile leaves that one standing.
        let _ = match read_echoed_answer(answer, approver.id()) {
            Answer::Approve => self.governor.approve(&key, approver.id()).await.map(drop),
            Answer::Reject(reason) => self
                .governor
                .reject(&key, approver.id(), &reason)
                .await
                .map(drop),
            // Undecided: the next poll asks again, under a new key.
            Answer::Undecided(_) => self
                .governor
                .store()
                .issue_task_input(record.id(), asked)
                .await
                .map_err(ApprovalError::Store),
        };
        Ok(())
    }

    /// A pending call is withdrawn (it can no longer be approved; the audit trail says
    /// who withdrew it) and its task is `cancelled`; an approved, running or finished call
    /// is acknowledged and its outcome stands.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller_of(&context)?;
        let (_, lane, _) = self.followed(caller, &request.task_id).await?;
        if lane.state() == LaneState::Pending {
            // Lost to a decision made meanwhile: that decision stands.
            let _ = self
                .governor
                .withdraw(&lane.key(), caller.id(), "its caller cancelled the task")
                .await;
        }
        Ok(())
    }
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> McpServer<C, S> {
    /// A `tools/call`: governed, and the approval loop's rounds.
    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The text as the client sent it when served on `LineTransport`; over another
        // transport, the parsed map (duplicate keys are already lost there).
        let caller = self.caller_of(&context)?;
        let raw = context.extensions.get::<RawArguments>();
        #[cfg(feature = "remote")]
        let raw = raw.or_else(|| {
            context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<RawArguments>())
        });
        let arguments = match raw {
            Some(RawArguments(text)) => text.clone(),
            None => Value::Object(request.arguments.clone().unwrap_or_default()).to_string(),
        };
        let name = request.name.as_ref();
        // A retry of the multi-round-trip form: what it echoes must be the key of this
        // very call, proposed and stored in the first round.
        if let Some(state) = &request.request_state {
            let key = self
                .proposal_key(caller, name, &arguments)
                .filter(|key| key.to_string() == *state);
            let stored = match key {
                Some(key) => self.governor.lane(&key).await.is_ok(),
                None => false,
            };
            if !stored {
                return Err(ErrorData::invalid_params(
                    "requestState does not name a stored proposal of this call; nothing was done",
                    None,
                ));
            }
        }
        let lane = match self.govern(caller, name, &arguments).await {
            Ok(Outcome::AwaitingApproval(lane)) => lane,
            other => return self.respond(name, other, None).map(Into::into),
        };
        if lane.state() == LaneState::Pending
            && tasks::wants_task(&context)
            && let Some(task) = self.open_task(caller, &lane).await
        {
            return Ok(CreateTaskResult::new(task).into());
        }
        let approver = match self.approver_for(caller, &lane) {
            Some(approver) if can_elicit(&context) => approver,
            _ => {
                return self
                    .hold(caller, name, &arguments, lane, &context)
                    .await
                    .map(Into::into);
            }
        };
        if request.request_state.is_some() {
            let echoed = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(APPROVAL_INPUT));
            let answer = read_echoed_answer(echoed, approver.id());
            return self
                .decide(caller, name, &arguments, &lane, &approver, answer)
                .await
                .map(Into::into);
        }
        if is_stateless(&context) {
            // No request may be sent mid-call: the prompt goes back in the result, and
            // the key (an opaque handle to the stored proposal) comes back with the answer.
            let prompt = InputRequest::Elicitation(approval_prompt(&lane));
            let mut requests = InputRequests::new();
            requests.insert(APPROVAL_INPUT.to_string(), prompt);
            return Ok(
                InputRequiredResult::new(Some(requests), Some(lane.key().to_string())).into(),
            );
        }
        let options = PeerRequestOptions::with_timeout(approver.timeout());
        let asked = context
            .peer
            .send_request_with_option(
                ServerRequest::ElicitRequest(approval_prompt(&lane)),
                options,
            )
            .await;
        let answer = match asked {
            Ok(handle) => match handle.await_response().await {
                Ok(ClientResult::ElicitResult(result)) => read_answer(&result, approver.id()),
                Ok(_) => Answer::Undecided("the client answered something else".to_string()),
                Err(error) => Answer::Undecided(format!("no answer from the client: {error}")),
            },
            Err(error) => Answer::Undecided(format!("the prompt could not be sent: {error}")),
        };
        self.decide(caller, name, &arguments, &lane, &approver, answer)
            .await
            .map(Into::into)
    }
}

/// Whether the client says it shows approval prompts (form elicitation).
fn can_elicit(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.elicitation.is_some())
}

/// Whether the peer speaks a protocol version without server-to-client requests.
fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// The answer to a call of `name` in `registry`: an unknown tool is the protocol error
/// the specification names (`-32602`); everything else is a result.
pub(crate) fn answer<C: ?Sized + 'static>(
    registry: &crate::declare::Registry<C>,
    name: &str,
    outcome: Result<Outcome, ApprovalError>,
    note: Option<&str>,
) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(Outcome::Blocked(Blocked::UnknownTool)) => Err(ErrorData::invalid_params(
            format!("Unknown tool: {}", name.escape_debug()),
            None,
        )),
        // A tool that answers with another server's result: its content handed on.
        Ok(outcome @ (Outcome::Executed(_) | Outcome::Superseded { .. }))
            if registry
                .get(name)
                .is_some_and(ToolEntry::output_is_call_result) =>
        {
            Ok(match outcome {
                Outcome::Executed(output) => handed_on(output),
                superseded => superseded_handed_on(superseded),
            })
        }
        Ok(outcome) => Ok(outcome_result(outcome, note)),
        Err(error) => Ok(not_recorded(&error)),
    }
}
