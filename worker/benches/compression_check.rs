//! The per-step cost of deciding whether to compress, as the conversation
//! grows from 10 to 1,000 messages: it must stay flat (issue #4).
//!
//! `cargo bench -p deepfleet-worker --bench compression_check` prints a
//! table: the decision from running totals (what each step does), with and
//! without a summary in force, beside a sum over the whole log (what it
//! would cost without the totals).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use chrono::Utc;
use deepfleet_model::{ModelClient, ModelError, ModelRequest, ModelResponse};
use deepfleet_proto::{
    AgentSpec, AssistantMessage, ContextCursor, LoggedMessage, Message, ModelProfile, RunRecord,
    SummaryEvent, ToolCall, ToolStatus, Usage,
};
use deepfleet_worker::backend::StateBackend;
use deepfleet_worker::compress::budget::Policy;
use deepfleet_worker::compress::engine::Compressor;
use deepfleet_worker::compress::summarize::Summarizer;
use deepfleet_worker::context::StepContext;
use deepfleet_worker::context::compaction::StepCompaction;
use deepfleet_worker::events::NoopSink;

const ITERATIONS: u32 = 200_000;

/// Never called: the decision makes no model call.
struct Unused;

#[async_trait]
impl ModelClient for Unused {
    async fn complete(&self, _request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        Err(ModelError::new(
            deepfleet_model::ErrorKind::Unsupported,
            "not in this benchmark",
        ))
    }
}

/// A conversation of `n` messages: turns of a tool call and its result.
fn log(n: usize) -> Vec<LoggedMessage> {
    (0..n)
        .map(|i| {
            let message = if i % 2 == 0 {
                Message::Assistant(AssistantMessage {
                    tool_calls: vec![ToolCall {
                        id: format!("c{i}"),
                        name: "read_file".into(),
                        arguments: format!("{{\"file_path\":\"/f{i}.md\"}}"),
                    }],
                    usage: Some(Usage {
                        input_tokens: 900,
                        output_tokens: 20,
                        cached_input_tokens: 0,
                    }),
                    ..AssistantMessage::default()
                })
            } else {
                Message::tool(format!("c{}", i - 1), "read_file", "x", ToolStatus::Success)
            };
            LoggedMessage {
                message,
                tokens: 40,
            }
        })
        .collect()
}

fn summary_at(cutoff: usize, n: usize) -> ContextCursor {
    ContextCursor {
        summary: Some(SummaryEvent {
            cutoff: cutoff as u64,
            message: LoggedMessage {
                message: Message::user("summary"),
                tokens: 300,
            },
            file_path: None,
            session: "session_bench".into(),
            created_at_index: n as u64,
            summarized_tokens: 40 * cutoff as u64,
            created_at: Utc::now(),
        }),
        evicted: Vec::new(),
    }
}

/// Nanoseconds per call of `f`.
fn time(mut f: impl FnMut() -> bool) -> f64 {
    for _ in 0..ITERATIONS / 10 {
        black_box(f());
    }
    let started = Instant::now();
    for _ in 0..ITERATIONS {
        black_box(f());
    }
    started.elapsed().as_nanos() as f64 / f64::from(ITERATIONS)
}

fn main() {
    let compressor = Compressor::new(
        Summarizer::new(Arc::new(Unused), "bench".into(), None),
        Policy::for_profile(Some(ModelProfile {
            max_input_tokens: 200_000,
            max_output_tokens: 8_000,
        })),
    );
    compressor.fixed_tokens("a system prompt", &[]);
    let spec = AgentSpec::from_yaml("name: bench\nmodel: replay:x\n")
        .unwrap_or_else(|e| panic!("bench spec: {e}"));
    let spec = Arc::new(spec);
    println!(
        "| messages | decision (ns) | decision, summary in force (ns) | sum over the log (ns) |"
    );
    println!("|---:|---:|---:|---:|");
    for n in [10, 100, 1_000] {
        let history = log(n);
        let total: u64 = history.iter().map(|m| u64::from(m.tokens)).sum();
        let mut row = Vec::new();
        for cursor in [ContextCursor::default(), summary_at(n.saturating_sub(6), n)] {
            let mut cx = StepContext::new(
                RunRecord::new("run", "thread", "bench", Utc::now()),
                Arc::clone(&spec),
                Arc::new(StateBackend::default()),
                Arc::new(NoopSink),
            );
            cx.history = history.clone();
            cx.compaction = StepCompaction::new(cursor.clone(), total);
            let thread = cx.thread();
            row.push(time(|| {
                let size = compressor.size(&thread, black_box(&cursor));
                compressor.policy().fires(&size)
            }));
        }
        let summed = time(|| {
            let tokens: u64 = black_box(&history)
                .iter()
                .map(|m| u64::from(m.tokens))
                .sum();
            tokens > 170_000
        });
        println!("| {n} | {:.1} | {:.1} | {summed:.1} |", row[0], row[1]);
    }
}
