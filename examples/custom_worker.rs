//! A team's own worker binary: the stock harness plus one middleware of
//! its own, which adds a `word_count` tool to every agent and tracks
//! usage, counting each thread's model calls and tokens in the thread's
//! custom state (checkpointed with the thread, so it survives worker
//! crashes and shows in the thread's state).
//!
//! It reads the same configuration as `deepfleet worker`, through the
//! same crate (`deepfleet-settings`): the file `DEEPFLEET_CONFIG` names,
//! then `DEEPFLEET__...` variables, with the same defaults (`queue_name`,
//! `key_prefix`, connect timeout, context key or key file, providers,
//! profiles, worker retries, time limits, concurrency and grace).
//! Run it beside (or instead of) `deepfleet worker`:
//!
//! ```sh
//! DEEPFLEET__QUEUE=amqp://guest:guest@127.0.0.1:5672/%2f \
//! DEEPFLEET__STORE=redis://127.0.0.1:6379 \
//! DEEPFLEET__CONTEXT_KEY="$FLEET_KEY" \
//!   cargo run --example custom_worker
//! ```
//!
//! where `FLEET_KEY` is the fleet's context key (`deepfleet keygen` makes
//! one), or with the same settings in a file: `DEEPFLEET_CONFIG=fleet.toml
//! cargo run --example custom_worker`. Every worker of a fleet should run
//! the same stack: any of them may take any step of a run.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;
use deepfleet_model::{ModelRequest, ModelResponse};
use deepfleet_settings::{CONFIG_VARIABLE, Loaded, Settings, fleet};
use deepfleet_worker::StepContext;
use deepfleet_worker::context::ToolView;
use deepfleet_worker::middleware::{Middleware, ModelNext};
use deepfleet_worker::tools::{DynTool, Tool, ToolError, ToolOutput, ToolResult};
use deepfleet_worker::{StepError, Worker};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The custom-state field the tracker writes.
const FIELD: &str = "usage_tracking";

/// The team's additions to every agent: the `word_count` tool, and usage
/// tracking around each model call.
struct TeamExtras;

#[async_trait]
impl Middleware for TeamExtras {
    fn name(&self) -> &'static str {
        "team_extras"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        vec![Arc::new(WordCount)]
    }

    async fn wrap_model(
        &self,
        request: ModelRequest,
        cx: &StepContext,
        next: ModelNext<'_>,
    ) -> Result<ModelResponse, StepError> {
        let response = next.run(request, cx).await?;
        let mut state = cx.state.lock().unwrap_or_else(|e| e.into_inner());
        let entry = state
            .entry(FIELD)
            .or_insert_with(|| json!({"model_calls": 0, "input_tokens": 0, "output_tokens": 0}));
        bump(entry, "model_calls", 1);
        bump(entry, "input_tokens", response.usage.input_tokens);
        bump(entry, "output_tokens", response.usage.output_tokens);
        Ok(response)
    }
}

fn bump(entry: &mut Value, counter: &str, by: u64) {
    let now = entry.get(counter).and_then(Value::as_u64).unwrap_or(0);
    entry[counter] = json!(now + by);
}

/// Counts the lines, words and characters of a file of the thread, so an
/// agent held to a length checks its draft without reading it back.
struct WordCount;

/// The arguments of `word_count`.
#[derive(Deserialize, JsonSchema)]
struct WordCountArgs {
    /// Absolute path of the file to count, e.g. `/draft.md`.
    file_path: String,
}

#[async_trait]
impl Tool for WordCount {
    const NAME: &'static str = "word_count";
    type Args = WordCountArgs;

