//! The pages: plain HTML, every outside text escaped, forms that work without script.

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use std::fmt::Write as _;

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use crate::ApprovalMode;
use crate::approvals::{ApprovalLane, AuditRecord};
use crate::declare::RiskTier;
use crate::gate::{LaneState, ModeSource, Timestamp};
use crate::json::{Preview, PreviewSource, is_secret_name};

use super::Rendered;
use super::html::{Attr, Person, Query, Shortened, Text, page};
use super::sanitize::sanitize;

/// Rows on one page of the queue.
const QUEUE_PAGE: usize = 25;

/// The queue's filters and page, from the query string.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct QueueFilter {
    #[serde(default)]
    pub(crate) tool: String,
    #[serde(default)]
    pub(crate) tier: String,
    #[serde(default)]
    pub(crate) actor: String,
    #[serde(default)]
    pub(crate) page: usize,
}

impl QueueFilter {
    /// The deepest page a client may ask for: far past any queue the console reads, and
    /// small enough that no page arithmetic can overflow.
    pub(crate) const MAX_PAGE: usize = 1_000_000;

    /// Whether the page number is one the console answers (else a 400).
    pub(crate) const fn is_valid(&self) -> bool {
        self.page <= Self::MAX_PAGE
    }

    pub(crate) fn admits(&self, lane: &ApprovalLane) -> bool {
        let proposal = lane.proposal();
        (self.tool.is_empty() || proposal.tool() == self.tool)
            && (self.tier.is_empty() || proposal.risk_tier().as_str() == self.tier)
            && (self.actor.is_empty() || proposal.actor_id() == self.actor)
    }

    fn query(&self, page: usize) -> String {
        format!(
            "tool={}&tier={}&actor={}&page={page}",
            Query(&self.tool),
            Query(&self.tier),
            Query(&self.actor)
        )
    }
}

/// The audit view's filters, from the query string.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AuditFilter {
    #[serde(default)]
    pub(crate) tool: String,
    #[serde(default)]
    pub(crate) actor: String,
    /// `decision` or `transition`.
    #[serde(default)]
    pub(crate) kind: String,
    /// The sequence number after which the page starts.
    pub(crate) after: Option<u64>,
}

impl AuditFilter {
    pub(crate) fn admits(&self, record: &AuditRecord) -> bool {
        let (kind, tool, people): (&str, &str, [Option<&str>; 2]) = match record {
            AuditRecord::Decision(event) => {
                ("decision", &event.tool, [Some(&event.actor_id), None])
            }
            AuditRecord::Transition(event) => (
                "transition",
                &event.tool,
                [Some(&event.proposer), event.by.as_deref()],
            ),
        };
        (self.kind.is_empty() || self.kind == kind)
            && (self.tool.is_empty() || self.tool == tool)
            && (self.actor.is_empty() || people.contains(&Some(self.actor.as_str())))
    }

    fn query(&self, after: u64) -> String {
        format!(
            "tool={}&actor={}&kind={}&after={after}",
            Query(&self.tool),
            Query(&self.actor),
            Query(&self.kind)
        )
    }
}

fn respond(status: StatusCode, html: String) -> Response {
    (status, Html(html)).into_response()
}

/// A page that says why something was refused, and that nothing changed.
pub(crate) fn refusal(
    status: StatusCode,
    title: &str,
    message: &str,
    operator: Option<&str>,
) -> Response {
    let body = format!(
        "<section class=\"notice refused\"><h1>{}</h1><p>{}</p>\
         <p><a href=\"/queue\">Back to the queue</a></p></section>",
        Text(title),
        Text(message)
    );
    respond(status, page(title, operator, &body))
}

/// [`refusal`], with a link back to the proposal.
pub(crate) fn refusal_with_link(
    status: StatusCode,
    title: &str,
    message: &str,
    operator: Option<&str>,
    key: &str,
) -> Response {
    let body = format!(
        "<section class=\"notice refused\"><h1>{}</h1><p>{}</p>\
         <p><a href=\"/proposals/{}\">Back to the proposal</a></p></section>",
        Text(title),
        Text(message),
        Query(key)
    );
    respond(status, page(title, operator, &body))
}

