//! `raise` rules: a CEL expression over a call's arguments and its caller that raises that
//! one call above its tool's tier (a write outside a scratch folder, a refund over a
//! limit). Each is compiled and checked when the file is read; at run time, a rule whose
//! expression fails (a missing field, a type mismatch) raises the call as if it held: a
//! rule never lowers a call's risk by failing.
//!
//! A rule's cost is bounded before it runs: its text is at most [`MAX_WHEN_BYTES`], it
//! calls only the functions of [`FUNCTIONS`], builds no list in a loop (`map` and
//! `filter` are refused), and the body of a loop (`all`, `exists`, `exists_one`) sees only
//! its own element. So each element is read a bounded number of times, and an evaluation
//! costs at most the size of the arguments times the size of the rule.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use cairnloop::{Actor, RiskTier};
use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::{Context, Env, Program};
use toml::de::DeValue;

use super::read::{Reader, Value};

/// The longest `when` expression, in bytes.
///
/// ```
/// # use cairnloop_gateway::config::{Config, MAX_WHEN_BYTES};
/// let long = format!("args.a == '{}'", "x".repeat(MAX_WHEN_BYTES));
/// let file = format!("[upstreams.u]\ncommand = \"x\"\n[tools.u.t]\ntier = \"low_write\"\nraise = [{{ when = \"{long}\", tier = \"high_write\", reason = \"r\" }}]\n");
/// assert!(Config::parse(&file).is_err());
/// ```
pub const MAX_WHEN_BYTES: usize = 512;

/// The most `raise` rules of one tool.
///
/// ```
/// assert_eq!(cairnloop_gateway::config::MAX_RAISES, 16);
/// ```
pub const MAX_RAISES: usize = 16;

/// The functions a `when` expression may call, besides the operators.
///
/// ```
/// assert!(cairnloop_gateway::config::FUNCTIONS.contains(&"startsWith"));
/// ```
pub const FUNCTIONS: &[&str] = &[
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "int",
    "uint",
    "double",
    "string",
];

/// The operators CEL writes as calls, all of them bounded by their operands.
const OPERATORS: &[&str] = &[
    "_?_:_",
    "_&&_",
    "_||_",
    "!_",
    "_-_",
    "_+_",
    "_*_",
    "_/_",
    "_%_",
    "_==_",
    "_!=_",
    "_>=_",
    "_<=_",
    "_>_",
    "_<_",
    "-_",
    "_[_]",
    "@in",
    "@not_strictly_false",
];

/// The names a `when` expression reads.
const VARIABLES: &[&str] = &["args", "actor", "account"];

/// One `raise` rule of a tool: `{ when = "…", tier = "…", reason = "…" }`.
///
/// ```
/// # use cairnloop::RiskTier;
/// # use cairnloop_gateway::config::Config;
/// let config = Config::parse(r#"
/// [upstreams.fs]
/// command = "server"
/// [tools.fs.write_file]
/// tier = "low_write"
/// raise = [{ when = "!args.path.startsWith('/scratch/')", tier = "high_write", reason = "outside the scratch folder" }]
/// "#)?;
/// let raise = &config.tools[0].raise.rules()[0];
/// assert_eq!((raise.tier, raise.reason.as_str()), (RiskTier::HighWrite, "outside the scratch folder"));
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct Raise {
    /// The CEL expression, as written.
    pub when: String,
    /// The tier a call it holds for is raised to.
    pub tier: RiskTier,
    /// Why, in words an operator reads.
    pub reason: String,
    program: Arc<Program>,
}

impl fmt::Debug for Raise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Raise")
            .field("when", &self.when)
            .field("tier", &self.tier)
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Raise {
    fn eq(&self, other: &Self) -> bool {
        (&self.when, self.tier, &self.reason) == (&other.when, other.tier, &other.reason)
    }
}

