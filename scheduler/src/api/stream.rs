//! Server-sent events of a run, derived from what the workers commit.
//!
//! The scheduler follows the run in the store (every [`POLL`]) and turns
//! each committed step into events of the requested modes, so workers pay
//! nothing per step for streaming and any scheduler instance can serve
//! any stream. Event ids are `"{messages seen}:{mode}"`: a client that
//! reconnects with `Last-Event-ID` gets only messages after the ones it
//! had, then the current `values`.

use std::convert::Infallible;
use std::time::Instant;

use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use deepfleet_proto::{Message, RunStatus};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::ApiState;
use super::convert::{message_dict, message_id, thread_values};
use super::error::ApiError;
use super::follow::{KEEP_ALIVE, POLL, final_body, finished};
use super::runs::run_headers;
use crate::lifecycle::RunMeta;

/// The stream modes a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modes {
    /// Full state after each step.
    pub values: bool,
    /// Each node's new messages.
    pub updates: bool,
    /// `messages/metadata` + `messages/complete` per new message.
    pub messages: bool,
    /// `messages` events of `[message, metadata]`.
    pub messages_tuple: bool,
    /// Tool-emitted custom data (none is produced yet).
    pub custom: bool,
}

impl Modes {
    /// Parses `stream_mode` (a string or a list; default `values`).
    pub fn parse(value: Option<&Value>) -> Result<Modes, ApiError> {
        let names: Vec<&str> = match value {
            None | Some(Value::Null) => vec!["values"],
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            Some(_) => {
                return Err(ApiError::unprocessable(
                    "stream_mode must be a string or a list",
                ));
            }
        };
        let mut modes = Modes::default();
        for name in names {
            match name {
                "values" => modes.values = true,
                "updates" => modes.updates = true,
                "messages" => modes.messages = true,
                "messages-tuple" => modes.messages_tuple = true,
                "custom" => modes.custom = true,
                // Accepted for compatibility; this server has no events of
                // these kinds to send.
                "events" | "debug" | "tasks" | "checkpoints" => {}
                other => {
                    return Err(ApiError::unprocessable(format!(
                        "unknown stream_mode '{other}'"
                    )));
                }
            }
        }
        Ok(modes)
    }
}

/// The node a message belongs to in deepagents' graph.
fn node_of(message: &Message) -> &'static str {
    match message {
        Message::Tool(_) => "tools",
        Message::User(m) if m.source.as_deref() == Some("summarization") => {
            "SummarizationMiddleware.before_model"
        }
        _ => "model",
    }
}

/// The events for messages `from..` of a thread's log.
pub fn step_events(
    modes: Modes,
    meta: &RunMeta,
    messages: &[Message],
    from: usize,
    values: Option<&Value>,
) -> Vec<Event> {
    let seen = from + messages.len();
    let mut out = Vec::new();
    for (offset, message) in messages.iter().enumerate() {
        let index = from + offset;
        let dict = message_dict(&meta.thread_id, index, message);
        let node = node_of(message);
        let mut metadata =
            json!({"run_id": meta.run_id, "thread_id": meta.thread_id, "langgraph_node": node});
        if let Message::User(m) = message
            && let Some(source) = &m.source
        {
            metadata["lc_source"] = Value::String(source.clone());
        }
        if modes.updates {
            out.push(event(
                "updates",
                &json!({ node: {"messages": [dict]} }),
                format!("{}:u", index + 1),
            ));
        }
        if modes.messages {
            let id = message_id(&meta.thread_id, index);
            out.push(event(
                "messages/metadata",
                &json!({ id: {"metadata": metadata} }),
                format!("{}:mm", index + 1),
            ));
            out.push(event(
                "messages/complete",
                &json!([dict]),
                format!("{}:mc", index + 1),
            ));
        }
        if modes.messages_tuple {
            out.push(event(
                "messages",
                &json!([dict, metadata]),
                format!("{}:mt", index + 1),
            ));
        }
    }
    if modes.values
        && let Some(values) = values
    {
        out.push(event("values", values, format!("{seen}:v")));
    }
    out
}

fn event(name: &str, data: &Value, id: String) -> Event {
    Event::default().event(name).data(data.to_string()).id(id)
}

/// How many messages a client had, from its `Last-Event-ID`.
pub fn resume_point(last_event_id: Option<&str>) -> Option<usize> {
    last_event_id?.split(':').next()?.parse().ok()
}

/// A `text/event-stream` 200 following the run: `metadata` first, then the
/// modes' events per committed step, `: heartbeat` comments every 5 s, an
/// `error` event if the run fails; the stream closes when the run ends.
pub fn sse_response(
    state: ApiState,
    meta: RunMeta,
    modes: Modes,
    last_event_id: Option<String>,
) -> Response {
    let headers = run_headers(&meta, Some("/stream"));
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let _ = follow(&state, &meta, modes, last_event_id.as_deref(), &tx).await;
    });
    let events =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    (headers, Sse::new(events)).into_response()
}

