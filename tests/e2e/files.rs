//! File tools inside real runs: write, edit, ls, read, and the guard
//! against two mutations of one path in a turn.

use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use serde_json::json;

use crate::support::{replay_model, scenario, spec, task};

/// Write, then edit and list, then read back (once the listing shows
/// the file), then answer with what was read.
fn notes() -> String {
    let edit = Call::new(
        "edit_file",
        json!({"file_path": "/notes.md", "old_string": "beta", "new_string": "beta (edited)"}),
    );
    ScriptBuilder::new()
        .call(
            When::at_turn(0),
            [Call::write_file(
                "/notes.md",
                "# Notes\nalpha\nbeta\ngamma\n",
            )],
        )
        .call(When::at_turn(1), [edit, Call::ls("/")])
        .call(
            When::at_turn(2).last_tool("notes"),
            [Call::read_file("/notes.md")],
        )
        .answer(When::at_turn(3), "{{last_tool}}")
        .build()
}

scenario!(write_edit_ls_read, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("files", &replay_model(dir.path(), &notes()), "");
    let results = fleet.run(&spec, &[task("t1", "take notes")]).await.unwrap();
    let r = &results[0];
    assert_eq!(r.error, None);
    assert_eq!(
        r.output,
        "@@ lines 1-4 of 4 @@\n# Notes\nalpha\nbeta (edited)\ngamma"
    );
    assert_eq!(r.steps, 4);
    assert_eq!(
        r.files.get("/notes.md").map(String::as_str),
        Some("# Notes\nalpha\nbeta (edited)\ngamma\n")
    );
});

/// Three writes in one turn, two of them to one path.
fn same_path() -> String {
    let writes = [
        Call::write_file("/same.txt", "first"),
        Call::write_file("/other.txt", "other"),
        Call::write_file("./same.txt", "second"),
    ];
    ScriptBuilder::new()
        .calls_then_answer(When::always(), writes, "{{last_tool}}")
        .build()
}

// deepagents conformance §13.2 item 8.
scenario!(parallel_mutations_of_one_path, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("same-path", &replay_model(dir.path(), &same_path()), "");
    let results = fleet
        .run(&spec, &[task("t1", "write twice")])
        .await
        .unwrap();
    let r = &results[0];
    assert_eq!(
        r.output,
        "Error: parallel file mutations to the same path are not allowed."
    );
    assert_eq!(r.files.get("/same.txt").map(String::as_str), Some("first"));
    assert_eq!(r.files.get("/other.txt").map(String::as_str), Some("other"));
});

/// Counts `TODO`s across the seeded files.
fn seeded() -> String {
    let grep = Call::new("grep", json!({"pattern": "TODO", "output_mode": "count"}));
    ScriptBuilder::new()
        .calls_then_answer(When::always(), [grep], "{{last_tool}}")
        .build()
}

scenario!(seeded_files_are_visible, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("seeded", &replay_model(dir.path(), &seeded()), "");
    let mut t = task("t1", "count todos");
    t.files = Some(
        [
            ("/a.txt".to_owned(), "TODO one\nTODO two\n".to_owned()),
            ("src/b.txt".to_owned(), "none\n".to_owned()),
        ]
        .into(),
    );
    let results = fleet.run(&spec, &[t]).await.unwrap();
    assert_eq!(results[0].output, "/a.txt: 2");
    assert!(results[0].files.contains_key("/src/b.txt"));
});

/// A model writing a file past `limits.max_file_bytes`, then one more
/// than `limits.max_files_per_thread` allows: each write answers the
/// model with the limit, the run goes on, and nothing past a limit is
/// kept.
mod file_limits {
    use deepfleet_proto::{InputLimits, ResultStatus};
    use deepfleet_testkit::fleet::FleetBuilder;

    use crate::support::{Fleet, distributed, fleet, replay_model, spec, task};

    const SCRIPT: &str = r#"
rules:
  - when: {turn: 0}
    reply:
      tool_calls:
        - {name: write_file, args: {file_path: /big.txt, content: "twenty bytes of text"}}
  - when: {turn: 1}
    reply:
      tool_calls:
        - {name: write_file, args: {file_path: /a.txt, content: "a"}}
        - {name: write_file, args: {file_path: /b.txt, content: "b"}}
  - when: {turn: 2}
    reply: {text: "{{last_tool}}"}
"#;

    fn limited() -> FleetBuilder {
        fleet().file_limits(InputLimits {
            max_message_bytes: 1024,
            max_file_bytes: 10,
            max_files_per_thread: 1,
        })
    }

    async fn check(mut fleet: Fleet) {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec("limited", &replay_model(dir.path(), SCRIPT), "");
        let batch = fleet
            .run_batch(&spec, &[task("t1", "Write")])
            .await
            .unwrap();
        let r = &batch.results[0];
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
        assert!(
            r.output.contains(
                "the thread's file count is 2, over the limit of 1 (limits.max_files_per_thread)"
            ),
            "{}",
            r.output
        );
        let kept: Vec<&str> = r.files.keys().map(String::as_str).collect();
        assert_eq!(kept, ["/a.txt"]);
        let thread = fleet
            .store
            .load_thread(&batch.runs[0].thread_id)
            .await
            .unwrap();
        let big = thread.messages.iter().any(|m| {
            m.message
                .text()
                .contains("file /big.txt is 20 bytes, over the limit of 10 (limits.max_file_bytes)")
        });
        assert!(big, "the model never read the file size limit");
        fleet.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn embedded() {
        check(limited().embedded().unwrap()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn distributed_mode() {
        if let Some(fleet) = distributed(limited(), 2).await {
            check(fleet).await;
        }
    }
}
