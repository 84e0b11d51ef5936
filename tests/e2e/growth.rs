//! Checkpoint growth: the bytes a step writes to Redis do not depend on
//! how long the conversation already is (the log is append-only).

use std::sync::Arc;

use deepfleet_model::Providers;
use deepfleet_proto::TaskLine;
use deepfleet_queue::Queue;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_scheduler::Intake;
use deepfleet_store::redis::RedisStore;
use deepfleet_worker::{RetryConfig, StepRunner};

use crate::support::{REDIS_URL, replay_model, require, spec};

const LOOP: &str = r##"
rules:
  - when: {turn: 520}
    reply: {text: "done"}
  - when: {}
    reply:
      tool_calls:
        - {name: read_file, args: {file_path: /notes.md}}
"##;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_per_step_do_not_grow_with_the_conversation() {
    if !require("Redis", "127.0.0.1:6379").await {
        return;
    }
    let prefix = format!("dftest:{}", uuid::Uuid::new_v4().simple());
    let store = Arc::new(RedisStore::connect(REDIS_URL, &prefix).await.unwrap());
    let queue = Arc::new(MemoryQueue::new());
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "growth",
        &replay_model(dir.path(), LOOP),
        "limits: {max_steps: 1000}\n",
    );
    let intake = Intake::new(store.clone(), queue.clone());
    intake.register(&spec).await.unwrap();
    let task = TaskLine {
        id: "long".into(),
        input: "read forever".into(),
        context: None,
        files: Some([("/notes.md".to_owned(), "a note\n".to_owned())].into()),
        state: None,
    };
    intake
        .submit(
            &spec.name,
            &task,
            None,
            deepfleet_worker::tokens::count_message,
        )
        .await
        .unwrap();
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

    // Drive the steps one at a time and measure each one's writes.
    let mut consumer = queue.consume(1).await.unwrap();
    let mut per_step = Vec::new();
    for _ in 0..=520 {
        let delivery = consumer.next().await.unwrap().unwrap();
        let before = store.bytes_written();
        runner.handle(delivery).await;
        per_step.push(store.bytes_written() - before);
    }
    let _ = store.delete_prefix().await;

    let at = |n: usize| per_step[n] as f64;
    for (early, late) in [(50, 500), (10, 510)] {
        let ratio = at(late) / at(early);
        assert!(
            (0.97..=1.03).contains(&ratio),
            "step {late} wrote {} bytes, step {early} wrote {} (ratio {ratio:.3})",
            at(late),
            at(early)
        );
    }
}
