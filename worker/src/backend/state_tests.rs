use std::collections::BTreeMap;

use chrono::{TimeDelta, TimeZone, Utc};
use deepfleet_proto::FileData;
use pretty_assertions::assert_eq;

use super::StateBackend;
use crate::backend::{Backend, BackendError, GrepMatch};

/// A backend whose files were modified one second apart, in list order.
fn backend(paths: &[(&str, &str)]) -> StateBackend {
    let start = Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0).single();
    let Some(start) = start else {
        panic!("bad test timestamp");
    };
    let files: BTreeMap<String, FileData> = paths
        .iter()
        .enumerate()
        .map(|(i, (path, content))| {
            let at = start + TimeDelta::seconds(i as i64);
            ((*path).to_owned(), FileData::text(*content, at))
        })
        .collect();
    StateBackend::new(files)
}

fn paths(infos: &[crate::backend::FileInfo]) -> Vec<&str> {
    infos.iter().map(|info| info.path.as_str()).collect()
}

#[tokio::test]
async fn ls_lists_files_and_implied_directories() {
    let b = backend(&[
        ("/notes.md", "n"),
        ("/memory/AGENTS.md", "m"),
        ("/memory/deep/x.md", "x"),
        ("/src/lib.rs", "l"),
    ]);
    let root = b.ls("/").await.unwrap();
    assert_eq!(paths(&root), ["/memory/", "/notes.md", "/src/"]);
    assert!(root[0].is_dir && !root[1].is_dir);
    assert_eq!(root[1].size, 1);
    assert_eq!(
        paths(&b.ls("/memory").await.unwrap()),
        ["/memory/AGENTS.md", "/memory/deep/"]
    );
    assert_eq!(
        paths(&b.ls("/memory/").await.unwrap()),
        ["/memory/AGENTS.md", "/memory/deep/"]
    );
    assert!(b.ls("/missing").await.unwrap().is_empty());
}

#[tokio::test]
async fn write_keeps_created_at_and_restamps_modified_at() {
    let b = backend(&[("/a.txt", "old")]);
    let before = b.read("/a.txt").await.unwrap();
    b.write("/a.txt", "new").await.unwrap();
    let after = b.read("/a.txt").await.unwrap();
    assert_eq!(after.content, "new");
    assert_eq!(after.created_at, before.created_at);
    assert!(after.modified_at > before.modified_at);
    b.write("/b.txt", "fresh").await.unwrap();
    let fresh = b.read("/b.txt").await.unwrap();
    assert_eq!(fresh.created_at, fresh.modified_at);
}

#[tokio::test]
async fn clones_share_files_and_changes_record_the_delta() {
    let b = backend(&[
        ("/keep.txt", "k"),
        ("/dir/a.txt", "a"),
        ("/dir/sub/b.txt", "b"),
        ("/dirx.txt", "x"),
    ]);
    let other = b.clone();
    other.write("/new.txt", "n").await.unwrap();
    assert_eq!(b.read("/new.txt").await.unwrap().content, "n");
    b.delete("/dir").await.unwrap();
    let changes = other.changes();
    assert_eq!(
        changes.keys().collect::<Vec<_>>(),
        ["/dir/a.txt", "/dir/sub/b.txt", "/new.txt"]
    );
    assert!(changes["/dir/a.txt"].is_none() && changes["/dir/sub/b.txt"].is_none());
    assert_eq!(
        changes["/new.txt"].as_ref().map(|f| f.content.as_str()),
        Some("n")
    );
    assert_eq!(
        b.snapshot().keys().collect::<Vec<_>>(),
        ["/dirx.txt", "/keep.txt", "/new.txt"]
    );
}

#[tokio::test]
async fn read_and_delete_of_missing_paths_fail() {
    let b = backend(&[("/dir/a.txt", "a")]);
    assert_eq!(b.read("/nope").await, Err(BackendError::NotFound));
    assert_eq!(b.read("/dir").await, Err(BackendError::NotFound));
    assert_eq!(b.delete("/nope").await, Err(BackendError::NotFound));
    b.delete("/dir/a.txt").await.unwrap();
    assert!(b.snapshot().is_empty());
}

