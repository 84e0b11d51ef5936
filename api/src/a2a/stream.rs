//! `message/stream`: the task's events as server-sent events, each a
//! JSON-RPC answer to the request: the task first (submitted), a
//! `status-update` each time its state changes, then, once the run ends,
//! the answer as an `artifact-update` and a last `status-update` with
//! `final: true`. The run is followed by the runs service's follower
//! (its record read every [`POLL`](follow::POLL)), so any scheduler
//! instance can serve the stream of a run any worker runs.

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use deepfleet_proto::RunStatus;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::runs::follow::{
    self, Gone, KEEP_ALIVE, Look, Outbox, START, Stopped, Wire,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::a2a::task::{SEND_WAIT, rpc_error, view};
use crate::a2a::wire::TaskState;
use crate::a2a::wire::{error, result};
use crate::state::ApiState;

/// A `text/event-stream` 200 following the task of the run of `meta`
/// for request `id`; it ends with the task, or after [`SEND_WAIT`] with
/// the task as it is then (marked final: the client polls `tasks/get`).
pub fn stream(state: ApiState, meta: RunMeta, id: Value) -> Response {
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(16);
    tokio::spawn(async move {
        let mut wire = TaskWire {
            state: &state,
            meta: &meta,
            id: &id,
            out: Outbox::new(tx),
            deadline: Instant::now() + SEND_WAIT,
            shown: None,
        };
        let mut cursor = START.to_owned();
        follow::follow(&state.runs, &meta, &mut cursor, &mut wire).await;
    });
    let events =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("heartbeat"))
        .into_response()
}

/// A task's wire: its state changes, then its end.
struct TaskWire<'a> {
    state: &'a ApiState,
    meta: &'a RunMeta,
    /// The JSON-RPC request answered.
    id: &'a Value,
    out: Outbox<Result<Event, Infallible>>,
    /// When the stream ends with the task as it is.
    deadline: Instant,
    /// The state last sent, once the task was.
    shown: Option<TaskState>,
}

impl TaskWire<'_> {
    async fn send(&mut self, answer: Value) -> Result<(), Gone> {
        let event = Event::default().data(answer.to_string());
        self.out.send(Ok(event)).await
    }

    /// Sends what changed of the task; at its end (`ended`, a final
    /// state or the deadline), its answer and the final status, and stops.
    async fn show(&mut self, ended: bool) -> Result<(), Stopped> {
        let task = match view(self.state, self.meta).await {
            Ok(task) => task,
            Err(e) => {
                self.send(error(self.id, &rpc_error(&e))).await?;
                return Err(Stopped::Answered);
            }
        };
        let last = ended || task.state.is_final() || Instant::now() >= self.deadline;
        match self.shown {
            // The first event is the task itself.
            None => self.send(result(self.id, task.task())).await?,
            Some(state) if state != task.state && !last => {
                self.send(result(self.id, task.status_update(false)))
                    .await?;
            }
            Some(_) => {}
        }
        self.shown = Some(task.state);
        if !last {
            return Ok(());
        }
        if let Some(artifact) = task.artifact_update() {
            self.send(result(self.id, artifact)).await?;
        }
        self.send(result(self.id, task.status_update(true))).await?;
        Err(Stopped::Answered)
    }
}

impl Wire for TaskWire<'_> {
    fn reads_steps(&self) -> bool {
        false
    }

    fn gone(&self) -> bool {
        self.out.is_closed()
    }

    async fn look(&mut self, _: &Look) -> Result<(), Stopped> {
        self.show(false).await
    }

    async fn quiet(&mut self) -> Result<(), Gone> {
        // Keep-alives are the SSE layer's.
        Ok(())
    }

    async fn ended(&mut self, _: Option<RunStatus>) -> Result<(), Stopped> {
        self.show(true).await
    }
}
