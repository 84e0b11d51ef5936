//! Answering refused submissions.
//!
//! A submission that is dead-lettered starts no run, so no run's end will
//! ever answer it. Before the message is dead-lettered its sender gets a
//! [`SubmissionRefusal`] on its reply queue (or its tenant's results
//! queue), with its correlation id and the dead letter's reason, so it can
//! match the failure to its request instead of waiting for an answer that
//! never comes.
//!
//! The dead letter itself is for an operator, who must not read the
//! submitter's secrets: its runtime `context` (which may hold keys) is
//! sealed under the fleet's context key, or removed without one
//! ([`without_clear_context`]); the rest of the body is kept as it came,
//! so the reason can still be understood.

use std::fmt;

use deepfleet_proto::{RefusalStatus, SealedContext, SubmissionRefusal};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// The dead letter's header saying what became of the body's `context`:
/// [`ContextFate::as_str`]. Absent when the body had none (or was not a
/// JSON object, so none could be found).
pub const CONTEXT_HEADER: &str = "x-deepfleet-context";

/// Why a submission is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The stable code the answer carries.
    pub code: String,
    /// The dead letter's reason, and the answer's `error`.
    pub reason: String,
}

impl Refusal {
    /// A message that is not a valid submission; `reason` says why.
    pub fn invalid(reason: String) -> Self {
        Refusal {
            code: "invalid_submission".into(),
            reason,
        }
    }

    /// A refusal with `code`, its reason being `code: detail`.
    pub fn coded(code: &str, detail: &str) -> Self {
        Refusal {
            code: code.to_owned(),
            reason: format!("{code}: {detail}"),
        }
    }

    /// The answer to the message `payload`: its `id` when it has a
    /// readable one, even if the rest of it is not a valid submission.
    pub fn answer(&self, payload: &[u8]) -> SubmissionRefusal {
        SubmissionRefusal {
            id: readable_id(payload),
            status: RefusalStatus::Refused,
            code: self.code.clone(),
            error: self.reason.clone(),
        }
    }
}

/// What became of a dead letter's `context`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextFate {
    /// Replaced by its sealed form (`{"nonce", "ciphertext"}`), which the
    /// fleet's context key opens.
    Sealed,
    /// Dropped: no context key is configured, or the value could not be
    /// sealed.
    Removed,
}

impl ContextFate {
    /// The value of [`CONTEXT_HEADER`].
    pub fn as_str(self) -> &'static str {
        match self {
            ContextFate::Sealed => "sealed",
            ContextFate::Removed => "removed",
        }
    }
}

/// The body to dead-letter a refused message with instead of `payload`,
/// when `payload` is a JSON object with a `context`: every `context`
/// member (a duplicate too) sealed with `seal`, or, when `seal` gives
/// nothing for any of them, all removed. The other members are kept as
/// they came, in their order and with their values' text unchanged.
/// `None`: nothing to hide (no `context`, or not a JSON object, whose
/// context cannot be told from the rest).
pub fn without_clear_context(
    payload: &[u8],
    seal: impl Fn(&Value) -> Option<SealedContext>,
) -> Option<(Vec<u8>, ContextFate)> {
    let Members(members) = serde_json::from_slice(payload).ok()?;
    if !members.iter().any(|(name, _)| name == "context") {
        return None;
    }
    let sealed: Option<Vec<String>> = members
        .iter()
        .filter(|(name, _)| name == "context")
        .map(|(_, value)| {
            let value: Value = serde_json::from_str(value.get()).ok()?;
            serde_json::to_string(&seal(&value)?).ok()
        })
        .collect();
    let fate = match sealed {
        Some(_) => ContextFate::Sealed,
        None => ContextFate::Removed,
    };
    let mut sealed = sealed.unwrap_or_default().into_iter();
    let mut body = Vec::with_capacity(payload.len());
    body.push(b'{');
    let mut first = true;
    for (name, value) in &members {
        let value = if name == "context" {
            match sealed.next() {
                Some(sealed) => sealed,
                None => continue,
            }
        } else {
            value.get().to_owned()
        };
        if !first {
            body.push(b',');
        }
        first = false;
        // A string always encodes.
        body.extend(serde_json::to_vec(name).unwrap_or_default());
        body.push(b':');
        body.extend(value.into_bytes());
    }
    body.push(b'}');
    Some((body, fate))
}

