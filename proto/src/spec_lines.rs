//! Where a spec's fields are in its YAML: the line of each field path
//! (`subagents[1].name`, `interrupt_on.write_fle`), so an error found
//! after parsing, by validation or by a worker's checks, still points the
//! user at the line. serde keeps no positions once a document is read;
//! the YAML parser's event stream has them.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// The line (1-based) of each field path of `source`; a mapping key's
/// line for an entry, an item's for a list item. Empty when `source` is
/// not YAML.
pub fn field_lines(source: &str) -> HashMap<String, usize> {
    let mut walker = Walker::default();
    let mut parser = Parser::new_from_str(source);
    if parser.load(&mut walker, false).is_err() {
        return HashMap::new();
    }
    walker.lines
}

/// The line of `field` in `source`, or of its nearest enclosing field
/// that is written there (a field left at its default is not).
pub fn line_of(source: &str, field: &str) -> Option<usize> {
    let lines = field_lines(source);
    let mut path = field;
    loop {
        if let Some(line) = lines.get(path) {
            return Some(*line);
        }
        let cut = path.rfind(['.', '['])?;
        path = &path[..cut];
    }
}

/// Where the walk is inside one mapping or list.
enum Frame {
    Map {
        path: String,
        /// The key just read, whose value comes next.
        key: Option<String>,
    },
    List {
        path: String,
        next: usize,
    },
}

#[derive(Default)]
struct Walker {
    stack: Vec<Frame>,
    lines: HashMap<String, usize>,
}

fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

impl Walker {
    /// The path of a value starting at `mark`, recorded for list items;
    /// `None` when the value is a mapping key.
    fn value_path(&mut self, mark: Marker) -> Option<String> {
        match self.stack.last_mut() {
            None => Some(String::new()),
            Some(Frame::Map { key: None, .. }) => None,
            Some(Frame::Map {
                path,
                key: Some(key),
            }) => Some(join(path, key)),
            Some(Frame::List { path, next }) => {
                let item = format!("{path}[{next}]");
                self.lines.insert(item.clone(), mark.line());
                Some(item)
            }
        }
    }

    /// A value of the current container ended.
    fn value_done(&mut self) {
        match self.stack.last_mut() {
            Some(Frame::Map { key, .. }) => *key = None,
            Some(Frame::List { next, .. }) => *next += 1,
            None => {}
        }
    }

    /// A container (or a complex key) opens at `mark`.
    fn open(&mut self, mark: Marker, list: bool) {
        let path = self.value_path(mark).unwrap_or_else(|| "?".to_owned());
        self.stack.push(if list {
            Frame::List { path, next: 0 }
        } else {
            Frame::Map { path, key: None }
        });
    }

    fn close(&mut self) {
        self.stack.pop();
        match self.stack.last_mut() {
            // A mapping or list used as a key: its value follows.
            Some(Frame::Map {
                key: key @ None, ..
            }) => *key = Some("?".to_owned()),
            _ => self.value_done(),
        }
    }
}

impl MarkedEventReceiver for Walker {
    fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::Scalar(text, ..) => match self.stack.last_mut() {
                Some(Frame::Map {
                    path,
                    key: key @ None,
                }) => {
                    self.lines.insert(join(path, &text), mark.line());
                    *key = Some(text);
                }
                _ => {
                    self.value_path(mark);
                    self.value_done();
                }
            },
            Event::Alias(_) => {
                self.value_path(mark);
                self.value_done();
            }
            Event::MappingStart(..) => self.open(mark, false),
            Event::SequenceStart(..) => self.open(mark, true),
            Event::MappingEnd | Event::SequenceEnd => self.close(),
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const SPEC: &str = "name: a
model: openai:x
subagents:
  - name: r
    description: d
  - {name: q, description: e}
interrupt_on:
  write_fle: true
limits: {max_steps: 3}
";

    #[test]
    fn fields_lists_and_flow_style_have_their_lines() {
        let lines = field_lines(SPEC);
        for (field, line) in [
            ("name", 1),
            ("model", 2),
            ("subagents", 3),
            ("subagents[0]", 4),
            ("subagents[0].name", 4),
            ("subagents[0].description", 5),
            ("subagents[1]", 6),
            ("subagents[1].description", 6),
            ("interrupt_on.write_fle", 8),
            ("limits.max_steps", 9),
        ] {
            assert_eq!(lines.get(field), Some(&line), "{field}");
        }
    }

    #[test]
    fn an_unwritten_field_falls_back_to_its_parent() {
        assert_eq!(line_of(SPEC, "limits.max_fanout"), Some(9));
        assert_eq!(line_of(SPEC, "subagents[1].model"), Some(6));
        assert_eq!(line_of(SPEC, "interrupt_on.write_fle.allowed"), Some(8));
        assert_eq!(line_of(SPEC, "memory[0]"), None);
        assert_eq!(line_of("{unclosed", "name"), None);
    }
}
