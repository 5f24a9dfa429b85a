//! A [`LaneQuery`] as SQL: the `WHERE` clause both durable stores put before their lane
//! columns, with numbered parameters, so each filter reaches an index.

use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use crate::approvals::{ApprovalLane, LaneQuery};

/// A parameter of the clause.
pub(crate) enum Param {
    Text(String),
    Int(i64),
}

/// The clause and its parameters, numbered from 1 in the store's placeholder style.
pub(crate) struct LaneFilter {
    pub(crate) clause: String,
    pub(crate) params: Vec<Param>,
}

/// The columns a lane is found by, besides its key and state.
pub(crate) struct LaneColumns {
    pub(crate) tool: String,
    pub(crate) tier: &'static str,
    pub(crate) proposer: String,
    pub(crate) account: Option<String>,
    pub(crate) proposed_at: i64,
    pub(crate) expires_at: i64,
}

impl LaneColumns {
    pub(crate) fn of(lane: &ApprovalLane) -> Self {
        let proposal = lane.proposal();
        Self {
            tool: proposal.tool().to_string(),
            tier: proposal.risk_tier().as_str(),
            proposer: proposal.actor_id().to_string(),
            account: proposal.account_id().map(ToString::to_string),
            proposed_at: millis(lane.proposed_at().unix_millis()),
            expires_at: millis(lane.expires_at().unix_millis()),
        }
    }
}

/// A time as the signed 64-bit number both databases keep: a later one (a lane that
/// never expires) is kept as the latest, its exact value staying in the stored lane.
pub(crate) fn millis(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl LaneFilter {
    /// The clause for `query`; `placeholder(n)` writes the `n`th parameter (`$n`, `?n`).
    /// With `with_mark`, lanes at or before the query's mark are left out.
    pub(crate) fn new(
        query: &LaneQuery,
        with_mark: bool,
        placeholder: fn(usize) -> String,
    ) -> Self {
        let mut filter = Self {
            clause: String::new(),
            params: Vec::new(),
        };
        filter.equal(
            "state",
            Param::Text(query.state().as_str().to_string()),
            placeholder,
        );
        if let Some(tool) = query.tool_name() {
            filter.equal("tool", Param::Text(tool.to_string()), placeholder);
        }
        if let Some(tiers) = query.tier_list() {
            let values = tiers
                .iter()
                .map(|tier| Param::Text(tier.as_str().to_string()));
            filter.one_of("tier", values.collect(), placeholder);
        }
        if let Some(proposer) = query.proposer_id() {
            filter.equal("proposer", Param::Text(proposer.to_string()), placeholder);
        }
        if let Some(accounts) = query.account_list() {
            let values = accounts.iter().map(|account| Param::Text(account.clone()));
            filter.one_of("account", values.collect(), placeholder);
        }
        if let Some(mark) = query.mark().filter(|_| with_mark) {
            let at = filter.push(
                Param::Int(millis(mark.proposed_at().unix_millis())),
                placeholder,
            );
            let key = filter.push(Param::Text(mark.key().to_string()), placeholder);
            filter
                .clause
                .push_str(&format!(" AND (proposed_at, key) < ({at}, {key})"));
        }
        filter
    }

    /// Adds a parameter; its placeholder.
    pub(crate) fn push(&mut self, param: Param, placeholder: fn(usize) -> String) -> String {
        self.params.push(param);
        placeholder(self.params.len())
    }

    fn equal(&mut self, column: &str, value: Param, placeholder: fn(usize) -> String) {
        let at = self.push(value, placeholder);
        if !self.clause.is_empty() {
            self.clause.push_str(" AND ");
        }
        self.clause.push_str(&format!("{column} = {at}"));
    }

    fn one_of(&mut self, column: &str, values: Vec<Param>, placeholder: fn(usize) -> String) {
        if values.is_empty() {
            self.clause.push_str(" AND 1 = 0");
            return;
        }
        let list: Vec<String> = values
            .into_iter()
            .map(|value| self.push(value, placeholder))
            .collect();
        self.clause
            .push_str(&format!(" AND {column} IN ({})", list.join(", ")));
    }
}