/// A tool's `raise` rules, in the order written (none: the tool's tier for every call).
///
/// ```
/// # use cairnloop::{Actor, RiskTier};
/// # use cairnloop_gateway::config::Config;
/// let config = Config::parse(r#"
/// [upstreams.pay]
/// command = "server"
/// [tools.pay.refund]
/// tier = "low_write"
/// raise = [
///   { when = "args.cents > 100000", tier = "high_write", reason = "over a thousand dollars" },
///   { when = "account == 'trial'", tier = "destructive", reason = "trial accounts refund nothing" },
/// ]
/// "#)?;
/// let raise = &config.tools[0].raise;
/// let agent = Actor::new("agent", &[]);
/// assert_eq!(raise.tier_for(&serde_json::json!({"cents": 500}), &agent), None);
/// assert_eq!(raise.tier_for(&serde_json::json!({"cents": 500_000}), &agent), Some(RiskTier::HighWrite));
/// let trial = agent.with_account("trial");
/// assert_eq!(raise.tier_for(&serde_json::json!({"cents": 5}), &trial), Some(RiskTier::Destructive));
/// // A rule that cannot be evaluated (no `cents`) raises as if it held.
/// assert_eq!(raise.tier_for(&serde_json::json!({}), &agent), Some(RiskTier::HighWrite));
/// # Ok::<(), cairnloop_gateway::config::Problems>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Raises {
    rules: Arc<[Raise]>,
}

impl Raises {
    /// The rules, in the order written.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Raises;
    /// assert!(Raises::default().rules().is_empty());
    /// ```
    pub fn rules(&self) -> &[Raise] {
        &self.rules
    }

    /// Whether there are none.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Raises;
    /// assert!(Raises::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The tier the rules give a call with `arguments` made by `actor`: the highest
    /// tier of the rules whose expression holds, or fails; `None` when none does.
    ///
    /// ```
    /// # use cairnloop::Actor;
    /// # use cairnloop_gateway::config::Raises;
    /// assert_eq!(Raises::default().tier_for(&serde_json::json!({}), &Actor::new("a", &[])), None);
    /// ```
    pub fn tier_for(&self, arguments: &serde_json::Value, actor: &Actor<'_>) -> Option<RiskTier> {
        self.raised_for(arguments, actor).map(|(tier, _)| tier)
    }

    /// [`Raises::tier_for`], and why: the `reason` of the first rule at that tier that
    /// holds, or of one that failed, said so.
    ///
    /// ```
    /// # use cairnloop::{Actor, RiskTier};
    /// # use cairnloop_gateway::config::Config;
    /// let config = Config::parse(r#"
    /// [upstreams.pay]
    /// command = "server"
    /// [tools.pay.refund]
    /// tier = "low_write"
    /// raise = [{ when = "args.cents > 100000", tier = "high_write", reason = "over a thousand dollars" }]
    /// "#)?;
    /// let raise = &config.tools[0].raise;
    /// let agent = Actor::new("agent", &[]);
    /// let (tier, reason) = raise.raised_for(&serde_json::json!({"cents": 500_000}), &agent).unwrap();
    /// assert_eq!((tier, reason.as_str()), (RiskTier::HighWrite, "over a thousand dollars"));
    /// let (_, reason) = raise.raised_for(&serde_json::json!({}), &agent).unwrap();
    /// assert_eq!(reason, "over a thousand dollars (the rule could not be evaluated for this call)");
    /// # Ok::<(), cairnloop_gateway::config::Problems>(())
    /// ```
    pub fn raised_for(
        &self,
        arguments: &serde_json::Value,
        actor: &Actor<'_>,
    ) -> Option<(RiskTier, String)> {
        if self.rules.is_empty() {
            return None;
        }
        let Ok(args) = cel::to_value(arguments) else {
            let strictest = self.rules.iter().max_by_key(|rule| rule.tier)?;
            return Some((strictest.tier, failed(strictest)));
        };
        let mut context = Context::with_env(Arc::clone(environment()));
        context.add_variable_from_value("args", args);
        context.add_variable_from_value("actor", actor.id());
        context.add_variable_from_value(
            "account",
            actor.account().map_or(cel::Value::Null, cel::Value::from),
        );
        let mut raised: Option<(RiskTier, String)> = None;
        for rule in self.rules.iter() {
            if raised.as_ref().is_some_and(|(tier, _)| *tier >= rule.tier) {
                continue;
            }
            // Only a plain `false` leaves the call's tier alone.
            match rule.program.execute(&context) {
                Ok(cel::Value::Bool(false)) => {}
                Ok(cel::Value::Bool(true)) => raised = Some((rule.tier, rule.reason.clone())),
                _ => raised = Some((rule.tier, failed(rule))),
            }
        }
        raised
    }
}

/// A rule's reason, for a call it could not be evaluated for (and so raised).
fn failed(rule: &Raise) -> String {
    format!(
        "{} (the rule could not be evaluated for this call)",
        rule.reason
    )
}

