//! Tools as MCP `tools/list` entries (spec 2025-11-25), without an MCP SDK.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use serde_json::{Map, Value, json};

use crate::approvals::Governor;
use crate::declare::{Actor, Registry, RiskTier, ToolEntry};
use crate::gate::LaneState;
use crate::mcp::ListedTool;

/// The `_meta` key that carries a tool's risk tier.
pub const META_RISK_TIER: &str = "io.cairnloop/risk_tier";
/// The `_meta` key that carries a tool's approval mode: in a listing for an actor, the
/// mode in force for that actor (a host's override or mode hook may tighten the declared
/// one); in the registry's own listing, the declared mode.
pub const META_APPROVAL_MODE: &str = "io.cairnloop/approval_mode";

/// Why a tool cannot be listed over MCP. The listing as a whole fails rather than
/// carrying a broken entry.
///
/// ```
/// let err = cairnloop::mcp::ProjectionError::NoSchema { tool: "ping" };
/// assert_eq!(err.to_string(), "tool ping has no input schema: register it with ToolEntry::mcp");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectionError {
    /// The tool was registered without a schema (with `ToolEntry::of` or
    /// `ToolEntry::json`).
    #[error("tool {tool} has no input schema: register it with ToolEntry::mcp")]
    NoSchema {
        /// The tool.
        tool: &'static str,
    },
    /// The tool's input type does not describe a JSON object, which MCP requires.
    #[error("tool {tool} takes {found}, but MCP tool input must be a JSON object")]
    InputNotAnObject {
        /// The tool.
        tool: &'static str,
        /// What the schema describes instead.
        found: String,
    },
}

impl<C: ?Sized + 'static> ToolEntry<C> {
    /// The tool's `tools/list` entry: `name`, `title`, `description`, `inputSchema`,
    /// `outputSchema`, every annotation explicit, and the risk tier and approval mode in
    /// `_meta`.
    ///
    /// The `outputSchema` describes every result a call can return, error results
    /// included: one object with a `status`: `executed` with the tool's `output` (the
    /// output type's schema), `awaiting_approval` with the proposal (`proposal_id`,
    /// `preview`, `expires_at`, …), `failed`, `blocked` with its `code` and field
    /// `errors`, or the state of a proposal that will not run. A client that checks
    /// results against it (error results too) never rejects one.
    ///
    /// `readOnlyHint` is true only for read-only tools, `destructiveHint` for high-write
    /// and destructive ones; `idempotentHint` and `openWorldHint` come from the spec.
    ///
    /// # Errors
    ///
    /// [`ProjectionError`] when the tool has no schema or its input is not an object.
    ///
    /// ```
    /// use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    ///
    /// #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    /// struct Order { order: u32 }
    ///
    /// struct LookupOrder;
    /// impl Tool for LookupOrder {
    ///     const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly).idempotent();
    ///     const SCOPES: &'static [Scope] = &[];
    ///     type Input = Order; type Output = String; type Error = String; type Context = ();
    ///     fn validate(_: &Order) -> Result<(), InputErrors> { Ok(()) }
    ///     async fn run(_: Invocation<'_, Self>) -> Result<String, String> { Ok("shipped".into()) }
    /// }
    ///
    /// static LOOKUP: ToolEntry<()> = ToolEntry::mcp::<LookupOrder>();
    /// let tool = LOOKUP.mcp_tool()?;
    /// assert_eq!(tool["annotations"]["readOnlyHint"], true);
    /// assert_eq!(tool["annotations"]["idempotentHint"], true);
    /// assert_eq!(tool["inputSchema"]["required"], serde_json::json!(["order"]));
    /// assert_eq!(tool["inputSchema"]["additionalProperties"], false);
    /// assert_eq!(tool["_meta"]["io.cairnloop/risk_tier"], "read_only");
    /// assert_eq!(tool["outputSchema"]["properties"]["output"]["type"], "string");
    /// assert_eq!(tool["outputSchema"]["required"], serde_json::json!(["status"]));
    /// # Ok::<(), cairnloop::mcp::ProjectionError>(())
    /// ```
    pub fn mcp_tool(&self) -> Result<Value, ProjectionError> {
        let spec = self.spec();
        let mut input_schema = self
            .input_schema()
            .ok_or(ProjectionError::NoSchema { tool: spec.name() })?;
        if input_schema.get("type") != Some(&json!("object")) {
            let found = input_schema
                .get("type")
                .map_or_else(|| "a value without a type".to_string(), Value::to_string);
            return Err(ProjectionError::InputNotAnObject {
                tool: spec.name(),
                found,
            });
        }
        if let Value::Object(object) = &mut input_schema {
            // The entry names the tool; the type's own name is noise to a model.
            object.remove("title");
        }
        let tier = spec.risk_tier();
        let mut meta = Map::new();
        meta.insert(META_RISK_TIER.into(), tier.as_str().into());
        meta.insert(
            META_APPROVAL_MODE.into(),
            spec.approval_mode().as_str().into(),
        );
        let output_schema = result_schema(self.output_schema().unwrap_or_else(|| json!({})));
        Ok(json!({
            "name": spec.name(),
            "title": spec.title(),
            "description": spec.description(),
            "inputSchema": input_schema,
            "outputSchema": output_schema,
            "annotations": {
                "title": spec.title(),
                "readOnlyHint": tier == RiskTier::ReadOnly,
                "destructiveHint": matches!(tier, RiskTier::HighWrite | RiskTier::Destructive),
                "idempotentHint": spec.is_idempotent(),
                "openWorldHint": spec.is_open_world(),
            },
            "_meta": meta,
        }))
    }
}