#[tokio::test]
async fn glob_orders_newest_first_and_follows_pattern_rules() {
    let b = backend(&[
        ("/a.py", ""),
        ("/src/b.py", ""),
        ("/src/deep/c.py", ""),
        ("/.hidden/d.py", ""),
        ("/src/readme.md", ""),
    ]);
    assert_eq!(
        paths(&b.glob("*.py", None).await.unwrap()),
        ["/src/deep/c.py", "/src/b.py", "/a.py"]
    );
    assert_eq!(
        paths(&b.glob("/src/*.py", None).await.unwrap()),
        ["/src/b.py"]
    );
    assert_eq!(
        paths(&b.glob("*.py", Some("/src")).await.unwrap()),
        ["/src/deep/c.py", "/src/b.py"]
    );
    assert_eq!(
        paths(&b.glob("deep/*.py", Some("/src/")).await.unwrap()),
        ["/src/deep/c.py"]
    );
    assert_eq!(
        paths(&b.glob(".hidden/*", None).await.unwrap()),
        ["/.hidden/d.py"]
    );
    assert!(b.glob("*.rs", None).await.unwrap().is_empty());
    assert!(matches!(
        b.glob("../*", None).await,
        Err(BackendError::InvalidPath(_))
    ));
}

#[tokio::test]
async fn grep_is_literal_filters_and_caps() {
    let b = backend(&[
        ("/a.txt", "foo\nbar foo\nbaz"),
        ("/src/b.py", "foo|bar\r\nfoo"),
        ("/src/c.md", "nothing"),
    ]);
    let all = b.grep("foo", None, None, 1000).await.unwrap();
    assert!(!all.truncated);
    assert_eq!(
        all.matches
            .iter()
            .map(|m| (m.path.as_str(), m.line))
            .collect::<Vec<_>>(),
        [
            ("/a.txt", 1),
            ("/a.txt", 2),
            ("/src/b.py", 1),
            ("/src/b.py", 2)
        ]
    );
    let literal = b.grep("foo|bar", None, None, 1000).await.unwrap();
    assert_eq!(
        literal.matches,
        [GrepMatch {
            path: "/src/b.py".into(),
            line: 1,
            text: "foo|bar".into()
        }]
    );
    let filtered = b.grep("foo", None, Some("*.py"), 1000).await.unwrap();
    assert_eq!(filtered.matches.len(), 2);
    let under = b.grep("foo", Some("/src"), None, 1000).await.unwrap();
    assert_eq!(under.matches.len(), 2);
    let single = b
        .grep("foo", Some("/a.txt"), Some("*.txt"), 1000)
        .await
        .unwrap();
    assert_eq!(single.matches.len(), 2);
    let capped = b.grep("foo", None, None, 3).await.unwrap();
    assert!(capped.truncated);
    assert_eq!(capped.matches.len(), 3);
    let exact = b.grep("foo", None, None, 4).await.unwrap();
    assert!(!exact.truncated);
}

#[tokio::test]
async fn writes_past_the_limits_are_refused_naming_them() {
    let limits = deepfleet_proto::InputLimits {
        max_message_bytes: 100,
        max_file_bytes: 4,
        max_files_per_thread: 2,
    };
    let files: BTreeMap<String, FileData> = [("/a.txt", "old-and-long")]
        .into_iter()
        .map(|(p, c)| (p.to_owned(), FileData::text(c, Utc::now())))
        .collect();
    let b = StateBackend::with_limits(files, limits);
    let refusal = |r: Result<(), BackendError>| match r {
        Err(BackendError::Other(text)) => text,
        other => panic!("not refused: {other:?}"),
    };
    assert_eq!(
        refusal(b.write("/b.txt", "12345").await),
        "file /b.txt is 5 bytes, over the limit of 4 (limits.max_file_bytes)"
    );
    b.write("/b.txt", "1234").await.unwrap();
    assert_eq!(
        refusal(b.write("/c.txt", "x").await),
        "the thread's file count is 3, over the limit of 2 (limits.max_files_per_thread)"
    );
    // Rewriting a file that is there adds none; an oversized old one
    // stays readable.
    b.write("/a.txt", "new").await.unwrap();
    assert_eq!(b.changes().len(), 2);
}
