//! A tool declared from data: its declaration, its input checked against its JSON
//! Schema, and what runs it.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use serde_json::Value;

use crate::declare::{
    Actor, ApprovalMode, AskedTier, Codec, ErasedInput, FieldError, InputErrors, InputLimits,
    PolicyDenial, RiskTier, RunError, RunFuture, RunKey, Scope, ScopeOf, SpecError, ToolEntry,
    ToolSpec, ToolSpecOf, note_offers_changed,
};
use crate::declared::Template;
use crate::json::canonical_json;
use crate::json::strict::{parse_arguments, push_pointer_token};

/// What runs a declared tool's call once the gates let it: a call to an upstream server,
/// for a gateway. It receives the input as checked (a JSON object that matched the
/// tool's schema) and answers the output as JSON, or why it failed.
///
/// ```
/// use cairnloop::Actor;
/// use cairnloop::declare::{RunError, RunFuture};
/// use cairnloop::declared::Forward;
///
/// struct Echo;
/// impl Forward<()> for Echo {
///     fn forward<'a>(&'a self, arguments: &'a serde_json::Value, _: &'a Actor<'a>, _: &'a ()) -> RunFuture<'a> {
///         let output = arguments.clone();
///         Box::pin(async move { Ok::<_, RunError>(output) })
///     }
/// }
/// ```
pub trait Forward<C: ?Sized>: Send + Sync {
    /// Runs one call.
    fn forward<'a>(
        &'a self,
        arguments: &'a Value,
        actor: &'a Actor<'a>,
        context: &'a C,
    ) -> RunFuture<'a>;

    /// Runs one call of a tool declared
    /// [`with_call_result_output`](DeclaredTool::with_call_result_output), its output the
    /// JSON text of the MCP `CallToolResult` as it came: an MCP client is answered from
    /// the text, without reading it into a tree and writing it again. Whatever strings
    /// it holds reach the client as they are written, so check them first if they come
    /// from afar. By default, [`forward`](Forward::forward)'s output, written as text.
    ///
    /// ```
    /// use cairnloop::Actor;
    /// use cairnloop::declare::{CallResultFuture, RunError, RunFuture};
    /// use cairnloop::declared::Forward;
    /// use serde_json::value::RawValue;
    ///
    /// struct Hello;
    /// impl Forward<()> for Hello {
    ///     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    ///         Box::pin(async { Ok(serde_json::json!({"content": [{"type": "text", "text": "hi"}]})) })
    ///     }
    ///     fn forward_call_result<'a>(&'a self, _: &'a serde_json::Value, _: &'a Actor<'a>, _: &'a ()) -> CallResultFuture<'a> {
    ///         let text = r#"{"content":[{"type":"text","text":"hi"}]}"#;
    ///         Box::pin(async move { RawValue::from_string(text.into()).map_err(|e| RunError::Output(e.to_string())) })
    ///     }
    /// }
    /// ```
    #[cfg(feature = "rmcp")]
    fn forward_call_result<'a>(
        &'a self,
        arguments: &'a Value,
        actor: &'a Actor<'a>,
        context: &'a C,
    ) -> crate::declare::CallResultFuture<'a>
    where
        C: Sync,
    {
        Box::pin(async move {
            let output = self.forward(arguments, actor, context).await?;
            serde_json::value::to_raw_value(&output)
                .map_err(|error| RunError::Output(error.to_string()))
        })
    }
}

/// Why a JSON Schema cannot be a declared tool's input schema.
///
/// ```
/// use cairnloop::declared::{SchemaError, check_input_schema};
///
/// let err = check_input_schema(&serde_json::json!({"type": "string"})).unwrap_err();
/// assert_eq!(err, SchemaError::NotAnObject);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema does not say `"type": "object"`: MCP tool input is an object.
    #[error(
        "the input schema must describe an object (`\"type\": \"object\"`): MCP tool input is one"
    )]
    NotAnObject,
    /// The schema is larger than [`MAX_SCHEMA_BYTES`].
    #[error("the input schema is larger than {MAX_SCHEMA_BYTES} bytes")]
    TooLarge,
    /// The schema is nested deeper than [`MAX_SCHEMA_DEPTH`].
    #[error("the input schema is nested deeper than {MAX_SCHEMA_DEPTH} levels")]
    TooDeep,
    /// The validator refused it: an unknown keyword value, a `$ref` it cannot resolve
    /// (nothing is fetched from the network or the file system), a `pattern` the
    /// linear-time engine cannot run (a back-reference, a look-around).
    #[error("the input schema does not compile: {0}")]
    Compile(String),
}

