//! The one set of messages for declaration errors.
//!
//! The same text is the compile error (a `const` panic) and the `Display` of the
//! [`SpecError`](crate::SpecError) a run-time builder returns. Each names the rule it
//! breaks and the fix.

use const_format::concatcp;

use crate::registry::MAX_TOOLS;
use crate::text::{MAX_NAME_LEN, MAX_SCOPES};

const RULE: &str = "cairnloop rule ";

pub(crate) const TOOL_NAME: &str = concatcp!(
    RULE,
    "1 (tool name): a tool name must be 1 to ",
    MAX_NAME_LEN,
    " characters from A-Z, a-z, 0-9, `_` and `-` (the names every model vendor and MCP client \
     accepts); fix: rename the tool, e.g. \"delete_customer\""
);
pub(crate) const TITLE_EMPTY: &str = concatcp!(
    RULE,
    "2 (title): the title is empty; fix: give the tool a short human-readable title, e.g. \
     \"Delete customer\""
);
pub(crate) const TITLE_CONTROL: &str = concatcp!(
    RULE,
    "2 (title): the title has a line break or a control character; fix: keep the title on \
     one line of printable text"
);
pub(crate) const DESCRIPTION_EMPTY: &str = concatcp!(
    RULE,
    "3 (description): the description is empty; fix: say what the tool does and when a \
     model should call it"
);
pub(crate) const DESCRIPTION_CONTROL: &str = concatcp!(
    RULE,
    "3 (description): the description has a control character other than `\\n` and `\\t`; \
     fix: remove it"
);
pub(crate) const MODE_WEAKER: &str = concatcp!(
    RULE,
    "4 (approval mode): the explicit approval mode is weaker than the one derived from the \
     risk tier; fix: drop `.with_approval(..)` or choose an equal or stricter mode; to \
     loosen on purpose call `.loosen_approval(mode, \"justification\")`"
);
pub(crate) const LOOSEN_NOT_LOOSER: &str = concatcp!(
    RULE,
    "4 (approval mode): `.loosen_approval` was given a mode that is not weaker than the one \
     derived from the risk tier; fix: use `.with_approval(mode)`, which tightens without a \
     justification"
);
pub(crate) const LOOSEN_NO_JUSTIFICATION: &str = concatcp!(
    RULE,
    "4 (approval mode): loosening the approval mode needs a justification; fix: pass a \
     non-empty, single-line reason to `.loosen_approval(mode, \"...\")`"
);
pub(crate) const DESTRUCTIVE_AUTO: &str = concatcp!(
    RULE,
    "4 (approval mode): a destructive tool can never run without approval, even with a \
     justification; fix: use `ApprovalMode::RequiresApproval` or lower the risk tier if the \
     tool is not destructive"
);
pub(crate) const RESULT_STATE_INVALID: &str = concatcp!(
    RULE,
    "5 (result states): a result state must be non-empty and use only a-z, 0-9 and `_`; \
     fix: rename it, e.g. \"not_found\""
);
pub(crate) const RESULT_STATE_DUPLICATE: &str = concatcp!(
    RULE,
    "5 (result states): a result state is declared twice; fix: remove the duplicate"
);
pub(crate) const SCOPE_INVALID: &str = concatcp!(
    RULE,
    "6 (scope): a scope must be non-empty printable ASCII without whitespace, `\"` or `\\` \
     (an RFC 6749 scope token); fix: name it like \"orders:read\""
);
pub(crate) const SCOPE_WILDCARD: &str = concatcp!(
    RULE,
    "6 (scope): wildcard scopes (`*`, `all`) are not allowed, scopes match exactly; fix: \
     require the precise scope, e.g. \"orders:read\""
);
pub(crate) const SCOPE_DUPLICATE: &str = concatcp!(
    RULE,
    "6 (scope): a scope is declared twice in one tool's SCOPES; fix: remove the duplicate"
);
pub(crate) const SCOPE_TOO_MANY: &str = concatcp!(
    RULE,
    "6 (scope): a tool may require at most ",
    MAX_SCOPES,
    " scopes; fix: group permissions into fewer scopes"
);
pub(crate) const TOOL_DUPLICATE: &str = concatcp!(
    RULE,
    "7 (registry): two tools in one registry have the same name, or names equal ignoring \
     ASCII case; fix: rename one of them"
);
pub(crate) const TOO_MANY_TOOLS: &str = concatcp!(
    RULE,
    "7 (registry): one registry holds at most ",
    MAX_TOOLS,
    " tools; fix: split the tools into several registries"
);
