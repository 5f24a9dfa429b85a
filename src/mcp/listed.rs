//! One tool's `tools/list` entry as a listing hands it out: shared, not copied.

use alloc::sync::Arc;
use core::ops::Deref;

use serde_json::Value;

/// One tool's `tools/list` entry in a listing: the JSON object MCP sends, shared with
/// the projection its registry made once, so a listing copies no JSON Schema. It reads
/// as a [`serde_json::Value`] and serialises as one; [`ListedTool::into_value`] gives the
/// value itself.
///
/// ```
/// use cairnloop::{Actor, Governor, InputErrors, Invocation, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
///
/// #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
/// struct Query { order: u32 }
/// struct Lookup;
/// impl Tool for Lookup {
///     const SPEC: ToolSpec = ToolSpec::new("lookup", "Lookup", "Finds an order.", RiskTier::ReadOnly);
///     const SCOPES: &'static [Scope] = &[];
///     type Input = Query; type Output = u32; type Error = String; type Context = ();
///     fn validate(_: &Query) -> Result<(), InputErrors> { Ok(()) }
///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), cairnloop::PolicyDenial> { Ok(()) }
///     async fn run(call: Invocation<'_, Self>) -> Result<u32, String> { Ok(call.input().order) }
/// }
/// static TOOLS: Registry<()> = Registry::new(&[ToolEntry::mcp::<Lookup>()]);
///
/// let listed = Governor::new(&TOOLS).mcp_tools_for(&Actor::new("a", &[]), &())?;
/// assert_eq!(listed[0]["name"], "lookup");
/// let text = serde_json::to_string(&listed)?;
/// assert!(text.starts_with(r#"[{"#));
/// let value: serde_json::Value = listed[0].clone().into_value();
/// assert_eq!(value["inputSchema"]["type"], "object");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ListedTool(Arc<Value>);

impl ListedTool {
    pub(crate) fn new(value: Value) -> Self {
        Self(Arc::new(value))
    }

    /// The entry as an owned value (copied only if another listing still shares it).
    ///
    /// ```
    /// # use cairnloop::Registry;
    /// static EMPTY: Registry<()> = Registry::new(&[]);
    /// let values: Vec<serde_json::Value> =
    ///     EMPTY.mcp_tools()?.into_iter().map(|tool| tool.into_value()).collect();
    /// assert!(values.is_empty());
    /// # Ok::<(), cairnloop::mcp::ProjectionError>(())
    /// ```
    #[must_use]
    pub fn into_value(self) -> Value {
        Arc::unwrap_or_clone(self.0)
    }
}

impl Deref for ListedTool {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0
    }
}

impl core::borrow::Borrow<Value> for ListedTool {
    fn borrow(&self) -> &Value {
        &self.0
    }
}

impl From<ListedTool> for Value {
    fn from(tool: ListedTool) -> Self {
        tool.into_value()
    }
}

impl serde::Serialize for ListedTool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl PartialEq<Value> for ListedTool {
    fn eq(&self, other: &Value) -> bool {
        *self.0 == *other
    }
}