/// The standard environment, built once.
fn environment() -> &'static Arc<Env> {
    static ENVIRONMENT: OnceLock<Arc<Env>> = OnceLock::new();
    ENVIRONMENT.get_or_init(|| Arc::new(Env::stdlib()))
}

/// Reads a tool's `raise` array; `tool_tier` is the tier each rule must be above.
pub(crate) fn read_raises<'s>(
    reader: &mut Reader<'s>,
    value: &Value<'s>,
    tool_tier: Option<RiskTier>,
) -> Raises {
    let DeValue::Array(items) = value.get_ref() else {
        reader.problem(
            value.span(),
            "`raise` must be an array of tables: `[{ when = \"…\", tier = \"…\", reason = \"…\" }]`",
        );
        return Raises::default();
    };
    if items.len() > MAX_RAISES {
        reader.problem(
            value.span(),
            format!(
                "`raise` has {} rules; a tool has at most {MAX_RAISES}",
                items.len()
            ),
        );
        return Raises::default();
    }
    let rules: Vec<Raise> = items
        .iter()
        .filter_map(|item| read_raise(reader, item, tool_tier))
        .collect();
    Raises {
        rules: rules.into(),
    }
}

fn read_raise<'s>(
    reader: &mut Reader<'s>,
    item: &Value<'s>,
    tool_tier: Option<RiskTier>,
) -> Option<Raise> {
    let table = reader.table(item, "each of `raise`")?;
    reader.only(table, "a `raise` rule", &["when", "tier", "reason"]);
    let field = |reader: &mut Reader<'s>, key: &str| {
        let found = table.get(key);
        if found.is_none() {
            reader.problem(item.span(), format!("a `raise` rule needs `{key}`"));
        }
        found.and_then(|value| {
            reader
                .string(value, &format!("`{key}`"))
                .map(|text| (text, value.span()))
        })
    };
    let when = field(reader, "when");
    let tier_text = field(reader, "tier");
    let reason = field(reader, "reason");
    let tier = tier_text.and_then(|(text, span)| match text.parse::<RiskTier>() {
        Ok(tier) => Some((tier, span)),
        Err(_) => {
            reader.problem(
                span,
                "`tier` must be one of `read_only`, `low_write`, `high_write`, `destructive`",
            );
            None
        }
    });
    if let (Some((tier, span)), Some(tool_tier)) = (&tier, tool_tier)
        && *tier <= tool_tier
    {
        reader.problem(
            span.clone(),
            format!("a `raise` rule's `tier` must be above the tool's: `{tier}` is not above `{tool_tier}`"),
        );
    }
    if let Some((reason, span)) = &reason
        && reason.trim().is_empty()
    {
        reader.problem(
            span.clone(),
            "`reason` says why, in words an operator reads: it cannot be empty",
        );
    }
    let (when, span) = when?;
    let program = compile(reader, &when, span)?;
    Some(Raise {
        when,
        tier: tier?.0,
        reason: reason?.0,
        program: Arc::new(program),
    })
}

/// Compiles `when` and checks its bounds, each problem at its place in the file.
fn compile(reader: &mut Reader<'_>, when: &str, span: Range<usize>) -> Option<Program> {
    if when.len() > MAX_WHEN_BYTES {
        reader.problem(
            span,
            format!(
                "`when` is {} bytes long; at most {MAX_WHEN_BYTES}",
                when.len()
            ),
        );
        return None;
    }
    let place = Place::new(reader.text(span.clone()), when, span);
    let program = match environment().compile(when) {
        Ok(program) => program,
        Err(errors) => {
            for error in &errors.errors {
                let at = place.at_line_column(error.pos.0, error.pos.1);
                reader.problem(at, format!("`when` is not CEL: {}", error.msg));
            }
            return None;
        }
    };
    let mut found = Vec::new();
    let top = Scope {
        visible: VARIABLES.to_vec(),
        enclosing: Vec::new(),
        element: None,
    };
    check(program.expression(), &top, &mut found);
    for (id, message) in &found {
        let at = program.source_info().offset_for(*id).map_or_else(
            || place.span.clone(),
            |(start, stop)| place.at_chars(start, stop),
        );
        reader.problem(at, format!("`when`: {message}"));
    }
    found.is_empty().then_some(program)
}

/// Where a `when` expression sits in the file: its text is found in its value's, unless
/// an escape changed it, in which case a problem is placed at the whole value.
struct Place<'a> {
    when: &'a str,
    start: Option<usize>,
    span: Range<usize>,
}