/// The largest input schema a declared tool takes, written as JSON.
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;

/// The deepest nesting of an input schema a declared tool takes.
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// The longest message a field error quotes from the validator: its messages repeat the
/// offending value, which a caller chose.
const MAX_MESSAGE_CHARS: usize = 200;

/// Checks that `schema` can be a declared tool's input schema, and compiles it.
///
/// # Errors
///
/// [`SchemaError`]: not an object schema, too large or too deep, or refused by the
/// validator.
///
/// ```
/// use cairnloop::declared::check_input_schema;
///
/// let schema = serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}});
/// assert!(check_input_schema(&schema).is_ok());
/// let remote = serde_json::json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}});
/// assert!(check_input_schema(&remote).is_err());
/// ```
pub fn check_input_schema(schema: &Value) -> Result<(), SchemaError> {
    compile(schema).map(drop)
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, SchemaError> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotAnObject);
    }
    if depth(schema) > MAX_SCHEMA_DEPTH {
        return Err(SchemaError::TooDeep);
    }
    if schema.to_string().len() > MAX_SCHEMA_BYTES {
        return Err(SchemaError::TooLarge);
    }
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)
        .map_err(|error| SchemaError::Compile(error.to_string()))
}

/// How deeply `value` nests, without recursion (a hostile schema may nest very deep).
fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending = alloc::vec![(value, 1usize)];
    while let Some((value, level)) = pending.pop() {
        deepest = deepest.max(level);
        if level > MAX_SCHEMA_DEPTH {
            break;
        }
        match value {
            Value::Array(items) => pending.extend(items.iter().map(|item| (item, level + 1))),
            Value::Object(fields) => pending.extend(fields.values().map(|item| (item, level + 1))),
            _ => {}
        }
    }
    deepest
}

/// A tool declared from data: its spec's text, its scopes, its input schema (compiled
/// once), an optional preview template, and what runs it. Registered with
/// [`ToolEntry::declared`], it is governed exactly as a Rust tool is.
///
/// ```
/// use cairnloop::{RiskTier, Scope, declare::{RunError, RunFuture, ToolSpecOf, ScopeOf}};
/// use cairnloop::declared::{DeclaredTool, Forward};
///
/// struct Upstream;
/// impl Forward<()> for Upstream {
///     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
///         Box::pin(async { Ok::<_, RunError>(serde_json::json!({"written": true})) })
///     }
/// }
///
/// let name = String::from("fs_write_file"); // from a configuration
/// let spec = ToolSpecOf::try_new(&name, "Write file", "Writes a file.", RiskTier::LowWrite)?;
/// let scopes = [ScopeOf::try_new("fs:write")?];
/// let schema = serde_json::json!({
///     "type": "object",
///     "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
///     "required": ["path", "content"],
///     "additionalProperties": false
/// });
/// let tool: DeclaredTool<()> = DeclaredTool::new(&spec, &scopes, schema, Upstream)?;
/// assert_eq!(tool.name(), "fs_write_file");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DeclaredTool<C: ?Sized + 'static> {
    name: String,
    title: String,
    description: String,
    tier: RiskTier,
    mode: ApprovalMode,
    loosened_because: Option<String>,
    idempotent: bool,
    open_world: bool,
    quorum: u8,
    scope_names: Vec<String>,
    /// The scopes as the gates read them, made from `scope_names` once the tool lives
    /// for the whole program (`ToolEntry::declared` takes it by `&'static`).
    scopes: OnceLock<Result<Vec<Scope>, SpecError>>,
    /// The input's schema as the upstream offers it now, compiled.
    offer: RwLock<Arc<Offer>>,
    /// Set while the upstream does not offer the tool: hidden and blocked.
    withdrawn: AtomicBool,
    preview: Option<Template>,
    call_result: bool,
    accounts: Option<Vec<String>>,
    tier_rule: Option<Box<TierRule>>,
    forward: Box<dyn Forward<C>>,
}

