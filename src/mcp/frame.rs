//! One line of the stdio transport, judged before rmcp sees it: a message to dispatch,
//! a JSON-RPC error to answer with, or nothing (a blank line, a malformed notification).

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, GetExtensions, RequestId,
    ServerJsonRpcMessage,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The size and nesting a line may have; past them the line is answered with an error
/// (and, where the line's `id` can still be read, with that id).
///
/// | limit | default |
/// |---|---|
/// | bytes per line | 16 MiB |
/// | nesting of arrays and objects | 128 levels, the envelope included |
///
/// ```
/// use cairnloop::mcp::FrameLimits;
/// let limits = FrameLimits::new().with_max_line_bytes(1 << 20);
/// assert_eq!(limits.max_line_bytes(), 1 << 20);
/// assert_eq!(limits.max_depth(), 128);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLimits {
    max_line_bytes: usize,
    max_depth: usize,
}

impl FrameLimits {
    /// 16 MiB per line and 128 levels of nesting.
    ///
    /// ```
    /// assert_eq!(cairnloop::mcp::FrameLimits::new().max_line_bytes(), 16 * 1024 * 1024);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            max_line_bytes: 16 * 1024 * 1024,
            max_depth: 128,
        }
    }

    /// Sets the largest line, in bytes (the newline not counted).
    ///
    /// ```
    /// let limits = cairnloop::mcp::FrameLimits::new().with_max_line_bytes(4096);
    /// assert_eq!(limits.max_line_bytes(), 4096);
    /// ```
    #[must_use]
    pub const fn with_max_line_bytes(self, max_line_bytes: usize) -> Self {
        Self {
            max_line_bytes,
            ..self
        }
    }

    /// Sets the deepest nesting, capped at 128: the JSON parser refuses deeper input.
    ///
    /// ```
    /// let limits = cairnloop::mcp::FrameLimits::new().with_max_depth(1000);
    /// assert_eq!(limits.max_depth(), 128);
    /// ```
    #[must_use]
    pub const fn with_max_depth(self, max_depth: usize) -> Self {
        let max_depth = if max_depth > 128 { 128 } else { max_depth };
        Self { max_depth, ..self }
    }

    /// The largest line, in bytes.
    ///
    /// ```
    /// assert_eq!(cairnloop::mcp::FrameLimits::default().max_line_bytes(), 16 << 20);
    /// ```
    #[must_use]
    pub const fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// The deepest nesting.
    ///
    /// ```
    /// assert_eq!(cairnloop::mcp::FrameLimits::default().max_depth(), 128);
    /// ```
    #[must_use]
    pub const fn max_depth(&self) -> usize {
        self.max_depth
    }
}

impl Default for FrameLimits {
    fn default() -> Self {
        Self::new()
    }
}

/// The text of a `tools/call`'s `arguments`, exactly as the client sent it, attached to
/// the request for the handler: the strict decoder sees duplicate keys and numbers that
/// a parsed map has already lost.
#[derive(Clone, Debug)]
pub(crate) struct RawArguments(pub(crate) String);

/// What to do with one line.
pub(crate) enum Frame {
    /// Hand it to rmcp.
    Message(ClientJsonRpcMessage),
    /// Answer it with this error and hand nothing on.
    Reply(ServerJsonRpcMessage),
    /// Nothing to hand on, nothing to answer (a blank line, a bad notification).
    Skip(Option<String>),
}

/// The error for a line over the size limit, with the id when its first bytes show it.
pub(crate) fn oversized(prefix: &[u8], limits: &FrameLimits) -> Frame {
    Frame::Reply(ServerJsonRpcMessage::error(
        ErrorData::invalid_request(
            format!(
                "message larger than {} bytes; nothing was done",
                limits.max_line_bytes
            ),
            None,
        ),
        scan(prefix).id,
    ))
}

