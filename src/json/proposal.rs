use alloc::borrow::Cow;
use alloc::string::{String, ToString};

use crate::declare::{Actor, ApprovalMode, IdempotencyKey, RiskTier, Scope, ToolSpec};
use crate::gate::{ModeResolution, ModeSource};
use crate::json::{Preview, PreviewSource, ScopeNames};

/// The policy in force when a call was decided: what the spec declared, what was
/// resolved, which source decided, and the justification of a loosened spec.
///
/// ```
/// use cairnloop::{Actor, ApprovalMode, ModePolicy, RiskTier, ToolSpec, json::PolicySnapshot};
///
/// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
/// let mode = ModePolicy::<()>::new().resolve(&spec, &Actor::new("a", &[]), &());
/// let snapshot = PolicySnapshot::new(&mode, ApprovalMode::Auto);
/// assert_eq!(snapshot.resolved, ApprovalMode::RequiresApproval);
/// assert_eq!(snapshot.host_floor, ApprovalMode::Auto);
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
    /// The host's minimum mode for the tool's tier, in force at the proposal.
    pub host_floor: ApprovalMode,
    /// How many approvers the call needs (written only above 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub quorum: u8,
}

const fn one() -> u8 {
    1
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes a reference"
)]
const fn is_one(n: &u8) -> bool {
    *n == 1
}

impl PolicySnapshot {
    /// The policy of a call whose mode resolved as `mode`, under a host floor of
    /// `host_floor` for its tier (see the type's example).
    #[must_use]
    pub fn new(mode: &ModeResolution, host_floor: ApprovalMode) -> Self {
        Self {
            declared: mode.declared(),
            resolved: mode.resolved(),
            decided_by: mode.source(),
            loosened_because: mode.loosened_because().map(ToString::to_string),
            host_floor,
            quorum: mode.quorum(),
        }
    }
}

/// A call that awaits a human's approval: everything the approver needs to see, and
/// everything an approval binds to.
///
/// It is plain data (serialisable, so a host can store it) made by
/// a [`Governor`](crate::Governor) for a call that awaits approval. The input is kept as its RFC 8785 canonical
/// text; the idempotency key identifies the proposal.
///
/// ```
/// # use cairnloop::json::Proposal;
/// fn show(proposal: &Proposal) {
///     println!("{} wants to run {}:\n{}", proposal.actor_id(), proposal.tool(), proposal.preview());
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Proposal {
    /// Shared: a lane, its stored copy and the caller's copy hold one proposal, which
    /// never changes once made.
    fields: alloc::sync::Arc<Fields>,
}

#[derive(Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Fields {
    // Borrowed from the tool's spec when made here; owned when read back from a store.
    tool: Cow<'static, str>,
    title: Cow<'static, str>,
    risk_tier: RiskTier,
    actor_id: String,
    account_id: Option<String>,
    dedupe_token: Option<String>,
    input: String,
    idempotency_key: IdempotencyKey,
    preview: Preview,
    required_scopes: ScopeNames,
    granted_scopes: ScopeNames,
    policy: PolicySnapshot,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raised_because: Option<String>,
}

/// The parts of a [`Proposal`], gathered by the pipeline.
/// What a proposal is made of, before its canonical form, key and preview are computed.
pub(crate) struct Draft<'a> {
    pub(crate) spec: &'a ToolSpec,
    pub(crate) scopes: &'static [Scope],
    pub(crate) actor: &'a Actor<'a>,
    pub(crate) dedupe_token: Option<&'a str>,
    /// The input as the tool receives it, as RFC 8785 canonical JSON.
    pub(crate) input: String,
    /// The key of the call, hashed from `input` by the caller (which looked its lane up
    /// first).
    pub(crate) idempotency_key: IdempotencyKey,
    /// The tool's own preview, if it wrote one.
    pub(crate) own_preview: Option<String>,
    /// The fallback preview, if the canonical writer wrote it with `input`.
    pub(crate) fallback: Option<String>,
    pub(crate) mode: ModeResolution,
    pub(crate) host_floor: ApprovalMode,
    /// Why the tool's rule raised the call above the tool's tier, if it said.
    pub(crate) raised_because: Option<String>,
}