/// A declared tool's rule for one call's tier: from the call's checked arguments and who
/// makes it, a tier for this call (`None`: the tool's own) and why, if it says. The gate
/// takes the higher of it and the tool's tier.
type TierRule = dyn Fn(&Value, &Actor<'_>) -> Option<(RiskTier, Option<String>)> + Send + Sync;

/// A declared tool's input schema, and its compiled validator.
struct Offer {
    schema: Value,
    validator: jsonschema::Validator,
}

impl<C: ?Sized + 'static> DeclaredTool<C> {
    /// A tool declared by `spec` and `scopes` (both already checked: build them with
    /// [`ToolSpecOf::try_new`] and [`ScopeOf::try_new`], which report the same rules as
    /// the compile-time checks), whose input must match `input_schema`, run by
    /// `forward`. The text is copied: the tool owns it.
    ///
    /// # Errors
    ///
    /// The schema is not one a declared tool takes ([`check_input_schema`]).
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward, SchemaError};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let not_an_object = serde_json::json!({"type": "array"});
    /// let err = DeclaredTool::<()>::new(&spec, &[], not_an_object, Nothing).err();
    /// assert_eq!(err, Some(SchemaError::NotAnObject));
    /// # Ok::<(), cairnloop::SpecError>(())
    /// ```
    pub fn new(
        spec: &ToolSpecOf<'_>,
        scopes: &[ScopeOf<'_>],
        input_schema: Value,
        forward: impl Forward<C> + 'static,
    ) -> Result<Self, SchemaError> {
        let validator = compile(&input_schema)?;
        Ok(Self {
            name: spec.name().to_string(),
            title: spec.title().to_string(),
            description: spec.description().to_string(),
            tier: spec.risk_tier(),
            mode: spec.approval_mode(),
            loosened_because: spec.loosened_because().map(ToString::to_string),
            idempotent: spec.is_idempotent(),
            open_world: spec.is_open_world(),
            quorum: spec.quorum(),
            scope_names: scopes
                .iter()
                .map(|scope| scope.as_str().to_string())
                .collect(),
            scopes: OnceLock::new(),
            offer: RwLock::new(Arc::new(Offer {
                schema: input_schema,
                validator,
            })),
            withdrawn: AtomicBool::new(false),
            preview: None,
            call_result: false,
            accounts: None,
            tier_rule: None,
            forward: Box::new(forward),
        })
    }

    /// The tool with `template` as what an operator reads about a call (otherwise the
    /// crate's own preview of the arguments).
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward, Template};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::LowWrite)?;
    /// let schema = serde_json::json!({"type": "object"});
    /// let tool = DeclaredTool::<()>::new(&spec, &[], schema, Nothing)?
    ///     .with_preview(Template::parse("Write {path}")?);
    /// assert!(tool.preview().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_preview(mut self, template: Template) -> Self {
        self.preview = Some(template);
        self
    }

    /// The tool with `rule` deciding each call's tier from its checked arguments and who
    /// makes it: a gateway's `raise` rules. A tier above the tool's raises the call (its
    /// derived mode, the host's floor for that tier, the tier rights of whoever approves
    /// it, the binding of its approval); `None` or a lower one leaves the tool's, and a
    /// lower one is said in the decision's audit record. A rule that panics blocks the
    /// call.
    ///
    /// ```
    /// # use cairnloop::{Actor, RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("write_file", "Write a file", "Writes a file.", RiskTier::LowWrite)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?
    ///     .with_tier_rule(|arguments, _: &Actor<'_>| {
    ///         let path = arguments["path"].as_str().unwrap_or("/");
    ///         (!path.starts_with("/scratch/")).then_some(RiskTier::HighWrite)
    ///     });
    /// assert!(tool.has_tier_rule());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_tier_rule(
        mut self,
        rule: impl Fn(&Value, &Actor<'_>) -> Option<RiskTier> + Send + Sync + 'static,
    ) -> Self {
        self.tier_rule = Some(Box::new(move |arguments, actor| {
            rule(arguments, actor).map(|tier| (tier, None))
        }));
        self
    }

    /// As [`with_tier_rule`](Self::with_tier_rule), and the rule says why it raised a
    /// call: the reason is kept with the proposal (a person deciding it reads it beside the
    /// tier) and in the decision's audit record.
    ///
    /// ```
    /// # use cairnloop::{Actor, RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("write_file", "Write a file", "Writes a file.", RiskTier::LowWrite)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?
    ///     .with_explained_tier_rule(|arguments, _: &Actor<'_>| {
    ///         let path = arguments["path"].as_str().unwrap_or("/");
    ///         (!path.starts_with("/scratch/"))
    ///             .then(|| (RiskTier::HighWrite, "outside the scratch folder".to_owned()))
    ///     });
    /// assert!(tool.has_tier_rule());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_explained_tier_rule(
        mut self,
        rule: impl Fn(&Value, &Actor<'_>) -> Option<(RiskTier, String)> + Send + Sync + 'static,
    ) -> Self {
        self.tier_rule = Some(Box::new(move |arguments, actor| {
            rule(arguments, actor).map(|(tier, reason)| (tier, Some(reason)))
        }));
        self
    }

    /// Whether a rule decides each call's tier ([`with_tier_rule`](Self::with_tier_rule)).
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?;
    /// assert!(!tool.has_tier_rule());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn has_tier_rule(&self) -> bool {
        self.tier_rule.is_some()
    }

    /// The tool whose forward answers with an MCP `CallToolResult` (a tool of another
    /// MCP server): an MCP client is handed its content blocks (text, images,
    /// resources) as they are, and the whole result as `output`, instead of the output
    /// written as JSON text. Every other surface sees the output as it is.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?
    ///     .with_call_result_output();
    /// assert!(tool.answers_call_results());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_call_result_output(mut self) -> Self {
        self.call_result = true;
        self
    }

    /// The tool, offered only to callers acting in one of `accounts` (the actor's
    /// [`account`](crate::Actor::account), compared exactly): part of its policy, so a
    /// caller in another account, or in none, is refused at gate 3 and does not see it
    /// listed. Give ids that pass the crate's identity rule.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?
    ///     .with_accounts(["acme"]);
    /// assert_eq!(tool.accounts(), Some(&["acme".to_string()][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_accounts<I: IntoIterator<Item = T>, T: Into<String>>(
        mut self,
        accounts: I,
    ) -> Self {
        self.accounts = Some(accounts.into_iter().map(Into::into).collect());
        self
    }

    /// The accounts a caller must act in, if the tool has such a rule
    /// ([`with_accounts`](Self::with_accounts)).
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?;
    /// assert_eq!(tool.accounts(), None); // any caller
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn accounts(&self) -> Option<&[String]> {
        self.accounts.as_deref()
    }

    /// Whether the tool's output is an MCP `CallToolResult`
    /// ([`with_call_result_output`](Self::with_call_result_output)).
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?;
    /// assert!(!tool.answers_call_results());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn answers_call_results(&self) -> bool {
        self.call_result
    }

    /// The tool's name.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?;
    /// assert_eq!(tool.name(), "t");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The input's JSON Schema, as declared.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?;
    /// assert_eq!(tool.input_schema()["type"], "object");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn input_schema(&self) -> Value {
        self.current().schema.clone()
    }

    /// Offers the tool again with `input_schema`, its upstream's schema as listed now: a
    /// listing that changed. Calls are checked against it from now on, including the run
    /// of a call approved before (one whose input no longer fits is invalidated, never
    /// run), and listings show it. A withdrawn tool is offered again.
    ///
    /// # Errors
    ///
    /// The schema is not one a declared tool takes ([`check_input_schema`]): nothing
    /// changes then.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?;
    /// let narrower = serde_json::json!({"type": "object", "required": ["path"]});
    /// tool.offer(narrower.clone())?;
    /// assert_eq!(tool.input_schema(), narrower);
    /// assert!(tool.offer(serde_json::json!({"type": "array"})).is_err());
    /// assert_eq!(tool.input_schema(), narrower);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn offer(&self, input_schema: Value) -> Result<(), SchemaError> {
        let validator = compile(&input_schema)?;
        *self.offer.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(Offer {
            schema: input_schema,
            validator,
        });
        self.withdrawn.store(false, Ordering::Release);
        note_offers_changed();
        Ok(())
    }

    /// Withdraws the tool: its upstream no longer lists it. Until it is offered again it
    /// is hidden from every listing and a call to it is blocked as an unknown tool; an
    /// approved call of it is invalidated when it would run, never forwarded.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?;
    /// tool.withdraw();
    /// assert!(!tool.is_offered());
    /// tool.offer(serde_json::json!({"type": "object"}))?;
    /// assert!(tool.is_offered());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn withdraw(&self) {
        if !self.withdrawn.swap(true, Ordering::AcqRel) {
            note_offers_changed();
        }
    }

    /// Whether the tool is on offer (not withdrawn).
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?;
    /// assert!(tool.is_offered());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn is_offered(&self) -> bool {
        !self.withdrawn.load(Ordering::Acquire)
    }

    /// The offer in force now (a call holds it while it checks its input).
    fn current(&self) -> Arc<Offer> {
        Arc::clone(&self.offer.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The preview template, if the tool has one.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, declare::{RunFuture, ToolSpecOf}};
    /// # use cairnloop::declared::{DeclaredTool, Forward};
    /// # struct Nothing;
    /// # impl Forward<()> for Nothing {
    /// #     fn forward<'a>(&'a self, _: &'a serde_json::Value, _: &'a cairnloop::Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    /// #         Box::pin(async { Ok(serde_json::Value::Null) })
    /// #     }
    /// # }
    /// let spec = ToolSpecOf::try_new("t", "T", "A tool.", RiskTier::ReadOnly)?;
    /// let tool = DeclaredTool::<()>::new(&spec, &[], serde_json::json!({"type": "object"}), Nothing)?;
    /// assert!(tool.preview().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn preview(&self) -> Option<&Template> {
        self.preview.as_ref()
    }

    /// The spec, its text borrowed from the tool, checked again by the crate's rules.
    fn spec(&'static self) -> Result<ToolSpec, SpecError> {
        let mut spec: ToolSpec =
            ToolSpecOf::try_new(&self.name, &self.title, &self.description, self.tier)?;
        spec = match &self.loosened_because {
            Some(why) => spec.try_loosen_approval(self.mode, why)?,
            None if self.mode != spec.approval_mode() => spec.try_with_approval(self.mode)?,
            None => spec,
        };
        if self.idempotent {
            spec = spec.idempotent();
        }
        if !self.open_world {
            spec = spec.closed_world();
        }
        spec.try_with_quorum(self.quorum)
    }

    fn scopes(&'static self) -> Result<&'static [Scope], SpecError> {
        let scopes = self.scopes.get_or_init(|| {
            let scopes = self
                .scope_names
                .iter()
                .map(|name| ScopeOf::try_new(name.as_str()))
                .collect::<Result<Vec<_>, _>>()?;
            ScopeOf::check_list(&scopes)?;
            Ok(scopes)
        });
        scopes.as_deref().map_err(|error| *error)
    }
}

