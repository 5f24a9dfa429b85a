use crate::gate::{LaneState, Timestamp};

/// Who made a move the audit trail records.
///
/// ```
/// assert_eq!(cairnloop::device::By::Operator.as_str(), "operator");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// The agent's call.
    Agent,
    /// An operator's input at the device.
    Operator,
    /// The clock: an expiry.
    Clock,
}

impl By {
    /// `agent`, `operator` or `clock`.
    ///
    /// ```
    /// assert_eq!(cairnloop::device::By::Clock.as_str(), "clock");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Operator => "operator",
            Self::Clock => "clock",
        }
    }
}

/// What one audit record says.
///
/// ```
/// use cairnloop::device::AuditEvent;
/// let event = AuditEvent::Decided("always_blocked");
/// assert!(matches!(event, AuditEvent::Decided(code) if code == "always_blocked"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditEvent {
    /// The pipeline's answer to a call: `execute`, `await_approval`, or a blocked code.
    Decided(&'static str),
    /// A lane moved (`from` is `None` for a new proposal).
    Moved {
        /// The state before, if the lane existed.
        from: Option<LaneState>,
        /// The state after.
        to: LaneState,
    },
    /// An input was refused before anything moved, with its code.
    Refused(&'static str),
}

/// One record of a device's audit trail.
///
/// ```
/// # fn f(entry: &cairnloop::device::AuditEntry) { println!("#{} at {}", entry.seq(), entry.at()); }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    seq: u32,
    at: Timestamp,
    tool: Option<u8>,
    code: u32,
    by: By,
    event: AuditEvent,
}

impl AuditEntry {
    /// Its sequence number: one more than the record before, never reused.
    ///
    /// ```
    /// # fn f(entry: &cairnloop::device::AuditEntry) -> u32 { entry.seq() }
    /// ```
    #[must_use]
    pub const fn seq(&self) -> u32 {
        self.seq
    }

    /// When it happened.
    ///
    /// ```
    /// # fn f(entry: &cairnloop::device::AuditEntry) -> u64 { entry.at().unix_millis() }
    /// ```
    #[must_use]
    pub const fn at(&self) -> Timestamp {
        self.at
    }

    /// The tool's position in the registry, when the call named a known tool.
    ///
    /// ```
    /// # fn f(entry: &cairnloop::device::AuditEntry) -> Option<usize> { entry.tool() }
    /// ```
    #[must_use]
    pub fn tool(&self) -> Option<usize> {
        self.tool.map(usize::from)
    }

    /// The lane's code (its key's first four bytes), or 0 for a record with no lane.
    ///
    /// ```
    /// # fn f(entry: &cairnloop::device::AuditEntry) -> u32 { entry.code() }
    /// ```
    #[must_use]
    pub const fn code(&self) -> u32 {
        self.code
    }

    /// Who made the move.
    ///
    /// ```
    /// # fn f(entry: &cairnloop::device::AuditEntry) -> &str { entry.by().as_str() }
    /// ```
    #[must_use]
    pub const fn by(&self) -> By {
        self.by
    }

    /// What happened.
    ///
    /// ```
    /// # fn f(entry: &cairnloop::device::AuditEntry) -> cairnloop::device::AuditEvent { entry.event() }
    /// ```
    #[must_use]
    pub const fn event(&self) -> AuditEvent {
        self.event
    }
}

/// The audit trail in a ring of `N` records: the newest `N` are kept, and the count of
/// older ones overwritten is known exactly (sequence numbers have no gaps), so a reader
/// that drains the ring in time loses nothing, and one that does not knows how much it
/// missed.
///
/// ```
/// let ring = cairnloop::device::AuditRing::<4>::new();
/// assert_eq!((ring.iter().count(), ring.dropped()), (0, 0));
/// ```
#[derive(Clone, Debug)]
pub struct AuditRing<const N: usize> {
    entries: [Option<AuditEntry>; N],
    next_seq: u32,
}

impl<const N: usize> AuditRing<N> {
    /// An empty ring.
    ///
    /// ```
    /// assert_eq!(cairnloop::device::AuditRing::<2>::new().next_seq(), 0);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            entries: [None; N],
            next_seq: 0,
        }
    }

    pub(crate) fn record(
        &mut self,
        at: Timestamp,
        tool: Option<usize>,
        code: u32,
        by: By,
        event: AuditEvent,
    ) {
        if N == 0 {
            self.next_seq = self.next_seq.saturating_add(1);
            return;
        }
        let seq = self.next_seq;
        let slot = seq as usize % N;
        if let Some(entry) = self.entries.get_mut(slot) {
            *entry = Some(AuditEntry {
                seq,
                at,
                tool: tool.and_then(|t| u8::try_from(t).ok()),
                code,
                by,
                event,
            });
        }
        self.next_seq = seq.saturating_add(1);
    }

    /// The kept records, oldest first.
    ///
    /// ```
    /// # let ring = cairnloop::device::AuditRing::<2>::new();
    /// for entry in ring.iter() { println!("#{}", entry.seq()); }
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &AuditEntry> {
        let start = if N == 0 {
            0
        } else {
            self.next_seq as usize % N
        };
        let (newer, older) = self.entries.split_at(start.min(N));
        older.iter().chain(newer).flatten()
    }

    /// The sequence number the next record gets: how many were ever recorded.
    ///
    /// ```
    /// assert_eq!(cairnloop::device::AuditRing::<2>::new().next_seq(), 0);
    /// ```
    #[must_use]
    pub const fn next_seq(&self) -> u32 {
        self.next_seq
    }

    /// How many records were overwritten (recorded but no longer kept).
    ///
    /// ```
    /// assert_eq!(cairnloop::device::AuditRing::<2>::new().dropped(), 0);
    /// ```
    #[must_use]
    pub const fn dropped(&self) -> u32 {
        self.next_seq.saturating_sub(N as u32)
    }
}

impl<const N: usize> Default for AuditRing<N> {
    fn default() -> Self {
        Self::new()
    }
}
