//! Following a run as server-sent events, from the events workers
//! publish.
//!
//! After each commit a worker appends a [`RunEvent`] (the step and the
//! range of messages it added) to the run's event stream, and to its
//! parent's for a subagent (see `worker/src/step/announce.rs`). The runs
//! service's follower ([`follow`](deepfleet_scheduler::runs::follow))
//! reads that stream; a `Follower` is its wire: it sends each event as
//! events of the requested modes (see [`crate::runs::stream`]), reading only
//! the step's new messages, so any scheduler instance can serve any
//! stream at a per-step cost that does not grow with the conversation.
//! Token deltas come from [`crate::runs::partials`].

use std::collections::HashSet;
use std::convert::Infallible;
use std::time::Instant;

use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use deepfleet_proto::api::StreamMetadata;
use deepfleet_proto::{Message, RunEvent, RunStatus};
use deepfleet_scheduler::convert::{thread_values, to_json};
use deepfleet_scheduler::repo::follow_marks::follow_marks;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::runs::follow::{
    self, Gone, KEEP_ALIVE, Look, Outbox, START, Stopped, Wire,
};
use deepfleet_scheduler::runs::modes::Modes;
use deepfleet_scheduler::runs::options::OnDisconnect;
use deepfleet_scheduler::runs::{FinalBody, final_body};
use deepfleet_store::{Store, StoreError};
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::warn;

use crate::runs::headers::run_headers;
use crate::runs::partials::{Partials, mark_followed};
use crate::runs::step_trace::trace_events;
use crate::runs::stream::{resume_point, step_events, subgraph_events};
use crate::state::ApiState;

/// Where an event stream goes.
pub(crate) type Sink = Outbox<Result<Event, Infallible>>;

/// A `text/event-stream` 200 following the run: `metadata` first, then the
/// modes' events per committed step, `: heartbeat` comments every 5 s, an
/// `error` event if the run fails; the stream closes when the run ends.
/// With [`OnDisconnect::Cancel`] a client that goes away before the end
/// cancels the run.
pub fn sse_response(
    state: ApiState,
    meta: RunMeta,
    modes: Modes,
    last_event_id: Option<String>,
    on_disconnect: OnDisconnect,
) -> Response {
    let headers = run_headers(&meta, Some("/stream"));
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let mut out = Outbox::new(tx);
        let stopped = follow(&state, &meta, modes, last_event_id.as_deref(), &mut out).await;
        if matches!(stopped, Stopped::ClientGone) && on_disconnect == OnDisconnect::Cancel {
            let mut meta = meta.clone();
            if let Err(e) = state.runs.life.cancel(&mut meta).await {
                warn!(error = %e, run_id = %meta.run_id, "cancelling a run its client left");
            }
        }
        if modes.wants_tokens() {
            // Best effort: an unremoved mark lapses by itself.
            let _ = follow_marks(state.store()).delete(&meta.run_id).await;
        }
        // Streamed to its end: a stateless run's thread goes now (else
        // its expiry takes it).
        if matches!(stopped, Stopped::Ended(_))
            && let Err(e) = state.runs.life.dispose_temporary(&meta).await
        {
            warn!(error = %e, run_id = %meta.run_id, "removing a stateless run's thread");
        }
    });
    let events =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    (headers, Sse::new(events)).into_response()
}

/// Sends the run's events into `out` until it ends, or why not.
///
/// A quiet run costs one run-record read and one empty stream read per
/// [`POLL`](follow::POLL); a step costs reading just its new messages
/// (and, for `values`, the thread state that mode sends anyway).
pub(crate) async fn follow(
    state: &ApiState,
    meta: &RunMeta,
    modes: Modes,
    last_event_id: Option<&str>,
    out: &mut Sink,
) -> Stopped {
    let mut follower = match Follower::start(state, meta, modes, last_event_id, out).await {
        Ok(follower) => follower,
        Err(stopped) => return stopped,
    };
    let mut cursor = follower.cursor.clone();
    follow::follow(&state.runs, meta, &mut cursor, &mut follower).await
}