/// A line without a `\r` before its (removed) newline, and without a leading byte order
/// mark.
pub(crate) fn without_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// Judges one complete line (without its newline).
pub(crate) fn judge(line: &[u8], limits: &FrameLimits) -> Frame {
    let line = without_line_end(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Frame::Skip(None);
    }
    let Ok(text) = core::str::from_utf8(line) else {
        return parse_error("the message is not UTF-8");
    };
    at_once(text, limits).unwrap_or_else(|| slowly(text, limits))
}

/// Judges a line field by field, for the exact error of one that is not well formed.
fn slowly(text: &str, limits: &FrameLimits) -> Frame {
    let shape = scan(text.as_bytes());
    if shape.depth > limits.max_depth {
        return Frame::Reply(ServerJsonRpcMessage::error(
            ErrorData::invalid_request(
                format!(
                    "message nested deeper than {} levels; nothing was done",
                    limits.max_depth
                ),
                None,
            ),
            shape.id,
        ));
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => return parse_error(&format!("the message is not JSON: {error}")),
    };
    let Value::Object(object) = &value else {
        return invalid_request("a message must be a JSON object", None);
    };
    let id = match object.get("id") {
        None => None,
        Some(id) => match serde_json::from_value::<RequestId>(id.clone()) {
            Ok(id) => Some(id),
            Err(_) => return invalid_request("`id` must be a string or an integer", None),
        },
    };
    if let Some(method) = object.get("method") {
        let Some(method) = method.as_str() else {
            return answer_or_skip(
                id,
                ErrorData::invalid_request("`method` must be a string", None),
            );
        };
        if let Some(params) = object.get("params")
            && !params.is_object()
        {
            return answer_or_skip(
                id,
                ErrorData::invalid_params(format!("`params` of {method} must be an object"), None),
            );
        }
        if method == "tools/call" {
            return call(text, value, id);
        }
    }
    into_message(value, id)
}

/// The way a well-formed line goes: one borrowed read of its envelope (the method, and
/// the raw text of its parameters) and one read of the message itself. `None` for a line
/// it does not accept as it stands, which is judged again the slow way, for its exact
/// error: what is accepted here is what the slow way accepts.
fn at_once(text: &str, limits: &FrameLimits) -> Option<Frame> {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow, default)]
        method: Option<alloc::borrow::Cow<'a, str>>,
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow, default)]
        name: Option<&'a RawValue>,
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
    }
    // Past 128 levels the parser refuses the line itself; a lower limit is counted here.
    if limits.max_depth < 128 && scan(text.as_bytes()).depth > limits.max_depth {
        return None;
    }
    let envelope: Envelope<'_> = serde_json::from_str(text).ok()?;
    let params = envelope.params.map(RawValue::get);
    if params.is_some_and(|params| !params.starts_with('{')) {
        return None;
    }
    let raw = if envelope.method.as_deref() == Some("tools/call") {
        let params: Params<'_> = serde_json::from_str(params?).ok()?;
        if !params.name?.get().starts_with('"') {
            return None;
        }
        match params.arguments.map(RawValue::get) {
            Some(raw) if !raw.starts_with('{') => return None,
            raw => Some(raw.unwrap_or("{}").to_owned()),
        }
    } else {
        None
    };
    let mut message: ClientJsonRpcMessage = serde_json::from_str(text).ok()?;
    if let Some(raw) = raw
        && let ClientJsonRpcMessage::Request(request) = &mut message
        && let ClientRequest::CallToolRequest(call) = &mut request.request
    {
        call.extensions_mut().insert(RawArguments(raw));
    }
    Some(Frame::Message(message))
}

