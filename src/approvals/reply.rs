//! What a model is told about its call, the same whichever agent framework carries it: a
//! JSON body with a `status` to branch on, and a text that says what to do next.

use alloc::format;
use alloc::string::{String, ToString};

use serde_json::{Value, json};

use crate::approvals::{ApprovalError, ApprovalLane, Outcome};
use crate::gate::{Blocked, LaneState, ModeSource};

/// The answer a model gets for one call: the JSON `body` (its `status` is `executed`,
/// `failed`, `awaiting_approval`, `blocked` (also when the decision could not be
/// recorded: code `not_recorded`), `superseded` (a person approved it with changed
/// arguments: `edited_status` says what became of the changed call), or the state of a
/// lane that will not run: `rejected`, `expired`, …), a `text` to act on, and whether the
/// call is an error for the model. Nothing in it was computed by the model: the proposal id, preview,
/// field errors and missing scopes come from the governor.
///
/// ```
/// use cairnloop::{Blocked, Outcome};
///
/// let reply = Outcome::Blocked(Blocked::UnknownTool).into_reply();
/// assert_eq!(reply.status(), "blocked");
/// assert_eq!(reply.body()["code"], "unknown_tool");
/// assert!(reply.is_error() && reply.text().starts_with("Nothing ran"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelReply {
    body: Value,
    text: String,
    error: bool,
}

impl ModelReply {
    /// The JSON body; its `status` is [`ModelReply::status`].
    ///
    /// ```
    /// let reply = cairnloop::Outcome::Executed(serde_json::json!(7)).into_reply();
    /// assert_eq!(reply.body()["output"], 7);
    /// ```
    #[must_use]
    pub const fn body(&self) -> &Value {
        &self.body
    }

    /// The body's `status`.
    ///
    /// ```
    /// let reply = cairnloop::Outcome::Executed(serde_json::json!(7)).into_reply();
    /// assert_eq!(reply.status(), "executed");
    /// ```
    #[must_use]
    pub fn status(&self) -> &str {
        self.body["status"].as_str().unwrap_or("")
    }

    /// The text for the model: what happened and what to do next.
    ///
    /// ```
    /// let reply = cairnloop::Outcome::Executed(serde_json::json!({"n": 7})).into_reply();
    /// assert_eq!(reply.text(), r#"{"n":7}"#);
    /// ```
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the model should take it as an error: everything but a call that ran, or
    /// one that waits for a person.
    ///
    /// ```
    /// let reply = cairnloop::Outcome::Executed(serde_json::json!(null)).into_reply();
    /// assert!(!reply.is_error());
    /// ```
    #[must_use]
    pub const fn is_error(&self) -> bool {
        self.error
    }

    /// The body and the text.
    ///
    /// ```
    /// let (body, text) = cairnloop::Outcome::Executed(serde_json::json!(1)).into_reply().into_parts();
    /// assert_eq!((body["output"].as_i64(), text.as_str()), (Some(1), "1"));
    /// ```
    #[must_use]
    pub fn into_parts(self) -> (Value, String) {
        (self.body, self.text)
    }

    /// A call whose decision could not be recorded ([`Governor::call`] returned `error`):
    /// nothing ran, and a later try may succeed.
    ///
    /// [`Governor::call`]: crate::Governor::call
    ///
    /// ```
    /// use cairnloop::{ApprovalError, approvals::{ModelReply, StoreError}};
    ///
    /// let error = ApprovalError::Store(StoreError::ReadOnly);
    /// let reply = ModelReply::not_recorded(&error);
    /// assert_eq!((reply.status(), reply.body()["code"].as_str()), ("blocked", Some("not_recorded")));
    /// ```
    #[must_use]
    pub fn not_recorded(error: &ApprovalError) -> Self {
        failure(
            json!({ "status": "blocked", "blocked": "not_recorded", "code": "not_recorded", "reason": error.to_string() }),
            format!("Nothing ran: the decision could not be recorded ({error}). Try again later."),
        )
    }
}

