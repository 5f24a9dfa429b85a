use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::{ApprovalMode, IdempotencyKey, ModeResolution, ModeSource, Preview, RiskTier};

/// The policy in force when a call was decided: what the spec declared, what was
/// resolved, which source decided, and the justification of a loosened spec.
///
/// ```
/// use cairnloop::{Actor, ApprovalMode, ModePolicy, PolicySnapshot, RiskTier, ToolSpec};
///
/// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
/// let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
/// let snapshot = PolicySnapshot::from(mode);
/// assert_eq!(snapshot.resolved, ApprovalMode::RequiresApproval);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct PolicySnapshot {
    /// The mode the spec declares.
    pub declared: ApprovalMode,
    /// The mode in force.
    pub resolved: ApprovalMode,
    /// Which source decided it.
    pub decided_by: ModeSource,
    /// The spec's justification for loosening its tier's mode, if any.
    pub loosened_because: Option<String>,
}

impl From<ModeResolution> for PolicySnapshot {
    fn from(mode: ModeResolution) -> Self {
        Self {
            declared: mode.declared(),
            resolved: mode.resolved(),
            decided_by: mode.source(),
            loosened_because: mode.loosened_because().map(ToString::to_string),
        }
    }
}

/// A call that awaits a human's approval: everything the approver needs to see, and
/// everything an approval binds to.
///
/// It is plain data (serialisable, so a host can store it) made by
/// [`Registry::call`](crate::Registry::call). The input is kept as its RFC 8785 canonical
/// text; the idempotency key identifies the proposal.
///
/// ```
/// # use cairnloop::Proposal;
/// fn show(proposal: &Proposal) {
///     println!("{} wants to run {}:\n{}", proposal.actor_id(), proposal.tool(), proposal.preview());
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Proposal {
    tool: String,
    title: String,
    risk_tier: RiskTier,
    actor_id: String,
    account_id: Option<String>,
    dedupe_token: Option<String>,
    input: String,
    idempotency_key: IdempotencyKey,
    preview: Preview,
    required_scopes: Vec<String>,
    granted_scopes: Vec<String>,
    policy: PolicySnapshot,
}

/// The parts of a [`Proposal`], gathered by the pipeline.
pub(crate) struct ProposalParts {
    pub(crate) tool: &'static str,
    pub(crate) title: &'static str,
    pub(crate) risk_tier: RiskTier,
    pub(crate) actor_id: String,
    pub(crate) account_id: Option<String>,
    pub(crate) dedupe_token: Option<String>,
    pub(crate) input: String,
    pub(crate) idempotency_key: IdempotencyKey,
    pub(crate) preview: Preview,
    pub(crate) required_scopes: Vec<String>,
    pub(crate) granted_scopes: Vec<String>,
    pub(crate) policy: PolicySnapshot,
}

impl Proposal {
    pub(crate) fn new(parts: ProposalParts) -> Self {
        Self {
            tool: parts.tool.to_string(),
            title: parts.title.to_string(),
            risk_tier: parts.risk_tier,
            actor_id: parts.actor_id,
            account_id: parts.account_id,
            dedupe_token: parts.dedupe_token,
            input: parts.input,
            idempotency_key: parts.idempotency_key,
            preview: parts.preview,
            required_scopes: parts.required_scopes,
            granted_scopes: parts.granted_scopes,
            policy: parts.policy,
        }
    }

    /// The tool's name.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> &str {
    /// p.tool()
    /// # }
    /// ```
    #[must_use]
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The tool's title.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> &str {
    /// p.title()
    /// # }
    /// ```
    #[must_use]
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The tool's risk tier.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> cairnloop::RiskTier {
    /// p.risk_tier()
    /// # }
    /// ```
    #[must_use]
    pub const fn risk_tier(&self) -> RiskTier {
        self.risk_tier
    }

    /// Who proposed the call.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> &str {
    /// p.actor_id()
    /// # }
    /// ```
    #[must_use]
    pub fn actor_id(&self) -> &str {
        &self.actor_id
    }

    /// The account the call acts in.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> Option<&str> {
    /// p.account_id()
    /// # }
    /// ```
    #[must_use]
    pub fn account_id(&self) -> Option<&str> {
        self.account_id.as_deref()
    }

    /// The caller's dedupe token, if one was given.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> Option<&str> {
    /// p.dedupe_token()
    /// # }
    /// ```
    #[must_use]
    pub fn dedupe_token(&self) -> Option<&str> {
        self.dedupe_token.as_deref()
    }

    /// The input as RFC 8785 canonical JSON.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> &str {
    /// p.input()
    /// # }
    /// ```
    #[must_use]
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The call's idempotency key, which also identifies the proposal.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> cairnloop::IdempotencyKey {
    /// p.idempotency_key()
    /// # }
    /// ```
    #[must_use]
    pub const fn idempotency_key(&self) -> IdempotencyKey {
        self.idempotency_key
    }

    /// What the approver reads.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> &cairnloop::Preview {
    /// p.preview()
    /// # }
    /// ```
    #[must_use]
    pub const fn preview(&self) -> &Preview {
        &self.preview
    }

    /// The scopes the tool requires, in declared order.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> &[String] {
    /// p.required_scopes()
    /// # }
    /// ```
    #[must_use]
    pub fn required_scopes(&self) -> &[String] {
        &self.required_scopes
    }

    /// The scopes the actor held when the call was proposed.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> &[String] {
    /// p.granted_scopes()
    /// # }
    /// ```
    #[must_use]
    pub fn granted_scopes(&self) -> &[String] {
        &self.granted_scopes
    }

    /// The policy in force when the call was proposed.
    ///
    /// ```
    /// # fn f(p: &cairnloop::Proposal) -> &cairnloop::PolicySnapshot {
    /// p.policy()
    /// # }
    /// ```
    #[must_use]
    pub const fn policy(&self) -> &PolicySnapshot {
        &self.policy
    }
}
