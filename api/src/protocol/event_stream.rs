//! `POST /threads/{id}/stream/events`: one filtered event stream of a
//! thread (the protocol's SSE transport). The connection is the
//! subscription: its body names the channels, namespaces and depth, and
//! the server sends what matches until the client leaves or
//! [`THREAD_STREAM_LIMIT`] passes (the client reconnects to go on).
//!
//! The stream follows the thread's runs as the thread stream does: the
//! newest one, from its start, when it is still going or just ended (see
//! [`first_run_followed`]; with `since`, whenever it ended), and each one
//! created while the client listens. A stream may open just before its
//! thread exists (the first `run.start` creates it): it waits
//! [`NEW_THREAD_WAIT`] for it, then ends. A run that stops for a human
//! stays watched: once answered, its events go on.
//!
//! Every event's id is derived from the run's event stream position, so
//! two connections (the SDK opens several) name the same event the same
//! and a client dedupes them. `seq` orders events across a client's
//! connections: the run's creation time in milliseconds times
//! [`EVENTS_PER_RUN`] plus the event's place in the run, counted over
//! every channel whatever the connection asked for; the events only
//! some connections send (token deltas, a resumed run's `running`) share
//! the number of the event before them, so every connection numbers the
//! rest alike.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use deepfleet_proto::{Caller, Message, RunEvent, RunStatus};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::filter::Filter;
use super::tokens::Tokens;
use super::translate::{Origin, checkpoint_event, lifecycle, message_events, task_events};
use super::wire::ProtocolEvent;
use crate::error::ApiError;
use crate::runs::partials::mark_followed;
use crate::runs::thread_stream::THREAD_STREAM_LIMIT;
use crate::state::ApiState;
use deepfleet_scheduler::convert::{interrupts, thread_values, to_json};
use deepfleet_scheduler::lifecycle::status::occupies_thread;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::repo::threads::{ThreadRecord, threads};
use deepfleet_scheduler::runs::FinalBody;
use deepfleet_scheduler::runs::final_body;
use deepfleet_scheduler::runs::follow::{
    self, Gone, KEEP_ALIVE, Look, Outbox, POLL, Stopped, Wire,
};
use deepfleet_scheduler::runs::thread_runs::{newest_run, runs_since};

/// Room for each run's events in `seq`: a run's events past this many
/// share the last number (their order on the connection still holds).
const EVENTS_PER_RUN: u64 = 4096;

/// How long a stream of a thread that does not exist yet waits for the
/// `run.start` that makes it (the SDK sends it right after opening its
/// streams) before it ends.
const NEW_THREAD_WAIT: Duration = Duration::from_secs(2);

/// How long after a run's end a new stream still replays it.
const REPLAY_GRACE: chrono::TimeDelta = chrono::TimeDelta::seconds(10);

/// Runs remembered so none is followed twice.
const REMEMBERED_RUNS: usize = 1024;

/// The handler: a 422 for a body that is not an event stream request, a
/// 404 for another tenant's thread, else the stream.
pub(super) async fn stream_events(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(thread_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::unprocessable(format!("the body is not JSON: {e}")))?;
    let filter = Filter::parse(&body).map_err(ApiError::unprocessable)?;
    let record = threads(state.store()).get(&thread_id).await?;
    if record.as_ref().is_some_and(|r| r.tenant != caller.tenant) {
        return Err(ApiError::not_found(format!(
            "Thread '{thread_id}' not found."
        )));
    }
    let since = match &record {
        Some(record) => first_run_followed(&state, record, filter.since.is_some()).await?,
        None => Utc::now(),
    };
    let snapshot = match &record {
        Some(_) if filter.wants_any(&["values"]) && filter.since.is_none() => {
            let checkpoint = state.store().load_thread(&thread_id).await?;
            Some((checkpoint.step, thread_values(&thread_id, &checkpoint)))
        }
        _ => None,
    };
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let mut stream = ThreadEvents {
            state: &state,
            thread_id: &thread_id,
            tenant_seen: record.is_some(),
            filter,
            out: Outbox::new(tx),
        };
        let deadline = Instant::now() + THREAD_STREAM_LIMIT;
        let following = async {
            if let Some((step, values)) = snapshot {
                let event = ProtocolEvent::root("values", values);
                stream
                    .send(&event, 0, &format!("{thread_id}/state/{step}"))
                    .await?;
            }
            stream.follow(since, &caller).await
        };
        let _ = tokio::time::timeout_at(deadline, following).await;
    });
    let events =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    Ok(Sse::new(events).into_response())
}