impl Outcome {
    /// What the model is told about this outcome.
    ///
    /// ```
    /// use cairnloop::{Blocked, Outcome, gate::ModeSource};
    /// let blocked = Blocked::AlwaysBlocked { decided_by: ModeSource::Spec };
    /// let reply = Outcome::Blocked(blocked).into_reply();
    /// assert!(reply.text().contains("Do not retry"));
    /// ```
    #[must_use]
    pub fn into_reply(self) -> ModelReply {
        self.into_reply_noting(None)
    }

    /// As [`Outcome::into_reply`], with `note` said in the text of a call that did not run
    /// (why an approval prompt decided nothing).
    pub(crate) fn into_reply_noting(self, note: Option<&str>) -> ModelReply {
        match self {
            Self::Executed(output) => ModelReply {
                text: output.to_string(),
                body: executed_body(output),
                error: false,
            },
            Self::Failed(error) => failure(
                json!({ "status": "failed", "code": "run_failed", "reason": error.to_string() }),
                format!("The tool ran and failed: {error}"),
            ),
            Self::AwaitingApproval(lane) => lane_reply(&lane, note),
            Self::Blocked(blocked) => blocked_reply(&blocked),
            Self::Superseded {
                original,
                replacement,
                edited,
            } => superseded_reply(&original, &replacement, *edited, note),
        }
    }
}

/// A call a person approved with changed arguments: what became of the changed call,
/// said to be the changed one. The body is the changed call's, with `status`
/// `superseded`, its own `edited_status`, the caller's `proposal_id` and the changed
/// call's `edited_proposal_id` and `edited_arguments`.
fn superseded_reply(
    original: &ApprovalLane,
    replacement: &ApprovalLane,
    edited: Outcome,
    note: Option<&str>,
) -> ModelReply {
    let changed = replacement.proposal().input();
    let edited_key = original.replaced_by();
    let inner = edited.into_reply_noting(note);
    let mut body = match inner.body {
        Value::Object(object) => object,
        other => {
            let mut object = serde_json::Map::new();
            object.insert("edited".into(), other);
            object
        }
    };
    let edited_status = body.remove("status").unwrap_or(Value::Null);
    body.insert("status".into(), json!("superseded"));
    body.insert("edited_status".into(), edited_status);
    if let Some(edited_key) = edited_key {
        body.insert("edited_proposal_id".into(), json!(edited_key.to_string()));
    }
    if let Ok(arguments) = serde_json::from_str::<Value>(changed) {
        body.insert("edited_arguments".into(), arguments);
    }
    body.insert("proposal_id".into(), json!(original.key().to_string()));
    body.insert("state".into(), json!(LaneState::Superseded.as_str()));
    if let Some(reason) = original.reason() {
        body.insert("reason".into(), json!(reason));
    }
    let text = format!(
        "{} What became of the changed call: {}",
        superseded_note(original),
        inner.text
    );
    ModelReply {
        body: Value::Object(body),
        text,
        error: inner.error,
    }
}

/// The body of an executed call: `{"status": "executed", "output": output}`, the output
/// moved in (`json!` would copy it through its serializer).
pub(crate) fn executed_body(output: Value) -> Value {
    let mut body = serde_json::Map::new();
    body.insert("status".into(), Value::from("executed"));
    body.insert("output".into(), output);
    Value::Object(body)
}

/// What a caller whose call was approved with changed arguments is told first: who
/// changed it, and that its own arguments did not run.
pub(crate) fn superseded_note(original: &ApprovalLane) -> String {
    format!(
        "{by} approved this call with changed arguments (proposal {key} became {edited}); \
         your arguments did not run.",
        by = original.decided_by().unwrap_or("a person"),
        key = original.key(),
        edited = original
            .replaced_by()
            .map_or_else(|| "another".to_string(), |key| key.to_string()),
    )
}