impl<C: ?Sized + 'static> fmt::Debug for DeclaredTool<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeclaredTool")
            .field("name", &self.name)
            .field("tier", &self.tier)
            .field("mode", &self.mode)
            .field("scopes", &self.scope_names)
            .finish_non_exhaustive()
    }
}

impl<C: ?Sized + Sync + 'static> ToolEntry<C> {
    /// The entry of a tool declared from data, with `authorize` as its policy (gate 3).
    /// The tool lives for the whole program (a `static`, or leaked once at start): its
    /// entry borrows its text.
    ///
    /// # Errors
    ///
    /// The rule the tool's spec or scopes break (they were checked when they were built,
    /// so only a tool built from unchecked parts fails here).
    ///
    /// ```
    /// use cairnloop::{Actor, Governor, Outcome, PolicyDenial, Registry, RiskTier, ToolCall, ToolEntry};
    /// use cairnloop::declare::{RunError, RunFuture, ToolSpecOf};
    /// use cairnloop::declared::{DeclaredTool, Forward};
    ///
    /// struct Sum;
    /// impl Forward<()> for Sum {
    ///     fn forward<'a>(&'a self, arguments: &'a serde_json::Value, _: &'a Actor<'a>, _: &'a ()) -> RunFuture<'a> {
    ///         let sum = arguments["a"].as_f64().unwrap_or(0.0) + arguments["b"].as_f64().unwrap_or(0.0);
    ///         Box::pin(async move { Ok::<_, RunError>(serde_json::json!(sum)) })
    ///     }
    /// }
    /// fn anyone(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
    ///
    /// let spec = ToolSpecOf::try_new("sum", "Sum", "Adds two numbers.", RiskTier::ReadOnly)?;
    /// let schema = serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]});
    /// let tool: &'static DeclaredTool<()> = Box::leak(Box::new(DeclaredTool::new(&spec, &[], schema, Sum)?));
    /// let entries: &'static [ToolEntry<()>] = Box::leak(Box::new([ToolEntry::declared(tool, anyone)?]));
    /// let registry: &'static Registry<()> = Box::leak(Box::new(Registry::try_new(entries)?));
    ///
    /// let governor = Governor::new(registry);
    /// let call = ToolCall::new("sum", r#"{"a": 2, "b": 3}"#);
    /// let outcome = pollster::block_on(governor.call(&call, &Actor::new("agent", &[]), &()))?;
    /// assert!(matches!(outcome, Outcome::Executed(sum) if sum == serde_json::json!(5.0)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn declared(
        tool: &'static DeclaredTool<C>,
        authorize: fn(&Actor<'_>, &C) -> Result<(), PolicyDenial>,
    ) -> Result<Self, SpecError> {
        let entry = Self::from_parts(tool.spec()?, tool.scopes()?, authorize)
            .with_codec(tool)
            .with_withdrawal(&tool.withdrawn);
        Ok(match &tool.accounts {
            Some(accounts) => entry.with_accounts(accounts),
            None => entry,
        })
    }
}

