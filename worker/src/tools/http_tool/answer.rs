//! What the model reads of an HTTP tool's answer, and the custom state it
//! sets. A 2xx answer is the result (its text, or its JSON); any other
//! status is an error result with the status and a bounded excerpt. A
//! JSON object answer may carry a `state_update` object, deepagents'
//! `Command(update=...)`: its fields the tool declares in `updates_state`
//! (and that match the spec's `state_schema`) are written to the thread's
//! custom state, committed with the step; the model reads the answer
//! without it, and a note of what was set or ignored.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::transport::Answer;

/// The answer field that updates custom state.
pub const STATE_UPDATE: &str = "state_update";
/// How much of a failed answer's body the model reads.
const EXCERPT_BYTES: usize = 1_000;

/// The result text of `answer` from tool `name`, or the error text;
/// `state` receives the allowed updates, each checked by its validator in
/// `allowed`.
pub fn read(
    name: &str,
    answer: Answer,
    allowed: &BTreeMap<String, Option<jsonschema::Validator>>,
    state: &Mutex<Map<String, Value>>,
) -> Result<String, String> {
    let text = String::from_utf8_lossy(&answer.body).into_owned();
    if !answer.status.is_success() {
        return Err(format!(
            "Error: {name} answered HTTP {}: {}",
            answer.status,
            excerpt(&text)
        ));
    }
    if text.trim().is_empty() {
        return Ok(format!("(an empty answer, HTTP {})", answer.status));
    }
    let json = answer
        .content_type
        .as_deref()
        .is_none_or(|t| t.contains("json"))
        .then(|| serde_json::from_str::<Value>(&text).ok())
        .flatten();
    let Some(Value::Object(mut object)) = json else {
        return Ok(text);
    };
    let Some(update) = object.remove(STATE_UPDATE) else {
        return Ok(text);
    };
    let note = apply(update, allowed, state);
    Ok(format!("{}\n{note}", Value::Object(object)))
}

/// Writes the allowed fields of `update` to `state`; the note says which
/// were set and which ignored, and why.
fn apply(
    update: Value,
    allowed: &BTreeMap<String, Option<jsonschema::Validator>>,
    state: &Mutex<Map<String, Value>>,
) -> String {
    let Value::Object(update) = update else {
        return format!("[{STATE_UPDATE} ignored: not an object]");
    };
    let mut set = Vec::new();
    let mut ignored = Vec::new();
    let mut fields = state.lock().unwrap_or_else(|e| e.into_inner());
    for (field, value) in update {
        match allowed.get(&field) {
            None => ignored.push(format!("{field} (not in updates_state)")),
            Some(Some(validator)) if !validator.is_valid(&value) => {
                ignored.push(format!("{field} (does not match state_schema)"));
            }
            Some(_) => {
                fields.insert(field.clone(), value);
                set.push(field);
            }
        }
    }
    let mut note = Vec::new();
    if !set.is_empty() {
        note.push(format!("[state updated: {}]", set.join(", ")));
    }
    if !ignored.is_empty() {
        note.push(format!("[state_update ignored: {}]", ignored.join(", ")));
    }
    note.join("\n")
}

/// The first [`EXCERPT_BYTES`] of `text`, cut at a character boundary.
fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT_BYTES {
        return text.to_owned();
    }
    let mut end = EXCERPT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes in all)", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use reqwest::StatusCode;
    use serde_json::json;

    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            content_type: Some("application/json".into()),
            body: body.as_bytes().to_vec(),
        }
    }

    fn allowed() -> BTreeMap<String, Option<jsonschema::Validator>> {
        let ticket = jsonschema::validator_for(&json!({"type": "string"})).unwrap();
        [("ticket".to_owned(), Some(ticket))].into()
    }

    #[test]
    fn a_failed_answer_is_an_error_with_its_status_and_an_excerpt() {
        let state = Mutex::new(Map::new());
        let long = "x".repeat(5_000);
        let e = read("lookup", answer(500, &long), &allowed(), &state).unwrap_err();
        assert!(
            e.starts_with("Error: lookup answered HTTP 500 Internal Server Error: xxx"),
            "{e}"
        );
        assert!(
            e.ends_with("... (5000 bytes in all)") && e.len() < 1_200,
            "{e}"
        );
    }

    #[test]
    fn declared_state_updates_are_applied_and_others_ignored() {
        let state = Mutex::new(Map::new());
        let body = r#"{"found": true, "state_update": {"ticket": "OPS-7", "other": 1}}"#;
        let text = read("lookup", answer(200, body), &allowed(), &state).unwrap();
        assert_eq!(
            text,
            "{\"found\":true}\n[state updated: ticket]\n[state_update ignored: other (not in updates_state)]"
        );
        assert_eq!(state.lock().unwrap()["ticket"], "OPS-7");
        let bad = r#"{"state_update": {"ticket": 5}}"#;
        let text = read("lookup", answer(200, bad), &allowed(), &state).unwrap();
        assert!(
            text.contains("ticket (does not match state_schema)"),
            "{text}"
        );
        assert_eq!(state.lock().unwrap()["ticket"], "OPS-7");
    }

    #[test]
    fn text_answers_are_read_as_they_are() {
        let state = Mutex::new(Map::new());
        let mut plain = answer(200, "hello");
        plain.content_type = Some("text/plain".into());
        assert_eq!(read("t", plain, &allowed(), &state).unwrap(), "hello");
        assert_eq!(
            read("t", answer(204, ""), &allowed(), &state).unwrap(),
            "(an empty answer, HTTP 204 No Content)"
        );
    }
}