/// A JSON object's members in their order, duplicates included, each value
/// as its text.
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;

        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }

        deserializer.deserialize_map(MembersVisitor)
    }
}

/// The string `id` of a JSON object, if `payload` is one with one.
fn readable_id(payload: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(payload).ok()?.get("id")? {
        Value::String(id) => Some(id.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_answer_carries_the_id_when_it_can_be_read() {
        let refusal = Refusal::coded("not_found", "Assistant 'x' not found.");
        assert_eq!(refusal.reason, "not_found: Assistant 'x' not found.");
        let cases: [(&[u8], Option<&str>); 5] = [
            (br#"{"id": "job-1", "assistant_id": "x"}"#, Some("job-1")),
            (
                br#"{"id": "job-2", "input": 3, "extra": true}"#,
                Some("job-2"),
            ),
            (br#"{"id": 7}"#, None),
            (br#"["id"]"#, None),
            (b"{not json", None),
        ];
        for (payload, id) in cases {
            let answer = refusal.answer(payload);
            assert_eq!(answer.id.as_deref(), id);
            assert_eq!(answer.status, RefusalStatus::Refused);
            assert_eq!(
                (answer.code.as_str(), answer.error.as_str()),
                ("not_found", "not_found: Assistant 'x' not found.")
            );
        }
        assert_eq!(
            Refusal::invalid("invalid submission: x".into()).code,
            "invalid_submission"
        );
    }

    /// Stands in for the context key: a "sealed" value naming what it
    /// sealed, so the tests can tell which member went where.
    fn fake_seal(context: &Value) -> Option<SealedContext> {
        Some(SealedContext {
            nonce: "n".into(),
            ciphertext: format!("<{}>", context.as_str().unwrap_or("?")),
        })
    }

    fn amended(
        payload: &[u8],
        seal: impl Fn(&Value) -> Option<SealedContext>,
    ) -> Option<(String, ContextFate)> {
        without_clear_context(payload, seal)
            .map(|(body, fate)| (String::from_utf8(body).unwrap(), fate))
    }

    #[test]
    fn the_context_is_sealed_and_everything_else_kept_as_it_came() {
        let payload = br#"{"z": 1e400, "context": "c1", "id": "j", "input": [1, 2.50]}"#;
        assert_eq!(
            amended(payload, fake_seal),
            Some((
                r#"{"z":1e400,"context":{"nonce":"n","ciphertext":"<c1>"},"id":"j","input":[1, 2.50]}"#
                    .to_owned(),
                ContextFate::Sealed
            ))
        );
    }

    #[test]
    fn every_duplicate_context_is_sealed() {
        let payload = br#"{"context": "first", "context": "second"}"#;
        let (body, fate) = amended(payload, fake_seal).unwrap();
        assert_eq!(fate, ContextFate::Sealed);
        assert_eq!(
            body,
            r#"{"context":{"nonce":"n","ciphertext":"<first>"},"context":{"nonce":"n","ciphertext":"<second>"}}"#
        );
    }

    #[test]
    fn a_context_that_cannot_be_sealed_is_removed() {
        let no_key = |_: &Value| None;
        let payload = br#"{"id": "j", "context": {"api_key": "s3cret"}, "context": null}"#;
        assert_eq!(
            amended(payload, no_key),
            Some((r#"{"id":"j"}"#.to_owned(), ContextFate::Removed))
        );
        // A value serde_json cannot hold (a number out of range) is
        // removed, key or not, and takes its duplicates with it.
        let payload = br#"{"context": {"api_key": "s3cret", "n": 1e400}, "context": "x"}"#;
        assert_eq!(
            amended(payload, fake_seal),
            Some(("{}".to_owned(), ContextFate::Removed))
        );
    }

    #[test]
    fn bodies_without_a_context_member_are_left_alone() {
        for payload in [
            &br#"{"id": "j", "input": {"context": "nested, not a runtime context"}}"#[..],
            br#"["context", {"context": 1}]"#,
            br#""context""#,
            br#"{"context": {"api_key": "s3cret"}"#,
            b"not json",
        ] {
            assert_eq!(amended(payload, fake_seal), None, "{payload:?}");
        }
    }
}
