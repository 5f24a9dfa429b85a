//! A problem found in a configuration file, with where it is.

use std::fmt;
use std::ops::Range;

/// One problem in a configuration file: its line and column (both from 1) and what is
/// wrong, in words that name the fix.
///
/// ```
/// use cairnloop_gateway::config::Problem;
///
/// let problem = Problem::at("[upstreams.fs]\ncommand = 7\n", 25..26, "`command` must be a string");
/// assert_eq!((problem.line(), problem.column()), (2, 11));
/// assert_eq!(problem.to_string(), "2:11: `command` must be a string");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    line: usize,
    column: usize,
    message: String,
}

impl Problem {
    /// The problem `message` at byte range `span` of `source`.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Problem;
    /// assert_eq!(Problem::at("a = 1", 0..1, "no").line(), 1);
    /// ```
    #[must_use]
    pub fn at(source: &str, span: Range<usize>, message: impl Into<String>) -> Self {
        let start = floor_char_boundary(source, span.start.min(source.len()));
        let before = &source[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        let column = source[line_start..start].chars().count() + 1;
        Self {
            line,
            column,
            message: message.into(),
        }
    }

    /// The line, from 1.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Problem;
    /// assert_eq!(Problem::at("\n\nx", 2..3, "no").line(), 3);
    /// ```
    #[must_use]
    pub const fn line(&self) -> usize {
        self.line
    }

    /// The column, from 1, in characters.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Problem;
    /// assert_eq!(Problem::at("é = x", 5..6, "no").column(), 5);
    /// ```
    #[must_use]
    pub const fn column(&self) -> usize {
        self.column
    }

    /// What is wrong.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Problem;
    /// assert_eq!(Problem::at("x", 0..1, "no").message(), "no");
    /// ```
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// Every problem of a configuration file, in the order of the file: a file is accepted
/// whole or not at all.
///
/// ```
/// use cairnloop_gateway::config::Config;
///
/// let problems = Config::parse("[upstreams.fs]\n").unwrap_err();
/// assert_eq!(problems.len(), 1);
/// assert!(problems.to_string().starts_with("1:12: upstream `fs` needs"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, thiserror::Error)]
pub struct Problems(Vec<Problem>);

impl Problems {
    pub(crate) fn push(&mut self, problem: Problem) {
        self.0.push(problem);
    }

    pub(crate) fn into_sorted(mut self) -> Self {
        self.0.sort_by_key(|problem| (problem.line, problem.column));
        self.0.dedup();
        self
    }

    /// How many problems there are.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Config;
    /// assert_eq!(Config::parse("x = 1").unwrap_err().len(), 1);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Config;
    /// assert!(!Config::parse("x = 1").unwrap_err().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each problem, in the order of the file.
    ///
    /// ```
    /// # use cairnloop_gateway::config::Config;
    /// let problems = Config::parse("x = 1\ny = 2").unwrap_err();
    /// let lines: Vec<usize> = problems.iter().map(|p| p.line()).collect();
    /// assert_eq!(lines, [1, 2]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &Problem> {
        self.0.iter()
    }
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

/// The start of the character that holds byte `index`.
fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}
