//! The Agent Server's run options beyond the input and the assistant:
//! which this server honours, and which it refuses with a 422 that says
//! why, so that no option is silently ignored.
//!
//! A null, or an empty list, is the same as leaving an option out: that is
//! how the SDKs send options nobody set.

use std::time::Duration;

use deepfleet_proto::api::RunCreateParams;
use serde_json::Value;

use super::error::RunsError;

/// What a follower does when its client goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDisconnect {
    /// The run goes on (the default).
    #[default]
    Continue,
    /// The run is cancelled, as a client's cancel would.
    Cancel,
}

/// Options a run request sets that change how it is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunOptions {
    /// `on_disconnect`, for the streaming and waiting routes.
    pub on_disconnect: OnDisconnect,
    /// `after_seconds`: how long the run waits before it starts.
    pub delay: Option<Duration>,
}

/// The longest `after_seconds` (a week): a run further off is a cron's
/// job, and a queue entry is not a scheduler.
pub const MAX_AFTER_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// Whether `value` sets anything.
fn set(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| match v {
        Value::Null => false,
        Value::Array(items) => !items.is_empty(),
        _ => true,
    })
}

/// Checks the options of `body` this module knows, refusing those this
/// server has no counterpart for.
pub fn check(body: &RunCreateParams) -> Result<RunOptions, RunsError> {
    let rest = &body.rest;
    for key in ["interrupt_before", "interrupt_after"] {
        if set(rest.get(key)).is_some() {
            return Err(RunsError::invalid(format!(
                "{key} is not supported: a deep agent's graph has no nodes to pause \
                 at; pause before tools with the assistant's interrupt_on settings"
            )));
        }
    }
    let delay = match set(rest.get("after_seconds")) {
        None => None,
        Some(after) => match after.as_f64() {
            Some(secs) if (0.0..=MAX_AFTER_SECONDS).contains(&secs) => {
                (secs > 0.0).then(|| Duration::from_secs_f64(secs))
            }
            _ => {
                return Err(RunsError::invalid(format!(
                    "after_seconds must be a number of seconds from 0 to \
                     {MAX_AFTER_SECONDS}, not {after}; schedule later runs with a cron"
                )));
            }
        },
    };
    if set(rest.get("langsmith_tracer")).is_some() {
        return Err(RunsError::invalid(
            "langsmith_tracer is not supported: runs are traced over OpenTelemetry \
             (otlp_endpoint), not to LangSmith",
        ));
    }
    if set(rest.get("feedback_keys")).is_some() {
        return Err(RunsError::invalid(
            "feedback_keys is not supported: this server keeps no LangSmith feedback",
        ));
    }
    match set(rest.get("durability")) {
        // Every step commits before the next one starts: "sync" always,
        // which satisfies what "async" and "exit" promise.
        None => {}
        Some(Value::String(d)) if ["sync", "async", "exit"].contains(&d.as_str()) => {}
        Some(other) => {
            return Err(RunsError::invalid(format!(
                "durability must be sync, async or exit, not {other}"
            )));
        }
    }
    if let Some(command) = &body.command
        && set(command.goto.as_ref()).is_some()
    {
        return Err(RunsError::invalid(
            "command.goto is not supported: a deep agent's graph has no nodes to jump to",
        ));
    }
    let on_disconnect = match set(rest.get("on_disconnect")) {
        None => OnDisconnect::Continue,
        Some(Value::String(s)) if s == "continue" => OnDisconnect::Continue,
        Some(Value::String(s)) if s == "cancel" => OnDisconnect::Cancel,
        Some(other) => {
            return Err(RunsError::invalid(format!(
                "on_disconnect must be cancel or continue, not {other}"
            )));
        }
    };
    Ok(RunOptions {
        on_disconnect,
        delay,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(extra: Value) -> RunCreateParams {
        let mut value = json!({"assistant_id": "a", "input": {}});
        if let (Some(map), Value::Object(extra)) = (value.as_object_mut(), extra) {
            map.extend(extra);
        }
        serde_json::from_value(value).unwrap()
    }

    fn refusal(extra: Value) -> String {
        match check(&body(extra)) {
            Err(e) => format!("{e:?}"),
            Ok(options) => panic!("accepted: {options:?}"),
        }
    }

    #[test]
    fn unset_options_are_the_defaults() {
        let unset = json!({
            "interrupt_before": null,
            "interrupt_after": [],
            "checkpoint_id": null,
            "after_seconds": 0,
            "feedback_keys": null,
            "durability": "async",
        });
        assert_eq!(check(&body(unset)).unwrap(), RunOptions::default());
    }

    #[test]
    fn options_without_a_counterpart_are_refused_by_name() {
        for (extra, named) in [
            (json!({"interrupt_before": "*"}), "interrupt_before"),
            (json!({"interrupt_after": ["tools"]}), "interrupt_after"),
            (json!({"after_seconds": -1}), "after_seconds"),
            (json!({"after_seconds": 1e9}), "after_seconds"),
            (json!({"after_seconds": "soon"}), "after_seconds"),
            (json!({"feedback_keys": ["score"]}), "feedback_keys"),
            (
                json!({"langsmith_tracer": {"project_name": "p"}}),
                "langsmith_tracer",
            ),
            (json!({"durability": "never"}), "durability"),
            (json!({"on_disconnect": "explode"}), "on_disconnect"),
            (json!({"command": {"goto": "tools"}}), "command.goto"),
        ] {
            let text = refusal(extra.clone());
            assert!(text.contains(named), "{extra}: {text}");
        }
    }

    #[test]
    fn on_disconnect_cancel_and_a_delay_are_honoured() {
        let options = check(&body(json!({"on_disconnect": "cancel"}))).unwrap();
        assert_eq!(options.on_disconnect, OnDisconnect::Cancel);
        let options = check(&body(json!({"after_seconds": 1.5}))).unwrap();
        assert_eq!(options.delay, Some(Duration::from_millis(1500)));
    }
}
