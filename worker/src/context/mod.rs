//! The one harness context of a step, and the borrowed views of it that
//! tools and compression get.
//!
//! The step builds one [`StepContext`] from what it loaded; middleware
//! sees it whole (mutably in `before_model`), a tool call sees a
//! [`ToolView`] of it (the same files, state and log, plus its call id),
//! and context compression a [`ThreadView`] (the log, the compression
//! state of [`compaction`], the files and where events go). Views borrow: nothing is copied
//! per call, and what a tool or a summary changes (state, files, the
//! compression cursor) is what the step commits.

pub mod compaction;

use std::sync::{Arc, Mutex};

use deepfleet_model::DeltaSink;
use deepfleet_proto::{AgentSpec, LoggedMessage, RunRecord};
use deepfleet_store::Store;
use serde_json::{Map, Value};

use crate::backend::{Backend, StateBackend, StoreBackend};
use crate::context::compaction::StepCompaction;
use crate::events::{Event, EventScope, EventSink};

/// Everything one step of a run works on; what middleware sees.
pub struct StepContext {
    /// The run being stepped.
    pub run: RunRecord,
    /// The agent spec.
    pub spec: Arc<AgentSpec>,
    /// The thread's log before this step.
    pub history: Vec<LoggedMessage>,
    /// Messages this step added so far (a resumed turn's results, then the
    /// model's turn).
    pub added: Vec<LoggedMessage>,
    /// The thread's files, through the spec's routes.
    pub backend: Arc<dyn Backend>,
    /// The thread's own files, under the routes (what `execute` copies
    /// into its sandbox and writes back to); the same files `backend`
    /// serves outside the routed prefixes.
    pub thread_files: StateBackend,
    /// The thread's custom state; committed with the step.
    pub state: Mutex<Map<String, Value>>,
    /// Which run events belong to.
    pub scope: EventScope,
    /// Where events go.
    pub events: Arc<dyn EventSink>,
    /// The run's runtime context, opened for this step only (the record
    /// holds it sealed).
    pub context: Option<Value>,
    /// The run's namespace of the long-term store, when the spec routes a
    /// path to it (prompt templates read `{{store.KEY}}` values from it).
    pub store: Option<StoreBackend>,
    /// The thread's compression cursor and token total, and what this
    /// step changes in them.
    pub compaction: StepCompaction,
    /// Where streamed tokens go while someone streams the run: model calls
    /// (the step's and summaries') then use `ModelClient::stream`; `None`
    /// (nobody watches) keeps them on `complete` (see `step/deltas.rs`).
    pub deltas: Option<Arc<dyn DeltaSink>>,
    /// Whether someone streamed the run when the step loaded it: its
    /// model calls then stream their tokens (see `step/deltas.rs`).
    pub followed: bool,
    /// The fleet's store, which tools read through [`ToolView::fleet_store`]
    /// (the async subagent tools look up their tasks' runs); `None` in
    /// tests.
    pub fleet_store: Option<Arc<dyn Store>>,
}

impl StepContext {
    /// A step of `run` over `backend`, reporting to `events`, with an
    /// empty log and state, no runtime context, no streaming and no fleet
    /// store: the step sets what it loaded.
    pub fn new(
        run: RunRecord,
        spec: Arc<AgentSpec>,
        backend: Arc<dyn Backend>,
        events: Arc<dyn EventSink>,
    ) -> Self {
        StepContext {
            scope: EventScope::of(&run),
            run,
            spec,
            history: Vec::new(),
            added: Vec::new(),
            backend,
            thread_files: StateBackend::default(),
            state: Mutex::default(),
            events,
            context: None,
            store: None,
            compaction: StepCompaction::default(),
            deltas: None,
            followed: false,
            fleet_store: None,
        }
    }

    /// Reports an event of this step.
    pub fn emit(&self, event: Event) {
        self.events.emit(&self.scope, &event);
    }

    /// The view one tool call gets.
    pub fn tool<'a>(&'a self, call_id: &'a str) -> ToolView<'a> {
        ToolView {
            step: self,
            call_id,
        }
    }

    /// The view compression gets around the step's model call: a
    /// summary's tokens stream with the step's.
    pub fn thread(&self) -> ThreadView<'_> {
        ThreadView {
            step: self,
            deltas: self.deltas.as_deref(),
        }
    }
}

/// What one tool call can see and touch of its step.
#[derive(Clone, Copy)]
pub struct ToolView<'a> {
    step: &'a StepContext,
    call_id: &'a str,
}

