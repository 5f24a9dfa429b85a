//! Calls sent to an upstream's process beside rmcp's client, on the same pipes: each
//! under an id of the gateway's own, its answer's line handed back whole by the reader
//! and decoded once, where rmcp would decode every message into its model and the result
//! again into JSON. rmcp keeps the handshake, the listing and the notifications.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use cairnloop::mcp::LineSink;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

/// What a direct call's id starts with: rmcp's own ids are numbers, so the two never meet.
const ID_PREFIX: &str = "cairnloop-direct-";

/// How often, at most, overdue calls are looked for: a call is given up on at most this
/// long after its time is up.
const OVERDUE_GRAIN: Duration = Duration::from_millis(50);

/// The direct calls of one connection: the ones waiting for their answer, and the way
/// to the process's input.
///
/// Each call may wait `timeout` for its answer. One task per connection gives up on the
/// calls whose time is up, instead of a timer per call: it sleeps until the oldest
/// call's time (the times come in the order the calls were sent), and, with no call
/// waiting, until one is sent.
pub(crate) struct Direct {
    next: AtomicU64,
    /// `None` once the connection has ended: no call waits on it any more. By id, which
    /// counts up as calls are sent: the first is the first due.
    waiting: Mutex<Option<Waiting>>,
    input: LineSink,
    timeout: Duration,
    /// Whether the task that gives up on overdue calls waits for a call to be sent.
    idle: AtomicBool,
    /// Wakes that task: a call was sent while it was idle, or the connection ended.
    wake: Arc<Notify>,
}

/// A call waiting for its answer, and when it is given up on.
struct Waiter {
    due: Instant,
    answer: oneshot::Sender<Result<Read, Unanswered>>,
}

type Waiting = BTreeMap<u64, Waiter>;

/// Why a direct call has no answer.
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// The connection ended before it was sent.
    Closed,
    /// The connection ended while it waited.
    WentAway,
    /// It waited longer than its timeout; the upstream was told to stop.
    Overdue,
}

