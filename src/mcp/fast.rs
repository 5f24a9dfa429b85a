//! Calls that run at once (no person to wait for), answered by the stdio transport
//! itself: the line read once, gated, and the call recorded and run as the server would
//! (the same governor, the same answer), without rmcp's dispatch of a request. A call
//! that waits for a person, and every other message, goes to rmcp as before.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::pin::Pin;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, RequestId, ServerJsonRpcMessage, ServerResult};
use serde::Deserialize;
use serde_json::value::RawValue;

use tokio_util::sync::CancellationToken;

use super::cancel::within_token;
use super::handed_on_text::plain_result_line;
use super::result::{handed_on, outcome_result};
use super::server::answer;
use crate::approvals::Outcome;
use crate::approvals::{ApprovalStore, Caller, Governor, HandingOn};
use crate::declare::RunError;
use crate::json::ToolCall;

/// An answer on its way.
pub(crate) type Answering = Pin<Box<dyn Future<Output = Answered> + Send>>;

/// What a call answered here is answered with.
pub(crate) enum Answered {
    /// rmcp's model of the answer.
    Model(Result<CallToolResult, ErrorData>),
    /// The call ran, and its output is the text of an MCP `CallToolResult` to hand on.
    CallResult(Box<RawValue>),
}

/// What answers the calls of one server that run at once.
pub(crate) trait AnswersAtOnce: Send + Sync {
    /// The answer to a call of `name` with the JSON text `arguments`, when it runs at once
    /// (or is blocked): gated now, recorded and run as the future is polled, `cancel`
    /// being its request's cancellation ([`request_cancelled`](super::request_cancelled)).
    /// `None` for a call that waits for a person, or whose caller the identity rule
    /// refuses: rmcp's handler takes those, nothing having been recorded here.
    fn answer(&self, name: &str, arguments: &str, cancel: &CancellationToken) -> Option<Answering>;
}

/// A server's governor, context and caller, for [`AnswersAtOnce`].
pub(crate) struct FastCalls<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> {
    governor: Arc<Governor<C, S>>,
    context: Arc<C>,
    /// Shared with each call's answer, which outlives the line it was read from.
    caller: Arc<Caller>,
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> FastCalls<C, S> {
    pub(crate) fn new(governor: Arc<Governor<C, S>>, context: Arc<C>, caller: Caller) -> Self {
        Self {
            governor,
            context,
            caller: Arc::new(caller),
        }
    }
}

impl<C: Send + Sync + 'static, S: ApprovalStore + Send + Sync + 'static> AnswersAtOnce
    for FastCalls<C, S>
{
    fn answer(&self, name: &str, arguments: &str, cancel: &CancellationToken) -> Option<Answering> {
        let scopes = self.caller.scope_refs();
        let actor = self.caller.actor(&scopes);
        let gated = self
            .governor
            .gate(&ToolCall::new(name, arguments), &actor, &self.context)
            .ok()
            .filter(|gated| !gated.awaits_approval())?;
        let governor = Arc::clone(&self.governor);
        let context = Arc::clone(&self.context);
        let caller = Arc::clone(&self.caller);
        // The name and the arguments outlive the line they were read from: kept in one
        // allocation.
        let arguments_len = arguments.len();
        let mut text = String::with_capacity(name.len() + arguments.len());
        text.push_str(name);
        text.push_str(arguments);
        Some(Box::pin(within_token(cancel.clone(), async move {
            let scopes = caller.scope_refs();
            let actor = caller.actor(&scopes);
            let (name, arguments) = text.split_at(text.len() - arguments_len);
            let call = ToolCall::new(name, arguments);
            let outcome = match governor
                .decide_handing_on(gated, &call, &actor, &context)
                .await
            {
                Ok(HandingOn::CallResult(result)) => return Answered::CallResult(result),
                Ok(HandingOn::Outcome(outcome)) => Ok(outcome),
                Err(error) => Err(error),
            };
            Answered::Model(answer(governor.registry(), name, outcome, None))
        })))
    }
}

/// A `tools/call` as most clients send it: `jsonrpc`, `id`, `method` and `params` with
/// only `name`, `arguments` (an object) and a `_meta` that holds at most a
/// `progressToken` (which a call that runs at once has no use for). Anything else (other
/// `_meta`, such as a protocol version of its own; a task; an echoed answer; a field rmcp
/// would refuse) leaves the line to the usual way.
pub(crate) struct PlainCall<'a> {
    pub(crate) id: RequestId,
    pub(crate) name: Cow<'a, str>,
    pub(crate) arguments: &'a str,
}

/// Reads `line` as a [`PlainCall`], or `None`.
pub(crate) fn plain_call(line: &[u8]) -> Option<PlainCall<'_>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Envelope<'a> {
        // Borrowed: a line that escapes either is no plain call.
        jsonrpc: &'a str,
        id: RequestId,
        method: &'a str,
        #[serde(borrow)]
        params: Params<'a>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
        #[serde(rename = "_meta", default)]
        _meta: Option<Meta>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Meta {
        #[serde(rename = "progressToken", default)]
        _progress_token: Option<serde::de::IgnoredAny>,
    }
    // Checked as Unicode once: read from bytes, each string would be checked on its own.
    let envelope: Envelope<'_> = serde_json::from_str(core::str::from_utf8(line).ok()?).ok()?;
    if envelope.jsonrpc != "2.0" || envelope.method != "tools/call" {
        return None;
    }
    let arguments = envelope.params.arguments.map_or("{}", RawValue::get);
    arguments.starts_with('{').then_some(PlainCall {
        id: envelope.id,
        name: envelope.params.name,
        arguments,
    })
}

/// The line (its newline included) that answers request `id` with `answered`, shaped
/// for the protocol the session agreed (`current`: 2026-07-28 or later), as rmcp's
/// handler shapes it: a result's text is answered around it where it is plain, and read
/// into a tree otherwise.
pub(crate) fn answer_line(answered: Answered, id: RequestId, current: bool) -> Option<Vec<u8>> {
    let answered = match answered {
        Answered::Model(answered) => answered,
        Answered::CallResult(text) => {
            if let Some(line) = plain_result_line(&text, &id, current) {
                return Some(line);
            }
            Ok(match serde_json::from_str(text.get()) {
                Ok(output) => handed_on(output),
                // Text no tree reads (a string no Unicode text is): said, not handed on.
                Err(error) => {
                    outcome_result(Outcome::Failed(RunError::Output(error.to_string())), None)
                }
            })
        }
    };
    let mut line = serde_json::to_vec(&answer_message(answered, id, current)).ok()?;
    line.push(b'\n');
    Some(line)
}

/// The message that answers request `id` with `answered`, shaped for the protocol the
/// session agreed (`current`: 2026-07-28 or later), as rmcp's handler shapes it.
pub(crate) fn answer_message(
    answered: Result<CallToolResult, ErrorData>,
    id: RequestId,
    current: bool,
) -> ServerJsonRpcMessage {
    match answered {
        Ok(result) => {
            let mut result = ServerResult::CallToolResult(result);
            if current {
                result.fill_missing_cache_hints();
            } else {
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
            }
            ServerJsonRpcMessage::response(result, id)
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    }
}
