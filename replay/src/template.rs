//! `{{variable}}` templates of replay scripts.
//!
//! Templates are parsed when the script loads, so a malformed template or a
//! variable no rule can supply fails the load, not a test run later.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Values of the variables a matched rule provides.
pub(crate) type Vars = HashMap<String, String>;

/// A string with `{{name}}` placeholders.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Template {
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Literal(String),
    Var(String),
}

impl Template {
    /// Parses `text`; an unclosed `{{` or a name that is not an identifier
    /// is an error.
    pub(crate) fn parse(text: &str) -> Result<Template, String> {
        let mut segments = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                segments.push(Segment::Literal(rest[..start].to_owned()));
            }
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                return Err(format!("unclosed `{{{{` in {text:?}"));
            };
            let name = after[..end].trim();
            let is_identifier = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !is_identifier {
                return Err(format!("`{{{{{name}}}}}` is not a variable name"));
            }
            segments.push(Segment::Var(name.to_owned()));
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            segments.push(Segment::Literal(rest.to_owned()));
        }
        Ok(Template { segments })
    }

    /// The variables the template uses.
    pub(crate) fn vars(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|segment| match segment {
            Segment::Var(name) => Some(name.as_str()),
            Segment::Literal(_) => None,
        })
    }

    /// Fills in the variables; one without a value (an optional capture
    /// group that did not take part in the match) is an error.
    pub(crate) fn render(&self, vars: &Vars) -> Result<String, String> {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) => out.push_str(text),
                Segment::Var(name) => match vars.get(name) {
                    Some(value) => out.push_str(value),
                    None => return Err(format!("variable `{name}` has no value in this match")),
                },
            }
        }
        Ok(out)
    }
}

/// A JSON value whose strings are templates (tool-call `args`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ValueTemplate {
    String(Template),
    Array(Vec<ValueTemplate>),
    Object(Vec<(String, ValueTemplate)>),
    /// Numbers, booleans and null pass through.
    Plain(Value),
}

impl ValueTemplate {
    /// Parses every string inside `value`.
    pub(crate) fn parse(value: Value) -> Result<ValueTemplate, String> {
        Ok(match value {
            Value::String(text) => ValueTemplate::String(Template::parse(&text)?),
            Value::Array(items) => ValueTemplate::Array(
                items
                    .into_iter()
                    .map(ValueTemplate::parse)
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => ValueTemplate::Object(
                map.into_iter()
                    .map(|(key, value)| Ok((key, ValueTemplate::parse(value)?)))
                    .collect::<Result<_, String>>()?,
            ),
            plain => ValueTemplate::Plain(plain),
        })
    }

    /// The variables used anywhere inside.
    pub(crate) fn vars(&self) -> Vec<&str> {
        match self {
            ValueTemplate::String(template) => template.vars().collect(),
            ValueTemplate::Array(items) => items.iter().flat_map(ValueTemplate::vars).collect(),
            ValueTemplate::Object(fields) => {
                fields.iter().flat_map(|(_, value)| value.vars()).collect()
            }
            ValueTemplate::Plain(_) => Vec::new(),
        }
    }

    /// Renders every string.
    pub(crate) fn render(&self, vars: &Vars) -> Result<Value, String> {
        Ok(match self {
            ValueTemplate::String(template) => Value::String(template.render(vars)?),
            ValueTemplate::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| item.render(vars))
                    .collect::<Result<_, _>>()?,
            ),
            ValueTemplate::Object(fields) => {
                let mut map = Map::new();
                for (key, value) in fields {
                    map.insert(key.clone(), value.render(vars)?);
                }
                Value::Object(map)
            }
            ValueTemplate::Plain(value) => value.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn vars(pairs: &[(&str, &str)]) -> Vars {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn renders_variables_between_literals() {
        let template = Template::parse("Saved {{topic}} at turn {{ turn }}.").unwrap();
        assert_eq!(template.vars().collect::<Vec<_>>(), ["topic", "turn"]);
        assert_eq!(
            template
                .render(&vars(&[("topic", "rust"), ("turn", "2")]))
                .unwrap(),
            "Saved rust at turn 2."
        );
        assert_eq!(
            Template::parse("plain")
                .unwrap()
                .render(&Vars::new())
                .unwrap(),
            "plain"
        );
    }

    #[test]
    fn rejects_malformed_templates_and_missing_values() {
        assert!(
            Template::parse("a {{topic")
                .unwrap_err()
                .contains("unclosed")
        );
        assert!(
            Template::parse("{{a b}}")
                .unwrap_err()
                .contains("not a variable")
        );
        assert!(Template::parse("{{}}").is_err());
        let error = Template::parse("{{x}}")
            .unwrap()
            .render(&Vars::new())
            .unwrap_err();
        assert!(error.contains("`x`"), "{error}");
    }

    #[test]
    fn value_templates_render_every_string() {
        let template = ValueTemplate::parse(json!({
            "file_path": "/notes/{{topic}}.md",
            "lines": ["# {{topic}}", 3, true, null],
        }))
        .unwrap();
        let mut used = template.vars();
        used.sort_unstable();
        assert_eq!(used, ["topic", "topic"]);
        assert_eq!(
            template.render(&vars(&[("topic", "cats")])).unwrap(),
            json!({"file_path": "/notes/cats.md", "lines": ["# cats", 3, true, null]})
        );
    }
}