pub(crate) fn bad_token(operator: Option<&str>) -> Response {
    refusal(
        StatusCode::FORBIDDEN,
        "Form expired",
        "This form's security token is missing, wrong or already used, so nothing was \
         changed. Reload the page and decide again.",
        operator,
    )
}

/// The lane changed since the page was made: what it is now.
pub(crate) fn stale(operator: &str, lane: &ApprovalLane) -> Response {
    let by = lane
        .decided_by()
        .map(|who| format!(" by {}", Person(who)))
        .unwrap_or_default();
    let body = format!(
        "<section class=\"notice refused\"><h1>Changed meanwhile</h1>\
         <p>This proposal changed since you opened it: it is now <strong>{}</strong>{by}. \
         Your decision was not applied.</p>\
         <p><a href=\"/proposals/{}\">See it as it is now</a></p></section>",
        lane.state().as_str(),
        lane.key()
    );
    respond(
        StatusCode::CONFLICT,
        page("Changed meanwhile", Some(operator), &body),
    )
}

pub(crate) fn login(token: &str, note: Option<&str>, status: StatusCode) -> Response {
    let note = note
        .map(|note| format!("<p class=\"notice\">{}</p>", Text(note)))
        .unwrap_or_default();
    let body = format!(
        "<section class=\"login\"><h1>Sign in</h1>{note}\
         <form method=\"post\" action=\"/login\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label>Operator <input name=\"operator\" autocomplete=\"username\" required></label>\
         <label>Password or token <input name=\"password\" type=\"password\" \
         autocomplete=\"current-password\" required></label>\
         <button type=\"submit\">Sign in</button></form></section>",
        Attr(token)
    );
    respond(status, page("Sign in", None, &body))
}

fn tier_badge(tier: RiskTier) -> String {
    format!(
        "<span class=\"tier tier-{0}\">{1}</span>",
        tier.as_str(),
        tier.as_str().replace('_', " ")
    )
}

/// Time left until `expires`, as a person says it.
pub(crate) fn time_left(expires: Timestamp, now: Option<Timestamp>) -> String {
    let Some(now) = now else {
        return "unknown".to_string();
    };
    let Some(left) = expires.unix_millis().checked_sub(now.unix_millis()) else {
        return "expired".to_string();
    };
    let minutes = left / 60_000;
    match minutes {
        0 => "under a minute".to_string(),
        1..=59 => format!("{minutes} min"),
        60..=1_439 => format!("{} h {} min", minutes / 60, minutes % 60),
        _ => format!("{} d {} h", minutes / 1_440, (minutes % 1_440) / 60),
    }
}

fn queue_rows(lanes: &[ApprovalLane], now: Option<Timestamp>) -> String {
    let mut rows = String::new();
    if lanes.is_empty() {
        rows.push_str(
            "<tr><td colspan=\"6\" class=\"empty\">Nothing waits for a decision.</td></tr>",
        );
    }
    for lane in lanes {
        let proposal = lane.proposal();
        let first = summary(proposal.preview());
        let _ = write!(
            rows,
            "<tr><td><a href=\"/proposals/{key}\">{title}</a><div class=\"sub\">{first}</div></td>\
             <td>{tier}</td><td>{actor}</td><td>{account}</td><td>{left}</td>\
             <td><code>{short}</code></td></tr>",
            key = lane.key(),
            title = Text(proposal.title()),
            first = Shortened(&first),
            tier = tier_badge(proposal.risk_tier()),
            actor = Person(proposal.actor_id()),
            account = Text(proposal.account_id().unwrap_or("—")),
            left = time_left(lane.expires_at(), now),
            short = &lane.key().to_string()[..8],
        );
    }
    rows
}

