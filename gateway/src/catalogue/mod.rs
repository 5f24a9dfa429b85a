//! What a gateway offers from one upstream: each listed tool matched with its
//! declaration in the configuration, under the crate's rules, or hidden with the reason.
//!
//! The configuration decides; the upstream's words only ever make a decision stricter:
//!
//! - a tool the configuration does not name is hidden (and so blocked) unless its
//!   upstream has a `default_tier`;
//! - a tool configured to run at once (`auto`) that the upstream says writes
//!   (`readOnlyHint: false`) or destroys (`destructiveHint: true`) waits for a person;
//!   a hint that it only reads changes nothing;
//! - a tool configured idempotent that the upstream says is not (`idempotentHint:
//!   false`) is not;
//! - the upstream's title and description are used only where the configuration gives
//!   none, and only if they pass the crate's rules (one line of printable text for a
//!   title, no control characters in a description): otherwise the tool is hidden;
//! - its input schema must compile by the crate's schema rule; a schema the
//!   configuration pins replaces it.

mod listing;

use cairnloop::declare::{ScopeOf, ToolSpecOf};
use cairnloop::declared::{DeclaredTool, Forward, SchemaError, Template};
use cairnloop::{ApprovalMode, RiskTier, SpecError};
use serde_json::Value;

pub use listing::{
    ListingError, MAX_UPSTREAM_TEXT, MAX_UPSTREAM_TOOLS, SetAside, UpstreamTool, read_listing,
};

use crate::config::{Config, Raises, ToolRule, listed_name};

/// One tool a gateway offers: its declaration, checked, ready to be declared to the
/// crate with what forwards its calls.
///
/// ```
/// use cairnloop::ApprovalMode;
/// use cairnloop_gateway::catalogue::{build, read_listing};
/// use cairnloop_gateway::config::Config;
///
/// let config = Config::parse("[upstreams.fs]\ncommand = \"x\"\n[tools.fs.write_file]\ntier = \"low_write\"\n")?;
/// let listing = serde_json::json!({"tools": [{"name": "write_file", "inputSchema": {"type": "object"}}]});
/// let (tools, _) = read_listing(&listing)?;
/// let offer = build(&config, "fs", tools);
/// assert_eq!(offer.offered[0].listed, "fs_write_file");
/// assert_eq!(offer.offered[0].mode, ApprovalMode::RequiresApproval);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Offered {
    /// The name the gateway lists.
    pub listed: String,
    /// The upstream's id.
    pub upstream: String,
    /// The tool's name at the upstream.
    pub tool: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// Its risk tier.
    pub tier: RiskTier,
    /// Its approval mode, after the upstream's hints.
    pub mode: ApprovalMode,
    /// Why the mode is looser than the tier's, when it is.
    pub justification: Option<String>,
    /// The scopes a caller needs.
    pub scopes: Vec<String>,
    /// The accounts a caller must act in; empty: any.
    pub accounts: Vec<String>,
    /// Whether a repeat does no more than the first call.
    pub idempotent: bool,
    /// What an operator reads about a call.
    pub preview: Option<Template>,
    /// The rules that raise one call above its tier.
    pub raise: Raises,
    /// How many approvers each of its calls needs.
    pub quorum: u8,
    /// The JSON Schema its input must match.
    pub input_schema: Value,
    /// Which hint of the upstream made the mode stricter than configured, if one did.
    pub tightened_by: Option<&'static str>,
}

/// A tool of the upstream that is not offered, and why.
///
/// ```
/// use cairnloop_gateway::catalogue::{build, read_listing};
/// use cairnloop_gateway::config::Config;
///
/// let config = Config::parse("[upstreams.fs]\ncommand = \"x\"\n")?;
/// let listing = serde_json::json!({"tools": [{"name": "delete_everything", "inputSchema": {"type": "object"}}]});
/// let offer = build(&config, "fs", read_listing(&listing)?.0);
/// assert!(offer.offered.is_empty());
/// assert_eq!(offer.hidden[0].reason, "not named in the configuration, and the upstream has no `default_tier`");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hidden {
    /// The tool's name at the upstream.
    pub tool: String,
    /// Why it is hidden.
    pub reason: String,
}

/// What the gateway offers from one upstream, and what it hides.
///
/// ```
/// # use cairnloop_gateway::catalogue::Offer;
/// let offer = Offer::default();
/// assert!(offer.offered.is_empty() && offer.hidden.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Offer {
    /// The tools offered, in the upstream's order.
    pub offered: Vec<Offered>,
    /// The tools hidden, with the reason.
    pub hidden: Vec<Hidden>,
}