    fn description(&self) -> String {
        "Count the lines, words and characters of a file.".to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: WordCountArgs) -> ToolResult {
        // A missing file is the model's to fix, not a failed step.
        let file = ctx
            .backend()
            .read(&args.file_path)
            .await
            .map_err(|e| ToolError::Model(format!("Error: {}: {e}", args.file_path)))?;
        let text = &file.content;
        Ok(ToolOutput::Text(format!(
            "{}: {} lines, {} words, {} characters",
            args.file_path,
            text.lines().count(),
            text.split_whitespace().count(),
            text.chars().count()
        )))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // TLS to providers and brokers uses ring, as in the binary.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt().init();
    let file = std::env::var_os(CONFIG_VARIABLE).map(PathBuf::from);
    let Loaded { settings, unknown } = Settings::load(file.as_deref())?;
    for variable in &unknown {
        tracing::warn!(variable = %variable.name, "{variable}");
    }
    let key = settings.fleet_context_key()?;
    let (queue, store) = fleet::connect_fleet(None, None, &settings).await?;
    let runner = fleet::step_runner_builder(Arc::clone(&queue), store, &settings, key, None, None)
        .middleware(Arc::new(TeamExtras))
        .build();
    let worker = Worker::new(
        queue,
        Arc::new(runner),
        settings.worker.concurrency,
        settings.worker.grace(),
    );
    tokio::task::spawn_blocking(deepfleet_fleet::tokens::warm)
        .await
        .context("loading the tokenizer")?;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    worker.run(shutdown).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{AgentSpec, RunRecord};
    use deepfleet_worker::backend::{Backend, StateBackend};

    #[test]
    fn counters_add_up() {
        let mut entry = json!({});
        bump(&mut entry, "model_calls", 1);
        bump(&mut entry, "model_calls", 1);
        bump(&mut entry, "input_tokens", 40);
        assert_eq!(entry, json!({"model_calls": 2, "input_tokens": 40}));
    }

    /// The middleware offers `word_count`, which counts a thread's file
    /// and answers the model when there is none.
    #[tokio::test]
    async fn every_agent_gets_a_word_count_that_counts_a_file() {
        let tools = TeamExtras.tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["word_count"]);
        let spec = tools[0].spec();
        assert_eq!(spec.parameters["required"], json!(["file_path"]));

        let files = StateBackend::default();
        files
            .write("/draft.md", "Two words.\nAnd three more.\n")
            .await
            .unwrap();
        let cx = StepContext::new(
            RunRecord::new("r", "t", "a", chrono::Utc::now()),
            Arc::new(AgentSpec::from_yaml("name: a\nmodel: replay:x\n").unwrap()),
            Arc::new(files),
            Arc::new(deepfleet_worker::events::NoopSink),
        );
        let counted = tools[0]
            .call_json(&cx.tool("c1"), r#"{"file_path": "/draft.md"}"#)
            .await;
        assert_eq!(
            counted,
            Ok(ToolOutput::Text(
                "/draft.md: 2 lines, 5 words, 27 characters".into()
            ))
        );
        let missing = tools[0]
            .call_json(&cx.tool("c2"), r#"{"file_path": "/none.md"}"#)
            .await;
        assert!(
            matches!(&missing, Err(ToolError::Model(m)) if m.starts_with("Error: /none.md")),
            "{missing:?}"
        );
    }

    /// The worker `main` builds, run in process on a replay model: the
    /// agent calls `word_count` on a file of its task and answers with
    /// the count, and the tracker counted both model calls.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_calls_the_tool_through_the_workers_stack() {
        use deepfleet_proto::TaskLine;
        use deepfleet_queue::memory::MemoryQueue;
        use deepfleet_store::embedded::EmbeddedStore;
        use deepfleet_store::prelude::*;
        use deepfleet_store::sealed::ContextKey;
        use deepfleet_testkit::script::{Call, ScriptBuilder, When};

        let dir = tempfile::tempdir().unwrap();
        let script = ScriptBuilder::new()
            .calls_then_answer(
                When::input("^Count (?P<path>\\S+)$"),
                [Call::new("word_count", json!({"file_path": "{{path}}"}))],
                "{{last_tool}}",
            )
            .build();
        let script_path = dir.path().join("script.yaml");
        std::fs::write(&script_path, script).unwrap();
        let spec = AgentSpec::from_yaml(&format!(
            "name: counter\nmodel: 'replay:{}'\n",
            script_path.display()
        ))
        .unwrap();
        let queue = Arc::new(MemoryQueue::new());
        let store = Arc::new(EmbeddedStore::new());
        let intake = deepfleet_scheduler::Intake::new(store.clone(), queue.clone());
        intake.register(&spec).await.unwrap();
        let task = TaskLine {
            id: "t1".into(),
            input: "Count /draft.md".into(),
            context: None,
            files: Some([("/draft.md".into(), "Two words.\nAnd three more.\n".into())].into()),
            state: None,
            timeout_secs: None,
        };
        let run = deepfleet_scheduler::submit_task(&intake, &spec.name, &task, None)
            .await
            .unwrap();

        let settings = Settings::default();
        let runner = fleet::step_runner_builder(
            queue.clone(),
            store.clone(),
            &settings,
            ContextKey::generate(),
            None,
            None,
        )
        .middleware(Arc::new(TeamExtras))
        .build();
        let worker = Worker::new(queue, Arc::new(runner), 4, settings.worker.grace());
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let working = tokio::spawn(async move { worker.run(stop).await });
        let ended = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            loop {
                let record = store.get_run(&run.thread_id, &run.run_id).await.unwrap();
                if let Some(record) = record.filter(|r| r.status.is_terminal()) {
                    return record;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the run ended");
        shutdown.cancel();
        working.await.unwrap().unwrap();

        assert_eq!(
            ended.output.as_deref(),
            Some("/draft.md: 2 lines, 5 words, 27 characters"),
            "{:?}",
            ended.error
        );
        let thread = store.load_thread(&run.thread_id).await.unwrap();
        assert_eq!(thread.state[FIELD]["model_calls"], 2);
    }
}
