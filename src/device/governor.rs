use core::fmt;

use crate::declare::{Actor, IdempotencyKey, InputErrors, text};
use crate::device::audit::{AuditEvent, AuditRing, By};
use crate::device::call::CallText;
use crate::device::fields::Args;
use crate::device::fixed::FixedText;
use crate::device::key::{code_of, key_of};
use crate::device::lanes::{ARGS_BYTES, ID_BYTES, Lane, LaneTable};
use crate::device::reply::{Refusal, Reply};
use crate::device::tool::{Admission, DeviceRegistry, Handled};
use crate::gate::{
    ApprovalRules, Blocked, LaneAction, LaneState, ModePolicy, Timestamp, Ttl, check_ascii_id,
    same_ascii_id,
};

/// The front door of a governed device: its tools, a fixed lane table of `LANES`
/// proposals and an audit ring of `AUDIT` records, with no heap. Every call a model sends
/// goes through [`DeviceGovernor::call`]: the gates of the core decide it, a call that
/// needs approval waits in a lane until an operator approves it at the device
/// ([`DeviceGovernor::approve`]), and then runs once, when the model sends the same call
/// again.
///
/// ```
/// use cairnloop::device::{Args, DeviceEntry, DeviceGovernor, DeviceRegistry, DeviceTool, Field, Reply};
/// use cairnloop::gate::Timestamp;
/// use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolSpec};
///
/// struct Move;
/// impl Tool for Move {
///     const SPEC: ToolSpec = ToolSpec::new("move_arm", "Move arm", "Moves the arm.", RiskTier::HighWrite);
///     const SCOPES: &'static [Scope] = &[];
///     type Input = i64; type Output = &'static str; type Error = &'static str; type Context = ();
///     fn validate(_: &i64) -> Result<(), InputErrors> { Ok(()) }
///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
///     async fn run(_: Invocation<'_, Self>) -> Result<&'static str, &'static str> { Ok("moved") }
/// }
/// impl DeviceTool for Move {
///     const FIELDS: &'static [Field] = &[Field::integer("to", 0, 90)];
///     fn input(args: &Args) -> Result<i64, InputErrors> { Ok(args.integer(0).unwrap_or(0)) }
/// }
/// static TOOLS: DeviceRegistry<()> = DeviceRegistry::new(&[DeviceEntry::of::<Move>()]);
///
/// let mut device = DeviceGovernor::<(), 4, 16>::new(&TOOLS);
/// let agent = Actor::new("agent-1", &[]);
/// let call = br#"{"name":"move_arm","arguments":{"to":40}}"#;
/// let at = Timestamp::from_unix_millis;
///
/// let Reply::Awaiting { slot, code, .. } = device.call(call, &agent, &(), at(0)) else { panic!() };
/// assert!(matches!(device.approve(slot, code, "agent-1", at(1)), Reply::Refused(_))); // four eyes
/// assert!(matches!(device.approve(slot, code, "op-7", at(2)), Reply::Decided { .. }));
/// assert_eq!(device.call(call, &agent, &(), at(3)).to_string(), "executed move_arm: moved");
/// assert_eq!(device.call(call, &agent, &(), at(4)).to_string(), "not run move_arm: slot 0 is executed");
/// ```
pub struct DeviceGovernor<C: 'static, const LANES: usize, const AUDIT: usize> {
    tools: &'static DeviceRegistry<C>,
    policy: ModePolicy<C>,
    rules: ApprovalRules,
    ttl: Ttl,
    lanes: LaneTable<LANES>,
    audit: AuditRing<AUDIT>,
}