impl<'a> ToolView<'a> {
    /// The call's id.
    pub fn call_id(&self) -> &'a str {
        self.call_id
    }

    /// The files the tools operate on.
    pub fn backend(&self) -> &'a dyn Backend {
        self.step.backend.as_ref()
    }

    /// The thread's own files, without the routes.
    pub fn thread_files(&self) -> &'a StateBackend {
        &self.step.thread_files
    }

    /// The thread's custom state; writes are committed with the step.
    pub fn state(&self) -> &'a Mutex<Map<String, Value>> {
        &self.step.state
    }

    /// The run's runtime context.
    pub fn context(&self) -> Option<&'a Value> {
        self.step.context.as_ref()
    }

    /// The fleet's store (the async subagent tools read their tasks'
    /// runs); `None` in tests.
    pub fn fleet_store(&self) -> Option<&'a Arc<dyn Store>> {
        self.step.fleet_store.as_ref()
    }

    /// Reports an event of the step.
    pub fn emit(&self, event: Event) {
        self.step.emit(event);
    }

    /// The conversation, for tools that act on it (`compact_conversation`).
    /// A tool's summary is no message of the turn being streamed: its
    /// tokens are not streamed.
    pub fn thread(&self) -> ThreadView<'a> {
        ThreadView {
            step: self.step,
            deltas: None,
        }
    }
}

/// What context compression works on: the stored log, the step's added
/// messages, the compression state, the files and where events go.
#[derive(Clone, Copy)]
pub struct ThreadView<'a> {
    step: &'a StepContext,
    deltas: Option<&'a dyn DeltaSink>,
}

impl<'a> ThreadView<'a> {
    /// The stored log.
    pub fn history(&self) -> &'a [LoggedMessage] {
        &self.step.history
    }

    /// The step's messages not yet stored.
    pub fn added(&self) -> &'a [LoggedMessage] {
        &self.step.added
    }

    /// The thread's compression state.
    pub fn compaction(&self) -> &'a StepCompaction {
        &self.step.compaction
    }

    /// The thread's files (history and evicted messages go there).
    pub fn backend(&self) -> &'a dyn Backend {
        self.step.backend.as_ref()
    }

    /// Where a summary's streamed tokens go, when they stream.
    pub fn deltas(&self) -> Option<&'a dyn DeltaSink> {
        self.deltas
    }

    /// Reports an event of the step.
    pub fn emit(&self, event: Event) {
        self.step.emit(event);
    }

    /// Messages in the log and added, together.
    pub fn len(&self) -> usize {
        self.step.history.len() + self.step.added.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The message at log index `index` (stored or added).
    pub fn get(&self, index: usize) -> Option<&'a LoggedMessage> {
        let history = self.history();
        history
            .get(index)
            .or_else(|| self.added().get(index.checked_sub(history.len())?))
    }
}

#[cfg(test)]
impl StepContext {
    /// A step of `run` of `spec` over an empty state backend, emitting
    /// nowhere: tests change the fields they need.
    pub(crate) fn test(spec: AgentSpec, run: RunRecord) -> Self {
        StepContext::new(
            run,
            Arc::new(spec),
            Arc::new(crate::backend::StateBackend::default()),
            Arc::new(crate::events::NoopSink),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::RecordingSink;
    use chrono::Utc;
    use deepfleet_fleet::tokens::logged;
    use deepfleet_proto::Message;
    use pretty_assertions::assert_eq;

    fn context() -> StepContext {
        let spec = AgentSpec::from_yaml("name: a\nmodel: replay:x\n").unwrap();
        StepContext::test(spec, RunRecord::new("r", "t", "a", Utc::now()))
    }

    #[test]
    fn the_thread_view_indexes_the_log_then_the_added_messages() {
        let mut cx = context();
        cx.history = vec![logged(Message::user("a")), logged(Message::user("b"))];
        cx.added = vec![logged(Message::user("c"))];
        let thread = cx.thread();
        assert_eq!(thread.len(), 3);
        let texts: Vec<String> = (0..4)
            .map(|i| thread.get(i).map(|m| m.message.text()).unwrap_or_default())
            .collect();
        assert_eq!(texts, ["a", "b", "c", ""]);
    }

    #[test]
    fn views_share_the_step_state_and_events() {
        let mut cx = context();
        let sink = RecordingSink::new();
        cx.events = sink.clone();
        let view = cx.tool("call_1");
        assert_eq!(view.call_id(), "call_1");
        view.state()
            .lock()
            .unwrap()
            .insert("k".into(), Value::Bool(true));
        view.emit(Event::StepEnded);
        view.thread().emit(Event::StepEnded);
        assert_eq!(cx.state.lock().unwrap().get("k"), Some(&Value::Bool(true)));
        assert_eq!(sink.events().len(), 2);
    }
}
