//! A task: the handle an MCP client follows while its call waits for a person (the Tasks
//! extension). The lane decides; the task only names the lane, its owner and what the
//! client was asked.

use alloc::string::String;

use crate::declare::IdempotencyKey;
use crate::gate::Timestamp;

/// How long a task id is: 32 lowercase hexadecimal digits, 128 random bits.
pub const TASK_ID_LEN: usize = 32;

/// A task's id: 128 random bits as 32 lowercase hexadecimal digits, made by the server that
/// opens the task. Unguessable, so that knowing one task tells nothing of another; read
/// from a request only through [`TaskId::parse`], which refuses anything else.
///
/// ```
/// use cairnloop::approvals::TaskId;
///
/// let id = TaskId::from_random([7; 16]);
/// assert_eq!(id.as_str(), "07070707070707070707070707070707");
/// assert_eq!(TaskId::parse(id.as_str()), Some(id));
/// assert_eq!(TaskId::parse("07070707"), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(String);

impl TaskId {
    /// The id of 16 random bytes (from the operating system's generator; the caller's
    /// duty).
    ///
    /// ```
    /// let id = cairnloop::approvals::TaskId::from_random([0xab; 16]);
    /// assert_eq!(id.as_str().len(), 32);
    /// ```
    #[must_use]
    pub fn from_random(bytes: [u8; 16]) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = String::with_capacity(TASK_ID_LEN);
        for byte in bytes {
            text.push(char::from(HEX[usize::from(byte >> 4)]));
            text.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        Self(text)
    }

    /// The id written in `text`, or `None` for anything but 32 lowercase hexadecimal
    /// digits (an idempotency key, a longer or shorter text, upper case).
    ///
    /// ```
    /// use cairnloop::approvals::TaskId;
    ///
    /// assert!(TaskId::parse("0123456789abcdef0123456789abcdef").is_some());
    /// assert!(TaskId::parse("0123456789ABCDEF0123456789ABCDEF").is_none());
    /// ```
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        (text.len() == TASK_ID_LEN && text.bytes().all(hex)).then(|| Self(text.into()))
    }

    /// The id as text.
    ///
    /// ```
    /// let id = cairnloop::approvals::TaskId::from_random([0; 16]);
    /// assert_eq!(id.as_str(), "00000000000000000000000000000000");
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl core::fmt::Display for TaskId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a store keeps of a task: its id, the lane it follows, who may follow it, when it
/// was opened, and how many questions (input requests) it has put to the client.
///
/// The owner is the server's binding of the caller that opened the task (its actor,
/// account and the person or token subject); a request from anyone else is answered as
/// for an unknown task.
///
/// ```
/// use cairnloop::approvals::{TaskId, TaskRecord};
/// use cairnloop::gate::Timestamp;
/// use cairnloop::IdempotencyKey;
///
/// let key = IdempotencyKey::from_bytes([1; 32]);
/// let task = TaskRecord::new(TaskId::from_random([2; 16]), key, "agent-7", Timestamp::from_unix_millis(0));
/// assert_eq!(task.lane(), key);
/// assert_eq!(task.owner(), "agent-7");
/// assert_eq!(task.inputs_issued(), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    id: TaskId,
    lane: IdempotencyKey,
    owner: String,
    opened_at: Timestamp,
    inputs_issued: u32,
}

impl TaskRecord {
    /// A task of `lane` for `owner`, opened at `opened_at`, that has asked nothing yet.
    ///
    /// ```
    /// # use cairnloop::approvals::{TaskId, TaskRecord};
    /// # use cairnloop::gate::Timestamp;
    /// let task = TaskRecord::new(
    ///     TaskId::from_random([2; 16]),
    ///     cairnloop::IdempotencyKey::from_bytes([1; 32]),
    ///     "agent-7",
    ///     Timestamp::from_unix_millis(1_000),
    /// );
    /// assert_eq!(task.opened_at(), Timestamp::from_unix_millis(1_000));
    /// ```
    #[must_use]
    pub fn new(
        id: TaskId,
        lane: IdempotencyKey,
        owner: impl Into<String>,
        opened_at: Timestamp,
    ) -> Self {
        Self {
            id,
            lane,
            owner: owner.into(),
            opened_at,
            inputs_issued: 0,
        }
    }

