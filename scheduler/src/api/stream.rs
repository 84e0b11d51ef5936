//! Server-sent events of a run, from the events workers publish.
//!
//! After each commit a worker appends a [`RunEvent`] (the step and the
//! range of messages it added) to the run's event stream, and to its
//! parent's for a subagent (see `worker/src/step/announce.rs`). The
//! scheduler reads that stream (every [`POLL`] while it is quiet) and
//! turns each event into events of the requested modes, reading only the
//! step's new messages, so any scheduler instance can serve any stream
//! at a per-step cost that does not grow with the conversation. Event ids
//! are `"{stream id}/{messages seen}:{kind}"`: a client that reconnects
//! with `Last-Event-ID` gets only what came after, then the current
//! `values`.

use std::collections::{BTreeMap, HashSet};
use std::convert::Infallible;
use std::time::Instant;

use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use deepfleet_proto::api::{EventMetadata, MessageMetadata, NodeUpdate, StreamMetadata};
use deepfleet_proto::{Message, RunEvent, RunStatus};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::convert::{message_dict, message_id, thread_values, to_json};
use super::modes::Modes;
use super::partials::{Partials, mark_followed};
use super::run_resource::run_headers;
use super::state::ApiState;
use super::wait::{FinalBody, KEEP_ALIVE, POLL, final_body};
use crate::repo::follow_marks::follow_marks;
use crate::repo::runs::RunMeta;

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

/// The events for messages `from..` of a thread's log; ids carry
/// `cursor`, the stream position a reconnect resumes after. Messages in
/// `streamed` went out as `messages-tuple` chunks already.
pub fn step_events(
    modes: Modes,
    meta: &RunMeta,
    cursor: &str,
    messages: &[Message],
    from: usize,
    values: Option<&Value>,
    streamed: &HashSet<String>,
) -> Vec<Event> {
    let seen = from + messages.len();
    let mut out = Vec::new();
    for (offset, message) in messages.iter().enumerate() {
        let index = from + offset;
        let dict = message_dict(&meta.thread_id, index, message);
        let node = node_of(message);
        let metadata = EventMetadata {
            run_id: meta.run_id.clone(),
            thread_id: meta.thread_id.clone(),
            langgraph_node: node.to_owned(),
            lc_source: match message {
                Message::User(m) => m.source.clone(),
                _ => None,
            },
            langgraph_checkpoint_ns: None,
        };
        let id = |suffix: &str| format!("{cursor}/{}:{suffix}", index + 1);
        if modes.updates {
            out.push(event("updates", &update(node, &dict), id("u")));
        }
        let message_id = message_id(&meta.thread_id, index);
        if modes.messages {
            let by_id = BTreeMap::from([(
                message_id.clone(),
                MessageMetadata {
                    metadata: metadata.clone(),
                },
            )]);
            out.push(event("messages/metadata", &by_id, id("mm")));
            out.push(event("messages/complete", &[&dict], id("mc")));
        }
        if modes.messages_tuple && !streamed.contains(&message_id) {
            out.push(event("messages", &(&dict, &metadata), id("mt")));
        }
    }
    if modes.values
        && let Some(values) = values
    {
        out.push(event("values", values, format!("{cursor}/{seen}:v")));
    }
    out
}

/// The `updates|task:<id>` (and `messages|...`) events of a subagent's
/// step, for a follower that asked for `stream_subgraphs`.
pub fn subgraph_events(
    modes: Modes,
    run_event: &RunEvent,
    id: &str,
    messages: &[Message],
) -> Vec<Event> {
    let ns = run_event.namespace.join("|");
    let mut out = Vec::new();
    for (offset, message) in messages.iter().enumerate() {
        let index = usize::try_from(run_event.from).unwrap_or(usize::MAX) + offset;
        let dict = message_dict(&run_event.thread_id, index, message);
        let node = node_of(message);
        if modes.updates {
            out.push(event(
                &format!("updates|{ns}"),
                &update(node, &dict),
                format!("{id}:u{offset}"),
            ));
        }
        if modes.messages_tuple {
            let metadata = EventMetadata {
                run_id: run_event.run_id.clone(),
                thread_id: run_event.thread_id.clone(),
                langgraph_node: node.to_owned(),
                lc_source: None,
                langgraph_checkpoint_ns: Some(ns.clone()),
            };
            out.push(event(
                &format!("messages|{ns}"),
                &(&dict, &metadata),
                format!("{id}:t{offset}"),
            ));
        }
    }
    out
}