/// Why an offered tool could not be declared to the crate.
///
/// ```
/// use cairnloop_gateway::catalogue::DeclareError;
///
/// let err = DeclareError::Rule(cairnloop::SpecError::InvalidName);
/// assert!(err.to_string().contains("rule 1"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeclareError {
    /// A rule of the crate (from a title or description the upstream gave).
    #[error("{0}")]
    Rule(#[from] SpecError),
    /// The input schema.
    #[error("{0}")]
    Schema(#[from] SchemaError),
}

impl Hidden {
    /// A hidden tool and the reason.
    ///
    /// ```
    /// let hidden = cairnloop_gateway::catalogue::Hidden::new("rm".into(), "not named".into());
    /// assert_eq!(hidden.tool, "rm");
    /// ```
    #[must_use]
    pub fn new(tool: String, reason: String) -> Self {
        Self { tool, reason }
    }
}

impl Offered {
    /// The tool, declared to the crate with `forward` running its calls; `forward` answers
    /// with the upstream's `CallToolResult`, whose content blocks a client receives as they
    /// are.
    ///
    /// # Errors
    ///
    /// A rule its text breaks, or its schema.
    ///
    /// ```
    /// use cairnloop::declare::{RunFuture, RunError};
    /// use cairnloop_gateway::catalogue::{build, read_listing};
    /// use cairnloop_gateway::config::Config;
    ///
    /// struct Nowhere;
    /// impl cairnloop::declared::Forward<()> for Nowhere {
    ///     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    ///         Box::pin(async { Err(RunError::Failed("no upstream".into())) })
    ///     }
    /// }
    /// let config = Config::parse("[upstreams.fs]\ncommand = \"x\"\n[tools.fs.read]\ntier = \"read_only\"\n")?;
    /// let listing = serde_json::json!({"tools": [{"name": "read", "inputSchema": {"type": "object"}}]});
    /// let offer = build(&config, "fs", read_listing(&listing)?.0);
    /// let tool = offer.offered[0].declare(Nowhere)?;
    /// assert_eq!(tool.name(), "fs_read");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn declare<C: ?Sized + 'static>(
        &self,
        forward: impl Forward<C> + 'static,
    ) -> Result<DeclaredTool<C>, DeclareError> {
        let spec = self.spec()?;
        let scopes = self
            .scopes
            .iter()
            .map(|scope| ScopeOf::try_new(scope))
            .collect::<Result<Vec<_>, _>>()?;
        // What `forward` answers is the upstream's `CallToolResult`: a client is handed
        // its content blocks as they are.
        let tool = DeclaredTool::new(&spec, &scopes, self.input_schema.clone(), forward)?
            .with_call_result_output();
        let tool = if self.accounts.is_empty() {
            tool
        } else {
            tool.with_accounts(self.accounts.iter().cloned())
        };
        let tool = if self.raise.is_empty() {
            tool
        } else {
            let raise = self.raise.clone();
            tool.with_explained_tier_rule(move |arguments, actor| {
                raise.raised_for(arguments, actor)
            })
        };
        Ok(match &self.preview {
            Some(template) => tool.with_preview(template.clone()),
            None => tool,
        })
    }

    /// Whether `other` declares the same tool as this one in everything but its input
    /// schema: what an approval binds (tier, mode, scopes, accounts, idempotency) and what
    /// a person reads (title, description, preview).
    ///
    /// ```
    /// use cairnloop_gateway::catalogue::{build, read_listing};
    /// use cairnloop_gateway::config::Config;
    ///
    /// let config = Config::parse("[upstreams.fs]\ncommand = \"x\"\n[tools.fs.read]\ntier = \"read_only\"\n")?;
    /// let before = serde_json::json!({"tools": [{"name": "read", "inputSchema": {"type": "object"}}]});
    /// let after = serde_json::json!({"tools": [{"name": "read", "inputSchema": {"type": "object", "required": ["path"]},
    ///     "annotations": {"destructiveHint": true}}]});
    /// let was = build(&config, "fs", read_listing(&before)?.0).offered.remove(0);
    /// let now = build(&config, "fs", read_listing(&after)?.0).offered.remove(0);
    /// // The new hint made it wait for a person: not the tool that was declared.
    /// assert!(!now.same_declaration(&was));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn same_declaration(&self, other: &Self) -> bool {
        Self {
            input_schema: Value::Null,
            ..self.clone()
        } == Self {
            input_schema: Value::Null,
            ..other.clone()
        }
    }

    fn spec(&self) -> Result<ToolSpecOf<'_>, SpecError> {
        let spec = ToolSpecOf::try_new(&self.listed, &self.title, &self.description, self.tier)?;
        let spec = match &self.justification {
            Some(why) if self.mode != spec.approval_mode() => {
                spec.try_loosen_approval(self.mode, why)?
            }
            _ if self.mode != spec.approval_mode() => spec.try_with_approval(self.mode)?,
            _ => spec,
        };
        let spec = if self.idempotent {
            spec.idempotent()
        } else {
            spec
        };
        spec.try_with_quorum(self.quorum)
    }
}

