//! Answering refused submissions.
//!
//! A submission that is dead-lettered starts no run, so no run's end will
//! ever answer it. Before the message is dead-lettered its sender gets a
//! [`SubmissionRefusal`] on its reply queue (or the results queue), with
//! its correlation id and the dead letter's reason, so it can match the
//! failure to its request instead of waiting for an answer that never
//! comes.

use deepfleet_proto::{RefusalStatus, SubmissionRefusal};
use serde_json::Value;

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
}