impl Direct {
    /// The direct calls written to `input`, each waiting at most `timeout`; starts the
    /// task that gives up on overdue ones (inside a tokio runtime), which ends with the
    /// connection.
    pub(crate) fn start(input: LineSink, timeout: Duration) -> Arc<Self> {
        let direct = Arc::new(Self {
            next: AtomicU64::new(1),
            waiting: Mutex::new(Some(BTreeMap::new())),
            input,
            timeout,
            idle: AtomicBool::new(false),
            wake: Arc::new(Notify::new()),
        });
        tokio::spawn(give_up_on_overdue(
            Arc::downgrade(&direct),
            Arc::clone(&direct.wake),
        ));
        direct
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Option<Waiting>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Gives up on the calls due by `now`, telling each and the upstream; the time the
    /// next one is due, or `Ok(None)` (having marked the task idle) when none waits.
    /// `Err` once the connection has ended.
    fn end_overdue(&self, now: Instant) -> Result<Option<Instant>, ()> {
        let mut overdue = Vec::new();
        let next = {
            let mut waiting = self.waiting();
            let waiting = waiting.as_mut().ok_or(())?;
            // Each call waits as long, and ids count up as calls are sent: the first ones
            // are the first due.
            while let Some(entry) = waiting.first_entry()
                && entry.get().due <= now
            {
                let (id, waiter) = entry.remove_entry();
                let _ = waiter.answer.send(Err(Unanswered::Overdue));
                overdue.push(id);
            }
            let next = waiting.values().next().map(|waiter| waiter.due);
            if next.is_none() {
                // Under the lock: a call sent after this sees the flag and wakes the task.
                self.idle.store(true, Ordering::Release);
            }
            next
        };
        for id in overdue {
            self.tell_cancelled(id);
        }
        Ok(next)
    }

    /// Tells the upstream that call `id` was given up on, as rmcp's client tells it.
    fn tell_cancelled(&self, id: u64) {
        let mut line = serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {
                "requestId": format!("{ID_PREFIX}{id}"),
                "reason": "the gateway gave up on the call",
            },
        }))
        .unwrap_or_default();
        line.push(b'\n');
        let _ = self.input.send(line);
    }

    /// Sends a `tools/call` of `tool` with `arguments`; the returned call waits for its
    /// answer's line, at most the connection's timeout, and tells the upstream to stop
    /// (`notifications/cancelled`) when it is dropped unanswered or its time is up.
    pub(crate) fn call(&self, tool: &str, arguments: &Value) -> Result<DirectCall<'_>, Unanswered> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        let due = Instant::now() + self.timeout;
        self.waiting()
            .as_mut()
            .ok_or(Unanswered::Closed)?
            .insert(id, Waiter { due, answer });
        if self.idle.swap(false, Ordering::AcqRel) {
            self.wake.notify_one();
        }
        let call = DirectCall {
            direct: self,
            id,
            answered: Some(answered),
        };
        let line = request_line(id, tool, arguments).map_err(|_| Unanswered::Closed)?;
        self.input.send(line).map_err(|_| Unanswered::Closed)?;
        Ok(call)
    }

    /// Hands what `line` says to the direct call it answers, and says whether it was
    /// one: the answer of a call given up on is dropped here too. The line is read once.
    pub(crate) fn take(&self, line: &[u8]) -> bool {
        let Some((id, read)) = read_line(line) else {
            return false;
        };
        let waiter = self
            .waiting()
            .as_mut()
            .and_then(|waiting| waiting.remove(&id));
        if let Some(waiter) = waiter {
            let _ = waiter.answer.send(Ok(read));
        }
        true
    }

    /// Whether the connection has ended (its output did, or it was closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.waiting().is_none()
    }

    /// The connection has ended: every call still waiting is told.
    pub(crate) fn close(&self) {
        self.waiting().take();
        // The task that gives up on overdue calls ends too.
        self.wake.notify_one();
    }
}

/// The task that gives up on `direct`'s overdue calls, until its connection ends.
async fn give_up_on_overdue(direct: Weak<Direct>, wake: Arc<Notify>) {
    loop {
        let now = Instant::now();
        let next = match direct.upgrade().map(|direct| direct.end_overdue(now)) {
            Some(Ok(next)) => next,
            None | Some(Err(())) => return,
        };
        match next {
            // Calls due close together are given up on together.
            Some(due) => tokio::time::sleep_until(due.max(now + OVERDUE_GRAIN)).await,
            None => wake.notified().await,
        }
    }
}

/// The line of a `tools/call` under our id `id`, written straight from its parts.
fn request_line(id: u64, tool: &str, arguments: &Value) -> serde_json::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(128 + tool.len());
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":""#);
    line.extend_from_slice(ID_PREFIX.as_bytes());
    std::io::Write::write_fmt(&mut line, format_args!("{id}")).map_err(serde_json::Error::io)?;
    line.extend_from_slice(br#"","method":"tools/call","params":{"name":"#);
    serde_json::to_writer(&mut line, tool)?;
    line.extend_from_slice(br#","arguments":"#);
    serde_json::to_writer(&mut line, arguments)?;
    line.extend_from_slice(b"}}\n");
    Ok(line)
}

/// What an answer says: the call's result, as the upstream wrote it, or its error's
/// message; or why it does not read.
pub(crate) type Read = Result<Answer, String>;

/// The id of the direct call that `line` answers (a response, no `method`, whose `id` is
/// one of ours), and what it says: read in one pass, the result kept as its text.
fn read_line(line: &[u8]) -> Option<(u64, Read)> {
    #[derive(Deserialize)]
    struct Line<'a> {
        // Ours are strings without escapes: any other id (rmcp's are numbers) fails the
        // line, which is then not ours.
        id: Option<&'a str>,
        method: Option<serde::de::IgnoredAny>,
        #[serde(borrow)]
        result: Option<&'a RawValue>,
        error: Option<ErrorBody>,
    }
    #[derive(Deserialize)]
    struct ErrorBody {
        message: String,
    }
    // Checked as Unicode once: read from bytes, each string would be checked on its own.
    let read: Line<'_> = serde_json::from_str(std::str::from_utf8(line).ok()?).ok()?;
    if read.method.is_some() {
        return None;
    }
    let id = read.id?.strip_prefix(ID_PREFIX)?;
    let id = id.parse().ok()?;
    let answer = match (read.result, read.error) {
        // Kept as text: most results are handed on as they came.
        (Some(result), None) => Ok(Answer::Result(result.to_owned())),
        (None, Some(error)) => Ok(Answer::Refused(error.message)),
        _ => Err("the answer has neither one result nor one error".into()),
    };
    Some((id, answer))
}