impl Proposal {
    /// The proposal of a call: its canonical input and key, its preview (the tool's own,
    /// else the structured fallback) and its snapshots.
    pub(crate) fn from_draft(draft: Draft<'_>) -> Self {
        let Draft {
            spec,
            scopes,
            actor,
            dedupe_token,
            input,
            idempotency_key,
            own_preview,
            fallback,
            mode,
            host_floor,
            raised_because,
        } = draft;
        // Written once: the snapshot of the input, the text its key was hashed from, and
        // the source of the fallback preview.
        let canonical_input = input;
        let preview = match (own_preview, fallback) {
            (Some(text), _) => Preview::new(text, PreviewSource::Tool),
            (None, Some(text)) => Preview::new(text, PreviewSource::Fallback),
            (None, None) => Preview::fallback_of_canonical(spec, scopes, &mode, &canonical_input),
        };
        Self {
            fields: alloc::sync::Arc::new(Fields {
                tool: Cow::Borrowed(spec.name()),
                title: Cow::Borrowed(spec.title()),
                // The call's tier: the spec's, or higher where its input raised it.
                risk_tier: mode.tier(),
                actor_id: actor.id().to_string(),
                account_id: actor.account().map(ToString::to_string),
                dedupe_token: dedupe_token.map(ToString::to_string),
                input: canonical_input,
                idempotency_key,
                preview,
                required_scopes: ScopeNames::declared(scopes),
                granted_scopes: ScopeNames::copied(actor.scopes()),
                policy: PolicySnapshot::new(&mode, host_floor),
                raised_because,
            }),
        }
    }

    /// The tool's name.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> &str {
    /// p.tool()
    /// # }
    /// ```
    #[must_use]
    pub fn tool(&self) -> &str {
        &self.fields.tool
    }

    /// The tool's name as kept: borrowed from its declaration when proposed here, so a
    /// record of the proposal shares it.
    pub(crate) fn tool_name(&self) -> Cow<'static, str> {
        self.fields.tool.clone()
    }

    /// The tool's title.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> &str {
    /// p.title()
    /// # }
    /// ```
    #[must_use]
    pub fn title(&self) -> &str {
        &self.fields.title
    }

    /// The tool's risk tier.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> cairnloop::RiskTier {
    /// p.risk_tier()
    /// # }
    /// ```
    #[must_use]
    pub fn risk_tier(&self) -> RiskTier {
        self.fields.risk_tier
    }

    /// Why the tool's rule raised this call above the tool's tier, when it said: what a
    /// person deciding the call reads beside its tier (a gateway's `raise` rule's
    /// `reason`, say). `None` for a call at the tool's own tier.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) {
    /// if let Some(reason) = p.raised_because() {
    ///     println!("{} because {reason}", p.risk_tier());
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn raised_because(&self) -> Option<&str> {
        self.fields.raised_because.as_deref()
    }

    /// Who proposed the call.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> &str {
    /// p.actor_id()
    /// # }
    /// ```
    #[must_use]
    pub fn actor_id(&self) -> &str {
        &self.fields.actor_id
    }

    /// The account the call acts in.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> Option<&str> {
    /// p.account_id()
    /// # }
    /// ```
    #[must_use]
    pub fn account_id(&self) -> Option<&str> {
        self.fields.account_id.as_deref()
    }

    /// The caller's dedupe token, if one was given.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> Option<&str> {
    /// p.dedupe_token()
    /// # }
    /// ```
    #[must_use]
    pub fn dedupe_token(&self) -> Option<&str> {
        self.fields.dedupe_token.as_deref()
    }

    /// The input as RFC 8785 canonical JSON.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> &str {
    /// p.input()
    /// # }
    /// ```
    #[must_use]
    pub fn input(&self) -> &str {
        &self.fields.input
    }

    /// The call's idempotency key, which also identifies the proposal.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> cairnloop::IdempotencyKey {
    /// p.idempotency_key()
    /// # }
    /// ```
    #[must_use]
    pub fn idempotency_key(&self) -> IdempotencyKey {
        self.fields.idempotency_key
    }

    /// What the approver reads.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> &cairnloop::json::Preview {
    /// p.preview()
    /// # }
    /// ```
    #[must_use]
    pub fn preview(&self) -> &Preview {
        &self.fields.preview
    }

    /// The scopes the tool requires, in declared order.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> String {
    /// p.required_scopes().join(" ")
    /// # }
    /// ```
    #[must_use]
    pub fn required_scopes(&self) -> &ScopeNames {
        &self.fields.required_scopes
    }

    /// The scopes the actor held when the call was proposed.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> bool {
    /// p.granted_scopes().iter().any(|scope| scope == "orders:read")
    /// # }
    /// ```
    #[must_use]
    pub fn granted_scopes(&self) -> &ScopeNames {
        &self.fields.granted_scopes
    }

    /// The policy in force when the call was proposed.
    ///
    /// ```
    /// # fn f(p: &cairnloop::json::Proposal) -> &cairnloop::json::PolicySnapshot {
    /// p.policy()
    /// # }
    /// ```
    #[must_use]
    pub fn policy(&self) -> &PolicySnapshot {
        &self.fields.policy
    }
}