/// What the gateway offers from upstream `upstream`, whose `tools/list` gave `tools`.
///
/// ```
/// use cairnloop_gateway::catalogue::{build, read_listing};
/// use cairnloop_gateway::config::Config;
///
/// let config = Config::parse("[upstreams.fs]\ncommand = \"x\"\ndefault_tier = \"high_write\"\n")?;
/// let listing = serde_json::json!({"tools": [{"name": "anything", "inputSchema": {"type": "object"}}]});
/// let offer = build(&config, "fs", read_listing(&listing)?.0);
/// assert_eq!(offer.offered[0].tier, cairnloop::RiskTier::HighWrite);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn build(config: &Config, upstream: &str, tools: Vec<UpstreamTool>) -> Offer {
    let mut offer = Offer::default();
    let default_tier = config
        .upstreams
        .iter()
        .find(|candidate| candidate.id == upstream)
        .and_then(|found| found.default_tier);
    for tool in tools {
        let rule = config
            .tools
            .iter()
            .find(|rule| rule.upstream == upstream && rule.tool == tool.name);
        let hide = |offer: &mut Offer, reason: String| {
            offer.hidden.push(Hidden {
                tool: tool.name.clone(),
                reason,
            });
        };
        if offer
            .offered
            .iter()
            .any(|earlier| earlier.tool == tool.name)
            || offer.hidden.iter().any(|earlier| earlier.tool == tool.name)
        {
            hide(
                &mut offer,
                "listed twice by the upstream: only the first is considered".into(),
            );
            continue;
        }
        let offered = match (rule, default_tier) {
            (Some(rule), _) => offered_by_rule(upstream, rule, &tool),
            (None, Some(tier)) => offered_by_default(upstream, tier, &tool),
            (None, None) => {
                Err("not named in the configuration, and the upstream has no `default_tier`".into())
            }
        };
        match offered.and_then(|offered| checked(offered, &tool)) {
            Ok(offered) => offer.offered.push(offered),
            Err(reason) => hide(&mut offer, reason),
        }
    }
    offer
}

/// The tools the configuration names for upstream `upstream` that its listing does not
/// mention at all (`mentioned`: every name it listed, offered, hidden or set aside),
/// declared from the configuration alone, to be offered once the upstream lists them:
/// the configuration's title and description (or the gateway's own words, as for a
/// listed tool without them), no hints, and an input schema that takes any object until
/// the upstream lists its own. A rule the crate's rules refuse is hidden.
///
/// The upstream's title, description and hints are left out on purpose: when it lists
/// the tool later, the tool it lists is compared with this declaration with its own
/// text left out too ([`without_text`]), and offered only if what an approval binds is
/// the same.
///
/// ```
/// use cairnloop_gateway::catalogue::unlisted;
/// use cairnloop_gateway::config::Config;
///
/// let config = Config::parse("[upstreams.fs]\ncommand = \"x\"\n\
///     [tools.fs.read]\ntier = \"read_only\"\n[tools.fs.write]\ntier = \"low_write\"\n")?;
/// let later = unlisted(&config, "fs", &["read"]);
/// assert_eq!(later.offered.len(), 1);
/// assert_eq!(later.offered[0].listed, "fs_write");
/// assert_eq!(later.offered[0].description, "write of fs");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn unlisted(config: &Config, upstream: &str, mentioned: &[&str]) -> Offer {
    let mut offer = Offer::default();
    for rule in config
        .tools
        .iter()
        .filter(|rule| rule.upstream == upstream && !mentioned.contains(&rule.tool.as_str()))
    {
        let tool = UpstreamTool {
            name: rule.tool.clone(),
            title: None,
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            read_only_hint: None,
            destructive_hint: None,
            idempotent_hint: None,
        };
        match offered_by_rule(upstream, rule, &tool).and_then(|offered| checked(offered, &tool)) {
            Ok(offered) => offer.offered.push(offered),
            Err(reason) => offer.hidden.push(Hidden::new(rule.tool.clone(), reason)),
        }
    }
    offer
}

