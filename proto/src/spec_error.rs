//! The error of a spec that failed to parse or validate: the field it
//! names and the line, so a user finds the mistake at once. Kept apart from
//! [`crate::spec`] because the spec's parts in [`crate::harness`] return it
//! too, and neither should need the other to say what went wrong.

use std::fmt;

/// A spec that failed to parse or validate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SpecError {
    /// Dotted path of the offending field (`subagents[1].name`); empty for
    /// the document itself.
    pub field: String,
    /// 1-based line, when the parser knows it.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = if self.field.is_empty() {
            "spec"
        } else {
            &self.field
        };
        match self.line {
            Some(line) => write!(f, "{field} (line {line}): {}", self.message),
            None => write!(f, "{field}: {}", self.message),
        }
    }
}

impl SpecError {
    /// An error of `field`, its line not known yet (see
    /// [`SpecError::located`]).
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError {
            field: field.into(),
            line: None,
            message: message.into(),
        }
    }

    /// This error with the line of its field in `source` (the spec's
    /// YAML), when it has none yet.
    pub fn located(mut self, source: &str) -> Self {
        if self.line.is_none() && !self.field.is_empty() {
            self.line = crate::spec_lines::line_of(source, &self.field);
        }
        self
    }
}