/// One line that says what a proposal does: the first line of the tool's own preview, or,
/// for a tool without one, its arguments (the fallback's first line is only the title,
/// which the queue shows already).
fn summary(preview: &Preview) -> String {
    let text = preview.text();
    match preview.source() {
        PreviewSource::Tool => text.lines().next().unwrap_or("").to_string(),
        PreviewSource::Fallback => text
            .lines()
            .skip_while(|line| *line != "input:")
            .skip(1)
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The lanes on the filter's page of the queue.
fn page_of<'a>(filter: &QueueFilter, lanes: &'a [ApprovalLane]) -> &'a [ApprovalLane] {
    let start = filter.page.saturating_mul(QUEUE_PAGE);
    let shown = lanes.get(start..).unwrap_or(&[]);
    &shown[..shown.len().min(QUEUE_PAGE)]
}

pub(crate) fn queue_rows_fragment(
    filter: &QueueFilter,
    lanes: &[ApprovalLane],
    now: Option<Timestamp>,
) -> Response {
    respond(StatusCode::OK, queue_rows(page_of(filter, lanes), now))
}

pub(crate) fn queue(
    operator: &str,
    logout_token: &str,
    filter: &QueueFilter,
    tools: &[&str],
    lanes: &[ApprovalLane],
    partial: bool,
    now: Option<Timestamp>,
) -> Response {
    let shown = page_of(filter, lanes);
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>Waiting for a decision <span class=\"count\">{}</span></h1>",
        lanes.len()
    );
    if partial {
        body.push_str(
            "<p class=\"notice\">More proposals wait than the queue reads at once; \
                       narrow the filters.</p>",
        );
    }
    body.push_str("<form class=\"filters\" method=\"get\" action=\"/queue\"><label>Tool <select name=\"tool\"><option value=\"\">any</option>");
    for tool in tools {
        let selected = if *tool == filter.tool {
            " selected"
        } else {
            ""
        };
        let _ = write!(body, "<option{selected}>{}</option>", Text(tool));
    }
    body.push_str(
        "</select></label><label>Tier <select name=\"tier\"><option value=\"\">any</option>",
    );
    for tier in RiskTier::ALL {
        let selected = if tier.as_str() == filter.tier {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<option value=\"{0}\"{selected}>{0}</option>",
            tier.as_str()
        );
    }
    let _ = write!(
        body,
        "</select></label><label>Actor <input name=\"actor\" value=\"{}\"></label>\
         <button type=\"submit\">Filter</button></form>",
        Attr(&filter.actor)
    );
    let _ = write!(
        body,
        "<table class=\"queue\"><thead><tr><th>Proposal</th><th>Tier</th><th>Proposer</th>\
         <th>Account</th><th>Time left</th><th>Id</th></tr></thead>\
         <tbody id=\"queue-rows\" data-refresh=\"/queue/rows?{}\">{}</tbody></table>",
        Attr(&filter.query(filter.page)),
        queue_rows(shown, now)
    );
    body.push_str("<nav class=\"pages\" aria-label=\"Queue pages\">");
    if filter.page > 0 {
        let _ = write!(
            body,
            "<a href=\"/queue?{}\">Newer</a>",
            Attr(&filter.query(filter.page - 1))
        );
    }
    if filter.page.saturating_add(1).saturating_mul(QUEUE_PAGE) < lanes.len() {
        let _ = write!(
            body,
            "<a href=\"/queue?{}\">Older</a>",
            Attr(&filter.query(filter.page + 1))
        );
    }
    let _ = write!(
        body,
        "</nav><form method=\"post\" action=\"/logout\" class=\"logout\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\"><button>Sign out</button></form>",
        Attr(logout_token)
    );
    respond(StatusCode::OK, page("Queue", Some(operator), &body))
}

/// Which decisions the operator viewing a pending proposal may make.
pub(crate) enum Decidable {
    Everything,
    /// Not approval (the operator proposed it), with why.
    AllButApproval(String),
    /// None (not the operator's tier), with why.
    Nothing(String),
}

