//! Test support for compression: a model that summarizes on demand and
//! answers agent calls from a script, and a step context around a log.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::Utc;
use deepfleet_model::{
    CallPurpose, ErrorKind, ModelClient, ModelError, ModelRequest, ModelResponse,
};
use deepfleet_proto::{
    AgentSpec, AssistantMessage, ContentBlock, ContextCursor, LoggedMessage, RunRecord, RunStatus,
    Usage,
};

use crate::compress::budget::Policy;
use crate::compress::engine::Compressor;
use crate::compress::summarize::Summarizer;
use crate::context::StepContext;
use crate::context::compaction::StepCompaction;
use crate::events::RecordingSink;

/// The text every summary call returns.
pub const SUMMARY: &str =
    "## SESSION INTENT\nx\n## SUMMARY\ny\n## ARTIFACTS\nNone\n## NEXT STEPS\nNone";

/// Summarizes every `Summarization` call; answers agent calls with the
/// scripted outcomes in order (then "done"). Keeps every request.
#[derive(Default)]
pub struct FakeModel {
    pub requests: Mutex<Vec<ModelRequest>>,
    pub agent_errors: Mutex<VecDeque<ModelError>>,
}

impl FakeModel {
    /// A model whose first `n` agent calls fail with a context overflow.
    pub fn overflowing(n: usize) -> Arc<Self> {
        let model = FakeModel::default();
        for _ in 0..n {
            model
                .agent_errors
                .lock()
                .unwrap()
                .push_back(ModelError::new(
                    ErrorKind::ContextOverflow,
                    "maximum context length exceeded",
                ));
        }
        Arc::new(model)
    }

    /// The agent calls received, in order.
    pub fn agent_requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.purpose == CallPurpose::Agent)
            .cloned()
            .collect()
    }
}

#[async_trait]
impl ModelClient for FakeModel {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        let text = match request.purpose {
            CallPurpose::Summarization => SUMMARY,
            CallPurpose::Agent => {
                if let Some(error) = self.agent_errors.lock().unwrap().pop_front() {
                    return Err(error);
                }
                "done"
            }
        };
        Ok(ModelResponse {
            message: AssistantMessage {
                content: vec![ContentBlock::text(text)],
                ..AssistantMessage::default()
            },
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                cached_input_tokens: 0,
            },
            finish: Default::default(),
        })
    }
}

/// A compressor on `model` with `policy`.
pub fn compressor(model: Arc<FakeModel>, policy: Policy) -> Arc<Compressor> {
    Arc::new(Compressor::new(
        Summarizer::new(model, "fake".into(), None),
        policy,
    ))
}

/// A step context over `history` with `cursor`, recording its events.
pub fn cx(history: Vec<LoggedMessage>, cursor: ContextCursor) -> (StepContext, Arc<RecordingSink>) {
    let run = RunRecord {
        status: RunStatus::Running,
        ..RunRecord::new("r", "t", "a", Utc::now())
    };
    let tokens = history.iter().map(|m| u64::from(m.tokens)).sum();
    let sink = RecordingSink::new();
    let spec = AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap();
    let mut cx = StepContext::test(spec, run);
    cx.history = history;
    cx.events = sink.clone();
    cx.compaction = StepCompaction::new(cursor, tokens);
    (cx, sink)
}
