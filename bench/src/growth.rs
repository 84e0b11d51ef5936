//! Item 5: bytes written to Redis per step as a conversation grows.
//!
//! One run loops on `read_file` for hundreds of steps; the bench drives
//! its steps one at a time off an in-memory queue (so only the store is
//! remote) and reads [`RedisStore::bytes_written`] around each.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use deepfleet_model::Providers;
use deepfleet_proto::{AgentSpec, TaskLine};
use deepfleet_queue::Queue;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_scheduler::Intake;
use deepfleet_store::redis::RedisStore;
use deepfleet_worker::{RetryConfig, StepRunner};

use crate::fleet::REDIS_URL;

/// Reads one file per step until turn `LAST`, then answers.
const LOOP: &str = "rules:\n  - when: {turn: 600}\n    reply: {text: done}\n  - when: {}\n    reply:\n      tool_calls:\n        - {name: read_file, args: {file_path: /notes.md}}\n";

/// Bytes the commit of each step wrote, steps `0..=last`.
pub async fn bytes_per_step(work_dir: &Path, last: usize) -> anyhow::Result<Vec<u64>> {
    let script = work_dir.join("growth-script.yaml");
    std::fs::write(&script, LOOP).with_context(|| format!("writing {}", script.display()))?;
    let prefix = format!("dfbench:{}", uuid::Uuid::new_v4().simple());
    let store = Arc::new(
        RedisStore::connect(REDIS_URL, &prefix)
            .await
            .context("connecting to Redis (run `scripts/services.sh`)")?,
    );
    let measured = drive(&store, &script, last).await;
    let _ = store.delete_prefix().await;
    measured
}

async fn drive(store: &Arc<RedisStore>, script: &Path, last: usize) -> anyhow::Result<Vec<u64>> {
    let queue = Arc::new(MemoryQueue::new());
    let spec = AgentSpec::from_yaml(&format!(
        "name: bench-growth\nmodel: 'replay:{}'\nlimits: {{max_steps: 1000}}\n",
        script.display()
    ))?;
    let intake = Intake::new(store.clone(), queue.clone());
    intake.register(&spec).await?;
    let task = TaskLine {
        id: "long".into(),
        input: "read the notes, again and again".into(),
        context: None,
        files: Some([("/notes.md".to_owned(), "a short note\n".to_owned())].into()),
        state: None,
    };
    intake
        .submit(
            &spec.name,
            &task,
            None,
            deepfleet_worker::tokens::count_message,
        )
        .await?;
    let providers = Arc::new(deepfleet_replay::register(Providers::with_env(
        Default::default(),
        |_| None,
    )));
    let runner = StepRunner::new(
        queue.clone(),
        store.clone(),
        providers,
        RetryConfig::default(),
    );
    let mut consumer = queue.consume(1).await?;
    let mut per_step = Vec::with_capacity(last + 1);
    for step in 0..=last {
        let delivery = consumer
            .next()
            .await
            .with_context(|| format!("no message for step {step}"))??;
        let before = store.bytes_written();
        runner.handle(delivery).await;
        per_step.push(store.bytes_written() - before);
    }
    Ok(per_step)
}
