use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::str::FromStr;

use crate::approvals::ApprovalLane;
use crate::declare::{IdempotencyKey, ParseError, RiskTier};
use crate::gate::{LaneState, Timestamp};

/// Where a page of lanes ends: the newest-first order's position of its last lane (when
/// it was proposed, then its key), so the next page starts right after it however many
/// lanes come and go meanwhile.
///
/// Its text form, for a link, is the milliseconds, a dash and the key.
///
/// ```
/// use cairnloop::approvals::LaneMark;
///
/// let text = format!("1700000000000-{}", "ab".repeat(32));
/// let mark: LaneMark = text.parse()?;
/// assert_eq!(mark.proposed_at().unix_millis(), 1_700_000_000_000);
/// assert_eq!(mark.to_string(), text);
/// assert!("18446744073709551616-00".parse::<LaneMark>().is_err());
/// # Ok::<(), cairnloop::declare::ParseError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LaneMark {
    proposed_at: Timestamp,
    key: IdempotencyKey,
}

impl LaneMark {
    /// The position of `lane`.
    ///
    /// ```
    /// # fn f(lane: &cairnloop::approvals::ApprovalLane) {
    /// let mark = cairnloop::approvals::LaneMark::of(lane);
    /// assert_eq!(mark.key(), lane.key());
    /// # }
    /// ```
    #[must_use]
    pub fn of(lane: &ApprovalLane) -> Self {
        Self {
            proposed_at: lane.proposed_at(),
            key: lane.key(),
        }
    }

    /// A position from its parts.
    ///
    /// ```
    /// use cairnloop::approvals::LaneMark;
    /// use cairnloop::declare::IdempotencyKey;
    /// use cairnloop::gate::Timestamp;
    ///
    /// let mark = LaneMark::new(Timestamp::from_unix_millis(5), IdempotencyKey::from_bytes([0; 32]));
    /// assert_eq!(mark.proposed_at(), Timestamp::from_unix_millis(5));
    /// ```
    #[must_use]
    pub const fn new(proposed_at: Timestamp, key: IdempotencyKey) -> Self {
        Self { proposed_at, key }
    }

    /// When the lane was proposed.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneMark, declare::IdempotencyKey, gate::Timestamp};
    /// let mark = LaneMark::new(Timestamp::from_unix_millis(9), IdempotencyKey::from_bytes([1; 32]));
    /// assert_eq!(mark.proposed_at().unix_millis(), 9);
    /// ```
    #[must_use]
    pub const fn proposed_at(&self) -> Timestamp {
        self.proposed_at
    }

    /// The lane's key.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneMark, declare::IdempotencyKey, gate::Timestamp};
    /// let key = IdempotencyKey::from_bytes([1; 32]);
    /// assert_eq!(LaneMark::new(Timestamp::from_unix_millis(9), key).key(), key);
    /// ```
    #[must_use]
    pub const fn key(&self) -> IdempotencyKey {
        self.key
    }
}

impl fmt::Display for LaneMark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.proposed_at.unix_millis(), self.key)
    }
}

impl FromStr for LaneMark {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (millis, key) = s.split_once('-').ok_or(ParseError::LANE_MARK)?;
        if millis.is_empty() || !millis.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseError::LANE_MARK);
        }
        let millis: u64 = millis.parse().map_err(|_| ParseError::LANE_MARK)?;
        // Stores keep times as signed 64-bit numbers.
        if i64::try_from(millis).is_err() {
            return Err(ParseError::LANE_MARK);
        }
        let key = key.parse().map_err(|_| ParseError::LANE_MARK)?;
        Ok(Self::new(Timestamp::from_unix_millis(millis), key))
    }
}

/// Which lanes a queue shows: those in one state, narrowed by tool, risk tiers, proposer
/// and accounts, newest first, from a [`LaneMark`] on.
///
/// A store answers it with [`ApprovalStore::query_lanes`](crate::approvals::ApprovalStore::query_lanes)
/// one page at a time (durable stores from their indexes); [`LaneQuery::admits`] is the
/// same filter as a test of one lane.
///
/// ```
/// use cairnloop::RiskTier;
/// use cairnloop::approvals::LaneQuery;
/// use cairnloop::gate::LaneState;
///
/// let query = LaneQuery::new(LaneState::Pending)
///     .tool("refund_order")
///     .tiers([RiskTier::LowWrite, RiskTier::HighWrite])
///     .accounts(["acme"]);
/// assert_eq!(query.tool_name(), Some("refund_order"));
/// assert_eq!(query.account_list(), Some(&["acme".to_string()][..]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneQuery {
    state: LaneState,
    tool: Option<String>,
    tiers: Option<Vec<RiskTier>>,
    proposer: Option<String>,
    accounts: Option<Vec<String>>,
    before: Option<LaneMark>,
}

impl LaneQuery {
    /// Every lane in `state`, from the newest.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// assert_eq!(LaneQuery::new(LaneState::Pending).state(), LaneState::Pending);
    /// ```
    #[must_use]
    pub const fn new(state: LaneState) -> Self {
        Self {
            state,
            tool: None,
            tiers: None,
            proposer: None,
            accounts: None,
            before: None,
        }
    }

