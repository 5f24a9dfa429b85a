use crate::declare::IdempotencyKey;
use crate::device::fixed::FixedText;
use crate::gate::{LaneAction, LaneState, Timestamp, TransitionError};

/// Bytes of canonical arguments a lane holds: the call it binds.
pub const ARGS_BYTES: usize = 40;

/// Bytes of the proposer's id a lane holds.
pub const ID_BYTES: usize = 16;

/// One proposal on a device: the call it binds (tool, canonical arguments, proposer and
/// their key), where it stands, and its times. Moved only by the core's transitions.
///
/// ```
/// # fn f(lane: &cairnloop::device::Lane) {
/// println!("{} {} is {}", lane.code(), lane.args(), lane.state());
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lane {
    key: IdempotencyKey,
    tool: u8,
    args: FixedText<ARGS_BYTES>,
    proposer: FixedText<ID_BYTES>,
    state: LaneState,
    expires_at: Timestamp,
    updated_at: Timestamp,
}

impl Lane {
    pub(crate) const fn open(
        key: IdempotencyKey,
        tool: u8,
        args: FixedText<ARGS_BYTES>,
        proposer: FixedText<ID_BYTES>,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Self {
        Self {
            key,
            tool,
            args,
            proposer,
            state: LaneState::Pending,
            expires_at,
            updated_at: now,
        }
    }

    /// The call's idempotency key: the key a host computes for the same call.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::device::Lane) -> String { lane.key().to_string() }
    /// ```
    #[must_use]
    pub const fn key(&self) -> &IdempotencyKey {
        &self.key
    }

    /// The code an operator quotes to approve this call: the key's first four bytes.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::device::Lane) -> String { format!("{:08x}", lane.code()) }
    /// ```
    #[must_use]
    pub fn code(&self) -> u32 {
        crate::device::key::code_of(&self.key)
    }

    /// The position of the tool in the device's registry.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::device::Lane) -> usize { lane.tool() }
    /// ```
    #[must_use]
    pub const fn tool(&self) -> usize {
        self.tool as usize
    }

    /// The call's arguments as canonical JSON.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::device::Lane) -> &str { lane.args() }
    /// ```
    #[must_use]
    pub fn args(&self) -> &str {
        self.args.as_str()
    }

    /// Who proposed the call.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::device::Lane) -> &str { lane.proposer() }
    /// ```
    #[must_use]
    pub fn proposer(&self) -> &str {
        self.proposer.as_str()
    }

    /// Where the lane stands.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::device::Lane) -> bool { lane.state().is_terminal() }
    /// ```
    #[must_use]
    pub const fn state(&self) -> LaneState {
        self.state
    }

    /// When the proposal (or its approval) expires.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::device::Lane) -> u64 { lane.expires_at().unix_millis() }
    /// ```
    #[must_use]
    pub const fn expires_at(&self) -> Timestamp {
        self.expires_at
    }

    /// When the lane last moved.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::device::Lane) -> u64 { lane.updated_at().unix_millis() }
    /// ```
    #[must_use]
    pub const fn updated_at(&self) -> Timestamp {
        self.updated_at
    }

    /// Moves the lane by the core's lifecycle; a move it does not allow changes nothing.
    pub(crate) fn apply(
        &mut self,
        action: LaneAction,
        now: Timestamp,
    ) -> Result<LaneState, TransitionError> {
        self.state = self.state.apply(action)?;
        self.updated_at = now;
        Ok(self.state)
    }
}

/// A fixed number of lanes, with no heap. A new proposal takes a free slot, else the
/// slot of the terminal lane that moved longest ago; when every lane is live the table
/// is full and the proposal is refused (nothing is evicted that a person may still
/// decide or that may still run).
///
/// ```
/// let table = cairnloop::device::LaneTable::<8>::new();
/// assert_eq!(table.iter().count(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct LaneTable<const N: usize> {
    lanes: [Option<Lane>; N],
}

impl<const N: usize> LaneTable<N> {
    /// An empty table.
    ///
    /// ```
    /// assert!(cairnloop::device::LaneTable::<2>::new().get(0).is_none());
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self { lanes: [None; N] }
    }

    /// The lane in `slot`.
    ///
    /// ```
    /// assert!(cairnloop::device::LaneTable::<2>::new().get(7).is_none());
    /// ```
    #[must_use]
    pub fn get(&self, slot: usize) -> Option<&Lane> {
        self.lanes.get(slot)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, slot: usize) -> Option<&mut Lane> {
        self.lanes.get_mut(slot)?.as_mut()
    }

    /// Every lane with its slot.
    ///
    /// ```
    /// # let table = cairnloop::device::LaneTable::<2>::new();
    /// for (slot, lane) in table.iter() { println!("{slot}: {}", lane.state()); }
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Lane)> {
        self.lanes
            .iter()
            .enumerate()
            .filter_map(|(slot, lane)| Some((slot, lane.as_ref()?)))
    }

    /// The slot of the lane with `key`.
    pub(crate) fn find(&self, key: &IdempotencyKey) -> Option<usize> {
        self.iter()
            .find(|(_, lane)| lane.key == *key)
            .map(|(slot, _)| slot)
    }

    /// Puts `lane` in a free slot, or in place of the terminal lane that moved longest
    /// ago; `None` when every lane is live.
    pub(crate) fn insert(&mut self, lane: Lane) -> Option<usize> {
        let slot = self.lanes.iter().position(Option::is_none).or_else(|| {
            self.iter()
                .filter(|(_, lane)| lane.state.is_terminal())
                .min_by_key(|(_, lane)| lane.updated_at)
                .map(|(slot, _)| slot)
        })?;
        *self.lanes.get_mut(slot)? = Some(lane);
        Some(slot)
    }
}

impl<const N: usize> Default for LaneTable<N> {
    fn default() -> Self {
        Self::new()
    }
}