/// When the first run a new stream follows was created: the newest
/// run's, when a replay (`since`) is asked for, when it is still going,
/// or when it ended less than [`REPLAY_GRACE`] ago; else now (the stream
/// waits for the next run).
///
/// The grace stands for the Agent Server's event buffer, which outlives a
/// run until its clients close their streams: the SDK opens a stream per
/// projection as its user reads one, often after a fast run ended, and
/// dedupes what it had by event id.
async fn first_run_followed(
    state: &ApiState,
    record: &ThreadRecord,
    replay: bool,
) -> Result<DateTime<Utc>, ApiError> {
    let now = Utc::now();
    let Some(newest) = newest_run(&state.runs, &record.thread_id).await? else {
        return Ok(now);
    };
    let recent = match state.runs.life.run_record(&newest).await? {
        Some(run) if occupies_thread(run.status) => true,
        Some(run) => now - run.updated_at < REPLAY_GRACE,
        None => !newest.cancelled,
    };
    Ok(if replay || recent {
        newest.created_at.min(now)
    } else {
        now
    })
}

/// One connection's stream.
struct ThreadEvents<'a> {
    state: &'a ApiState,
    thread_id: &'a str,
    /// Whether the thread has been seen (once it has, its deletion ends
    /// the stream).
    tenant_seen: bool,
    filter: Filter,
    out: Outbox<Result<Event, Infallible>>,
}

/// Where the stream is in one run.
struct RunCursor {
    meta: RunMeta,
    /// The run's event stream position read so far.
    cursor: String,
    /// Events made for the run so far, over every channel.
    count: u64,
    /// Subagents whose `started` went out.
    started: HashSet<String>,
    /// The subagent type each `task` call asked for.
    subagent_types: HashMap<String, String>,
    /// Its model calls' tokens, when the stream wants messages.
    tokens: Option<Tokens>,
    /// When the run's follow mark was last renewed.
    marked: Option<Instant>,
}

impl RunCursor {
    fn new(meta: RunMeta, filter: &Filter) -> Self {
        let tokens = filter
            .wants_any(&["messages"])
            .then(|| Tokens::new(&meta.run_id));
        RunCursor {
            meta,
            cursor: crate::runs::stream::START.to_owned(),
            count: 0,
            started: HashSet::new(),
            subagent_types: HashMap::new(),
            tokens,
            marked: None,
        }
    }

    /// The next event's `seq`.
    fn next_seq(&mut self) -> u64 {
        self.count += 1;
        self.current_seq()
    }

    /// The `seq` of the last numbered event, for events only some
    /// connections send (token deltas, a resumed run's `running`): they
    /// take no number of their own, so every connection numbers the
    /// events all of them send alike, and the SDK orders its several
    /// connections' events by it.
    fn current_seq(&self) -> u64 {
        let base = u64::try_from(self.meta.created_at.timestamp_millis()).unwrap_or(0);
        base.saturating_mul(EVENTS_PER_RUN) + self.count.min(EVENTS_PER_RUN - 1)
    }
}

/// How following a run ended.
enum RunEnd {
    /// For good.
    Ended,
    /// Waiting for a human: watched until answered.
    Interrupted(Box<RunCursor>),
}