/// `tools` with the text an upstream may give (title, description) left out: what a
/// tool declared by [`unlisted`] is compared with when its upstream lists it.
///
/// ```
/// use cairnloop_gateway::catalogue::{read_listing, without_text};
///
/// let listing = serde_json::json!({"tools": [{"name": "t", "title": "T", "description": "D", "inputSchema": {"type": "object"}}]});
/// let tools = without_text(read_listing(&listing)?.0);
/// assert_eq!((tools[0].title.as_deref(), tools[0].description.as_deref()), (None, None));
/// # Ok::<(), cairnloop_gateway::catalogue::ListingError>(())
/// ```
#[must_use]
pub fn without_text(tools: Vec<UpstreamTool>) -> Vec<UpstreamTool> {
    tools
        .into_iter()
        .map(|tool| UpstreamTool {
            title: None,
            description: None,
            ..tool
        })
        .collect()
}

fn offered_by_rule(
    upstream: &str,
    rule: &ToolRule,
    tool: &UpstreamTool,
) -> Result<Offered, String> {
    Ok(Offered {
        listed: rule.listed.clone(),
        upstream: upstream.to_owned(),
        tool: tool.name.clone(),
        title: rule
            .title
            .clone()
            .or_else(|| tool.title.clone())
            .unwrap_or_else(|| rule.listed.clone()),
        description: rule
            .description
            .clone()
            .or_else(|| tool.description.clone())
            .unwrap_or_else(|| format!("{} of {upstream}", tool.name)),
        tier: rule.tier,
        mode: rule.mode,
        justification: rule.justification.clone(),
        scopes: rule.scopes.clone(),
        accounts: rule.accounts.clone(),
        idempotent: rule.idempotent,
        preview: rule.preview.clone(),
        raise: rule.raise.clone(),
        quorum: rule.quorum,
        input_schema: rule
            .input_schema
            .clone()
            .unwrap_or_else(|| tool.input_schema.clone()),
        tightened_by: None,
    })
}

fn offered_by_default(
    upstream: &str,
    tier: RiskTier,
    tool: &UpstreamTool,
) -> Result<Offered, String> {
    let listed = listed_name(upstream, &tool.name).ok_or_else(|| {
        "its name is longer than 64 characters once mapped: name it in the configuration".to_owned()
    })?;
    Ok(Offered {
        title: tool.title.clone().unwrap_or_else(|| listed.clone()),
        description: tool
            .description
            .clone()
            .unwrap_or_else(|| format!("{} of {upstream}", tool.name)),
        listed,
        upstream: upstream.to_owned(),
        tool: tool.name.clone(),
        tier,
        mode: cairnloop::derive_approval_mode(Some(tier)),
        justification: None,
        scopes: Vec::new(),
        accounts: Vec::new(),
        idempotent: false,
        preview: None,
        raise: Raises::default(),
        quorum: 1,
        input_schema: tool.input_schema.clone(),
        tightened_by: None,
    })
}

/// The upstream's hints, made to tighten only, then the crate's rules.
fn checked(mut offered: Offered, tool: &UpstreamTool) -> Result<Offered, String> {
    if offered.mode == ApprovalMode::Auto {
        if tool.destructive_hint == Some(true) && tool.read_only_hint != Some(true) {
            offered.mode = ApprovalMode::RequiresApproval;
            offered.tightened_by = Some("destructiveHint");
        } else if tool.read_only_hint == Some(false) {
            offered.mode = ApprovalMode::RequiresApproval;
            offered.tightened_by = Some("readOnlyHint");
        }
        if offered.tightened_by.is_some() {
            // Waiting for a person is the tier's own mode or stricter: no loosening left.
            offered.justification = None;
        }
    }
    if tool.idempotent_hint == Some(false) {
        offered.idempotent = false;
    }
    offered.spec().map_err(|error| error.message().to_owned())?;
    cairnloop::declared::check_input_schema(&offered.input_schema)
        .map_err(|error| error.to_string())?;
    Ok(offered)
}
