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