impl<C: 'static, const LANES: usize, const AUDIT: usize> DeviceGovernor<C, LANES, AUDIT> {
    /// A device over `tools`: four eyes, proposals valid for 48 hours of its clock, no
    /// mode overrides.
    ///
    /// ```
    /// static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// let device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// assert_eq!(device.lanes().iter().count(), 0);
    /// ```
    #[must_use]
    pub const fn new(tools: &'static DeviceRegistry<C>) -> Self {
        Self {
            tools,
            policy: ModePolicy::new(),
            rules: ApprovalRules::FOUR_EYES,
            ttl: Ttl::DEFAULT,
            lanes: LaneTable::new(),
            audit: AuditRing::new(),
        }
    }

    /// Sets how long a proposal stays valid, in the device clock's milliseconds.
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// use cairnloop::gate::Ttl;
    /// let device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE).with_ttl(Ttl::from_secs(30));
    /// # let _ = device;
    /// ```
    #[must_use]
    pub const fn with_ttl(self, ttl: Ttl) -> Self {
        Self { ttl, ..self }
    }

    /// Sets the mode overrides (they only tighten).
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// use cairnloop::{ApprovalMode, ModePolicy, RiskTier};
    /// let policy = ModePolicy::new().with_tier(RiskTier::LowWrite, ApprovalMode::AlwaysBlock);
    /// let device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE).with_policy(policy);
    /// # let _ = device;
    /// ```
    #[must_use]
    pub const fn with_policy(self, policy: ModePolicy<C>) -> Self {
        Self { policy, ..self }
    }

    /// The lane table.
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// # let device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// assert!(device.lanes().get(0).is_none());
    /// ```
    #[must_use]
    pub const fn lanes(&self) -> &LaneTable<LANES> {
        &self.lanes
    }

    /// The audit ring.
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// # let device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// assert_eq!(device.audit().next_seq(), 0);
    /// ```
    #[must_use]
    pub const fn audit(&self) -> &AuditRing<AUDIT> {
        &self.audit
    }

    /// The registry.
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// # let device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// assert!(device.tools().tools().is_empty());
    /// ```
    #[must_use]
    pub const fn tools(&self) -> &'static DeviceRegistry<C> {
        self.tools
    }

    /// Decides a call as a model sends it, `{"name": …, "arguments": {…}}`, and runs it
    /// when the gates say so, or when its lane was approved (once). Text that is not a
    /// call is refused before any gate; an unknown tool and bad arguments are blocked at
    /// gates 0 and 1, with every field error.
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// # let mut device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// let agent = cairnloop::Actor::new("agent-1", &[]);
    /// let now = cairnloop::gate::Timestamp::from_unix_millis(0);
    /// let reply = device.call(b"{\"name\":\"purge\"", &agent, &(), now);
    /// assert_eq!(reply.to_string(), "refused: not a call: the text ends in the middle of a value (invalid_json)");
    /// ```
    pub fn call(&mut self, line: &[u8], actor: &Actor<'_>, context: &C, now: Timestamp) -> Reply {
        match self.decide_call(line, actor, context, now) {
            Ok(reply) => reply,
            Err(refusal) => self.refuse(now, None, 0, By::Agent, refusal),
        }
    }

    fn decide_call(
        &mut self,
        line: &[u8],
        actor: &Actor<'_>,
        context: &C,
        now: Timestamp,
    ) -> Result<Reply, Refusal> {
        let call = CallText::parse(line)?;
        let mut name = [0_u8; text::MAX_NAME_LEN];
        let found = call
            .name(&mut name)
            .and_then(|name| Some((self.tools.position(name)?, self.tools.get(name)?)));
        // Gate 0.
        let Some((index, entry)) = found else {
            return Ok(self.blocked(now, None, Blocked::UnknownTool));
        };
        // Gate 1: the arguments against the tool's fields, every error at once.
        let args = match Args::decode(call.arguments(), entry.fields()) {
            Ok(args) => args,
            Err(errors) => return Ok(self.blocked(now, Some(index), needs_input(errors))),
        };
        let mut held = None;
        let policy = self.policy;
        let handled = {
            let mut admit = || {
                let (admission, reply) = self.admit(index, &args, actor, now);
                held = Some(reply);
                admission
            };
            entry.handle(&args, actor, context, &policy, &mut admit)
        };
        Ok(match handled {
            Handled::Blocked(blocked) => self.blocked(now, Some(index), blocked),
            // The table held the call: its reply, or why it refused to hold it.
            Handled::Held => held.unwrap_or(Err(Refusal::NoSuchLane))?,
            Handled::Ran { ok, text } => {
                let claimed = held.and_then(Result::ok);
                self.ran(index, claimed, ok, text, now)
            }
        })
    }

    /// Refuses an input the transport found bad before the governor could read it (a
    /// frame longer than its buffer, a line cut off by the link), and records the refusal
    /// in the audit trail like any other.
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// # let mut device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// use cairnloop::device::Refusal;
    /// let reply = device.refuse_input(Refusal::Oversized, cairnloop::gate::Timestamp::from_unix_millis(0));
    /// assert_eq!(reply.to_string(), "refused: the call is longer than the device reads (too_large)");
    /// assert_eq!(device.audit().next_seq(), 1);
    /// ```
    pub fn refuse_input(&mut self, refusal: Refusal, now: Timestamp) -> Reply {
        self.refuse(now, None, 0, By::Agent, refusal)
    }

    /// What the lane table says of a call that needs approval.
    fn admit(
        &mut self,
        tool: usize,
        args: &Args,
        actor: &Actor<'_>,
        now: Timestamp,
    ) -> (Admission, Result<Reply, Refusal>) {
        let Some(entry) = self.tools.tools().get(tool) else {
            return (Admission::Hold, Err(Refusal::NoSuchLane));
        };
        let name = entry.entry().spec().name();
        let mut canonical = FixedText::<ARGS_BYTES>::new();
        if args
            .write_canonical(entry.fields(), &mut canonical)
            .is_err()
        {
            return (Admission::Hold, Err(Refusal::ArgumentsTooLong));
        }
        let key = key_of(name, canonical.as_str(), actor);
        let code = code_of(&key);
        let Some(slot) = self.lanes.find(&key) else {
            return (
                Admission::Hold,
                self.propose(tool, key, canonical, actor, now),
            );
        };
        let Some(lane) = self.lanes.get(slot).copied() else {
            return (Admission::Hold, Err(Refusal::NoSuchLane));
        };
        match self
            .rules
            .liveness(lane.state(), lane.updated_at(), lane.expires_at(), now)
        {
            Err(_) => return (Admission::Hold, Err(Refusal::ClockWentBackwards)),
            Ok(true) => {
                self.expire(slot, now);
                return (
                    Admission::Hold,
                    Ok(Reply::Ended {
                        tool: name,
                        slot,
                        state: LaneState::Expired,
                    }),
                );
            }
            Ok(false) => {}
        }
        self.decided_to_wait(now, tool, code);
        match lane.state() {
            LaneState::Approved => {
                // The single-use claim: approved → running, once.
                match self.moved(slot, LaneAction::StartExecution, By::Agent, now) {
                    Ok(_) => (
                        Admission::Run,
                        Ok(Reply::Decided {
                            tool: name,
                            slot,
                            state: LaneState::ExecutionPending,
                        }),
                    ),
                    Err(refusal) => (Admission::Hold, Err(refusal)),
                }
            }
            LaneState::Pending => (
                Admission::Hold,
                Ok(Reply::Awaiting {
                    tool: name,
                    slot,
                    code,
                    expires_at: lane.expires_at(),
                    new: false,
                }),
            ),
            state => (
                Admission::Hold,
                Ok(Reply::Ended {
                    tool: name,
                    slot,
                    state,
                }),
            ),
        }
    }

    fn propose(
        &mut self,
        tool: usize,
        key: IdempotencyKey,
        canonical: FixedText<ARGS_BYTES>,
        actor: &Actor<'_>,
        now: Timestamp,
    ) -> Result<Reply, Refusal> {
        let name = self
            .tools
            .tools()
            .get(tool)
            .map_or("", |entry| entry.entry().spec().name());
        let proposer = check_ascii_id(actor.id())
            .ok()
            .and_then(|()| FixedText::<ID_BYTES>::from_str(actor.id()))
            .ok_or(Refusal::InvalidId)?;
        let expires_at = now
            .checked_add(self.ttl)
            .ok_or(Refusal::ClockWentBackwards)?;
        let index = u8::try_from(tool).map_err(|_| Refusal::NoSuchLane)?;
        let lane = Lane::open(key, index, canonical, proposer, now, expires_at);
        let code = code_of(&key);
        let Some(slot) = self.lanes.insert(lane) else {
            return Err(Refusal::LaneTableFull);
        };
        self.decided_to_wait(now, tool, code);
        self.audit.record(
            now,
            Some(tool),
            code,
            By::Agent,
            AuditEvent::Moved {
                from: None,
                to: LaneState::Pending,
            },
        );
        Ok(Reply::Awaiting {
            tool: name,
            slot,
            code,
            expires_at,
            new: true,
        })
    }

    /// Records a run: its decision (for a call that ran at once) or its lane's outcome.
    fn ran(
        &mut self,
        tool: usize,
        claimed: Option<Reply>,
        ok: bool,
        text: FixedText<{ crate::device::tool::OUTPUT_BYTES }>,
        now: Timestamp,
    ) -> Reply {
        let name = self
            .tools
            .tools()
            .get(tool)
            .map_or("", |entry| entry.entry().spec().name());
        match claimed {
            Some(Reply::Decided { slot, .. }) => {
                let action = if ok {
                    LaneAction::Succeed
                } else {
                    LaneAction::Fail
                };
                // A claimed lane is running, so either move is allowed.
                let _ = self.moved(slot, action, By::Agent, now);
            }
            _ => self.audit.record(
                now,
                Some(tool),
                0,
                By::Agent,
                AuditEvent::Decided("execute"),
            ),
        }
        if ok {
            Reply::Executed {
                tool: name,
                output: text,
            }
        } else {
            Reply::Failed {
                tool: name,
                error: text,
            }
        }
    }

    /// An operator approves the call in `slot`, quoting its `code` (shown with the
    /// proposal): the approval binds that exact call, is refused for the proposer
    /// (four eyes), after the lane's expiry, and when the lane is not pending (a second
    /// approval, or one after the call ran).
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// # let mut device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// let reply = device.approve(3, 0xdead_beef, "op-7", cairnloop::gate::Timestamp::from_unix_millis(0));
    /// assert_eq!(reply.to_string(), "refused: no lane in that slot (no_such_lane)");
    /// ```
    pub fn approve(&mut self, slot: usize, code: u32, operator: &str, now: Timestamp) -> Reply {
        self.decide(slot, code, operator, None, now)
    }

    /// An operator rejects the call in `slot`, quoting its `code`, with a reason.
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// # let mut device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// let reply = device.reject(0, 1, "op-7", "arm is serviced", cairnloop::gate::Timestamp::from_unix_millis(0));
    /// assert!(matches!(reply, cairnloop::device::Reply::Refused(_)));
    /// ```
    pub fn reject(
        &mut self,
        slot: usize,
        code: u32,
        operator: &str,
        reason: &str,
        now: Timestamp,
    ) -> Reply {
        self.decide(slot, code, operator, Some(reason), now)
    }

    fn decide(
        &mut self,
        slot: usize,
        code: u32,
        operator: &str,
        reason: Option<&str>,
        now: Timestamp,
    ) -> Reply {
        let tool = self.lanes.get(slot).map(Lane::tool);
        match self.check_decision(slot, code, operator, reason, now) {
            Ok(reply) => reply,
            Err(refusal) => self.refuse(now, tool, code, By::Operator, refusal),
        }
    }

    fn check_decision(
        &mut self,
        slot: usize,
        code: u32,
        operator: &str,
        reason: Option<&str>,
        now: Timestamp,
    ) -> Result<Reply, Refusal> {
        let lane = *self.lanes.get(slot).ok_or(Refusal::NoSuchLane)?;
        if lane.code() != code {
            return Err(Refusal::CodeMismatch);
        }
        if check_ascii_id(operator).is_err() {
            return Err(Refusal::InvalidId);
        }
        let due = self
            .rules
            .liveness(lane.state(), lane.updated_at(), lane.expires_at(), now)
            .map_err(|_| Refusal::ClockWentBackwards)?;
        if due {
            self.expire(slot, now);
            return Err(Refusal::Expired);
        }
        let action = match reason {
            None => {
                self.rules
                    .four_eyes(lane.proposer(), operator, same_ascii_id)
                    .map_err(|_| Refusal::SelfApproval)?;
                LaneAction::Approve
            }
            Some(reason) => {
                if text::is_blank(reason) || text::has_control(reason, false) {
                    return Err(Refusal::ReasonRequired);
                }
                LaneAction::Reject
            }
        };
        let state = self.moved(slot, action, By::Operator, now)?;
        let tool = self
            .tools
            .tools()
            .get(lane.tool())
            .map_or("", |entry| entry.entry().spec().name());
        Ok(Reply::Decided { tool, slot, state })
    }

    /// Expires every lane whose time ran out; how many moved.
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// # let mut device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// assert_eq!(device.sweep(cairnloop::gate::Timestamp::from_unix_millis(0)), 0);
    /// ```
    pub fn sweep(&mut self, now: Timestamp) -> usize {
        let mut moved = 0;
        for slot in 0..LANES {
            let due = self.lanes.get(slot).is_some_and(|lane| {
                self.rules
                    .liveness(lane.state(), lane.updated_at(), lane.expires_at(), now)
                    == Ok(true)
            });
            if due && self.expire(slot, now) {
                moved += 1;
            }
        }
        moved
    }

    fn expire(&mut self, slot: usize, now: Timestamp) -> bool {
        self.moved(slot, LaneAction::Expire, By::Clock, now).is_ok()
    }

    /// Moves a lane by the core's lifecycle and records the move.
    fn moved(
        &mut self,
        slot: usize,
        action: LaneAction,
        by: By,
        now: Timestamp,
    ) -> Result<LaneState, Refusal> {
        let lane = self.lanes.get_mut(slot).ok_or(Refusal::NoSuchLane)?;
        let from = lane.state();
        let to = lane.apply(action, now).map_err(Refusal::Transition)?;
        let (tool, code) = (lane.tool(), lane.code());
        self.audit.record(
            now,
            Some(tool),
            code,
            by,
            AuditEvent::Moved {
                from: Some(from),
                to,
            },
        );
        Ok(to)
    }

    /// Records the decision that a call waits for approval.
    fn decided_to_wait(&mut self, now: Timestamp, tool: usize, code: u32) {
        self.audit.record(
            now,
            Some(tool),
            code,
            By::Agent,
            AuditEvent::Decided("await_approval"),
        );
    }

    fn blocked(&mut self, now: Timestamp, tool: Option<usize>, blocked: Blocked) -> Reply {
        self.audit
            .record(now, tool, 0, By::Agent, AuditEvent::Decided(blocked.code()));
        let tool = tool
            .and_then(|t| self.tools.tools().get(t))
            .map(|entry| entry.entry().spec().name());
        Reply::Blocked { tool, blocked }
    }

    fn refuse(
        &mut self,
        now: Timestamp,
        tool: Option<usize>,
        code: u32,
        by: By,
        refusal: Refusal,
    ) -> Reply {
        self.audit
            .record(now, tool, code, by, AuditEvent::Refused(refusal.code()));
        Reply::Refused(refusal)
    }

    /// Writes the audit trail, oldest record first, one per line, and how many records
    /// the ring no longer holds.
    ///
    /// ```
    /// # static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// # let device = cairnloop::device::DeviceGovernor::<(), 8, 32>::new(&NONE);
    /// let mut out = String::new();
    /// device.write_audit(&mut out)?;
    /// assert_eq!(out, "audit: 0 records, 0 overwritten\n");
    /// # Ok::<(), core::fmt::Error>(())
    /// ```
    pub fn write_audit(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        writeln!(
            out,
            "audit: {} records, {} overwritten",
            self.audit.next_seq(),
            self.audit.dropped()
        )?;
        for entry in self.audit.iter() {
            let tool = entry
                .tool()
                .and_then(|t| self.tools.tools().get(t))
                .map_or("-", |e| e.entry().spec().name());
            write!(
                out,
                "#{} t={} {} {tool}",
                entry.seq(),
                entry.at().unix_millis(),
                entry.by().as_str()
            )?;
            if entry.code() != 0 {
                write!(out, " {:08x}", entry.code())?;
            }
            match entry.event() {
                AuditEvent::Decided(code) => writeln!(out, " decided {code}")?,
                AuditEvent::Refused(code) => writeln!(out, " refused {code}")?,
                AuditEvent::Moved { from: None, to } => writeln!(out, " opened {to}")?,
                AuditEvent::Moved {
                    from: Some(from),
                    to,
                } => {
                    writeln!(out, " {from} -> {to}")?;
                }
            }
        }
        Ok(())
    }
}

fn needs_input(errors: InputErrors) -> Blocked {
    Blocked::NeedsInput { errors }
}
