//! The pages: `maud` templates, so every value is escaped unless it is marked as markup
//! (only the sanitised markup of a custom view is); forms that work without script.

use std::prelude::rust_2024::*;
#[allow(unused_imports)]
use std::{format, vec};

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use maud::{Markup, PreEscaped, html};
use serde::Deserialize;
use serde_json::Value;

use crate::approvals::{ApprovalLane, AuditRecord, LaneMark, LaneQuery};
use crate::declare::{ApprovalMode, RiskTier};
use crate::gate::{LaneState, ModeSource, Timestamp};
use crate::json::{Preview, PreviewSource, ScopeNames, is_secret_name};

use super::Rendered;
use super::config::{Accounts, Operator};
use super::html::{Attr, Person, Query, Shortened, Text, page};
use super::sanitize::sanitize;

/// Rows on one page of the queue.
pub(crate) const QUEUE_PAGE: usize = 25;

/// Past this many waiting proposals the queue says "10,000+" rather than count them all.
pub(crate) const QUEUE_COUNT_CAP: usize = 10_000;

/// The queue's filters and where its page starts, from the query string.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct QueueFilter {
    #[serde(default)]
    pub(crate) tool: String,
    #[serde(default)]
    pub(crate) tier: String,
    #[serde(default)]
    pub(crate) actor: String,
    /// Only the tiers the operator may decide (`1`).
    #[serde(default)]
    pub(crate) mine: String,
    /// The position of the previous page's last row (a [`LaneMark`]); empty: the newest.
    #[serde(default)]
    pub(crate) after: String,
}

impl QueueFilter {
    /// The store's query for the operator's queue under these filters, or `None` when
    /// the filters do not parse (a 400): a tier or a position that is not one.
    pub(crate) fn query(&self, operator: &Operator) -> Option<LaneQuery> {
        let mut query = LaneQuery::new(LaneState::Pending);
        if !self.tool.is_empty() {
            query = query.tool(self.tool.as_str());
        }
        if !self.actor.is_empty() {
            query = query.proposer(self.actor.as_str());
        }
        let mut tiers: Option<Vec<RiskTier>> = None;
        if !self.tier.is_empty() {
            tiers = Some(vec![self.tier.parse().ok()?]);
        }
        if self.mine == "1" {
            let allowed: Vec<RiskTier> = RiskTier::ALL
                .into_iter()
                .filter(|tier| operator.may_decide(*tier))
                .collect();
            tiers = Some(match tiers {
                Some(chosen) => chosen.into_iter().filter(|t| allowed.contains(t)).collect(),
                None => allowed,
            });
        } else if !self.mine.is_empty() {
            return None;
        }
        if let Some(tiers) = tiers {
            query = query.tiers(tiers);
        }
        if let Accounts::Only(accounts) = operator.accounts() {
            query = query.accounts(accounts.iter().map(String::as_str));
        }
        if !self.after.is_empty() {
            query = query.after(self.after.parse::<LaneMark>().ok()?);
        }
        Some(query)
    }