impl<C: ?Sized + Sync + 'static> Codec<C> for DeclaredTool<C> {
    fn decode(&self, arguments: &str, limits: &InputLimits) -> Result<ErasedInput, InputErrors> {
        let input = Value::Object(parse_arguments(arguments, limits)?);
        let offer = self.current();
        // Most calls are valid: the validator's quick yes first, its errors only for a no.
        if offer.validator.is_valid(&input) {
            return Ok(Box::new(input));
        }
        let mut found: Vec<FieldError> = offer
            .validator
            .iter_errors(&input)
            .flat_map(|error| field_errors(&error))
            .collect();
        if found.is_empty() {
            return Ok(Box::new(input));
        }
        found.sort_by(|a, b| (a.path(), a.code()).cmp(&(b.path(), b.code())));
        found.dedup_by(|a, b| a.path() == b.path() && a.code() == b.code());
        let mut errors = InputErrors::new();
        for error in found {
            errors.push(error);
        }
        Err(errors)
    }

    fn check(&self, arguments: &str, limits: &InputLimits) -> Result<(), InputErrors> {
        self.decode(arguments, limits).map(drop)
    }

    fn preview(&self, input: &ErasedInput, out: &mut dyn fmt::Write) -> Option<fmt::Result> {
        let template = self.preview.as_ref()?;
        let input = input.downcast_ref::<Value>()?;
        Some(out.write_str(&template.render(input)))
    }

    fn tier(&self, input: &ErasedInput, actor: &Actor<'_>) -> Result<Option<AskedTier>, ()> {
        let Some(rule) = &self.tier_rule else {
            return Ok(None);
        };
        let input = input.downcast_ref::<Value>().ok_or(())?;
        // A rule that panics leaves the call's risk unknown: the call is blocked, and the
        // process keeps serving.
        std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| rule(input, actor))).map_err(drop)
    }

    fn canonical_with_preview(
        &self,
        input: &ErasedInput,
        _: Option<String>,
    ) -> Result<(String, Option<String>), String> {
        // Its preview is read from the text.
        input
            .downcast_ref::<Value>()
            .map(|input| (canonical_json(input), None))
            .ok_or_else(|| RunError::InputType.to_string())
    }

    fn run<'a>(
        &'a self,
        input: ErasedInput,
        actor: &'a Actor<'a>,
        context: &'a C,
        _key: RunKey<'a>,
    ) -> RunFuture<'a> {
        let Ok(input) = input.downcast::<Value>() else {
            return Box::pin(core::future::ready(Err(RunError::InputType)));
        };
        Box::pin(async move { self.forward.forward(&input, actor, context).await })
    }

    #[cfg(feature = "rmcp")]
    fn output_is_call_result(&self) -> bool {
        self.call_result
    }

    #[cfg(feature = "rmcp")]
    fn run_call_result<'a>(
        &'a self,
        input: ErasedInput,
        actor: &'a Actor<'a>,
        context: &'a C,
    ) -> Result<crate::declare::CallResultFuture<'a>, ErasedInput> {
        if !self.call_result {
            return Err(input);
        }
        let input = input.downcast::<Value>()?;
        Ok(Box::pin(async move {
            self.forward
                .forward_call_result(&input, actor, context)
                .await
        }))
    }

    #[cfg(feature = "schemars")]
    fn schema(&self) -> Option<Value> {
        Some(self.input_schema())
    }

    #[cfg(feature = "schemars")]
    fn output_schema(&self) -> Option<Value> {
        self.call_result.then(call_result_schema)
    }
}