/// One direct call waiting for its answer.
pub(crate) struct DirectCall<'a> {
    direct: &'a Direct,
    id: u64,
    answered: Option<oneshot::Receiver<Result<Read, Unanswered>>>,
}

impl DirectCall<'_> {
    /// What the line that answers it says.
    pub(crate) async fn answer(mut self) -> Result<Read, Unanswered> {
        let answered = self.answered.as_mut().ok_or(Unanswered::WentAway)?;
        let read = answered.await.map_err(|_| Unanswered::WentAway);
        self.answered = None;
        read?
    }
}

impl Drop for DirectCall<'_> {
    fn drop(&mut self) {
        if self.answered.is_none() {
            return;
        }
        // Given up on (the client cancelling): forgotten here, and the upstream told.
        let forgotten = self
            .direct
            .waiting()
            .as_mut()
            .and_then(|waiting| waiting.remove(&self.id));
        if forgotten.is_some() {
            self.direct.tell_cancelled(self.id);
        }
    }
}

/// What an answer says.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The result's text, as the upstream wrote it.
    Result(Box<RawValue>),
    /// An error answer: the upstream refused the call.
    Refused(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(line: &[u8]) -> Option<u64> {
        read_line(line).map(|(id, _)| id)
    }

    fn read_answer(line: &[u8]) -> Read {
        read_line(line).expect("one of ours").1
    }

    #[test]
    fn only_a_response_with_one_of_our_ids_is_taken() {
        assert_eq!(
            id_of(br#"{"jsonrpc":"2.0","id":"cairnloop-direct-42","result":{}}"#),
            Some(42)
        );
        // The id after the result, as a server may write it.
        assert_eq!(
            id_of(br#"{"result":{"content":[]},"jsonrpc":"2.0","id":"cairnloop-direct-7"}"#),
            Some(7)
        );
        for other in [
            &br#"{"jsonrpc":"2.0","id":42,"result":{}}"#[..],
            br#"{"jsonrpc":"2.0","id":"cairnloop-direct-1","method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":"cairnloop-direct-x","result":{}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            b"not json",
        ] {
            assert_eq!(id_of(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn a_request_line_is_one_json_rpc_call() {
        let line = request_line(3, "read \"x\"", &serde_json::json!({ "path": "a\nb" })).unwrap();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|&&byte| byte == b'\n').count(), 1);
        let sent: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            sent,
            serde_json::json!({
                "jsonrpc": "2.0",
                "id": "cairnloop-direct-3",
                "method": "tools/call",
                "params": { "name": "read \"x\"", "arguments": { "path": "a\nb" } },
            })
        );
    }

    #[test]
    fn an_answer_is_its_result_or_its_error() {
        let line = br#"{"jsonrpc":"2.0","id":"cairnloop-direct-1","result":{"content":[]}}"#;
        assert!(
            matches!(read_answer(line), Ok(Answer::Result(text)) if text.get() == r#"{"content":[]}"#)
        );
        let line = br#"{"jsonrpc":"2.0","id":"cairnloop-direct-1","error":{"code":-32602,"message":"no such tool"}}"#;
        assert!(
            matches!(read_answer(line), Ok(Answer::Refused(message)) if message == "no such tool")
        );
        assert!(read_answer(br#"{"jsonrpc":"2.0","id":"cairnloop-direct-1"}"#).is_err());
    }

    /// The next line the process would read.
    async fn next_line(written: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> Value {
        use tokio::io::AsyncBufReadExt;
        let mut line = String::new();
        written.read_line(&mut line).await.unwrap();
        serde_json::from_str(&line).unwrap()
    }

    #[tokio::test]
    async fn a_call_given_up_on_tells_the_upstream_and_its_late_answer_is_dropped() {
        let (written, input) = tokio::io::duplex(1 << 12);
        let mut written = tokio::io::BufReader::new(written);
        let direct = Direct::start(LineSink::new(input), Duration::from_secs(60));
        let call = direct
            .call("read", &serde_json::json!({ "path": "a" }))
            .unwrap();
        let sent = next_line(&mut written).await;
        assert_eq!(sent["id"], "cairnloop-direct-1");
        assert_eq!(sent["params"]["name"], "read");
        drop(call);
        let told = next_line(&mut written).await;
        assert_eq!(told["method"], "notifications/cancelled");
        assert_eq!(told["params"]["requestId"], "cairnloop-direct-1");
        // Its answer, arriving after, is still recognised (and dropped).
        assert!(direct.take(br#"{"jsonrpc":"2.0","id":"cairnloop-direct-1","result":{}}"#));
    }

    #[tokio::test]
    async fn a_call_past_its_time_is_given_up_on_and_the_upstream_told() {
        let (written, input) = tokio::io::duplex(1 << 12);
        let mut written = tokio::io::BufReader::new(written);
        let direct = Direct::start(LineSink::new(input), Duration::from_millis(100));
        // Twice: the second call is sent after the task that watches the time has gone
        // idle with no call waiting, and must wake it.
        for id in 1..=2 {
            let call = direct.call("read", &serde_json::json!({})).unwrap();
            assert_eq!(
                next_line(&mut written).await["id"],
                format!("cairnloop-direct-{id}")
            );
            let started = Instant::now();
            let answered = tokio::time::timeout(Duration::from_secs(2), call.answer()).await;
            assert!(
                matches!(answered, Ok(Err(Unanswered::Overdue))),
                "call {id}"
            );
            assert!(started.elapsed() >= Duration::from_millis(90), "call {id}");
            let told = next_line(&mut written).await;
            assert_eq!(told["method"], "notifications/cancelled");
            assert_eq!(
                told["params"]["requestId"],
                format!("cairnloop-direct-{id}")
            );
            // Its late answer is still recognised, and dropped.
            let late = format!(r#"{{"jsonrpc":"2.0","id":"cairnloop-direct-{id}","result":{{}}}}"#);
            assert!(direct.take(late.as_bytes()));
        }
        // A call answered in time is not given up on.
        let call = direct.call("read", &serde_json::json!({})).unwrap();
        assert!(direct.take(br#"{"jsonrpc":"2.0","id":"cairnloop-direct-3","result":{}}"#));
        assert!(matches!(call.answer().await, Ok(Ok(Answer::Result(..)))));
    }

    #[tokio::test]
    async fn calls_waiting_when_the_connection_ends_are_told_and_later_ones_refused() {
        let (_written, input) = tokio::io::duplex(1 << 12);
        let direct = Direct::start(LineSink::new(input), Duration::from_secs(60));
        let call = direct.call("read", &serde_json::json!({})).unwrap();
        direct.close();
        // Told at once: a call left waiting would fail this within a second, not hang.
        let answered = tokio::time::timeout(std::time::Duration::from_secs(1), call.answer());
        assert!(matches!(answered.await, Ok(Err(Unanswered::WentAway))));
        assert!(matches!(
            direct.call("read", &serde_json::json!({})),
            Err(Unanswered::Closed)
        ));
    }
}
