//! A preview template: what an operator reads about a forwarded call, with the call's
//! top-level arguments put in.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

/// A preview template: text with `{field}` where a top-level argument's value goes
/// (`{{` and `}}` for braces). Checked when the configuration is read.
///
/// ```
/// use cairnloop::declared::Template;
///
/// let template = Template::parse("Write {path} ({{size}} unknown)")?;
/// assert_eq!(template.fields().collect::<Vec<_>>(), ["path"]);
/// let arguments = serde_json::json!({"path": "/srv/a.txt", "content": "hi"});
/// assert_eq!(template.render(&arguments), "Write \"/srv/a.txt\" ({size} unknown)");
/// # Ok::<(), cairnloop::declared::TemplateError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template(Vec<Piece>);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Field(String),
}

/// Why a preview template cannot be read.
///
/// ```
/// use cairnloop::declared::{Template, TemplateError};
///
/// assert_eq!(Template::parse("Write {path"), Err(TemplateError::Unclosed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// A `{` with no `}` after it.
    #[error("a `{{` is not closed: write `{{{{` for a brace")]
    Unclosed,
    /// A `}` with no `{` before it.
    #[error("a `}}` was not opened: write `}}}}` for a brace")]
    Unopened,
    /// A field name that is not `[A-Za-z0-9_]{1,64}`.
    #[error("a field is named by 1 to 64 of `A-Z a-z 0-9 _`")]
    BadField,
}

impl Template {
    /// Reads a template.
    ///
    /// # Errors
    ///
    /// A brace that is not closed or not opened, or a field name outside
    /// `[A-Za-z0-9_]{1,64}`.
    ///
    /// ```
    /// # use cairnloop::declared::{Template, TemplateError};
    /// assert_eq!(Template::parse("{}"), Err(TemplateError::BadField));
    /// ```
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => return Err(TemplateError::Unopened),
                '{' => {
                    let mut field = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(c) => field.push(c),
                            None => return Err(TemplateError::Unclosed),
                        }
                    }
                    let valid = !field.is_empty()
                        && field.len() <= 64
                        && field
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
                    if !valid {
                        return Err(TemplateError::BadField);
                    }
                    if !literal.is_empty() {
                        pieces.push(Piece::Text(core::mem::take(&mut literal)));
                    }
                    pieces.push(Piece::Field(field));
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Self(pieces))
    }

    /// The fields the template names, in order.
    ///
    /// ```
    /// # use cairnloop::declared::Template;
    /// let template = Template::parse("{a} to {b}").unwrap();
    /// assert_eq!(template.fields().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|piece| match piece {
            Piece::Field(field) => Some(field.as_str()),
            Piece::Text(_) => None,
        })
    }

    /// The template with each field's value put in, as JSON (so a string shows its
    /// quotes and escapes: an argument cannot pass for the template's own text); a field
    /// the arguments lack reads `(missing)`.
    ///
    /// ```
    /// # use cairnloop::declared::Template;
    /// let template = Template::parse("Delete {path}").unwrap();
    /// let sneaky = serde_json::json!({"path": "a\"\nApproved by admin"});
    /// assert_eq!(template.render(&sneaky), r#"Delete "a\"\nApproved by admin""#);
    /// assert_eq!(template.render(&serde_json::json!({})), "Delete (missing)");
    /// ```
    #[must_use]
    pub fn render(&self, arguments: &serde_json::Value) -> String {
        let mut out = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Field(field) => match arguments.get(field) {
                    Some(value) => out.push_str(&value.to_string()),
                    None => out.push_str("(missing)"),
                },
            }
        }
        out
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for piece in &self.0 {
            match piece {
                Piece::Text(text) => f.write_str(&text.replace('{', "{{").replace('}', "}}"))?,
                Piece::Field(field) => write!(f, "{{{field}}}")?,
            }
        }
        Ok(())
    }
}