/// One follower's position in a run's streams.
struct Follower<'a> {
    state: &'a ApiState,
    meta: &'a RunMeta,
    modes: Modes,
    out: &'a mut Sink,
    /// The event stream position read so far.
    cursor: String,
    /// How many of the thread's messages the client has.
    seen: usize,
    /// Token deltas, when a mode asks for them.
    partials: Option<Partials>,
    last_mark: Instant,
}

impl<'a> Follower<'a> {
    /// Sends `metadata` and finds where the client is: messages already on
    /// the thread when the run was created (earlier runs, this run's
    /// input) are not news; a reconnect resumes after what it had.
    async fn start(
        state: &'a ApiState,
        meta: &'a RunMeta,
        modes: Modes,
        last_event_id: Option<&str>,
        out: &'a mut Sink,
    ) -> Result<Follower<'a>, Stopped> {
        let head = StreamMetadata {
            run_id: meta.run_id.clone(),
            attempt: 1,
        };
        let metadata = Event::default()
            .event("metadata")
            .data(to_json(&head).to_string());
        out.send(Ok(metadata)).await?;
        let (cursor, seen) = match resume_point(last_event_id) {
            Some(point) => point,
            None => (START.to_owned(), base_len(state, meta).await),
        };
        // Token streaming: mark the run followed, so workers stream its
        // model calls, and take the deltas of steps not committed yet.
        let mut partials = None;
        if modes.wants_tokens() {
            let store = state.store();
            mark_followed(store, &meta.run_id).await?;
            let at = store.load_thread(&meta.thread_id).await?;
            partials = Partials::new(modes, meta, at.step);
        }
        Ok(Follower {
            state,
            meta,
            modes,
            out,
            cursor,
            seen,
            partials,
            last_mark: Instant::now(),
        })
    }

    async fn send(&mut self, event: Event) -> Result<(), Gone> {
        self.out.send(Ok(event)).await
    }

    async fn send_all(&mut self, events: Vec<Event>) -> Result<(), Gone> {
        for event in events {
            self.send(event).await?;
        }
        Ok(())
    }

    /// One committed step of the run (or, namespaced, of a subagent):
    /// its deltas first, then its messages.
    async fn on_event(&mut self, id: String, run_event: &RunEvent) -> Result<(), Stopped> {
        if run_event.namespace.is_empty() {
            if let Some(partials) = &mut self.partials {
                let deltas = partials.until(Some(run_event.step));
                self.send_all(deltas).await?;
            }
            let to = usize::try_from(run_event.to).unwrap_or(usize::MAX);
            if to > self.seen || self.modes.values {
                let events = self.root_events(to).await?;
                self.send_all(events).await?;
                self.seen = self.seen.max(to);
            }
            if self.modes.wants_trace() {
                let events = self.trace_events(run_event).await?;
                self.send_all(events).await?;
            }
        } else if self.modes.subgraphs {
            let store = self.state.store();
            let new = store
                .load_messages(&run_event.thread_id, run_event.from)
                .await?;
            let count =
                usize::try_from(run_event.to.saturating_sub(run_event.from)).unwrap_or(usize::MAX);
            let new: Vec<Message> = new.into_iter().take(count).map(|m| m.message).collect();
            let at = format!("{id}/{}", self.seen);
            let events = subgraph_events(self.modes, run_event, &at, &new);
            self.send_all(events).await?;
        }
        self.cursor = id;
        self.out.touch();
        Ok(())
    }

    /// The deltas of the step in progress, and the follow mark's renewal.
    async fn in_progress(&mut self) -> Result<(), Stopped> {
        let Some(partials) = &mut self.partials else {
            return Ok(());
        };
        let deltas = partials.until(None);
        self.send_all(deltas).await?;
        if self.last_mark.elapsed() >= KEEP_ALIVE {
            mark_followed(self.state.store(), &self.meta.run_id).await?;
            self.last_mark = Instant::now();
        }
        Ok(())
    }

    /// The run ended and its stream is read: what its last event may not
    /// have carried yet, then the failure if it failed.
    async fn finish(&mut self, status: Option<RunStatus>) -> Result<(), Stopped> {
        let len = self
            .state
            .store()
            .load_messages(&self.meta.thread_id, self.seen as u64)
            .await?
            .len();
        if len > 0 && status.is_some() {
            let events = self.root_events(self.seen + len).await?;
            self.send_all(events).await?;
        }
        if status == Some(RunStatus::Error) {
            let body = final_body(&self.state.runs, self.meta).await?;
            let data = match &body {
                FinalBody::Failed(failure) => to_json(failure),
                FinalBody::Values(_) => Value::Null,
            };
            self.send(Event::default().event("error").data(data.to_string()))
                .await?;
        }
        Ok(())
    }

    /// The events for the thread's messages `seen..to`, plus the state
    /// for `values`.
    async fn root_events(&self, to: usize) -> Result<Vec<Event>, StoreError> {
        let store: &dyn Store = self.state.store();
        let thread_id = &self.meta.thread_id;
        let new: Vec<Message> = store
            .load_messages(thread_id, self.seen as u64)
            .await?
            .into_iter()
            .take(to.saturating_sub(self.seen))
            .map(|m| m.message)
            .collect();
        let values = if self.modes.values {
            let checkpoint = store.load_thread(thread_id).await?;
            Some(thread_values(thread_id, &checkpoint))
        } else {
            None
        };
        let none = HashSet::new();
        let streamed = self.partials.as_ref().map_or(&none, Partials::streamed);
        Ok(step_events(
            self.modes,
            self.meta,
            &self.cursor,
            &new,
            self.seen,
            values.as_ref(),
            streamed,
        ))
    }
}

