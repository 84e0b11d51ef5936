//! File tools inside real runs: write, edit, ls, read, and the guard
//! against two mutations of one path in a turn.

use crate::support::{replay_model, scenario, spec, task};

const SCRIPT: &str = r##"
rules:
  - when: {turn: 0}
    reply:
      tool_calls:
        - {name: write_file, args: {file_path: /notes.md, content: "# Notes\nalpha\nbeta\ngamma\n"}}
  - when: {turn: 1}
    reply:
      tool_calls:
        - {name: edit_file, args: {file_path: /notes.md, old_string: beta, new_string: "beta (edited)"}}
        - {name: ls, args: {path: /}}
  - when: {turn: 2, last_tool: "notes"}
    reply:
      tool_calls:
        - {name: read_file, args: {file_path: /notes.md}}
  - when: {turn: 3}
    reply: {text: "{{last_tool}}"}
"##;

scenario!(write_edit_ls_read, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("files", &replay_model(dir.path(), SCRIPT), "");
    let results = fleet.run(&spec, &[task("t1", "take notes")]).await;
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

const SAME_PATH: &str = r##"
rules:
  - when: {turn: 0}
    reply:
      tool_calls:
        - {name: write_file, args: {file_path: /same.txt, content: first}}
        - {name: write_file, args: {file_path: /other.txt, content: other}}
        - {name: write_file, args: {file_path: ./same.txt, content: second}}
  - when: {turn: 1}
    reply: {text: "{{last_tool}}"}
"##;

// deepagents conformance §13.2 item 8.
scenario!(parallel_mutations_of_one_path, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("same-path", &replay_model(dir.path(), SAME_PATH), "");
    let results = fleet.run(&spec, &[task("t1", "write twice")]).await;
    let r = &results[0];
    assert_eq!(
        r.output,
        "Error: parallel file mutations to the same path are not allowed."
    );
    assert_eq!(r.files.get("/same.txt").map(String::as_str), Some("first"));
    assert_eq!(r.files.get("/other.txt").map(String::as_str), Some("other"));
});

const SEEDED: &str = r##"
rules:
  - when: {turn: 0}
    reply:
      tool_calls:
        - {name: grep, args: {pattern: TODO, output_mode: count}}
  - when: {turn: 1}
    reply: {text: "{{last_tool}}"}
"##;

scenario!(seeded_files_are_visible, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("seeded", &replay_model(dir.path(), SEEDED), "");
    let mut t = task("t1", "count todos");
    t.files = Some(
        [
            ("/a.txt".to_owned(), "TODO one\nTODO two\n".to_owned()),
            ("src/b.txt".to_owned(), "none\n".to_owned()),
        ]
        .into(),
    );
    let results = fleet.run(&spec, &[t]).await;
    assert_eq!(results[0].output, "/a.txt: 2");
    assert!(results[0].files.contains_key("/src/b.txt"));
});
