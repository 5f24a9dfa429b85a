use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::any::Any;
use core::fmt;
use core::future::Future;
use core::pin::Pin;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::proposal::ProposalParts;
use crate::strict_json::{decode, parse_arguments};
use crate::{
    Actor, ApprovalMode, AuditEvent, Blocked, IdempotencyKey, InputErrors, InputLimits, Invocation,
    ModePolicy, ModeResolution, Preview, PreviewSource, Proposal, Registry, Tool, ToolEntry,
    canonical_json, execute,
};

type ErasedInput = Box<dyn Any + Send>;

/// The future of a call run by name: the tool's output as JSON, or why it failed.
pub type RunFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, RunError>> + Send + 'a>>;

/// The type-erased functions that let a registry call a tool by name with JSON.
pub(crate) struct JsonHooks<C: ?Sized + 'static> {
    decode: fn(&Value) -> Result<ErasedInput, InputErrors>,
    preview: fn(&ErasedInput, &mut dyn fmt::Write) -> Option<fmt::Result>,
    run: for<'a> fn(ErasedInput, &'a Actor<'a>, &'a C, IdempotencyKey) -> RunFuture<'a>,
    /// The input's JSON Schema, when registered with `ToolEntry::mcp`.
    #[cfg(feature = "schemars")]
    pub(crate) schema: Option<fn() -> Value>,
}

impl<C: ?Sized + Sync + 'static> JsonHooks<C> {
    pub(crate) const fn of<T>() -> Self
    where
        T: Tool<Context = C>,
        T::Input: DeserializeOwned + Send + 'static,
        T::Output: Serialize,
        T::Error: fmt::Display,
    {
        Self {
            decode: decode_input::<T>,
            preview: preview_input::<T>,
            run: run_input::<T>,
            #[cfg(feature = "schemars")]
            schema: None,
        }
    }

    #[cfg(feature = "schemars")]
    pub(crate) const fn with_schema<T>(mut self) -> Self
    where
        T: Tool<Context = C>,
        T::Input: schemars::JsonSchema,
    {
        self.schema = Some(crate::schema::input_schema::<T::Input>);
        self
    }
}

impl<C: ?Sized + 'static> Clone for JsonHooks<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: ?Sized + 'static> Copy for JsonHooks<C> {}

/// Gate 1 for a call by name: decode, then the tool's own validation. Both sets of
/// errors are reported together when decoding succeeds.
fn decode_input<T>(arguments: &Value) -> Result<ErasedInput, InputErrors>
where
    T: Tool,
    T::Input: DeserializeOwned + Send + 'static,
{
    let input: T::Input = decode(arguments)?;
    T::validate(&input)?;
    Ok(Box::new(input))
}

fn preview_input<T>(input: &ErasedInput, out: &mut dyn fmt::Write) -> Option<fmt::Result>
where
    T: Tool,
    T::Input: 'static,
{
    T::preview(input.downcast_ref::<T::Input>()?, out)
}

fn run_input<'a, T>(
    input: ErasedInput,
    actor: &'a Actor<'a>,
    context: &'a T::Context,
    run_key: IdempotencyKey,
) -> RunFuture<'a>
where
    T: Tool,
    T::Context: Sync,
    T::Input: Send + 'static,
    T::Output: Serialize,
    T::Error: fmt::Display,
{
    Box::pin(async move {
        let input = input
            .downcast::<T::Input>()
            .map_err(|_| RunError::InputType)?;
        let output = execute::<T>(Invocation::new(*input, actor, context, Some(run_key)))
            .await
            .map_err(|error| RunError::Failed(error.to_string()))?;
        serde_json::to_value(output).map_err(|error| RunError::Output(error.to_string()))
    })
}

/// Why a call run by name did not produce a JSON result.
///
/// ```
/// let error = cairnloop::RunError::Failed("order is already refunded".into());
/// assert_eq!(error.to_string(), "tool failed: order is already refunded");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The tool returned its error, shown with `Display`.
    #[error("tool failed: {0}")]
    Failed(String),
    /// The tool's output could not be serialised as JSON.
    #[error("tool output is not JSON: {0}")]
    Output(String),
    /// The decoded input was not of the tool's input type (a bug in cairnloop).
    #[error("internal error: input of the wrong type")]
    InputType,
}