/// An `updates` payload: the node's new message.
fn update(node: &str, dict: &deepfleet_proto::api::MessageDict) -> BTreeMap<String, NodeUpdate> {
    BTreeMap::from([(
        node.to_owned(),
        NodeUpdate {
            messages: vec![dict.clone()],
        },
    )])
}

fn event(name: &str, data: &impl Serialize, id: String) -> Event {
    Event::default()
        .event(name)
        .data(to_json(data).to_string())
        .id(id)
}

/// The stream position before any event.
const START: &str = "0-0";

/// Where a reconnecting client resumes, from its `Last-Event-ID`
/// (`"{stream id}/{messages seen}:{kind}"`, or the older `"{seen}:{kind}"`):
/// the stream id to read after and how many of the thread's messages it
/// had. `None` (also for `-1`, "replay everything") starts over.
pub fn resume_point(last_event_id: Option<&str>) -> Option<(String, usize)> {
    let id = last_event_id?;
    let (cursor, rest) = id.split_once('/').unwrap_or((START, id));
    let seen = rest.split(':').next()?.parse().ok()?;
    Some((cursor.to_owned(), seen))
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
        if modes.wants_tokens() {
            // Best effort: an unremoved mark lapses by itself.
            let _ = follow_marks(state.store()).delete(&meta.run_id).await;
        }
    });
    let events =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    (headers, Sse::new(events)).into_response()
}

/// Events read from the run's stream per store round trip.
const EVENTS_PER_READ: usize = 256;

/// Sends the run's events until it ends or the client goes away (`Err`).
///
/// Driven by the run's event stream, which workers append to after each
/// commit: a quiet run costs one run-record read and one empty stream read
/// per [`POLL`]; a step costs reading just its new messages (and, for
/// `values`, the thread state that mode sends anyway).
async fn follow(
    state: &ApiState,
    meta: &RunMeta,
    modes: Modes,
    last_event_id: Option<&str>,
    tx: &mpsc::Sender<Result<Event, Infallible>>,
) -> Result<(), ()> {
    let send = |e: Event| async move { tx.send(Ok(e)).await.map_err(|_| ()) };
    let head = StreamMetadata {
        run_id: meta.run_id.clone(),
        attempt: 1,
    };
    send(
        Event::default()
            .event("metadata")
            .data(to_json(&head).to_string()),
    )
    .await?;
    // Messages already on the thread when the run was created (earlier
    // runs, this run's input) are not news; a reconnect resumes after
    // what the client had.
    let (mut cursor, mut seen) = match resume_point(last_event_id) {
        Some(point) => point,
        None => (START.to_owned(), base_len(state, meta).await),
    };
    let store = state.life.store();
    // Token streaming: mark the run followed, so workers stream its model
    // calls, and take the deltas of steps not committed yet.
    let mut partials = None;
    if modes.wants_tokens() {
        mark_followed(store.as_ref(), &meta.run_id)
            .await
            .map_err(|_| ())?;
        let at = store.load_thread(&meta.thread_id).await.map_err(|_| ())?;
        partials = Partials::new(modes, meta, at.step);
    }
    let mut last_sent = Instant::now();
    let mut last_mark = Instant::now();
    loop {
        // Status first: a run seen ended has appended all it will, but
        // its last event may still be on the way, hence the catch-up.
        let (done, status) = state.life.finished(meta).await.map_err(|_| ())?;
        let batch = store
            .run_events(&meta.run_id, Some(&cursor), EVENTS_PER_READ)
            .await
            .map_err(|_| ())?;
        let caught_up = batch.len() < EVENTS_PER_READ;
        // After the events: every delta of their steps is in by now.
        if let Some(partials) = &mut partials {
            partials.read(store.as_ref()).await.map_err(|_| ())?;
        }
        for (id, run_event) in batch {
            if run_event.namespace.is_empty()
                && let Some(partials) = &mut partials
            {
                for e in partials.until(Some(run_event.step)) {
                    send(e).await?;
                }
            }
            if run_event.namespace.is_empty() {
                let to = usize::try_from(run_event.to).unwrap_or(usize::MAX);
                if to > seen || modes.values {
                    let streamed = partials.as_ref().map(Partials::streamed);
                    for e in root_events(state, meta, modes, &cursor, seen, to, streamed).await? {
                        send(e).await?;
                    }
                    seen = seen.max(to);
                }
            } else if modes.subgraphs {
                let new = store
                    .load_messages(&run_event.thread_id, run_event.from)
                    .await
                    .map_err(|_| ())?;
                let count = usize::try_from(run_event.to.saturating_sub(run_event.from))
                    .unwrap_or(usize::MAX);
                let new: Vec<Message> = new.into_iter().take(count).map(|m| m.message).collect();
                let at = format!("{id}/{seen}");
                for e in subgraph_events(modes, &run_event, &at, &new) {
                    send(e).await?;
                }
            }
            cursor = id;
            last_sent = Instant::now();
        }
        // The deltas of the step in progress.
        if let Some(partials) = &mut partials {
            for e in partials.until(None) {
                send(e).await?;
                last_sent = Instant::now();
            }
            if last_mark.elapsed() >= KEEP_ALIVE {
                mark_followed(store.as_ref(), &meta.run_id)
                    .await
                    .map_err(|_| ())?;
                last_mark = Instant::now();
            }
        }
        if done && caught_up {
            let len = store
                .load_messages(&meta.thread_id, seen as u64)
                .await
                .map_err(|_| ())?
                .len();
            if len > 0 && status.is_some() {
                let streamed = partials.as_ref().map(Partials::streamed);
                for e in
                    root_events(state, meta, modes, &cursor, seen, seen + len, streamed).await?
                {
                    send(e).await?;
                }
            }
            if status == Some(RunStatus::Error) {
                let body = final_body(state, meta).await.map_err(|_| ())?;
                let data = match &body {
                    FinalBody::Failed(failure) => to_json(failure),
                    FinalBody::Values(_) => Value::Null,
                };
                send(Event::default().event("error").data(data.to_string())).await?;
            }
            return Ok(());
        }
        if last_sent.elapsed() >= KEEP_ALIVE {
            send(Event::default().comment("heartbeat")).await?;
            last_sent = Instant::now();
        }
        if caught_up {
            tokio::time::sleep(POLL).await;
        }
    }
}