/// The schema of every result of a call, error results included (strict clients check
/// those too), around the schema of the tool's output: one object whose `status` says
/// which it is. The output's `$defs` move to the root, where its `$ref`s point.
fn result_schema(mut output: Value) -> Value {
    let mut definitions = Map::new();
    if let Value::Object(object) = &mut output {
        object.remove("title");
        if let Some(Value::Object(defs)) = object.remove("$defs") {
            definitions = defs;
        }
    }
    let text = json!({ "type": "string" });
    let mut schema = json!({
        "type": "object",
        "properties": {
            "status": {
                "type": "string",
                "enum": result_statuses(),
                "description": "executed: `output` holds the tool's output. awaiting_approval: nothing ran; a person decides the proposal, then the same call runs it. failed: the tool ran and failed. blocked: nothing ran (`code` says why, `errors` lists every field error). superseded: a person approved the call with changed arguments (`edited_arguments`), and these did not run; `edited_status` says what became of the changed call. Any other: the state of the call's proposal, which will not run now.",
            },
            "output": output,
            "proposal_id": text,
            "state": { "type": "string", "enum": LaneState::ALL.map(LaneState::as_str) },
            "tool": text,
            "risk_tier": text,
            "raised_because": text,
            "preview": text,
            "required_scopes": { "type": "array", "items": text },
            "expires_at": text,
            "reason": text,
            "blocked": text,
            "code": text,
            "errors": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": { "path": text, "code": text, "message": text },
                    "required": ["path", "code", "message"],
                },
            },
            "missing_scopes": { "type": "array", "items": text },
            "edited_status": { "type": "string", "enum": result_statuses() },
            "edited_proposal_id": text,
            "edited_arguments": { "type": "object" },
        },
        "required": ["status"],
    });
    if !definitions.is_empty() {
        schema["$defs"] = Value::Object(definitions);
    }
    schema
}

/// Every `status` a result can carry: a call that ran, waits, failed or was blocked, or
/// the state of a lane that will not run now (every state but the waiting ones).
fn result_statuses() -> Vec<&'static str> {
    let mut statuses = vec!["executed", "awaiting_approval", "failed", "blocked"];
    for state in LaneState::ALL {
        if !matches!(state, LaneState::Pending | LaneState::Deferred)
            && !statuses.contains(&state.as_str())
        {
            statuses.push(state.as_str());
        }
    }
    statuses
}

impl<C: ?Sized + 'static> Registry<C> {
    /// Every tool's `tools/list` entry, whoever asks (for the host). Tools registered for
    /// typed calls only ([`ToolEntry::of`]) cannot be called by name and are left out.
    ///
    /// # Errors
    ///
    /// The first [`ProjectionError`]: a listing is whole or not at all.
    ///
    /// ```
    /// # use cairnloop::Registry;
    /// static EMPTY: Registry<()> = Registry::new(&[]);
    /// assert!(EMPTY.mcp_tools().unwrap().is_empty());
    /// ```
    pub fn mcp_tools(&self) -> Result<Vec<ListedTool>, ProjectionError> {
        self.projected().0.iter().flatten().cloned().collect()
    }

    /// Each tool's `tools/list` entry (`None` for a tool not callable by name), made once
    /// per registry: generating JSON Schemas is most of a listing's cost.
    fn projected(&self) -> std::sync::Arc<Projected> {
        self.derived(|registry| {
            Projected(
                registry
                    .tools()
                    .iter()
                    .map(|entry| {
                        entry
                            .is_callable_by_name()
                            .then(|| entry.mcp_tool().map(ListedTool::new))
                    })
                    .collect(),
            )
        })
    }
}

/// The `tools/list` entries of a registry's tools, in registration order.
struct Projected(Vec<Option<Result<ListedTool, ProjectionError>>>);

impl<C: ?Sized + Sync + 'static, S: crate::approvals::ApprovalStore> Governor<C, S> {
    /// The `tools/list` entries of the tools `actor` may call: exactly those
    /// [`Governor::visible`] lists (an always-blocked tool is never shown), callable by
    /// name, each with the approval mode in force for `actor` in its `_meta`.
    ///
    /// # Errors
    ///
    /// A tool without an input schema, or whose input is not a JSON object.
    ///
    /// ```
    /// # use cairnloop::{Actor, Governor, Registry};
    /// static TOOLS: Registry<()> = Registry::new(&[]);
    /// let governor = Governor::new(&TOOLS);
    /// assert!(governor.mcp_tools_for(&Actor::new("a", &[]), &())?.is_empty());
    /// # Ok::<(), cairnloop::mcp::ProjectionError>(())
    /// ```
    pub fn mcp_tools_for(
        &self,
        actor: &Actor<'_>,
        context: &C,
    ) -> Result<Vec<ListedTool>, ProjectionError> {
        let projected = self.registry().projected();
        // `verdicts` goes through the tools in registration order, as the projection does.
        self.verdicts(actor, context)
            .zip(projected.0.iter())
            .filter_map(|((entry, verdict), tool)| {
                Some((entry, verdict.mode()?.resolved(), tool.as_ref()?))
            })
            .map(|(entry, mode, tool)| {
                let tool = tool.clone()?;
                if mode == entry.spec().approval_mode() {
                    return Ok(tool);
                }
                // Only a tool whose mode a host tightened for this actor is copied.
                let mut tool = tool.into_value();
                tool["_meta"][META_APPROVAL_MODE] = mode.as_str().into();
                Ok(ListedTool::new(tool))
            })
            .collect()
    }
}