    /// The query string of these filters, from `after` on (`None`: the newest).
    fn link(&self, after: Option<&LaneMark>) -> String {
        let after = after.map(ToString::to_string).unwrap_or_default();
        format!(
            "tool={}&tier={}&actor={}&mine={}&after={after}",
            Query(&self.tool),
            Query(&self.tier),
            Query(&self.actor),
            Query(&self.mine),
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
    /// `decision`, `transition` or `notice`.
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
            AuditRecord::Notice(event) => ("notice", &event.tool, [None, None]),
            AuditRecord::Refusal(event) => (
                "refusal",
                event.tool.as_deref().unwrap_or(""),
                [event.operator.as_deref(), event.by.as_deref()],
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

fn respond(status: StatusCode, page: Markup) -> Response {
    (status, Html(page.into_string())).into_response()
}

/// A page that says why something was refused, and that nothing changed; `back` is where
/// its link leads, and what it says.
fn refusal_page(
    status: StatusCode,
    title: &str,
    message: &str,
    operator: Option<&str>,
    back: Markup,
) -> Response {
    let body = html! {
        section.notice.refused {
            h1 { (Text(title)) }
            p { (Text(message)) }
            p { (back) }
        }
    };
    respond(status, page(title, operator, body))
}

/// A page that says why something was refused, and that nothing changed.
pub(crate) fn refusal(
    status: StatusCode,
    title: &str,
    message: &str,
    operator: Option<&str>,
) -> Response {
    let back = html! { a href="/queue" { "Back to the queue" } };
    refusal_page(status, title, message, operator, back)
}

/// [`refusal`], with a link back to the proposal.
pub(crate) fn refusal_with_link(
    status: StatusCode,
    title: &str,
    message: &str,
    operator: Option<&str>,
    key: &str,
) -> Response {
    let back = html! { a href={ "/proposals/" (Query(key)) } { "Back to the proposal" } };
    refusal_page(status, title, message, operator, back)
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
    let body = html! {
        section.notice.refused {
            h1 { "Changed meanwhile" }
            p {
                "This proposal changed since you opened it: it is now "
                strong { (lane.state().as_str()) }
                @if let Some(who) = lane.decided_by() { " by " (Person(who)) }
                ". Your decision was not applied."
            }
            p { a href={ "/proposals/" (lane.key()) } { "See it as it is now" } }
        }
    };
    respond(
        StatusCode::CONFLICT,
        page("Changed meanwhile", Some(operator), body),
    )
}

pub(crate) fn login(token: &str, note: Option<&str>, status: StatusCode) -> Response {
    let body = html! {
        section.login {
            h1 { "Sign in" }
            @if let Some(note) = note { p.notice { (Text(note)) } }
            form method="post" action="/login" {
                input type="hidden" name="csrf" value=(Attr(token));
                label { "Operator " input name="operator" autocomplete="username" required; }
                label {
                    "Password or token "
                    input name="password" type="password" autocomplete="current-password" required;
                }
                button type="submit" { "Sign in" }
            }
        }
    };
    respond(status, page("Sign in", None, body))
}

fn tier_badge(tier: RiskTier) -> Markup {
    html! {
        span class={ "tier tier-" (tier.as_str()) } { (tier.as_str().replace('_', " ")) }
    }
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

fn queue_rows(lanes: &[ApprovalLane], now: Option<Timestamp>) -> Markup {
    html! {
        @if lanes.is_empty() {
            tr { td colspan="6" class="empty" { "Nothing waits for a decision." } }
        }
        @for lane in lanes {
            @let proposal = lane.proposal();
            @let key = lane.key().to_string();
            tr {
                td {
                    a href={ "/proposals/" (key) } { (Text(proposal.title())) }
                    div.sub { (Shortened(&summary(proposal.preview()))) }
                    @if let Some(progress) = lane.quorum_progress() {
                        div.quorum { (Text(&progress)) }
                    }
                }
                td { (tier_badge(proposal.risk_tier())) }
                td { (Person(proposal.actor_id())) }
                td { (Text(proposal.account_id().unwrap_or("—"))) }
                td { (time_left(lane.expires_at(), now)) }
                td { code { (&key[..8]) } }
            }
        }
    }
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

pub(crate) fn queue_rows_fragment(lanes: &[ApprovalLane], now: Option<Timestamp>) -> Response {
    respond(StatusCode::OK, queue_rows(lanes, now))
}

/// What the queue page shows: a page of rows (and whether older ones follow) and how
/// many wait under the filters, counted up to [`QUEUE_COUNT_CAP`] and one more.
pub(crate) struct QueueView<'a> {
    pub(crate) operator: &'a str,
    pub(crate) logout_token: &'a str,
    pub(crate) filter: &'a QueueFilter,
    pub(crate) tools: &'a [&'a str],
    pub(crate) lanes: &'a [ApprovalLane],
    pub(crate) older: bool,
    pub(crate) waiting: usize,
    pub(crate) now: Option<Timestamp>,
}

pub(crate) fn queue(view: &QueueView<'_>) -> Response {
    let QueueView {
        operator,
        logout_token,
        filter,
        tools,
        lanes,
        older,
        waiting,
        now,
    } = *view;
    let count = if waiting > QUEUE_COUNT_CAP {
        "10,000+".to_string()
    } else {
        waiting.to_string()
    };
    let refresh = filter.link(filter.after.parse::<LaneMark>().ok().as_ref());
    let body = html! {
        h1 { "Waiting for a decision " span.count { (count) } }
        form.filters method="get" action="/queue" {
            label {
                "Tool "
                select name="tool" {
                    option value="" { "any" }
                    @for tool in tools {
                        option selected[*tool == filter.tool] { (Text(tool)) }
                    }
                }
            }
            label {
                "Tier "
                select name="tier" {
                    option value="" { "any" }
                    @for tier in RiskTier::ALL {
                        option value=(tier.as_str()) selected[tier.as_str() == filter.tier] {
                            (tier.as_str())
                        }
                    }
                }
            }
            label { "Actor " input name="actor" value=(Attr(&filter.actor)); }
            label {
                input type="checkbox" name="mine" value="1" checked[filter.mine == "1"];
                " Only what I may decide"
            }
            button type="submit" { "Filter" }
        }
        table.queue {
            thead {
                tr {
                    th { "Proposal" } th { "Tier" } th { "Proposer" } th { "Account" }
                    th { "Time left" } th { "Id" }
                }
            }
            tbody id="queue-rows" data-refresh={ "/queue/rows?" (Attr(&refresh)) } data-events="/events" {
                (queue_rows(lanes, now))
            }
        }
        nav.pages aria-label="Queue pages" {
            @if !filter.after.is_empty() {
                a href={ "/queue?" (Attr(&filter.link(None))) } { "Newest" }
            }
            @if older {
                @if let Some(last) = lanes.last() {
                    a href={ "/queue?" (Attr(&filter.link(Some(&LaneMark::of(last))))) } { "Older" }
                }
            }
        }
        form.logout method="post" action="/logout" {
            input type="hidden" name="csrf" value=(Attr(logout_token));
            button { "Sign out" }
        }
    };
    respond(StatusCode::OK, page("Queue", Some(operator), body))
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
    /// Form tokens: approve, reject, defer, approve with changes.
    pub(crate) tokens: &'a [String; 4],
    /// The governor's time, for the time left.
    pub(crate) now: Option<Timestamp>,
    /// Whether the operator may approve with changed arguments.
    pub(crate) edits: bool,
}

pub(crate) fn proposal(view: &ProposalView<'_>) -> Response {
    let lane = view.lane;
    let proposal = lane.proposal();
    let key = lane.key().to_string();
    let policy = proposal.policy();
    let why_approval = match policy.decided_by {
        ModeSource::Spec => "as the tool declares",
        ModeSource::TierOverride => "the host requires it for this risk tier",
        ModeSource::Hook => "the host's policy required it for this call",
        ModeSource::CallTier => "this call's input raised its risk tier",
    };
    let state = lane.state().as_str();
    // What a person reads first: the consequence, in words; then the arguments and the
    // decision; then who, when, and what an approval binds, as recorded.
    let body = html! {
        h1 { (Text(proposal.title())) " " (tier_badge(proposal.risk_tier())) }
        p class={ "state state-" (state) } { (state) }
        @if let Some(progress) = lane.quorum_progress() {
            p.quorum { (Text(&progress)) }
        }
        section {
            h2 { "What it will do" }
            pre.preview { (Shortened(proposal.preview().text())) }
        }
        section {
            h2 { "Arguments" }
            (arguments(view))
            p { a href={ "/proposals/" (key) "/input.json" } { "The whole input as JSON" } }
        }
        @if lane.state() == LaneState::Pending {
            (decide_section(view, &key, lane.version()))
        }
        section {
            h2 { "Who and when" }
            dl.facts {
                dt { "Proposed by" } dd { (Person(proposal.actor_id())) }
                dt { "Account" } dd { (Text(proposal.account_id().unwrap_or("—"))) }
                dt { "Proposed" } dd { (lane.proposed_at().utc()) }
                dt { "Expires" }
                dd { (lane.expires_at().utc()) " (" (time_left(lane.expires_at(), view.now)) ")" }
                @if lane.quorum() > 1 {
                    @for approval in lane.approvals() {
                        dt { "Approved by" }
                        dd { (Person(approval.by())) " at " (approval.at().utc()) }
                    }
                }
                @if let Some(by) = lane.decided_by() {
                    dt { "Decided by" } dd { (Person(by)) }
                }
                @if let Some(reason) = lane.reason() {
                    dt { "Reason" } dd { (Shortened(reason)) }
                }
                @if let Some(edited) = lane.replaced_by() {
                    dt { "Approved with changes as" }
                    dd { a.replaced-by href={ "/proposals/" (edited) } { code { (edited) } } }
                }
                @if let Some(original) = lane.replaces() {
                    dt { "Changed from" }
                    dd { a.replaces href={ "/proposals/" (original) } { code { (original) } } }
                }
            }
        }
        section {
            h2 { "What an approval binds" }
            dl.facts {
                dt { "Tool" } dd { code { (Text(proposal.tool())) } }
                dt { "Required scopes" } dd { (scopes(proposal.required_scopes())) }
                dt { "Granted to the proposer" } dd { (scopes(proposal.granted_scopes())) }
                dt { "Risk tier" } dd {
                    (proposal.risk_tier().as_str())
                    @if let Some(why) = proposal.raised_because() {
                        span.raised { ", raised by the call's arguments: " (Text(why)) }
                    }
                }
                dt { "Approval" } dd { (approval_words(policy.resolved)) " (" (why_approval) ")" }
                dt { "Proposal id" } dd { code { (key) } }
            }
        }
        section {
            h2 { "History" }
            ol.history {
                @for record in view.history {
                    @if let AuditRecord::Transition(event) = record {
                        li {
                            time { (event.at.utc()) }
                            " " (event.from.map_or("new", LaneState::as_str)) " → "
                            strong { (event.to.as_str()) }
                            @if let Some(by) = event.by.as_deref() { " by " (Person(by)) }
                            @if let Some(reason) = event.reason.as_deref() {
                                ": " (Shortened(reason))
                            }
                        }
                    }
                }
            }
        }
    };
    respond(
        StatusCode::OK,
        page(proposal.title(), Some(view.operator), body),
    )
}

/// The arguments: the host's view of them for a tool that names one, else a read-only
/// form made from the input schema.
fn arguments(view: &ProposalView<'_>) -> Markup {
    let input = view.lane.proposal().input();
    html! {
        @match view.view {
            Some(Rendered::Text(text)) => div.custom { (Shortened(text)) },
            Some(Rendered::Fields(fields)) => dl.facts.custom {
                @for (label, value) in fields { dt { (Text(label)) } dd { (Shortened(value)) } }
            },
            // The one place markup from outside is spliced in: after the allow-list.
            Some(Rendered::Html(markup)) => div.custom { (PreEscaped(sanitize(markup))) },
            None => {
                @if let Some(name) = view.custom {
                    p.notice {
                        "This tool asks for the view “" (Text(name)) "”, which this console \
                         does not have; the generated form is shown."
                    }
                }
                @match serde_json::from_str::<Value>(input) {
                    Ok(input) => form.arguments {
                        (fields(Field {
                            name: "",
                            value: &input,
                            schema: view.schema,
                            defs: view.schema.and_then(|schema| schema.get("$defs")),
                            depth: 0,
                            masked: false,
                        }))
                    },
                    Err(_) => pre { (Shortened(input)) },
                }
            },
        }
    }
}

/// The forms for the decisions the operator may make, and why any other is missing.
fn decide_section(view: &ProposalView<'_>, key: &str, version: u64) -> Markup {
    let (approve, others, why) = match &view.decidable {
        Decidable::Everything => (true, true, None),
        Decidable::AllButApproval(why) => (false, true, Some(why)),
        Decidable::Nothing(why) => (false, false, Some(why)),
    };
    let form = |token: &str, decision: &str, inside: Markup| {
        html! {
            form method="post" action={ "/proposals/" (key) "/decide" } {
                input type="hidden" name="csrf" value=(Attr(token));
                input type="hidden" name="version" value=(version);
                input type="hidden" name="decision" value=(decision);
                (inside)
            }
        }
    };
    html! {
        section.decide {
            h2 { "Decide" }
            @if let Some(why) = why { p.notice.why-not { (Text(why)) } }
            @if approve {
                (form(&view.tokens[0], "approve", html! {
                    button.approve type="submit" { "Approve" }
                }))
            }
            @if approve && view.edits {
                (form(&view.tokens[3], "approve_with_changes", html! {
                    label {
                        "Or change the arguments, then approve the changed call (checked like \
                         the agent's; this call is then superseded and never runs)"
                        textarea name="arguments" rows="8" cols="80" required spellcheck="false" {
                            (edit_text(view.lane.proposal().input()))
                        }
                    }
                    button.approve-changed type="submit" { "Approve with changes" }
                }))
            }
            @if others {
                @for (token, decision, label, button) in [
                    (&view.tokens[1], "reject", "Why reject it", "Reject"),
                    (&view.tokens[2], "defer", "Why defer it", "Defer"),
                ] {
                    (form(token, decision, html! {
                        label { (label) " " input name="reason" required maxlength="500"; }
                        button class=(decision) type="submit" { (button) }
                    }))
                }
            }
        }
    }
}

/// A proposal's input as an operator edits it: indented JSON (the canonical text when it
/// is not JSON, which it always is).
fn edit_text(input: &str) -> String {
    serde_json::from_str::<Value>(input)
        .and_then(|value| serde_json::to_string_pretty(&value))
        .unwrap_or_else(|_| input.to_string())
}

/// An approval mode as an operator says it.
const fn approval_words(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Auto => "runs without approval",
        ApprovalMode::RequiresApproval => "needs a person's approval",
        ApprovalMode::AlwaysBlock => "never runs",
    }
}

fn scopes(list: &ScopeNames) -> Markup {
    html! {
        @if list.is_empty() { "none" }
        @for (i, scope) in list.iter().enumerate() {
            @if i > 0 { " " }
            code { (Text(scope)) }
        }
    }
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

/// One value of the arguments, with where it stands in the schema.
struct Field<'v> {
    name: &'v str,
    value: &'v Value,
    schema: Option<&'v Value>,
    defs: Option<&'v Value>,
    depth: usize,
    /// Below a secret-looking field name.
    masked: bool,
}

/// Read-only fields for a value, labelled from its schema; nested values as fieldsets.
/// Below a secret-looking field name (as in the preview), values are masked.
fn fields(field: Field<'_>) -> Markup {
    let masked = field.masked || is_secret_name(field.name);
    let schema = resolve(field.schema, field.defs);
    let text_of = |key: &str| {
        schema
            .and_then(|schema| schema.get(key))
            .and_then(Value::as_str)
    };
    let label = text_of("title").unwrap_or(field.name);
    let help =
        html! { @if let Some(text) = text_of("description") { small { (Shortened(text)) } } };
    let child = |name: &'_ str, value, schema| {
        fields(Field {
            name,
            value,
            schema,
            defs: field.defs,
            depth: field.depth + 1,
            masked,
        })
    };
    match field.value {
        Value::Object(object) if field.depth < 16 => {
            let properties = schema.and_then(|schema| schema.get("properties"));
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
            html! {
                fieldset {
                    legend { (Text(label)) } (help)
                    @for key in keys {
                        (child(key, &object[key], properties.and_then(|properties| properties.get(key))))
                    }
                }
            }
        }
        Value::Array(items) if field.depth < 16 => {
            let item_schema = schema.and_then(|schema| schema.get("items"));
            html! {
                fieldset {
                    legend { (Text(label)) } (help)
                    @for (i, item) in items.iter().enumerate() {
                        (child(&format!("{}[{i}]", field.name), item, item_schema))
                    }
                }
            }
        }
        _ if masked => html! {
            label {
                (Text(label)) (help)
                input readonly value="******";
                small { "masked: a secret-looking field (in the JSON)" }
            }
        },
        other => {
            let text = match other {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let allowed = schema
                .and_then(|schema| schema.get("enum"))
                .and_then(Value::as_array);
            let (shown, left) = super::html::shortened(&text);
            let allowed = html! {
                @if let Some(values) = allowed {
                    small {
                        "one of "
                        @for (i, value) in values.iter().enumerate() {
                            @if i > 0 { ", " }
                            (Text(&value.to_string()))
                        }
                    }
                }
            };
            html! {
                label {
                    (Text(label)) (help)
                    @if text.len() > 80 || text.contains('\n') {
                        // A textarea holds text, not markup: hidden characters as plain
                        // code points.
                        textarea readonly rows="4" { (Attr(shown)) }
                        @if left > 0 {
                            small.cut { "… and " (left) " more characters (see the JSON)" }
                        }
                    } @else {
                        input readonly value=(Attr(shown));
                    }
                    (allowed)
                }
            }
        }
    }
}

/// The runs to settle; beside each, its form's token, or why the operator may not settle
/// it.
pub(crate) fn reconcile(
    operator: &str,
    lanes: &[ApprovalLane],
    settle: &[Result<String, String>],
) -> Response {
    let body = html! {
        h1 { "Outcomes to settle" }
        p {
            "These runs were interrupted, or their process died before the outcome was \
             written. Find out what happened, then mark each one."
        }
        @if lanes.is_empty() { p.empty { "Nothing to settle." } }
        @for (lane, settle) in lanes.iter().zip(settle) {
            @let proposal = lane.proposal();
            @let key = lane.key();
            @let state = lane.state().as_str();
            section.settle {
                h2 {
                    a href={ "/proposals/" (key) } { (Text(proposal.title())) }
                    " " (tier_badge(proposal.risk_tier()))
                }
                p class={ "state state-" (state) } { (state) }
                p { "Proposed by " (Person(proposal.actor_id())) " · " (lane.attempts()) " attempt(s)" }
                @match settle {
                    Err(why) => p.notice.why-not { (Text(why)) },
                    Ok(token) => (settle_form(lane, token)),
                }
            }
        }
    };
    respond(StatusCode::OK, page("Reconcile", Some(operator), body))
}

/// The form that marks what became of an interrupted or unknown run.
fn settle_form(lane: &ApprovalLane, token: &str) -> Markup {
    let key = lane.key();
    html! {
                form method="post" action={ "/proposals/" (key) "/reconcile" } {
                    input type="hidden" name="csrf" value=(Attr(token));
                    input type="hidden" name="version" value=(lane.version());
                    label {
                        "It "
                        select name="resolution" {
                            option value="executed" { "ran (mark executed)" }
                            option value="failed" { "did not run (mark failed)" }
                            option value="closed" { "is closed (may be proposed again)" }
                        }
                    }
                    label { "Note " input name="note" required maxlength="500"; }
                    button type="submit" { "Settle" }
                }
    }
}

pub(crate) fn audit(
    operator: &str,
    filter: &AuditFilter,
    records: &[(u64, AuditRecord)],
    more: bool,
) -> Response {
    let next = records.last().filter(|_| more).map(|(last, _)| *last);
    let body = html! {
        h1 { "Audit log" }
        form.filters method="get" action="/audit" {
            label { "Tool " input name="tool" value=(Attr(&filter.tool)); }
            label { "Actor " input name="actor" value=(Attr(&filter.actor)); }
            label {
                "Kind "
                select name="kind" {
                    option value="" { "any" }
                    option value="decision" selected[filter.kind == "decision"] { "decisions" }
                    option value="transition" selected[filter.kind == "transition"] { "lane moves" }
                    option value="notice" selected[filter.kind == "notice"] { "notices" }
                    option value="refusal" selected[filter.kind == "refusal"] { "refusals" }
                }
            }
            button type="submit" { "Filter" }
        }
        p { a href={ "/audit.jsonl?" (Attr(&filter.query(0))) } { "Export as JSON lines" } }
        table.audit {
            thead {
                tr { th { "#" } th { "Kind" } th { "Tool" } th { "Who" } th { "What" } th { "Why" } }
            }
            tbody {
                @for (seq, record) in records {
                    @match record {
                        AuditRecord::Decision(event) => tr {
                            td { (seq) } td { "decision" } td { (Text(&event.tool)) }
                            td { (Person(&event.actor_id)) } td { (Text(&event.decision)) }
                            td { (Shortened(event.reason.as_deref().unwrap_or(""))) }
                        },
                        AuditRecord::Transition(event) => tr {
                            td { (seq) } td { "lane move" } td { (Text(&event.tool)) }
                            td { (Person(event.by.as_deref().unwrap_or(&event.proposer))) }
                            td { (event.from.map_or("new", LaneState::as_str)) " → " (event.to.as_str()) }
                            td { (Shortened(event.reason.as_deref().unwrap_or(""))) }
                        },
                        AuditRecord::Notice(event) => tr {
                            td { (seq) } td { "notice" } td { (Text(&event.tool)) }
                            td { (Text(&event.target)) }
                            td {
                                @if event.delivered { "told" } @else { "not told" }
                                " after " (event.attempts) " attempt(s)"
                            }
                            td { (Shortened(event.reason.as_deref().unwrap_or(""))) }
                        },
                        AuditRecord::Refusal(event) => tr {
                            td { (seq) } td { "refusal" } td { (Text(event.tool.as_deref().unwrap_or(""))) }
                            td { (Person(event.operator.as_deref().or(event.by.as_deref()).unwrap_or(""))) }
                            td { "refused at " (Text(&event.surface)) }
                            td { (Text(&event.reason)) }
                        },
                    }
                }
            }
        }
        nav.pages aria-label="Audit pages" {
            @if let Some(last) = next { a href={ "/audit?" (Attr(&filter.query(last))) } { "Next" } }
        }
    };
    respond(StatusCode::OK, page("Audit", Some(operator), body))
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
