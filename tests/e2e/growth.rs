//! Checkpoint growth: the bytes a step writes to Redis do not depend on
//! how long the conversation already is (the log is append-only), nor do
//! the bytes it reads (the store holds what it read of the thread and
//! reads what changed since).

use deepfleet_proto::TaskLine;
use deepfleet_testkit::fleet::Service;
use deepfleet_testkit::growth::bytes_per_step;
use deepfleet_testkit::script::ScriptBuilder;

use crate::support::{replay_model, require, spec, task};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_per_step_do_not_grow_with_the_conversation() {
    if !require(&[Service::Redis]).await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = ScriptBuilder::new().reading_until(520, "/notes.md").build();
    let spec = spec(
        "growth",
        &replay_model(dir.path(), &script),
        "limits: {max_steps: 1000}\n",
    );
    let task = TaskLine {
        id: "long".into(),
        files: Some([("/notes.md".to_owned(), "a note\n".to_owned())].into()),
        ..task("long", "read forever")
    };
    // Drive the steps one at a time and measure each one's traffic.
    let per_step = bytes_per_step(&spec, &task, 520).await.unwrap();

    let written = |n: usize| per_step[n].written as f64;
    let read = |n: usize| per_step[n].read as f64;
    for (early, late) in [(50, 500), (10, 510)] {
        let ratio = written(late) / written(early);
        assert!(
            (0.97..=1.03).contains(&ratio),
            "step {late} wrote {} bytes, step {early} wrote {} (ratio {ratio:.3})",
            written(late),
            written(early)
        );
        let ratio = read(late) / read(early);
        assert!(
            (0.9..=1.1).contains(&ratio),
            "step {late} read {} bytes, step {early} read {} (ratio {ratio:.3})",
            read(late),
            read(early)
        );
    }
}