    /// The same record with `issued` questions put to the client so far (a store reading
    /// a record back).
    ///
    /// ```
    /// # use cairnloop::approvals::{TaskId, TaskRecord};
    /// # use cairnloop::gate::Timestamp;
    /// # let task = TaskRecord::new(TaskId::from_random([2; 16]), cairnloop::IdempotencyKey::from_bytes([1; 32]), "a", Timestamp::from_unix_millis(0));
    /// assert_eq!(task.with_inputs_issued(2).inputs_issued(), 2);
    /// ```
    #[must_use]
    pub fn with_inputs_issued(mut self, issued: u32) -> Self {
        self.inputs_issued = issued;
        self
    }

    /// The task's id.
    ///
    /// ```
    /// # use cairnloop::approvals::{TaskId, TaskRecord};
    /// # use cairnloop::gate::Timestamp;
    /// # let task = TaskRecord::new(TaskId::from_random([2; 16]), cairnloop::IdempotencyKey::from_bytes([1; 32]), "a", Timestamp::from_unix_millis(0));
    /// assert_eq!(task.id(), &TaskId::from_random([2; 16]));
    /// ```
    #[must_use]
    pub fn id(&self) -> &TaskId {
        &self.id
    }

    /// The key of the lane the task follows.
    ///
    /// ```
    /// # use cairnloop::approvals::{TaskId, TaskRecord};
    /// # use cairnloop::gate::Timestamp;
    /// # let task = TaskRecord::new(TaskId::from_random([2; 16]), cairnloop::IdempotencyKey::from_bytes([1; 32]), "a", Timestamp::from_unix_millis(0));
    /// assert_eq!(task.lane(), cairnloop::IdempotencyKey::from_bytes([1; 32]));
    /// ```
    #[must_use]
    pub fn lane(&self) -> IdempotencyKey {
        self.lane
    }

    /// Who may follow the task: the server's binding of the caller that opened it.
    ///
    /// ```
    /// # use cairnloop::approvals::{TaskId, TaskRecord};
    /// # use cairnloop::gate::Timestamp;
    /// # let task = TaskRecord::new(TaskId::from_random([2; 16]), cairnloop::IdempotencyKey::from_bytes([1; 32]), "agent-7", Timestamp::from_unix_millis(0));
    /// assert_eq!(task.owner(), "agent-7");
    /// ```
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// When the task was opened.
    ///
    /// ```
    /// # use cairnloop::approvals::{TaskId, TaskRecord};
    /// # use cairnloop::gate::Timestamp;
    /// # let task = TaskRecord::new(TaskId::from_random([2; 16]), cairnloop::IdempotencyKey::from_bytes([1; 32]), "a", Timestamp::from_unix_millis(5));
    /// assert_eq!(task.opened_at().unix_millis(), 5);
    /// ```
    #[must_use]
    pub fn opened_at(&self) -> Timestamp {
        self.opened_at
    }

    /// How many questions the task has put to the client; the next is number this + 1.
    ///
    /// ```
    /// # use cairnloop::approvals::{TaskId, TaskRecord};
    /// # use cairnloop::gate::Timestamp;
    /// # let task = TaskRecord::new(TaskId::from_random([2; 16]), cairnloop::IdempotencyKey::from_bytes([1; 32]), "a", Timestamp::from_unix_millis(0));
    /// assert_eq!(task.inputs_issued(), 0);
    /// ```
    #[must_use]
    pub fn inputs_issued(&self) -> u32 {
        self.inputs_issued
    }
}