/// What the host sets for every call: the approval-mode overrides and the input limits.
///
/// ```
/// use cairnloop::{ApprovalMode, Governance, InputLimits, ModePolicy, RiskTier};
///
/// const GOVERNANCE: Governance<()> = Governance::new()
///     .with_mode_policy(ModePolicy::new().with_tier(RiskTier::LowWrite, ApprovalMode::AlwaysBlock))
///     .with_limits(InputLimits::new().with_max_bytes(8 * 1024));
/// assert_eq!(GOVERNANCE.limits().max_bytes(), 8192);
/// ```
pub struct Governance<C: ?Sized> {
    mode_policy: ModePolicy<C>,
    limits: InputLimits,
}

impl<C: ?Sized> Governance<C> {
    /// No overrides and the default [`InputLimits`].
    ///
    /// ```
    /// assert_eq!(cairnloop::Governance::<()>::new().limits(), &cairnloop::InputLimits::new());
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            mode_policy: ModePolicy::new(),
            limits: InputLimits::new(),
        }
    }

    /// Sets the approval-mode overrides (which only tighten).
    ///
    /// ```
    /// # use cairnloop::{Governance, ModePolicy};
    /// let governance = Governance::<()>::new().with_mode_policy(ModePolicy::new());
    /// ```
    #[must_use]
    pub const fn with_mode_policy(self, mode_policy: ModePolicy<C>) -> Self {
        Self {
            mode_policy,
            limits: self.limits,
        }
    }

    /// Sets the input limits.
    ///
    /// ```
    /// # use cairnloop::{Governance, InputLimits};
    /// let governance = Governance::<()>::new().with_limits(InputLimits::new().with_max_depth(4));
    /// assert_eq!(governance.limits().max_depth(), 4);
    /// ```
    #[must_use]
    pub const fn with_limits(self, limits: InputLimits) -> Self {
        Self {
            mode_policy: self.mode_policy,
            limits,
        }
    }

    /// The approval-mode overrides.
    ///
    /// ```
    /// # use cairnloop::{ApprovalMode, Governance, RiskTier};
    /// assert_eq!(Governance::<()>::new().mode_policy().tier_floor(RiskTier::ReadOnly), ApprovalMode::Auto);
    /// ```
    #[must_use]
    pub const fn mode_policy(&self) -> &ModePolicy<C> {
        &self.mode_policy
    }

    /// The input limits.
    ///
    /// ```
    /// assert_eq!(cairnloop::Governance::<()>::new().limits().max_depth(), 32);
    /// ```
    #[must_use]
    pub const fn limits(&self) -> &InputLimits {
        &self.limits
    }
}

impl<C: ?Sized> Default for Governance<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: ?Sized> fmt::Debug for Governance<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Governance")
            .field("mode_policy", &self.mode_policy)
            .field("limits", &self.limits)
            .finish()
    }
}

/// A tool call as a model proposed it: a name and the JSON text of the arguments, both
/// untrusted, and an optional dedupe token chosen by the host.
///
/// ```
/// let call = cairnloop::ToolCall::new("lookup_order", r#"{"order": 1001}"#).with_dedupe_token("turn-7");
/// assert_eq!(call.name(), "lookup_order");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolCall<'a> {
    name: &'a str,
    arguments: &'a str,
    dedupe_token: Option<&'a str>,
}

impl<'a> ToolCall<'a> {
    /// A call of the tool named `name` with `arguments`, the JSON text of an object.
    ///
    /// ```
    /// let call = cairnloop::ToolCall::new("ping", "{}");
    /// assert_eq!(call.arguments(), "{}");
    /// ```
    #[must_use]
    pub const fn new(name: &'a str, arguments: &'a str) -> Self {
        Self {
            name,
            arguments,
            dedupe_token: None,
        }
    }

    /// Adds a dedupe token: part of the idempotency key, so that a deliberate repeat of
    /// the same call is a new call.
    ///
    /// ```
    /// let call = cairnloop::ToolCall::new("ping", "{}").with_dedupe_token("2");
    /// assert_eq!(call.dedupe_token(), Some("2"));
    /// ```
    #[must_use]
    pub const fn with_dedupe_token(self, token: &'a str) -> Self {
        Self {
            dedupe_token: Some(token),
            ..self
        }
    }

