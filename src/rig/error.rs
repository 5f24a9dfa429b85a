use alloc::string::String;

/// Why a governor's tools could not be added to a rig tool set. Nothing was added.
///
/// ```
/// use cairnloop::rig::RigError;
///
/// let error = RigError::NameTaken { name: "lookup_order".into() };
/// assert!(error.to_string().contains("already holds a tool named `lookup_order`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RigError {
    /// The rig tool set already holds a tool of this name. rig would replace it without a
    /// word, and a call by that name would reach one of the two: the governed tool is not
    /// added, and neither is any other.
    #[error(
        "the rig tool set already holds a tool named `{name}`; a second one would silently \
         replace it, so no governed tool was added"
    )]
    NameTaken {
        /// The name both tools have.
        name: String,
    },
    /// The tool has no JSON Schema of its input, so a model would not know its arguments:
    /// register it with `ToolEntry::mcp`.
    #[error(
        "the tool `{name}` has no input schema (register it with ToolEntry::mcp), so a \
         model could not know its arguments; no governed tool was added"
    )]
    NoSchema {
        /// The tool's name.
        name: &'static str,
    },
    /// rig refused the registration.
    #[error("rig refused the tool `{name}`: {reason}; no governed tool was added")]
    Refused {
        /// The tool's name.
        name: &'static str,
        /// What rig said.
        reason: String,
    },
}