/// The shape of an MCP `CallToolResult`, as the output of a tool that answers one: a
/// client that checks results against the listed schema learns what it is handed. Only
/// what every result has is said: its structured content is the upstream's own, and
/// never checked here, so it is left open.
#[cfg(feature = "schemars")]
fn call_result_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "description": "The result of the tool that ran (an MCP CallToolResult): its content blocks, and its structured content if it gave any.",
        "properties": {
            "content": {"type": "array", "items": {"type": "object"}},
            "isError": {"type": "boolean"},
            "_meta": {"type": "object"}
        },
        "required": ["content"]
    })
}

/// The crate's field errors for one of the validator's: the same codes a Rust tool's
/// input reports, at the field's JSON Pointer.
fn field_errors(error: &jsonschema::ValidationError<'_>) -> Vec<FieldError> {
    use jsonschema::error::ValidationErrorKind as Kind;
    let at = error.instance_path().to_string();
    let child = |name: &str| {
        let mut path = at.clone();
        path.push('/');
        push_pointer_token(&mut path, name);
        path
    };
    let message = || {
        let text = error.to_string();
        match text.char_indices().nth(MAX_MESSAGE_CHARS) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    };
    let code = match error.kind() {
        Kind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), ToString::to_string);
            return alloc::vec![FieldError::owned(
                child(&name),
                "required",
                "is required".into()
            )];
        }
        Kind::AdditionalProperties { unexpected } | Kind::UnevaluatedProperties { unexpected } => {
            return unexpected
                .iter()
                .map(|name| {
                    FieldError::owned(
                        child(name),
                        "unknown_field",
                        "this field is not part of the tool's input".into(),
                    )
                })
                .collect();
        }
        Kind::Type { .. } => "invalid_type",
        Kind::Enum { .. } | Kind::Constant { .. } => "invalid_value",
        Kind::Minimum { .. }
        | Kind::Maximum { .. }
        | Kind::ExclusiveMinimum { .. }
        | Kind::ExclusiveMaximum { .. }
        | Kind::MultipleOf { .. } => "out_of_range",
        Kind::MinLength { .. }
        | Kind::MaxLength { .. }
        | Kind::MinItems { .. }
        | Kind::MaxItems { .. }
        | Kind::MinProperties { .. }
        | Kind::MaxProperties { .. } => "invalid_length",
        Kind::Format { .. } | Kind::Pattern { .. } => "invalid_format",
        _ => "invalid",
    };
    alloc::vec![FieldError::owned(at, code, message())]
}