fn blocked_reply(blocked: &Blocked) -> ModelReply {
    let mut body = json!({
        "status": "blocked",
        "blocked": blocked.code(),
        "code": blocked.code(),
        "reason": blocked.to_string(),
    });
    let text = match blocked {
        Blocked::NeedsInput { errors } => {
            body["errors"] = serde_json::to_value(errors).unwrap_or(Value::Null);
            let mut text = format!(
                "Nothing ran: the arguments have {} error(s). Fix every one and call again:",
                errors.len()
            );
            for error in errors.iter() {
                let path = if error.path().is_empty() {
                    "(arguments)"
                } else {
                    error.path()
                };
                text.push_str(&format!(
                    "\n- {path}: {} ({})",
                    error.message(),
                    error.code()
                ));
            }
            text
        }
        Blocked::ScopeMissing { missing } => {
            body["missing_scopes"] = serde_json::to_value(missing).unwrap_or(Value::Null);
            format!(
                "Nothing ran: this actor lacks the scope(s) {missing}. Do not retry; ask the user."
            )
        }
        Blocked::PolicyDenied { reason } => {
            format!(
                "Nothing ran: the tool's policy refused this call ({reason}). Do not retry it as it is."
            )
        }
        // The tool's rule made this call destructive: another call of it may run.
        Blocked::AlwaysBlocked {
            decided_by: ModeSource::CallTier,
        } => "Nothing ran: this call's arguments make it destructive, and a destructive call \
              never runs. Do not retry it as it is; ask the user."
            .to_string(),
        Blocked::AlwaysBlocked { .. } => {
            "Nothing ran: this tool is blocked and never runs. Do not retry.".to_string()
        }
        other => format!("Nothing ran: {other}."),
    };
    failure(body, text)
}

/// A call with a lane: pending (or deferred) awaits a person and is no error; any other
/// state (rejected, expired, invalidated, running elsewhere, unknown) is an error that
/// says so, with its reason.
fn lane_reply(lane: &ApprovalLane, note: Option<&str>) -> ModelReply {
    let proposal = lane.proposal();
    let state = lane.state();
    let waiting = state.waits_for_a_person();
    let mut body = json!({
        "status": if waiting { "awaiting_approval" } else { state.as_str() },
        "proposal_id": lane.key().to_string(),
        "state": state.as_str(),
        "tool": proposal.tool(),
        "risk_tier": proposal.risk_tier().as_str(),
        "preview": proposal.preview().text(),
        "required_scopes": proposal.required_scopes(),
        "expires_at": lane.expires_at().utc().to_string(),
        "reason": lane.reason(),
    });
    // A lane without a reason has no `reason` field: `null` is no string, and strict
    // clients check a result against the schema the tool advertised.
    if body["reason"].is_null() {
        body.as_object_mut().map(|object| object.remove("reason"));
    }
    if let Some(why) = proposal.raised_because() {
        body["raised_because"] = json!(why);
    }
    let note = note.map(|note| format!(" ({note})")).unwrap_or_default();
    if waiting {
        let raised = proposal
            .raised_because()
            .map(|why| format!(" Its arguments made it {}: {why}.", proposal.risk_tier()))
            .unwrap_or_default();
        let text = format!(
            "Nothing has run yet: this call awaits a person's approval{note}. Proposal {key}, \
             open until {expires}.{raised} Tell the user; once it is approved, make exactly the \
             same call again and it runs once.\n\n{preview}",
            key = lane.key(),
            expires = lane.expires_at().utc(),
            preview = proposal.preview().text(),
        );
        return ModelReply {
            body,
            text,
            error: false,
        };
    }
    let reason = lane
        .reason()
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default();
    let key = lane.key();
    let text = match state {
        LaneState::Expired => format!(
            "Nothing ran: no one approved this call before its approval window closed \
             (proposal {key}){reason}{note}. The same call stays expired. Tell the user, and \
             ask whether it is still wanted before proposing anything else."
        ),
        LaneState::Approved | LaneState::ExecutionPending => format!(
            "This call is running now, started by an earlier call (proposal {key}){note}. Do \
             not start it again: make exactly the same call later to get its outcome."
        ),
        _ => format!(
            "This call is {state} (proposal {key}){reason}{note}. It did not run now. Tell \
             the user; do not retry it as it is."
        ),
    };
    failure(body, text)
}

fn failure(body: Value, text: String) -> ModelReply {
    ModelReply {
        body,
        text,
        error: true,
    }
}