impl Follower<'_> {
    /// The `tasks`, `checkpoints` and `debug` events of a committed step
    /// of the followed run: its messages, and the checkpoint it made
    /// (checkpoint `step + 1`, see `deepfleet_store::history`) when a mode
    /// shows it and the thread still keeps it.
    async fn trace_events(&self, run_event: &RunEvent) -> Result<Vec<Event>, StoreError> {
        let store: &dyn Store = self.state.store();
        let thread_id = &self.meta.thread_id;
        let count = usize::try_from(run_event.to.saturating_sub(run_event.from)).unwrap_or(0);
        let messages: Vec<Message> = store
            .load_messages(thread_id, run_event.from)
            .await?
            .into_iter()
            .take(count)
            .map(|m| m.message)
            .collect();
        let checkpoint = if self.modes.checkpoints || self.modes.debug {
            store
                .checkpoint_at(thread_id, run_event.step.saturating_add(1))
                .await?
        } else {
            None
        };
        Ok(trace_events(
            self.modes,
            self.meta,
            &self.cursor,
            run_event.step,
            &messages,
            usize::try_from(run_event.from).unwrap_or(usize::MAX),
            checkpoint.as_ref(),
            chrono::Utc::now(),
        ))
    }
}

impl Wire for Follower<'_> {
    fn reads_steps(&self) -> bool {
        true
    }

    fn gone(&self) -> bool {
        self.out.is_closed()
    }

    async fn look(&mut self, look: &Look) -> Result<(), Stopped> {
        // After the events were read: every delta of their steps is in.
        if let Some(partials) = &mut self.partials {
            partials.read(self.state.store()).await?;
        }
        for (id, run_event) in &look.steps {
            self.on_event(id.clone(), run_event).await?;
        }
        self.in_progress().await
    }

    async fn quiet(&mut self) -> Result<(), Gone> {
        if self.out.keep_alive_due() {
            self.send(Event::default().comment("heartbeat")).await?;
        }
        Ok(())
    }

    async fn ended(&mut self, status: Option<RunStatus>) -> Result<(), Stopped> {
        self.finish(status).await
    }
}

/// The thread's log length before this run's input: the run's own input
/// messages are streamed as its first update, as LangGraph does.
async fn base_len(state: &ApiState, meta: &RunMeta) -> usize {
    let started = state
        .runs
        .life
        .run_record(meta)
        .await
        .ok()
        .flatten()
        .is_some();
    let len = state
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