/// A `tools/call`: its arguments must be an object, and their text goes along.
fn call(text: &str, value: Value, id: Option<RequestId>) -> Frame {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow, default)]
        params: Option<Params<'a>>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
    }
    // A call names its tool with a string; without one it is a call with bad params
    // (`-32602`), not a method the server lacks, which is what rmcp would answer.
    match value.get("params").and_then(|params| params.get("name")) {
        Some(Value::String(_)) => {}
        Some(_) => {
            return answer_or_skip(
                id,
                ErrorData::invalid_params("`name` of tools/call must be a string", None),
            );
        }
        None => {
            return answer_or_skip(
                id,
                ErrorData::invalid_params("tools/call needs a `name`", None),
            );
        }
    }
    let raw = match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(envelope) => envelope
            .params
            .and_then(|params| params.arguments)
            .map(RawValue::get),
        Err(error) => {
            return answer_or_skip(
                id,
                ErrorData::invalid_params(format!("malformed tools/call: {error}"), None),
            );
        }
    };
    if let Some(raw) = raw
        && !raw.trim_start().starts_with('{')
    {
        return answer_or_skip(
            id,
            ErrorData::invalid_params("`arguments` of tools/call must be an object", None),
        );
    }
    let raw = raw.unwrap_or("{}").to_owned();
    match into_message(value, id) {
        Frame::Message(mut message) => {
            if let ClientJsonRpcMessage::Request(request) = &mut message
                && let ClientRequest::CallToolRequest(call) = &mut request.request
            {
                call.extensions_mut().insert(RawArguments(raw));
            }
            Frame::Message(message)
        }
        other => other,
    }
}

fn into_message(value: Value, id: Option<RequestId>) -> Frame {
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(message) => Frame::Message(message),
        Err(error) => answer_or_skip(
            id,
            ErrorData::invalid_request(format!("not a valid MCP message: {error}"), None),
        ),
    }
}

/// A request gets the error; a notification cannot be answered, so it is skipped with
/// the reason (for the log).
fn answer_or_skip(id: Option<RequestId>, error: ErrorData) -> Frame {
    match id {
        Some(id) => Frame::Reply(ServerJsonRpcMessage::error(error, Some(id))),
        None => Frame::Skip(Some(error.message.into_owned())),
    }
}

fn invalid_request(message: &str, id: Option<RequestId>) -> Frame {
    Frame::Reply(ServerJsonRpcMessage::error(
        ErrorData::invalid_request(message.to_owned(), None),
        id,
    ))
}

fn parse_error(message: &str) -> Frame {
    Frame::Reply(ServerJsonRpcMessage::error(
        ErrorData::new(ErrorCode::PARSE_ERROR, message.to_owned(), None),
        None,
    ))
}

/// What a scan of a line shows without parsing it: how deep it nests, and the `id` of
/// its top-level object when that is a plain string or integer.
struct Shape {
    depth: usize,
    id: Option<RequestId>,
}