    /// Only calls of this tool.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// assert_eq!(LaneQuery::new(LaneState::Pending).tool("t").tool_name(), Some("t"));
    /// ```
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>) -> Self {
        self.tool = Some(name.into());
        self
    }

    /// Only calls of these risk tiers (none: no lane).
    ///
    /// ```
    /// # use cairnloop::{RiskTier, approvals::LaneQuery, gate::LaneState};
    /// let query = LaneQuery::new(LaneState::Pending).tiers([RiskTier::LowWrite]);
    /// assert_eq!(query.tier_list(), Some(&[RiskTier::LowWrite][..]));
    /// ```
    #[must_use]
    pub fn tiers(mut self, tiers: impl IntoIterator<Item = RiskTier>) -> Self {
        let mut list: Vec<RiskTier> = tiers.into_iter().collect();
        list.sort_unstable();
        list.dedup();
        self.tiers = Some(list);
        self
    }

    /// Only calls proposed by this actor.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// assert_eq!(LaneQuery::new(LaneState::Pending).proposer("a").proposer_id(), Some("a"));
    /// ```
    #[must_use]
    pub fn proposer(mut self, actor: impl Into<String>) -> Self {
        self.proposer = Some(actor.into());
        self
    }

    /// Only calls made in one of these accounts (none without an account; an empty list:
    /// no lane).
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// let query = LaneQuery::new(LaneState::Pending).accounts(["a", "b"]);
    /// assert_eq!(query.account_list().map(<[String]>::len), Some(2));
    /// ```
    #[must_use]
    pub fn accounts<I: IntoIterator<Item = T>, T: Into<String>>(mut self, accounts: I) -> Self {
        let mut list: Vec<String> = accounts.into_iter().map(Into::into).collect();
        list.sort_unstable();
        list.dedup();
        self.accounts = Some(list);
        self
    }

    /// Only lanes after `mark` in newest-first order: the page after the one that ended
    /// there.
    ///
    /// ```
    /// # use cairnloop::{approvals::{LaneMark, LaneQuery}, declare::IdempotencyKey, gate::{LaneState, Timestamp}};
    /// let mark = LaneMark::new(Timestamp::from_unix_millis(1), IdempotencyKey::from_bytes([0; 32]));
    /// assert_eq!(LaneQuery::new(LaneState::Pending).after(mark).mark(), Some(mark));
    /// ```
    #[must_use]
    pub const fn after(mut self, mark: LaneMark) -> Self {
        self.before = Some(mark);
        self
    }

    /// The same query from the newest lane (the first page).
    ///
    /// ```
    /// # use cairnloop::{approvals::{LaneMark, LaneQuery}, declare::IdempotencyKey, gate::{LaneState, Timestamp}};
    /// let mark = LaneMark::new(Timestamp::from_unix_millis(1), IdempotencyKey::from_bytes([0; 32]));
    /// let query = LaneQuery::new(LaneState::Pending).after(mark).without_mark();
    /// assert_eq!(query.mark(), None);
    /// ```
    #[must_use]
    pub const fn without_mark(mut self) -> Self {
        self.before = None;
        self
    }

    /// The state asked for.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// assert_eq!(LaneQuery::new(LaneState::Approved).state(), LaneState::Approved);
    /// ```
    #[must_use]
    pub const fn state(&self) -> LaneState {
        self.state
    }

    /// The tool asked for, if one.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// assert_eq!(LaneQuery::new(LaneState::Pending).tool_name(), None);
    /// ```
    #[must_use]
    pub fn tool_name(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The tiers asked for (sorted, once each), if limited.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// assert_eq!(LaneQuery::new(LaneState::Pending).tier_list(), None);
    /// ```
    #[must_use]
    pub fn tier_list(&self) -> Option<&[RiskTier]> {
        self.tiers.as_deref()
    }

    /// The proposer asked for, if one.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// assert_eq!(LaneQuery::new(LaneState::Pending).proposer_id(), None);
    /// ```
    #[must_use]
    pub fn proposer_id(&self) -> Option<&str> {
        self.proposer.as_deref()
    }

    /// The accounts asked for (sorted, once each), if limited.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// assert_eq!(LaneQuery::new(LaneState::Pending).account_list(), None);
    /// ```
    #[must_use]
    pub fn account_list(&self) -> Option<&[String]> {
        self.accounts.as_deref()
    }

    /// Where the page starts (exclusive), if not at the newest lane.
    ///
    /// ```
    /// # use cairnloop::{approvals::LaneQuery, gate::LaneState};
    /// assert_eq!(LaneQuery::new(LaneState::Pending).mark(), None);
    /// ```
    #[must_use]
    pub const fn mark(&self) -> Option<LaneMark> {
        self.before
    }

    /// Whether `lane` is one the query asks for (its state, filters and position).
    ///
    /// ```
    /// # use cairnloop::approvals::{ApprovalLane, LaneQuery};
    /// # use cairnloop::gate::LaneState;
    /// fn waiting(lane: &ApprovalLane) -> bool {
    ///     LaneQuery::new(LaneState::Pending).admits(lane)
    /// }
    /// ```
    #[must_use]
    pub fn admits(&self, lane: &ApprovalLane) -> bool {
        let proposal = lane.proposal();
        lane.state() == self.state
            && self
                .tool
                .as_deref()
                .is_none_or(|tool| proposal.tool() == tool)
            && self
                .tiers
                .as_ref()
                .is_none_or(|tiers| tiers.contains(&proposal.risk_tier()))
            && self
                .proposer
                .as_deref()
                .is_none_or(|actor| proposal.actor_id() == actor)
            && self.accounts.as_ref().is_none_or(|accounts| {
                proposal
                    .account_id()
                    .is_some_and(|account| accounts.iter().any(|one| one == account))
            })
            && self
                .before
                .is_none_or(|mark| newest_first(&LaneMark::of(lane), &mark).is_gt())
    }
}

/// The queue's order: the newest proposal first; among those of one millisecond, the
/// greater key first (any fixed order would do; this one is an index read backwards).
#[must_use]
pub(crate) fn newest_first(a: &LaneMark, b: &LaneMark) -> core::cmp::Ordering {
    b.cmp(a)
}
