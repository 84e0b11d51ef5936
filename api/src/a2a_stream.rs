//! `message/stream`: the task's events as server-sent events, each a
//! JSON-RPC answer to the request: the task first (submitted), a
//! `status-update` each time its state changes, then, once the run ends,
//! the answer as an `artifact-update` and a last `status-update` with
//! `final: true`. The run's record is read every [`POLL`], so any
//! scheduler instance can serve the stream of a run any worker runs.

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::a2a_task::{SEND_WAIT, rpc_error, view};
use super::a2a_wire::{error, result};
use super::state::ApiState;
use super::wait::{KEEP_ALIVE, POLL};
use crate::repo::runs::RunMeta;

/// A `text/event-stream` 200 following the task of the run of `meta`
/// for request `id`; it ends with the task, or after [`SEND_WAIT`] with
/// the task as it is then (marked final: the client polls `tasks/get`).
pub fn stream(state: ApiState, meta: RunMeta, id: Value) -> Response {
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(16);
    tokio::spawn(async move { follow(&state, &meta, &id, &tx).await });
    let events =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("heartbeat"))
        .into_response()
}

/// Sends the task's events until it ends, the wait runs out, or the
/// client goes away.
async fn follow(
    state: &ApiState,
    meta: &RunMeta,
    id: &Value,
    tx: &mpsc::Sender<Result<Event, Infallible>>,
) {
    let send = |answer: Value| {
        let event = Event::default().data(answer.to_string());
        async move { tx.send(Ok(event)).await.is_ok() }
    };
    let deadline = Instant::now() + SEND_WAIT;
    let mut shown = None;
    loop {
        let task = match view(state, meta).await {
            Ok(task) => task,
            Err(e) => {
                send(error(id, &rpc_error(&e))).await;
                return;
            }
        };
        let last = task.state.is_final() || Instant::now() >= deadline;
        let sent = match shown {
            // The first event is the task itself.
            None => send(result(id, task.task())).await,
            Some(state) if state != task.state && !last => {
                send(result(id, task.status_update(false))).await
            }
            Some(_) => true,
        };
        if !sent {
            return;
        }
        shown = Some(task.state);
        if last {
            if let Some(artifact) = task.artifact_update() {
                send(result(id, artifact)).await;
            }
            send(result(id, task.status_update(true))).await;
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}
