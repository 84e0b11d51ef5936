//! What one event stream asks for (`EventStreamRequest`): channels, the
//! namespaces (prefixes of the agent tree) and how deep below them, and
//! the sequence number to replay after. Namespace segments match as the
//! SDK's client-side filter does: literally, or, when the filter's
//! segment has no `:`, against the event segment's name before its `:`
//! (`task` matches `task:call-1`).

use serde_json::Value;

use super::wire::ProtocolEvent;

/// The channels a stream may name (besides `custom:<name>`).
const CHANNELS: [&str; 9] = [
    "values",
    "updates",
    "messages",
    "tools",
    "lifecycle",
    "input",
    "checkpoints",
    "tasks",
    "custom",
];

/// A checked event stream request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    channels: Vec<String>,
    namespaces: Option<Vec<Vec<String>>>,
    depth: Option<usize>,
    /// Replay events after this sequence number.
    pub since: Option<u64>,
}

impl Filter {
    /// Reads a request body, or says what is wrong with it.
    pub fn parse(body: &Value) -> Result<Filter, String> {
        let object = body
            .as_object()
            .ok_or("the body must be a JSON object with `channels`")?;
        let channels: Vec<String> = match object.get("channels") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    let name = item.as_str().ok_or("each channel must be a string")?;
                    let known = CHANNELS.contains(&name)
                        || name.strip_prefix("custom:").is_some_and(|n| !n.is_empty());
                    if known {
                        Ok(name.to_owned())
                    } else {
                        Err(format!(
                            "unknown channel '{name}'; expected one of {} or custom:<name>",
                            CHANNELS.join(", ")
                        ))
                    }
                })
                .collect::<Result<_, String>>()?,
            _ => return Err("`channels` must be an array of channel names".to_owned()),
        };
        let namespaces = match object.get("namespaces") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|ns| {
                        serde_json::from_value::<Vec<String>>(ns.clone())
                            .map_err(|_| "each namespace must be an array of strings".to_owned())
                    })
                    .collect::<Result<_, String>>()?,
            ),
            Some(_) => return Err("`namespaces` must be an array of namespaces".to_owned()),
        };
        let depth = match object.get("depth") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .and_then(|d| usize::try_from(d).ok())
                    .ok_or("`depth` must be a non-negative integer")?,
            ),
        };
        let since = match object.get("since") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .ok_or("`since` must be a non-negative integer")?,
            ),
        };
        Ok(Filter {
            channels,
            namespaces,
            depth,
            since,
        })
    }

    /// Whether the stream delivers `event`.
    pub fn matches(&self, event: &ProtocolEvent) -> bool {
        self.wants_channel(event) && self.wants_namespace(&event.namespace)
    }

    /// Whether any channel of `names` is asked for.
    pub fn wants_any(&self, names: &[&str]) -> bool {
        self.channels.iter().any(|c| names.contains(&c.as_str()))
    }

    /// Whether subagents' events can match (some namespace filter reaches
    /// below the root).
    pub fn reaches_subagents(&self) -> bool {
        match &self.namespaces {
            None => self.depth.is_none_or(|d| d > 0),
            Some(prefixes) => prefixes
                .iter()
                .any(|p| !p.is_empty() || self.depth.is_none_or(|d| d > 0)),
        }
    }

    fn wants_channel(&self, event: &ProtocolEvent) -> bool {
        let channel = event.channel();
        if channel == "custom" {
            let name = event.data.get("name").and_then(Value::as_str);
            return self.channels.iter().any(|c| {
                c == "custom" || name.is_some_and(|n| c.strip_prefix("custom:") == Some(n))
            });
        }
        self.channels.iter().any(|c| c == channel)
    }

    fn wants_namespace(&self, namespace: &[String]) -> bool {
        let Some(prefixes) = &self.namespaces else {
            return self.depth.is_none_or(|d| namespace.len() <= d);
        };
        if prefixes.is_empty() {
            return true;
        }
        prefixes.iter().any(|prefix| {
            is_prefix(prefix, namespace)
                && self
                    .depth
                    .is_none_or(|d| namespace.len() - prefix.len() <= d)
        })
    }
}

/// Whether `prefix` begins `namespace`, segment by segment.
fn is_prefix(prefix: &[String], namespace: &[String]) -> bool {
    prefix.len() <= namespace.len()
        && prefix.iter().zip(namespace).all(|(want, have)| {
            want == have || (!want.contains(':') && have.split(':').next() == Some(want.as_str()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(method: &'static str, namespace: &[&str], data: Value) -> ProtocolEvent {
        ProtocolEvent {
            method,
            namespace: namespace.iter().map(|s| (*s).to_owned()).collect(),
            node: None,
            data,
        }
    }

    #[test]
    fn channels_select_methods() {
        let filter = Filter::parse(&json!({"channels": ["messages", "input"]})).unwrap();
        assert!(filter.matches(&event("messages", &[], json!({}))));
        assert!(filter.matches(&event("input.requested", &[], json!({}))));
        assert!(!filter.matches(&event("values", &[], json!({}))));
        let custom = Filter::parse(&json!({"channels": ["custom:a2a"]})).unwrap();
        assert!(custom.matches(&event("custom", &[], json!({"name": "a2a"}))));
        assert!(!custom.matches(&event("custom", &[], json!({"name": "b"}))));
    }

    #[test]
    fn namespaces_match_by_prefix_and_depth() {
        let all = Filter::parse(&json!({"channels": ["tools"]})).unwrap();
        assert!(all.matches(&event("tools", &["task:c1"], json!({}))));
        assert!(all.reaches_subagents());
        let root = Filter::parse(&json!({"channels": ["tools"], "depth": 0})).unwrap();
        assert!(!root.matches(&event("tools", &["task:c1"], json!({}))));
        assert!(!root.reaches_subagents());
        let tasks =
            Filter::parse(&json!({"channels": ["tools"], "namespaces": [["task"]], "depth": 0}))
                .unwrap();
        assert!(tasks.matches(&event("tools", &["task:c1"], json!({}))));
        assert!(!tasks.matches(&event("tools", &[], json!({}))));
        let exact =
            Filter::parse(&json!({"channels": ["tools"], "namespaces": [["task:c2"]]})).unwrap();
        assert!(!exact.matches(&event("tools", &["task:c1"], json!({}))));
    }

    #[test]
    fn bad_requests_are_refused_with_a_reason() {
        assert!(Filter::parse(&json!({})).is_err());
        assert!(Filter::parse(&json!({"channels": ["nope"]})).is_err());
        assert!(Filter::parse(&json!({"channels": [], "depth": -1})).is_err());
        assert!(Filter::parse(&json!({"channels": [], "namespaces": [[1]]})).is_err());
        let since = Filter::parse(&json!({"channels": ["values"], "since": 9})).unwrap();
        assert_eq!(since.since, Some(9));
    }
}