impl ThreadEvents<'_> {
    /// Follows the runs created since `since` until the client leaves
    /// (`Err`) or the thread is deleted.
    async fn follow(&mut self, since: DateTime<Utc>, caller: &Caller) -> Result<(), Stopped> {
        let mut followed: VecDeque<String> = VecDeque::new();
        let mut parked: Option<Box<RunCursor>> = None;
        let opened = Instant::now();
        loop {
            if self.out.is_closed() {
                return Err(Stopped::ClientGone);
            }
            match threads(self.state.store()).get(self.thread_id).await? {
                Some(record) if record.tenant != caller.tenant => return Ok(()),
                Some(_) => self.tenant_seen = true,
                None if self.tenant_seen => return Ok(()),
                // The client reconnects to wait longer.
                None if opened.elapsed() >= NEW_THREAD_WAIT => return Ok(()),
                None => {}
            }
            let mut progressed = false;
            if let Some(run) = parked.take() {
                let (done, status) = self.state.runs.life.finished(&run.meta).await?;
                if done && status == Some(RunStatus::AwaitingHuman) {
                    parked = Some(run);
                } else {
                    let resumed = lifecycle(&[], "running", json!({}));
                    let id = format!("{}/{}/resumed", run.meta.run_id, run.cursor);
                    let seq = run.current_seq();
                    self.send(&resumed, seq, &id).await?;
                    parked = self.follow_run(*run).await?;
                    progressed = true;
                }
            }
            let news = runs_since(&self.state.runs, self.thread_id, since, &followed).await?;
            for meta in news {
                if followed.len() == REMEMBERED_RUNS {
                    followed.pop_front();
                }
                followed.push_back(meta.run_id.clone());
                let mut run = RunCursor::new(meta, &self.filter);
                let started = lifecycle(&[], "started", json!({"graph_name": run.meta.graph_id}));
                let seq = run.next_seq();
                self.send(&started, seq, &format!("{}/started", run.meta.run_id))
                    .await?;
                if let Some(interrupted) = self.follow_run(run).await? {
                    parked = Some(interrupted);
                }
                progressed = true;
            }
            if !progressed {
                self.keep_alive().await?;
                tokio::time::sleep(POLL).await;
            }
        }
    }

    /// Sends one run's events until it ends, through the runs service's
    /// follower; a run that stops for a human comes back to be watched.
    async fn follow_run(&mut self, run: RunCursor) -> Result<Option<Box<RunCursor>>, Stopped> {
        let state = self.state;
        let meta = run.meta.clone();
        let mut cursor = run.cursor.clone();
        let mut wire = RunWire {
            stream: self,
            run,
            parked: None,
        };
        match follow::follow(&state.runs, &meta, &mut cursor, &mut wire).await {
            Stopped::Ended(_) => Ok(wire.parked),
            Stopped::Answered => Ok(None),
            stopped => Err(stopped),
        }
    }

    /// One committed step of the run or of one of its subagents.
    async fn on_step(
        &mut self,
        run: &mut RunCursor,
        id: &str,
        step: &RunEvent,
    ) -> Result<(), Stopped> {
        let store = self.state.store();
        let subagent = !step.namespace.is_empty();
        if subagent && !self.filter.reaches_subagents() {
            return Ok(());
        }
        let count = usize::try_from(step.to.saturating_sub(step.from)).unwrap_or(usize::MAX);
        let messages: Vec<Message> = store
            .load_messages(&step.thread_id, step.from)
            .await?
            .into_iter()
            .take(count)
            .map(|m| m.message)
            .collect();
        let from = usize::try_from(step.from).unwrap_or(usize::MAX);
        let origin = Origin {
            thread_id: &step.thread_id,
            namespace: &step.namespace,
            run_id: &step.run_id,
        };
        let mut events = Vec::new();
        if subagent {
            let key = step.namespace.join("|");
            if run.started.insert(key) {
                let call_id = step.namespace[0].strip_prefix("task:").unwrap_or_default();
                let graph_name = run
                    .subagent_types
                    .get(call_id)
                    .cloned()
                    .unwrap_or_else(|| "task".to_owned());
                events.push(lifecycle(
                    &step.namespace,
                    "started",
                    json!({"graph_name": graph_name,
                           "cause": {"type": "toolCall", "tool_call_id": call_id}}),
                ));
            }
        }
        let prefix = format!("{}/{id}", run.meta.run_id);
        let mut n = 0;
        for event in &events {
            let seq = run.next_seq();
            self.send(event, seq, &format!("{prefix}/{n}")).await?;
            n += 1;
        }
        for (offset, message) in messages.iter().enumerate() {
            let mut own = Vec::new();
            if !subagent {
                self.note_subagents(run, message, &mut own);
            }
            let index = from + offset;
            own.extend(message_events(origin, index, message));
            let streamed = !subagent
                && run
                    .tokens
                    .as_ref()
                    .is_some_and(|t| t.streamed(index as u64));
            for event in own {
                // Ids count every event, sent or not, so that they do
                // not depend on what this connection streamed.
                let event_id = format!("{prefix}/{n}");
                n += 1;
                let seq = run.next_seq();
                if streamed && event.method == "messages" {
                    if event.data["event"] != "message-finish" {
                        continue;
                    }
                    let finish = run
                        .tokens
                        .as_mut()
                        .and_then(|t| t.finish(origin, index as u64));
                    if let Some(finish) = finish {
                        self.send(&finish, seq, &format!("{event_id}f")).await?;
                    }
                }
                self.send(&event, seq, &event_id).await?;
            }
        }
        if subagent {
            return Ok(());
        }
        self.send_step_state(run, &prefix, step, origin, &messages, from)
            .await
    }

    /// A root step's optional parts, per channel: its tasks, its
    /// checkpoint and the thread's values. Ids are by name, so they do not
    /// depend on which channels this connection asked for.
    async fn send_step_state(
        &mut self,
        run: &mut RunCursor,
        prefix: &str,
        step: &RunEvent,
        origin: Origin<'_>,
        messages: &[Message],
        from: usize,
    ) -> Result<(), Stopped> {
        let store = self.state.store();
        let seq = run.next_seq();
        if self.filter.wants_any(&["tasks"]) {
            for (n, event) in task_events(origin, step.step, messages, from)
                .iter()
                .enumerate()
            {
                self.send(event, seq, &format!("{prefix}/task{n}")).await?;
            }
        }
        let seq = run.next_seq();
        if self.filter.wants_any(&["checkpoints"])
            && let Some(found) = store
                .checkpoint_at(&step.thread_id, step.step.saturating_add(1))
                .await?
        {
            self.send(
                &checkpoint_event(&found),
                seq,
                &format!("{prefix}/checkpoint"),
            )
            .await?;
        }
        let seq = run.next_seq();
        if self.filter.wants_any(&["values"]) {
            let checkpoint = store.load_thread(&step.thread_id).await?;
            let values = ProtocolEvent::root("values", thread_values(&step.thread_id, &checkpoint));
            self.send(&values, seq, &format!("{prefix}/values")).await?;
        }
        Ok(())
    }

    /// The token events of the run's buffered deltas up to `step` (all
    /// for `None`).
    async fn send_tokens(&mut self, run: &mut RunCursor, step: Option<u64>) -> Result<(), Gone> {
        let Some(tokens) = &mut run.tokens else {
            return Ok(());
        };
        let origin = Origin {
            thread_id: &run.meta.thread_id,
            namespace: &[],
            run_id: &run.meta.run_id,
        };
        let events = tokens.until(origin, step);
        for (event_id, event) in events {
            let seq = run.current_seq();
            self.send(&event, seq, &event_id).await?;
        }
        Ok(())
    }

    /// Remembers the subagent type of `task` calls, and ends a subagent
    /// when its call's result comes back.
    fn note_subagents(&self, run: &mut RunCursor, message: &Message, out: &mut Vec<ProtocolEvent>) {
        match message {
            Message::Assistant(turn) => {
                for call in turn.tool_calls.iter().filter(|c| c.name == "task") {
                    let kind = serde_json::from_str::<Value>(&call.arguments)
                        .ok()
                        .and_then(|a| a.get("subagent_type")?.as_str().map(str::to_owned));
                    if let Some(kind) = kind {
                        run.subagent_types.insert(call.id.clone(), kind);
                    }
                }
            }
            Message::Tool(result) if result.name == "task" => {
                let namespace = RunEvent::task_namespace(&result.tool_call_id);
                if run.started.remove(&namespace.join("|")) {
                    let event = match result.status {
                        deepfleet_proto::ToolStatus::Success => "completed",
                        deepfleet_proto::ToolStatus::Error => "failed",
                    };
                    out.push(lifecycle(&namespace, event, json!({})));
                }
            }
            _ => {}
        }
    }

    /// The run's end: `completed`, `failed` (with the error), or, for a
    /// run waiting on a human, each pending interrupt then `interrupted`.
    async fn on_end(
        &mut self,
        run: &mut RunCursor,
        status: Option<RunStatus>,
    ) -> Result<RunEnd, Stopped> {
        let prefix = format!("{}/{}/end", run.meta.run_id, run.cursor);
        let ended = match status {
            Some(RunStatus::Success) => lifecycle(&[], "completed", json!({})),
            Some(RunStatus::AwaitingHuman) => {
                let checkpoint = self.state.store().load_thread(&run.meta.thread_id).await?;
                let pending = interrupts(&checkpoint, &run.meta.run_id).unwrap_or_default();
                for (n, interrupt) in pending.iter().enumerate() {
                    let requested = ProtocolEvent::root(
                        "input.requested",
                        json!({"interrupt_id": interrupt.id, "payload": to_json(&interrupt.value)}),
                    );
                    let seq = run.next_seq();
                    self.send(&requested, seq, &format!("{prefix}/input{n}"))
                        .await?;
                }
                let interrupted = lifecycle(
                    &[],
                    "interrupted",
                    json!({"checkpoint": {"id": checkpoint.step.to_string()}}),
                );
                let seq = run.next_seq();
                self.send(&interrupted, seq, &format!("{prefix}/interrupted"))
                    .await?;
                let watched = RunCursor {
                    meta: run.meta.clone(),
                    cursor: run.cursor.clone(),
                    count: run.count,
                    started: std::mem::take(&mut run.started),
                    subagent_types: std::mem::take(&mut run.subagent_types),
                    tokens: run.tokens.take(),
                    marked: None,
                };
                return Ok(RunEnd::Interrupted(Box::new(watched)));
            }
            Some(RunStatus::Error) => {
                let error = match final_body(&self.state.runs, &run.meta).await? {
                    FinalBody::Failed(failure) => failure.message,
                    FinalBody::Values(_) => "the run failed".to_owned(),
                };
                lifecycle(&[], "failed", json!({"error": error}))
            }
            Some(RunStatus::Timeout) => {
                lifecycle(&[], "failed", json!({"error": "the run timed out"}))
            }
            _ => lifecycle(&[], "failed", json!({"error": "the run was cancelled"})),
        };
        let seq = run.next_seq();
        self.send(&ended, seq, &format!("{prefix}/lifecycle"))
            .await?;
        Ok(RunEnd::Ended)
    }

    /// A `: heartbeat` comment when nothing went out for [`KEEP_ALIVE`].
    async fn keep_alive(&mut self) -> Result<(), Gone> {
        if self.out.keep_alive_due() {
            self.out
                .send(Ok(Event::default().comment("heartbeat")))
                .await?;
        }
        Ok(())
    }

    /// Sends `event` when the filter wants it and it comes after `since`.
    async fn send(&mut self, event: &ProtocolEvent, seq: u64, event_id: &str) -> Result<(), Gone> {
        if !self.filter.matches(event) || self.filter.since.is_some_and(|s| seq <= s) {
            return Ok(());
        }
        let data = event.envelope(seq, event_id, Utc::now().timestamp_millis());
        let sse = Event::default().id(event_id).data(data.to_string());
        self.out.send(Ok(sse)).await
    }
}