    /// The requested tool name.
    ///
    /// ```
    /// assert_eq!(cairnloop::ToolCall::new("ping", "{}").name(), "ping");
    /// ```
    #[must_use]
    pub const fn name(&self) -> &'a str {
        self.name
    }

    /// The argument text.
    ///
    /// ```
    /// assert_eq!(cairnloop::ToolCall::new("ping", "[]").arguments(), "[]");
    /// ```
    #[must_use]
    pub const fn arguments(&self) -> &'a str {
        self.arguments
    }

    /// The dedupe token, if any.
    ///
    /// ```
    /// assert_eq!(cairnloop::ToolCall::new("ping", "{}").dedupe_token(), None);
    /// ```
    #[must_use]
    pub const fn dedupe_token(&self) -> Option<&'a str> {
        self.dedupe_token
    }
}

/// A call by name that passed every gate in `Auto` mode: run it with
/// [`ReadyCall::run`].
pub struct ReadyCall<'a, C: ?Sized + 'static> {
    entry: &'static ToolEntry<C>,
    hooks: JsonHooks<C>,
    input: ErasedInput,
    actor: &'a Actor<'a>,
    context: &'a C,
    idempotency_key: IdempotencyKey,
    mode: ModeResolution,
}

impl<'a, C: ?Sized + 'static> ReadyCall<'a, C> {
    /// The tool's name.
    ///
    /// ```
    /// # fn f(call: &cairnloop::ReadyCall<'_, ()>) -> &'static str {
    /// call.tool()
    /// # }
    /// ```
    #[must_use]
    pub fn tool(&self) -> &'static str {
        self.entry.spec().name()
    }

    /// The call's idempotency key.
    ///
    /// ```
    /// # fn f(call: &cairnloop::ReadyCall<'_, ()>) -> cairnloop::IdempotencyKey {
    /// call.idempotency_key()
    /// # }
    /// ```
    #[must_use]
    pub const fn idempotency_key(&self) -> IdempotencyKey {
        self.idempotency_key
    }

    /// How the approval mode was resolved.
    ///
    /// ```
    /// # fn f(call: &cairnloop::ReadyCall<'_, ()>) -> cairnloop::ApprovalMode {
    /// call.mode().resolved()
    /// # }
    /// ```
    #[must_use]
    pub const fn mode(&self) -> &ModeResolution {
        &self.mode
    }

    /// Runs the tool (through [`execute`], the one function that calls `Tool::run`) and
    /// returns its output as JSON. Consumes the call: it runs at most once.
    ///
    /// ```
    /// # async fn f(call: cairnloop::ReadyCall<'_, ()>) {
    /// let output = call.run().await;
    /// # }
    /// ```
    pub fn run(self) -> RunFuture<'a> {
        (self.hooks.run)(self.input, self.actor, self.context, self.idempotency_key)
    }
}

impl<C: ?Sized + 'static> fmt::Debug for ReadyCall<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadyCall")
            .field("tool", &self.tool())
            .field("actor", &self.actor.id())
            .field("idempotency_key", &self.idempotency_key)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// What the pipeline says of a call by name.
#[derive(Debug)]
pub enum CallDecision<'a, C: ?Sized + 'static> {
    /// Every gate passed in `Auto` mode.
    Execute(ReadyCall<'a, C>),
    /// Every gate passed; a human must approve the call.
    AwaitApproval(Proposal),
    /// A gate failed.
    Blocked(Blocked),
}

impl<C: ?Sized + 'static> CallDecision<'_, C> {
    /// `execute`, `await_approval` or `blocked`.
    ///
    /// ```
    /// # fn f(d: &cairnloop::CallDecision<'_, ()>) -> &'static str {
    /// d.code()
    /// # }
    /// ```
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Execute(_) => "execute",
            Self::AwaitApproval(_) => "await_approval",
            Self::Blocked(_) => "blocked",
        }
    }
}

/// The decision on a call by name and its audit record.
#[derive(Debug)]
#[must_use = "a decision that is not acted on does nothing"]
pub struct CallOutcome<'a, C: ?Sized + 'static> {
    /// Execute, await approval, or block.
    pub decision: CallDecision<'a, C>,
    /// The record to append to the audit log.
    pub audit: AuditEvent,
}

