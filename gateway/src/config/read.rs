//! Reading the parsed TOML tree with every problem kept: each accessor reports what is
//! wrong at the value's place and carries on, so one pass finds every problem.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Problem, Problems};

/// A value of the tree with its place in the file.
pub(crate) type Value<'s> = Spanned<DeValue<'s>>;

/// The reader: the file's text (for lines and columns) and the problems found so far.
pub(crate) struct Reader<'s> {
    source: &'s str,
    pub(crate) problems: Problems,
}

impl<'s> Reader<'s> {
    pub(crate) fn new(source: &'s str) -> Self {
        Self {
            source,
            problems: Problems::default(),
        }
    }

    pub(crate) fn problem(&mut self, span: Range<usize>, message: impl Into<String>) {
        self.problems.push(Problem::at(self.source, span, message));
    }

    /// The file's text at `span` (empty if it is not one).
    pub(crate) fn text(&self, span: Range<usize>) -> &'s str {
        self.source.get(span).unwrap_or_default()
    }

    /// Reports each key of `table` that `known` does not name.
    pub(crate) fn only(&mut self, table: &DeTable<'_>, within: &str, known: &[&str]) {
        for (key, _) in table.iter() {
            if !known.contains(&key.get_ref().as_ref()) {
                let expected = known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                self.problem(
                    key.span(),
                    format!(
                        "unknown key `{}` in {within}; expected one of {expected}",
                        key.get_ref()
                    ),
                );
            }
        }
    }

    pub(crate) fn table<'v>(
        &mut self,
        value: &'v Value<'s>,
        what: &str,
    ) -> Option<&'v DeTable<'s>> {
        match value.get_ref() {
            DeValue::Table(table) => Some(table),
            _ => {
                self.problem(value.span(), format!("{what} must be a table"));
                None
            }
        }
    }

    pub(crate) fn string(&mut self, value: &Value<'s>, what: &str) -> Option<String> {
        match value.get_ref() {
            DeValue::String(text) => Some(text.to_string()),
            _ => {
                self.problem(value.span(), format!("{what} must be a string"));
                None
            }
        }
    }

    pub(crate) fn boolean(&mut self, value: &Value<'s>, what: &str) -> Option<bool> {
        match value.get_ref() {
            DeValue::Boolean(flag) => Some(*flag),
            _ => {
                self.problem(value.span(), format!("{what} must be true or false"));
                None
            }
        }
    }

    /// A whole number within `range`.
    pub(crate) fn number(
        &mut self,
        value: &Value<'s>,
        what: &str,
        range: std::ops::RangeInclusive<u64>,
    ) -> Option<u64> {
        let parsed = match value.get_ref() {
            DeValue::Integer(number) => {
                u64::from_str_radix(&number.as_str().replace('_', ""), number.radix()).ok()
            }
            _ => None,
        };
        match parsed {
            Some(number) if range.contains(&number) => Some(number),
            _ => {
                self.problem(
                    value.span(),
                    format!(
                        "{what} must be a whole number from {} to {}",
                        range.start(),
                        range.end()
                    ),
                );
                None
            }
        }
    }

    /// An array of strings, each with its place.
    pub(crate) fn strings(&mut self, value: &Value<'s>, what: &str) -> Vec<(String, Range<usize>)> {
        let DeValue::Array(items) = value.get_ref() else {
            self.problem(value.span(), format!("{what} must be an array of strings"));
            return Vec::new();
        };
        items
            .iter()
            .filter_map(|item| {
                let text = self.string(item, &format!("each of {what}"))?;
                Some((text, item.span()))
            })
            .collect()
    }
}