/// What a proposal page shows.
pub(crate) struct ProposalView<'a> {
    pub(crate) operator: &'a str,
    pub(crate) decidable: Decidable,
    pub(crate) lane: &'a ApprovalLane,
    pub(crate) schema: Option<&'a Value>,
    /// The renderer the tool names, if any.
    pub(crate) custom: Option<&'a str>,
    /// What that renderer gave, if the host registered it.
    pub(crate) view: Option<&'a Rendered>,
    pub(crate) history: &'a [AuditRecord],
    /// Form tokens: approve, reject, defer.
    pub(crate) tokens: &'a [String; 3],
    /// The governor's time, for the time left.
    pub(crate) now: Option<Timestamp>,
}

pub(crate) fn proposal(view: &ProposalView<'_>) -> Response {
    let lane = view.lane;
    let proposal = lane.proposal();
    let key = lane.key();
    let mut body = String::new();
    // What a person reads first: the consequence, in words; then the arguments; then who,
    // when, and what an approval binds, as recorded.
    let _ = write!(
        body,
        "<h1>{} {}</h1><p class=\"state state-{state}\">{state}</p>\
         <section><h2>What it will do</h2><pre class=\"preview\">{}</pre></section>",
        Text(proposal.title()),
        tier_badge(proposal.risk_tier()),
        Shortened(proposal.preview().text()),
        state = lane.state().as_str(),
    );
    body.push_str("<section><h2>Arguments</h2>");
    match view.view {
        Some(Rendered::Text(text)) => {
            let _ = write!(body, "<div class=\"custom\">{}</div>", Shortened(text));
        }
        Some(Rendered::Fields(fields)) => {
            body.push_str("<dl class=\"facts custom\">");
            for (label, value) in fields {
                let _ = write!(
                    body,
                    "<dt>{}</dt><dd>{}</dd>",
                    Text(label),
                    Shortened(value)
                );
            }
            body.push_str("</dl>");
        }
        Some(Rendered::Html(markup)) => {
            let _ = write!(body, "<div class=\"custom\">{}</div>", sanitize(markup));
        }
        None => {
            if let Some(name) = view.custom {
                let _ = write!(
                    body,
                    "<p class=\"notice\">This tool asks for the view “{}”, which this \
                     console does not have; the generated form is shown.</p>",
                    Text(name)
                );
            }
            match serde_json::from_str::<Value>(proposal.input()) {
                Ok(input) => {
                    body.push_str("<form class=\"arguments\">");
                    let defs = view.schema.and_then(|schema| schema.get("$defs"));
                    fields(&mut body, "", &input, view.schema, defs, 0, false);
                    body.push_str("</form>");
                }
                Err(_) => {
                    let _ = write!(body, "<pre>{}</pre>", Shortened(proposal.input()));
                }
            }
        }
    }
    let _ = write!(
        body,
        "<p><a href=\"/proposals/{key}/input.json\">The whole input as JSON</a></p></section>"
    );
    if lane.state() == LaneState::Pending {
        decide_section(&mut body, view, &key.to_string(), lane.version());
    }
    let _ = write!(
        body,
        "<section><h2>Who and when</h2><dl class=\"facts\">\
         <dt>Proposed by</dt><dd>{}</dd><dt>Account</dt><dd>{}</dd>\
         <dt>Proposed</dt><dd>{}</dd><dt>Expires</dt><dd>{} ({})</dd>",
        Person(proposal.actor_id()),
        Text(proposal.account_id().unwrap_or("—")),
        lane.proposed_at().utc(),
        lane.expires_at().utc(),
        time_left(lane.expires_at(), view.now),
    );
    if let Some(by) = lane.decided_by() {
        let _ = write!(body, "<dt>Decided by</dt><dd>{}</dd>", Person(by));
    }
    if let Some(reason) = lane.reason() {
        let _ = write!(body, "<dt>Reason</dt><dd>{}</dd>", Shortened(reason));
    }
    body.push_str("</dl></section>");
    let policy = proposal.policy();
    let why_approval = match policy.decided_by {
        ModeSource::Spec => "as the tool declares",
        ModeSource::TierOverride => "the host requires it for this risk tier",
        ModeSource::Hook => "the host's policy required it for this call",
    };
    let _ = write!(
        body,
        "<section><h2>What an approval binds</h2><dl class=\"facts\">\
         <dt>Tool</dt><dd><code>{}</code></dd>\
         <dt>Required scopes</dt><dd>{}</dd><dt>Granted to the proposer</dt><dd>{}</dd>\
         <dt>Risk tier</dt><dd>{}</dd><dt>Approval</dt><dd>{} ({why_approval})</dd>\
         <dt>Proposal id</dt><dd><code>{}</code></dd></dl></section>",
        Text(proposal.tool()),
        scopes(proposal.required_scopes()),
        scopes(proposal.granted_scopes()),
        proposal.risk_tier().as_str(),
        approval_words(policy.resolved),
        key,
    );
    body.push_str("<section><h2>History</h2><ol class=\"history\">");
    for record in view.history {
        if let AuditRecord::Transition(event) = record {
            let _ = write!(
                body,
                "<li><time>{}</time> {} → <strong>{}</strong>{}{}</li>",
                event.at.utc(),
                event.from.map_or("new", LaneState::as_str),
                event.to.as_str(),
                event
                    .by
                    .as_deref()
                    .map(|by| format!(" by {}", Text(by)))
                    .unwrap_or_default(),
                event
                    .reason
                    .as_deref()
                    .map(|reason| format!(": {}", Shortened(reason)))
                    .unwrap_or_default(),
            );
        }
    }
    body.push_str("</ol></section>");
    respond(
        StatusCode::OK,
        page(proposal.title(), Some(view.operator), &body),
    )
}