impl<C: ?Sized + Sync + 'static> Registry<C> {
    /// The pipeline for a call by name with JSON arguments, as a model proposed it.
    ///
    /// Gates, in order, the first failure wins: the name resolves exactly
    /// ([`Blocked::UnknownTool`]); the arguments parse strictly within the limits and
    /// decode into the tool's input, then pass [`Tool::validate`]
    /// ([`Blocked::NeedsInput`], with every field error found); the required scopes are
    /// granted ([`Blocked::ScopeMissing`]); the policy allows
    /// ([`Blocked::PolicyDenied`]); the approval mode is not `AlwaysBlock`
    /// ([`Blocked::AlwaysBlocked`]). Then *execute* (`Auto`) or *await approval*, with a
    /// [`Proposal`]. Nothing here panics on any input.
    ///
    /// The tool must be registered with [`ToolEntry::json`]; one registered with
    /// [`ToolEntry::of`] is blocked with [`Blocked::NotCallableByName`].
    ///
    /// ```
    /// use cairnloop::{Actor, CallDecision, Governance, InputErrors, Invocation, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolCall, ToolEntry, ToolSpec};
    ///
    /// #[derive(serde::Deserialize)]
    /// #[serde(deny_unknown_fields)]
    /// struct Order { order: u32 }
    ///
    /// struct LookupOrder;
    /// impl Tool for LookupOrder {
    ///     const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly);
    ///     const SCOPES: &'static [Scope] = &[Scope::new("orders:read")];
    ///     type Input = Order;
    ///     type Output = &'static str;
    ///     type Error = String;
    ///     type Context = ();
    ///     fn validate(_: &Order) -> Result<(), InputErrors> { Ok(()) }
    ///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
    ///     async fn run(_: Invocation<'_, Self>) -> Result<&'static str, String> { Ok("shipped") }
    /// }
    ///
    /// static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<LookupOrder>()]);
    ///
    /// let clerk = Actor::new("clerk", &["orders:read"]);
    /// let outcome = TOOLS.call(&ToolCall::new("lookup_order", r#"{"order": 1001}"#), &clerk, &(), &Governance::new());
    /// let CallDecision::Execute(ready) = outcome.decision else { unreachable!() };
    /// assert_eq!(pollster::block_on(ready.run()), Ok(serde_json::json!("shipped")));
    ///
    /// let outcome = TOOLS.call(&ToolCall::new("lookup_order", r#"{"order": "x"}"#), &clerk, &(), &Governance::new());
    /// assert_eq!(outcome.audit.code.as_deref(), Some("needs_input"));
    /// ```
    pub fn call<'a>(
        &self,
        call: &ToolCall<'_>,
        actor: &'a Actor<'a>,
        context: &'a C,
        governance: &Governance<C>,
    ) -> CallOutcome<'a, C> {
        let (mut audit, admitted) = self.admit(call, actor, context, governance);
        let admitted = match admitted {
            Ok(admitted) => admitted,
            Err(reason) => return blocked(audit, reason),
        };
        match admitted.mode.resolved() {
            ApprovalMode::AlwaysBlock => {
                let decided_by = admitted.mode.source();
                blocked(audit, Blocked::AlwaysBlocked { decided_by })
            }
            ApprovalMode::Auto => {
                audit.decision = "execute".to_string();
                CallOutcome {
                    decision: CallDecision::Execute(admitted.ready()),
                    audit,
                }
            }
            ApprovalMode::RequiresApproval => {
                audit.decision = "await_approval".to_string();
                CallOutcome {
                    decision: CallDecision::AwaitApproval(admitted.proposal(call)),
                    audit,
                }
            }
        }
    }

    /// Gates 0 to 3 and the resolution of the mode, with the audit record so far; the
    /// caller decides what the mode means.
    pub(crate) fn admit<'a>(
        &self,
        call: &ToolCall<'_>,
        actor: &'a Actor<'a>,
        context: &'a C,
        governance: &Governance<C>,
    ) -> (AuditEvent, Result<Admitted<'a, C>, Blocked>) {
        let Some(entry) = self.get(call.name()) else {
            let name = AuditEvent::recorded_name(call.name());
            let audit = AuditEvent::decided(name, actor.id(), actor.account(), "blocked");
            return (audit, Err(Blocked::UnknownTool));
        };
        let spec = entry.spec();
        let mut audit = AuditEvent::decided(
            spec.name().to_string(),
            actor.id(),
            actor.account(),
            "blocked",
        );
        audit.loosened_because = spec.loosened_because().map(ToString::to_string);
        let Some(hooks) = entry.json_hooks() else {
            return (audit, Err(Blocked::NotCallableByName));
        };
        let arguments = match parse_arguments(call.arguments(), governance.limits()) {
            Ok(object) => Value::Object(object),
            Err(errors) => return (audit, Err(Blocked::NeedsInput { errors })),
        };
        let input = match (hooks.decode)(&arguments) {
            Ok(input) => input,
            Err(errors) => return (audit, Err(Blocked::NeedsInput { errors })),
        };
        let idempotency_key = IdempotencyKey::for_call(
            spec.name(),
            &arguments,
            Some(actor.id()),
            actor.account(),
            call.dedupe_token(),
        );
        audit.idempotency_key = Some(idempotency_key);
        if let Err(denied) = entry.access(actor, context) {
            return (audit, Err(denied.into()));
        }
        let mode = governance.mode_policy().resolve(spec, actor, context);
        audit.mode = Some(mode.resolved());
        let admitted = Admitted {
            entry,
            hooks,
            input,
            arguments,
            actor,
            context,
            idempotency_key,
            mode,
        };
        (audit, Ok(admitted))
    }
}