/// Sends the run's events until it ends or the client goes away (`Err`).
async fn follow(
    state: &ApiState,
    meta: &RunMeta,
    modes: Modes,
    last_event_id: Option<&str>,
    tx: &mpsc::Sender<Result<Event, Infallible>>,
) -> Result<(), ()> {
    let send = |e: Event| async move { tx.send(Ok(e)).await.map_err(|_| ()) };
    send(
        Event::default()
            .event("metadata")
            .data(json!({"run_id": meta.run_id, "attempt": 1}).to_string()),
    )
    .await?;
    // Messages already on the thread when the run was created (earlier
    // runs, this run's input) are not news; a reconnect resumes after
    // what the client had.
    let mut seen = match resume_point(last_event_id) {
        Some(n) => n,
        None => base_len(state, meta).await,
    };
    let mut last_sent = Instant::now();
    let mut last_step = None;
    loop {
        let (done, status) = finished(state, meta).await.map_err(|_| ())?;
        let checkpoint = state
            .life
            .store()
            .load_thread(&meta.thread_id)
            .await
            .map_err(|_| ())?;
        if last_step != Some(checkpoint.step) && status.is_some() {
            let new: Vec<Message> = checkpoint
                .messages
                .iter()
                .skip(seen)
                .map(|m| m.message.clone())
                .collect();
            let values = thread_values(&meta.thread_id, &checkpoint);
            for e in step_events(modes, meta, &new, seen, Some(&values)) {
                send(e).await?;
            }
            seen = seen.max(checkpoint.messages.len());
            last_step = Some(checkpoint.step);
            last_sent = Instant::now();
        }
        if done {
            if status == Some(RunStatus::Error) {
                let body = final_body(state, meta).await.map_err(|_| ())?;
                send(
                    Event::default()
                        .event("error")
                        .data(body["__error__"].to_string()),
                )
                .await?;
            }
            return Ok(());
        }
        if last_sent.elapsed() >= KEEP_ALIVE {
            send(Event::default().comment("heartbeat")).await?;
            last_sent = Instant::now();
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The thread's log length before this run's input: the run's own input
/// messages are streamed as its first update, as LangGraph does.
async fn base_len(state: &ApiState, meta: &RunMeta) -> usize {
    let started = state
        .life
        .store()
        .get_run(&meta.thread_id, &meta.run_id)
        .await
        .ok()
        .flatten()
        .is_some();
    let len = state
        .life
        .store()
        .load_thread(&meta.thread_id)
        .await
        .map(|c| c.messages.len())
        .unwrap_or(0);
    if started {
        len.saturating_sub(meta.input.len())
    } else {
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use serde_json::Map;

    fn meta() -> RunMeta {
        RunMeta {
            run_id: "r".into(),
            thread_id: "t".into(),
            assistant_id: "a".into(),
            graph_id: "g".into(),
            metadata: Map::new(),
            kwargs: Map::new(),
            multitask_strategy: "enqueue".into(),
            batch_id: None,
            input: vec![],
            context: None,
            cancelled: false,
            created_at: Utc::now(),
        }
    }

    #[test]
    fn modes_default_to_values_and_reject_unknown() {
        assert_eq!(
            Modes::parse(None).unwrap(),
            Modes {
                values: true,
                ..Modes::default()
            }
        );
        let m = Modes::parse(Some(&json!(["updates", "messages-tuple"]))).unwrap();
        assert!(m.updates && m.messages_tuple && !m.values);
        assert!(Modes::parse(Some(&json!("nope"))).is_err());
    }

    #[test]
    fn events_per_mode_with_resumable_ids() {
        let modes = Modes {
            values: true,
            updates: true,
            messages_tuple: true,
            ..Modes::default()
        };
        let messages = vec![Message::assistant("hi")];
        let events = step_events(modes, &meta(), &messages, 2, Some(&json!({"messages": []})));
        // updates + messages tuple for the message, then values.
        assert_eq!(events.len(), 3);
        assert_eq!(resume_point(Some("3:v")), Some(3));
        assert_eq!(resume_point(Some("-1")), None);
    }

    #[test]
    fn summaries_are_tagged() {
        let summary = Message::User(deepfleet_proto::UserMessage {
            content: vec![deepfleet_proto::ContentBlock::text("summary")],
            source: Some("summarization".into()),
        });
        assert_eq!(node_of(&summary), "SummarizationMiddleware.before_model");
    }
}