impl<'a> Place<'a> {
    fn new(raw: &str, when: &'a str, span: Range<usize>) -> Self {
        let start = raw.find(when).map(|offset| span.start + offset);
        Self { when, start, span }
    }

    /// The place of the characters `start..stop` of the expression.
    fn at_chars(&self, start: u32, stop: u32) -> Range<usize> {
        let Some(base) = self.start else {
            return self.span.clone();
        };
        let byte = |chars: u32| {
            self.when
                .char_indices()
                .nth(chars as usize)
                .map_or(self.when.len(), |(offset, _)| offset)
        };
        let (start, stop) = (byte(start), byte(stop.max(start)).max(byte(start) + 1));
        base + start..base + stop.min(self.when.len()).max(start)
    }

    /// The place of a 1-based line and column of the expression.
    fn at_line_column(&self, line: isize, column: isize) -> Range<usize> {
        let Some(base) = self.start else {
            return self.span.clone();
        };
        let line_start: usize = self
            .when
            .split_inclusive('\n')
            .take(usize::try_from(line - 1).unwrap_or(0))
            .map(str::len)
            .sum();
        let rest = &self.when[line_start..];
        let column = rest
            .char_indices()
            .nth(usize::try_from(column - 1).unwrap_or(0))
            .map_or(rest.len(), |(offset, _)| offset);
        let at = base + line_start + column;
        at..at
    }
}

/// The names an expression may read where it is written.
struct Scope<'a> {
    /// Read here.
    visible: Vec<&'a str>,
    /// Of the loops around (and the variables outside them): known, not readable here.
    enclosing: Vec<&'a str>,
    /// The element of the loop whose body this is.
    element: Option<&'a str>,
}

/// Every way `expr` breaks the bounds, by node: a name not visible, a function not in
/// [`FUNCTIONS`], a loop that builds a list, a loop body that reads past its own element.
fn check<'a>(expr: &'a IdedExpr, scope: &Scope<'a>, found: &mut Vec<(u64, String)>) {
    let mut refuse = |message: String| found.push((expr.id, message));
    match &expr.expr {
        Expr::Literal(_) => {}
        Expr::Ident(name) if scope.visible.contains(&name.as_str()) => {}
        Expr::Ident(name) => match scope.element {
            Some(element) if scope.enclosing.contains(&name.as_str()) => refuse(format!(
                "inside a loop only its element `{element}` may be read, not `{name}`: each element is checked on its own, so the rule's cost stays bounded"
            )),
            _ => refuse(format!(
                "unknown name `{name}`; a rule reads `args`, `actor` and `account`"
            )),
        },
        Expr::Select(select) => check(&select.operand, scope, found),
        Expr::Call(call) => {
            let name = call.func_name.as_str();
            if !FUNCTIONS.contains(&name) && !OPERATORS.contains(&name) {
                refuse(format!(
                    "`{name}` is not a function a rule may call; it may call {}",
                    FUNCTIONS
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if let Some(target) = &call.target {
                check(target, scope, found);
            }
            for arg in &call.args {
                check(arg, scope, found);
            }
        }
        Expr::List(list) => {
            for element in &list.elements {
                check(element, scope, found);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(entry) = &entry.expr {
                    check(&entry.key, scope, found);
                    check(&entry.value, scope, found);
                }
            }
        }
        Expr::Comprehension(loop_) => {
            if matches!(loop_.accu_init.expr, Expr::List(_)) {
                refuse(
                    "`map` and `filter` build lists; a rule may use `all`, `exists` and `exists_one`"
                        .to_owned(),
                );
                return;
            }
            check(&loop_.iter_range, scope, found);
            check(&loop_.accu_init, scope, found);
            let mut visible = vec![loop_.iter_var.as_str(), loop_.accu_var.as_str()];
            visible.extend(loop_.iter_var2.as_deref());
            let body = Scope {
                visible,
                enclosing: [scope.enclosing.as_slice(), scope.visible.as_slice()].concat(),
                element: Some(loop_.iter_var.as_str()),
            };
            for part in [&loop_.loop_cond, &loop_.loop_step, &loop_.result] {
                check(part, &body, found);
            }
        }
        Expr::Struct(_) | Expr::Unspecified => {
            refuse("a rule reads `args`, `actor` and `account`; it builds no messages".to_owned());
        }
    }
}