/// A call by name that passed gates 0 to 3, with its approval mode resolved.
pub(crate) struct Admitted<'a, C: ?Sized + 'static> {
    entry: &'static ToolEntry<C>,
    hooks: JsonHooks<C>,
    input: ErasedInput,
    arguments: Value,
    actor: &'a Actor<'a>,
    context: &'a C,
    pub(crate) idempotency_key: IdempotencyKey,
    pub(crate) mode: ModeResolution,
}

impl<'a, C: ?Sized + 'static> Admitted<'a, C> {
    /// The proof that the call may run: for `Auto`, or for an approved call.
    pub(crate) fn ready(self) -> ReadyCall<'a, C> {
        ReadyCall {
            entry: self.entry,
            hooks: self.hooks,
            input: self.input,
            actor: self.actor,
            context: self.context,
            idempotency_key: self.idempotency_key,
            mode: self.mode,
        }
    }

    /// The canonical text of the arguments.
    pub(crate) fn canonical_arguments(&self) -> String {
        canonical_json(&self.arguments)
    }

    fn proposal(self, call: &ToolCall<'_>) -> Proposal {
        let spec = self.entry.spec();
        let mut own = String::new();
        let preview = match (self.hooks.preview)(&self.input, &mut own) {
            Some(Ok(())) => Preview::new(own, PreviewSource::Tool),
            // No preview, or one that failed to write: the fallback never fails.
            _ => {
                let empty = serde_json::Map::new();
                let arguments = self.arguments.as_object().unwrap_or(&empty);
                Preview::fallback(spec, self.entry.scopes(), &self.mode, arguments)
            }
        };
        Proposal::new(ProposalParts {
            tool: spec.name(),
            title: spec.title(),
            risk_tier: spec.risk_tier(),
            actor_id: self.actor.id().to_string(),
            account_id: self.actor.account().map(ToString::to_string),
            dedupe_token: call.dedupe_token().map(ToString::to_string),
            input: self.canonical_arguments(),
            idempotency_key: self.idempotency_key,
            preview,
            required_scopes: self
                .entry
                .scopes()
                .iter()
                .map(|scope| scope.as_str().to_string())
                .collect(),
            granted_scopes: self
                .actor
                .scopes()
                .iter()
                .map(|scope| (*scope).to_string())
                .collect::<Vec<_>>(),
            policy: self.mode.into(),
        })
    }
}

fn blocked<C: ?Sized + 'static>(mut audit: AuditEvent, reason: Blocked) -> CallOutcome<'static, C> {
    audit.decision = "blocked".to_string();
    audit.code = Some(reason.code().to_string());
    audit.reason = Some(reason.to_string());
    CallOutcome {
        decision: CallDecision::Blocked(reason),
        audit,
    }
}