/// The forms for the decisions the operator may make, and why any other is missing.
fn decide_section(body: &mut String, view: &ProposalView<'_>, key: &str, version: u64) {
    body.push_str("<section class=\"decide\"><h2>Decide</h2>");
    let (approve, others, why) = match &view.decidable {
        Decidable::Everything => (true, true, None),
        Decidable::AllButApproval(why) => (false, true, Some(why)),
        Decidable::Nothing(why) => (false, false, Some(why)),
    };
    if let Some(why) = why {
        let _ = write!(body, "<p class=\"notice why-not\">{}</p>", Text(why));
    }
    let form = |body: &mut String, token: &str, decision: &str| {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/proposals/{key}/decide\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <input type=\"hidden\" name=\"version\" value=\"{version}\">\
             <input type=\"hidden\" name=\"decision\" value=\"{decision}\">",
            Attr(token)
        );
    };
    if approve {
        form(body, &view.tokens[0], "approve");
        body.push_str("<button class=\"approve\" type=\"submit\">Approve</button></form>");
    }
    if others {
        for (token, decision, label, button) in [
            (&view.tokens[1], "reject", "Why reject it", "Reject"),
            (&view.tokens[2], "defer", "Why defer it", "Defer"),
        ] {
            form(body, token, decision);
            let _ = write!(
                body,
                "<label>{label} <input name=\"reason\" required maxlength=\"500\"></label>\
                 <button class=\"{decision}\" type=\"submit\">{button}</button></form>"
            );
        }
    }
    body.push_str("</section>");
}

/// An approval mode as an operator says it.
const fn approval_words(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Auto => "runs without approval",
        ApprovalMode::RequiresApproval => "needs a person's approval",
        ApprovalMode::AlwaysBlock => "never runs",
    }
}