/// Whether a line's arrays and objects nest deeper than `most`, the envelope included:
/// one quick pass that reads nothing else, and stops at the first level past `most`.
pub(crate) fn nests_deeper_than(line: &[u8], most: usize) -> bool {
    // A line cannot nest deeper than it has brackets that open: found many bytes at a
    // time, which settles most lines.
    if memchr::memchr2_iter(b'{', b'[', line)
        .take(most.saturating_add(1))
        .count()
        <= most
    {
        return false;
    }
    let mut depth = 0usize;
    let mut bytes = line.iter();
    while let Some(&byte) = bytes.next() {
        match byte {
            b'"' => {
                // To the string's end: its brackets do not nest.
                while let Some(&inner) = bytes.next() {
                    match inner {
                        b'\\' => {
                            bytes.next();
                        }
                        b'"' => break,
                        _ => {}
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > most {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// One pass over the bytes: depth is counted outside strings, and the top-level `id`
/// is read where it stands. A truncated line (the prefix of an oversized one) is fine.
fn scan(line: &[u8]) -> Shape {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    let mut string_start = 0;
    let mut expecting_key = false;
    let mut last_key: Option<(usize, usize)> = None;
    let mut id_value: Option<usize> = None;
    let mut id = None;
    for (at, &byte) in line.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
                if depth == 1 && expecting_key {
                    last_key = Some((string_start, at));
                    expecting_key = false;
                }
            }
            continue;
        }
        match byte {
            b'"' => {
                in_string = true;
                string_start = at + 1;
            }
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
                if depth == 1 {
                    expecting_key = byte == b'{';
                }
            }
            b'}' | b']' | b',' => {
                if depth == 1
                    && let Some(start) = id_value.take()
                    && id.is_none()
                {
                    id = serde_json::from_slice::<RequestId>(line[start..at].trim_ascii()).ok();
                }
                if byte == b',' {
                    expecting_key = depth == 1;
                } else {
                    depth = depth.saturating_sub(1);
                }
            }
            // Every key is taken at its colon; only `id` marks where its value starts.
            b':' if depth == 1
                && last_key
                    .take()
                    .is_some_and(|(from, to)| &line[from..to] == b"id") =>
            {
                id_value = Some(at + 1);
            }
            _ => {}
        }
    }
    Shape { depth: deepest, id }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(line: &str) -> Option<RequestId> {
        scan(line.as_bytes()).id
    }

    #[test]
    fn the_scan_finds_the_top_level_id_only() {
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            id_of(r#"{"params":{"id":1},"id" : "a\"b" }"#),
            Some(RequestId::String("a\"b".into()))
        );
        assert_eq!(id_of(r#"{"params":{"id":1}}"#), None);
        assert_eq!(id_of(r#"{"x":"\"id\":3","y":1}"#), None);
        // The prefix of an oversized line: the id came before the cut.
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":12,"params":{"a":"xxxx"#),
            Some(RequestId::Number(12))
        );
    }

    proptest::proptest! {
        /// Any bytes at all: an answer or a message, never a panic.
        #[test]
        fn any_line_is_judged_without_panicking(
            line in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        ) {
            let _ = judge(&line, &FrameLimits::new().with_max_depth(8));
            let _ = oversized(&line, &FrameLimits::new());
        }

        /// Whatever the quick read accepts, the slow one makes the same message of, with
        /// the same arguments' text.
        #[test]
        fn the_quick_read_agrees_with_the_slow_one(
            method in r#"(tools/call|tools/list|ping|notifications/initialized|x)"#,
            id in r#"(|"id":1,|"id":"a",|"id":1.5,|"id":null,|"id":\[\],)"#,
            name in r#"(|"name":"t",|"name":7,|"name":"t","name":"u",)"#,
            arguments in r#"(|"arguments":\{\},|"arguments":\{"a":1,"a":2\},|"arguments":\[\],|"arguments":null,)"#,
            params in 0u8..3,
        ) {
            let params = match params {
                0 => String::new(),
                1 => format!(r#","params":{{{name}{arguments}"_":0}}"#),
                _ => String::from(r#","params":[1]"#),
            };
            let line = format!(r#"{{{id}"jsonrpc":"2.0","method":"{method}"{params}}}"#);
            if let Some(quick) = at_once(&line, &FrameLimits::new()) {
                let slow = slowly(&line, &FrameLimits::new());
                proptest::prop_assert_eq!(shown(&quick), shown(&slow), "{}", line);
                proptest::prop_assert_eq!(raw_arguments(&quick), raw_arguments(&slow), "{}", line);
            }
        }

        /// The id the scan reads is the id a JSON parser reads, wherever it stands among
        /// other keys, whatever the strings around it hold.
        #[test]
        fn the_scan_reads_the_id_a_parser_reads(
            before in r#"[a-z\\"{}\[\],:]{0,12}"#,
            after in r#"[a-z\\"{}\[\],:]{0,12}"#,
            number in 0u32..1000,
            text in r#"[a-z\\"]{0,8}"#,
            as_text in proptest::prelude::any::<bool>(),
        ) {
            use alloc::string::ToString;
            let id = if as_text { Value::from(text) } else { Value::from(number) };
            let line = serde_json::json!({ "a": { "id": 5, "s": before }, "id": id, "z": after })
                .to_string();
            let expected = serde_json::from_value::<RequestId>(id).ok();
            proptest::prop_assert_eq!(scan(line.as_bytes()).id, expected, "{}", line);
        }
    }

    /// The error a line is answered with, and the id it carries.
    fn reply_of(line: &str) -> (i32, Option<RequestId>) {
        let Frame::Reply(ServerJsonRpcMessage::Error(error)) =
            judge(line.as_bytes(), &FrameLimits::new())
        else {
            panic!("{line} was not answered with an error");
        };
        (error.error.code.0, error.id)
    }

    #[test]
    fn a_call_without_a_string_name_is_invalid_params_with_its_id() {
        for line in [
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":null}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":["a"]}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#,
        ] {
            assert_eq!(
                reply_of(line),
                (-32602, Some(RequestId::Number(4))),
                "{line}"
            );
        }
    }

    /// What a judged line comes to, to compare the two ways.
    fn shown(frame: &Frame) -> String {
        match frame {
            Frame::Message(message) => format!("{:?}", serde_json::to_value(message).ok()),
            Frame::Reply(reply) => format!("reply {:?}", serde_json::to_value(reply).ok()),
            Frame::Skip(why) => format!("skip {why:?}"),
        }
    }

    fn raw_arguments(frame: &Frame) -> Option<String> {
        match frame {
            Frame::Message(ClientJsonRpcMessage::Request(request)) => match &request.request {
                ClientRequest::CallToolRequest(call) => call
                    .extensions()
                    .get::<RawArguments>()
                    .map(|raw| raw.0.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    #[test]
    fn the_quick_read_takes_what_the_slow_one_takes_and_the_same_arguments() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"refund","arguments":{"amount":1.50,"order":"A\u0041"}}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"r","arguments":{"a":1,"a":2}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"r"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
        ] {
            let quick = at_once(line, &FrameLimits::new()).expect(line);
            let slow = slowly(line, &FrameLimits::new());
            assert!(matches!(quick, Frame::Message(_)), "{line}");
            assert_eq!(raw_arguments(&quick), raw_arguments(&slow), "{line}");
            assert_eq!(shown(&quick), shown(&slow), "{line}");
        }
        // What the quick read leaves to the slow one, for its exact error.
        for line in [
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"r","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":4.5,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","method":"ping"}"#,
            r#"[1]"#,
            r#"{"#,
        ] {
            assert!(at_once(line, &FrameLimits::new()).is_none(), "{line}");
        }
        let deep = format!("{}{}", "[".repeat(9), "]".repeat(9));
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"a":{deep}}}}}"#);
        assert!(at_once(&line, &FrameLimits::new().with_max_depth(8)).is_none());
    }

    #[test]
    fn the_scan_counts_depth_outside_strings() {
        assert_eq!(scan(b"{\"a\":[[{}]]}").depth, 4);
        assert_eq!(scan(b"{\"a\":\"[[[[\"}").depth, 1);
    }

    #[test]
    fn the_quick_depth_check_counts_only_outside_strings() {
        // (line, its depth counted by hand)
        for (line, depth) in [
            (r#"{"a":[[{}]]}"#, 4),
            (r#"{"a":"[[[["}"#, 1),
            (r#"{"a":"\"[[","b":[1]}"#, 2),
            (r#"{"a":"\\","b":[[2]]}"#, 3),
            (r#"{"a":{"b":{}},"c":[[],[[]]]}"#, 4),
            (r#"[]"#, 1),
            ("7", 0),
        ] {
            assert!(!nests_deeper_than(line.as_bytes(), depth), "{line}");
            if depth > 0 {
                assert!(nests_deeper_than(line.as_bytes(), depth - 1), "{line}");
            }
        }
    }
}