/// The followed run's events for its thread's messages `seen..to`, plus
/// the state for `values`.
async fn root_events(
    state: &ApiState,
    meta: &RunMeta,
    modes: Modes,
    cursor: &str,
    seen: usize,
    to: usize,
    streamed: Option<&HashSet<String>>,
) -> Result<Vec<Event>, ()> {
    let store = state.life.store();
    let new: Vec<Message> = store
        .load_messages(&meta.thread_id, seen as u64)
        .await
        .map_err(|_| ())?
        .into_iter()
        .take(to.saturating_sub(seen))
        .map(|m| m.message)
        .collect();
    let values = if modes.values {
        let checkpoint = store.load_thread(&meta.thread_id).await.map_err(|_| ())?;
        Some(thread_values(&meta.thread_id, &checkpoint))
    } else {
        None
    };
    Ok(step_events(
        modes,
        meta,
        cursor,
        &new,
        seen,
        values.as_ref(),
        streamed.unwrap_or(&HashSet::new()),
    ))
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
    use deepfleet_proto::api::MultitaskStrategy;
    use serde_json::{Map, json};

    fn meta() -> RunMeta {
        RunMeta {
            run_id: "r".into(),
            thread_id: "t".into(),
            assistant_id: "a".into(),
            graph_id: "g".into(),
            metadata: Map::new(),
            kwargs: Map::new(),
            multitask_strategy: MultitaskStrategy::Enqueue,
            batch_id: None,
            input: vec![],
            files: Default::default(),
            context: None,
            cancelled: false,
            created_at: Utc::now(),
        }
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
        let events = step_events(
            modes,
            &meta(),
            "5-0",
            &messages,
            2,
            Some(&json!({"messages": []})),
            &HashSet::new(),
        );
        // updates + messages tuple for the message, then values.
        assert_eq!(events.len(), 3);
        assert_eq!(resume_point(Some("5-0/3:v")), Some(("5-0".into(), 3)));
        assert_eq!(resume_point(Some("3:v")), Some((START.into(), 3)));
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

    #[test]
    fn subagent_events_are_namespaced_by_task_call() {
        let modes = Modes {
            updates: true,
            messages_tuple: true,
            subgraphs: true,
            ..Modes::default()
        };
        let run_event = RunEvent {
            run_id: "child".into(),
            thread_id: "t-child".into(),
            step: 0,
            status: RunStatus::Running,
            from: 1,
            to: 2,
            namespace: RunEvent::task_namespace("call-1"),
        };
        let events = subgraph_events(modes, &run_event, "7-0/4", &[Message::assistant("checked")]);
        let rendered: Vec<String> = events.iter().map(|e| format!("{e:?}")).collect();
        assert_eq!(rendered.len(), 2);
        assert!(rendered[0].contains("updates|task:call-1"), "{rendered:?}");
        assert!(rendered[1].contains("messages|task:call-1"), "{rendered:?}");
    }
}