/// One run of a thread's event stream, as the runs service's follower
/// sees it.
struct RunWire<'s, 'a> {
    stream: &'s mut ThreadEvents<'a>,
    run: RunCursor,
    /// The run, when it stopped for a human: watched until answered.
    parked: Option<Box<RunCursor>>,
}

impl Wire for RunWire<'_, '_> {
    fn reads_steps(&self) -> bool {
        true
    }

    fn gone(&self) -> bool {
        self.stream.out.is_closed()
    }

    async fn look(&mut self, look: &Look) -> Result<(), Stopped> {
        let store = self.stream.state.store();
        let run = &mut self.run;
        // After the events were read: every delta of their steps is in.
        if let Some(tokens) = &mut run.tokens {
            if run.marked.is_none_or(|at| at.elapsed() >= KEEP_ALIVE) {
                mark_followed(store, &run.meta.run_id).await?;
                run.marked = Some(Instant::now());
            }
            tokens.read(store).await?;
        }
        for (id, run_event) in &look.steps {
            if run_event.namespace.is_empty() {
                self.stream.send_tokens(run, Some(run_event.step)).await?;
            }
            self.stream.on_step(run, id, run_event).await?;
            run.cursor.clone_from(id);
        }
        self.stream.send_tokens(run, None).await?;
        Ok(())
    }

    async fn quiet(&mut self) -> Result<(), Gone> {
        self.stream.keep_alive().await
    }

    async fn ended(&mut self, status: Option<RunStatus>) -> Result<(), Stopped> {
        if let RunEnd::Interrupted(run) = self.stream.on_end(&mut self.run, status).await? {
            self.parked = Some(run);
        }
        Ok(())
    }
}