fn scopes(list: &[String]) -> String {
    if list.is_empty() {
        return "none".to_string();
    }
    list.iter()
        .map(|scope| format!("<code>{}</code>", Text(scope)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The schema a `$ref` points to, within `$defs`.
fn resolve<'v>(schema: Option<&'v Value>, defs: Option<&'v Value>) -> Option<&'v Value> {
    let schema = schema?;
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.strip_prefix("#/$defs/")?;
            defs?.get(name)
        }
        None => Some(schema),
    }
}

/// Read-only fields for `value`, labelled from its schema; nested values as fieldsets.
/// Below a secret-looking field name (as in the preview), values are masked.
fn fields(
    out: &mut String,
    name: &str,
    value: &Value,
    schema: Option<&Value>,
    defs: Option<&Value>,
    depth: usize,
    masked: bool,
) {
    let masked = masked || is_secret_name(name);
    let schema = resolve(schema, defs);
    let label = schema
        .and_then(|schema| schema.get("title"))
        .and_then(Value::as_str)
        .unwrap_or(name);
    let help = schema
        .and_then(|schema| schema.get("description"))
        .and_then(Value::as_str)
        .map(|text| format!("<small>{}</small>", Shortened(text)))
        .unwrap_or_default();
    match value {
        Value::Object(object) if depth < 16 => {
            let properties = schema.and_then(|schema| schema.get("properties"));
            let _ = write!(out, "<fieldset><legend>{}</legend>{help}", Text(label));
            // The schema's order first, then anything else the input holds.
            let mut keys: Vec<&String> = Vec::new();
            if let Some(Value::Object(properties)) = properties {
                keys.extend(properties.keys().filter(|key| object.contains_key(*key)));
            }
            let listed = keys.len();
            for key in object.keys() {
                if !keys[..listed].contains(&key) {
                    keys.push(key);
                }
            }
            for key in keys {
                let child = properties.and_then(|properties| properties.get(key));
                fields(out, key, &object[key], child, defs, depth + 1, masked);
            }
            out.push_str("</fieldset>");
        }
        Value::Array(items) if depth < 16 => {
            let _ = write!(out, "<fieldset><legend>{}</legend>{help}", Text(label));
            let item_schema = schema.and_then(|schema| schema.get("items"));
            for (i, item) in items.iter().enumerate() {
                fields(
                    out,
                    &format!("{name}[{i}]"),
                    item,
                    item_schema,
                    defs,
                    depth + 1,
                    masked,
                );
            }
            out.push_str("</fieldset>");
        }
        _ if masked => {
            let _ = write!(
                out,
                "<label>{}{help}<input readonly value=\"******\">\
                 <small>masked: a secret-looking field (in the JSON)</small></label>",
                Text(label)
            );
        }
        other => {
            let text = match other {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let allowed = schema
                .and_then(|schema| schema.get("enum"))
                .and_then(Value::as_array)
                .map(|values| {
                    let names: Vec<String> = values
                        .iter()
                        .map(|value| Text(&value.to_string()).to_string())
                        .collect();
                    format!("<small>one of {}</small>", names.join(", "))
                })
                .unwrap_or_default();
            let (shown, left) = super::html::shortened(&text);
            let cut = if left > 0 {
                format!("<small class=\"cut\">… and {left} more characters (see the JSON)</small>")
            } else {
                String::new()
            };
            if text.len() > 80 || text.contains('\n') {
                let _ = write!(
                    out,
                    "<label>{}{help}<textarea readonly rows=\"4\">{}</textarea>{cut}{allowed}</label>",
                    Text(label),
                    // A textarea holds text, not markup: hidden characters as plain code points.
                    Attr(shown)
                );
            } else {
                let _ = write!(
                    out,
                    "<label>{}{help}<input readonly value=\"{}\">{allowed}</label>",
                    Text(label),
                    Attr(shown)
                );
            }
        }
    }
}

pub(crate) fn reconcile(operator: &str, lanes: &[ApprovalLane], tokens: &[String]) -> Response {
    let mut body = String::from(
        "<h1>Outcomes to settle</h1><p>These runs were interrupted, or their process died \
         before the outcome was written. Find out what happened, then mark each one.</p>",
    );
    if lanes.is_empty() {
        body.push_str("<p class=\"empty\">Nothing to settle.</p>");
    }
    for (lane, token) in lanes.iter().zip(tokens) {
        let proposal = lane.proposal();
        let key = lane.key();
        let _ = write!(
            body,
            "<section class=\"settle\"><h2><a href=\"/proposals/{key}\">{}</a> {}</h2>\
             <p class=\"state state-{state}\">{state}</p><p>Proposed by {} · {} attempt(s)</p>\
             <form method=\"post\" action=\"/proposals/{key}/reconcile\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <input type=\"hidden\" name=\"version\" value=\"{}\">\
             <label>It <select name=\"resolution\"><option value=\"executed\">ran (mark executed)</option>\
             <option value=\"failed\">did not run (mark failed)</option>\
             <option value=\"closed\">is closed (may be proposed again)</option></select></label>\
             <label>Note <input name=\"note\" required maxlength=\"500\"></label>\
             <button type=\"submit\">Settle</button></form></section>",
            Text(proposal.title()),
            tier_badge(proposal.risk_tier()),
            Person(proposal.actor_id()),
            lane.attempts(),
            Attr(token),
            lane.version(),
            state = lane.state().as_str(),
        );
    }
    respond(StatusCode::OK, page("Reconcile", Some(operator), &body))
}

pub(crate) fn audit(
    operator: &str,
    filter: &AuditFilter,
    records: &[(u64, AuditRecord)],
    more: bool,
) -> Response {
    let mut body = String::from("<h1>Audit log</h1>");
    let kind = |value: &str| {
        if filter.kind == value {
            " selected"
        } else {
            ""
        }
    };
    let _ = write!(
        body,
        "<form class=\"filters\" method=\"get\" action=\"/audit\">\
         <label>Tool <input name=\"tool\" value=\"{}\"></label>\
         <label>Actor <input name=\"actor\" value=\"{}\"></label>\
         <label>Kind <select name=\"kind\"><option value=\"\">any</option>\
         <option value=\"decision\"{}>decisions</option>\
         <option value=\"transition\"{}>lane moves</option></select></label>\
         <button type=\"submit\">Filter</button></form>\
         <p><a href=\"/audit.jsonl?{}\">Export as JSON lines</a></p>",
        Attr(&filter.tool),
        Attr(&filter.actor),
        kind("decision"),
        kind("transition"),
        Attr(&filter.query(0)),
    );
    body.push_str(
        "<table class=\"audit\"><thead><tr><th>#</th><th>Kind</th><th>Tool</th>\
                   <th>Who</th><th>What</th><th>Why</th></tr></thead><tbody>",
    );
    for (seq, record) in records {
        match record {
            AuditRecord::Decision(event) => {
                let _ = write!(
                    body,
                    "<tr><td>{seq}</td><td>decision</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    Text(&event.tool),
                    Person(&event.actor_id),
                    Text(&event.decision),
                    Shortened(event.reason.as_deref().unwrap_or("")),
                );
            }
            AuditRecord::Transition(event) => {
                let _ = write!(
                    body,
                    "<tr><td>{seq}</td><td>lane move</td><td>{}</td><td>{}</td><td>{} → {}</td><td>{}</td></tr>",
                    Text(&event.tool),
                    Person(event.by.as_deref().unwrap_or(&event.proposer)),
                    event.from.map_or("new", LaneState::as_str),
                    event.to.as_str(),
                    Shortened(event.reason.as_deref().unwrap_or("")),
                );
            }
        }
    }
    body.push_str("</tbody></table><nav class=\"pages\" aria-label=\"Audit pages\">");
    if let (true, Some((last, _))) = (more, records.last()) {
        let _ = write!(
            body,
            "<a href=\"/audit?{}\">Next</a>",
            Attr(&filter.query(*last))
        );
    }
    body.push_str("</nav>");
    respond(StatusCode::OK, page("Audit", Some(operator), &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_reads_like_speech() {
        let at = |minutes: u64| Timestamp::from_unix_millis(minutes * 60_000);
        assert_eq!(time_left(at(100), Some(at(53))), "47 min");
        assert_eq!(time_left(at(3_000), Some(at(60))), "2 d 1 h");
        assert_eq!(time_left(at(200), Some(at(70))), "2 h 10 min");
        assert_eq!(time_left(at(1), Some(at(2))), "expired");
    }
}
