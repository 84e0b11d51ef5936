//! The file tools with arguments as a model could send them, run against
//! the three kinds of backend a step can route to.
//!
//! Each input is a script of tool calls, one per line: the tool's name, a
//! space, then the raw argument text (JSON or not, as a model produced
//! it). The calls run in order through the type-erased path the step
//! uses, on one step's backend: the thread's state backend, with
//! `/memories/` routed to an embedded long-term store and `/disk/` to a
//! local directory. Checked: no call panics; every call returns a result
//! or an error the model reads, never a step failure (nothing here can be
//! unavailable); a file written is read back as written; every file any
//! backend holds has a normalised path; and nothing on disk outside the
//! local root is created or changed.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use crate::runtime::block_on;
use chrono::Utc;
use deepfleet_proto::path::validate;
use deepfleet_proto::{AgentSpec, ItemSearch, RunRecord};
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_worker::StepContext;
use deepfleet_worker::backend::{
    Backend, CompositeBackend, LocalBackend, StateBackend, StoreBackend,
};
use deepfleet_worker::events::NoopSink;
use deepfleet_worker::tools::{
    DynTool, ToolError, delete::Delete, edit_file::EditFile, glob::Glob, grep::Grep, ls::Ls,
    read_file::ReadFile, task::Task, write_file::WriteFile, write_todos::WriteTodos,
};

/// Calls run per input at most, so one input stays fast.
const MAX_CALLS: usize = 16;

/// What the sentinel outside the local root holds; it must never change.
const SENTINEL: &str = "outside the root";

/// A scratch directory of this process: `root/` is the local route,
/// `outside.txt` beside it the sentinel.
static SCRATCH: LazyLock<PathBuf> = LazyLock::new(|| {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("deepfleet-fuzz-tools-{}", std::process::id()));
    fs::create_dir_all(dir.join("root")).expect("scratch directory");
    fs::write(dir.join("outside.txt"), SENTINEL).expect("sentinel");
    dir
});

/// Checks one input; a failure panics, as libFuzzer expects.
pub fn check(data: &[u8]) {
    let Ok(script) = std::str::from_utf8(data) else {
        return;
    };
    let calls: Vec<(&str, &str)> = script
        .lines()
        .filter_map(|line| line.split_once(' ').or(Some((line, ""))))
        .take(MAX_CALLS)
        .collect();
    block_on(run(&calls));
}

async fn run(calls: &[(&str, &str)]) {
    let root = SCRATCH.join("root");
    if root.exists() {
        fs::remove_dir_all(&root).expect("clears the local root");
    }
    fs::create_dir(&root).expect("local root");
    let state = StateBackend::default();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
    let memories = StoreBackend::new(Arc::clone(&store), vec!["fuzz".into()]);
    let backend = CompositeBackend::new(
        Arc::new(state.clone()),
        [
            (
                "/memories/".to_owned(),
                Arc::new(memories) as Arc<dyn Backend>,
            ),
            (
                "/disk/".to_owned(),
                Arc::new(LocalBackend::new(&root).expect("local backend")) as Arc<dyn Backend>,
            ),
        ],
    );
    let spec = AgentSpec::from_yaml("name: agent\nmodel: replay:x\n").expect("spec");
    let run = RunRecord::new("run-1", "thread-1", "agent", Utc::now());
    let ctx = StepContext::new(
        run,
        Arc::new(spec.clone()),
        Arc::new(backend),
        Arc::new(NoopSink),
    );
    let task = Task::new(&spec.all_subagents());
    let tools: [&dyn DynTool; 9] = [
        &Ls,
        &ReadFile,
        &WriteFile,
        &EditFile,
        &Glob,
        &Grep,
        &Delete,
        &WriteTodos,
        &task,
    ];
    for (i, (name, args)) in calls.iter().enumerate() {
        let Some(tool) = tools.iter().find(|t| t.name() == *name) else {
            continue;
        };
        let id = format!("call_{i}");
        let result = tool.call_json(&ctx.tool(&id), args).await;
        if let Err(ToolError::Fatal(reason)) = &result {
            panic!("{name} {args} failed the step: {reason}");
        }
        if *name == "write_file" && result.is_ok() {
            assert_written(ctx.backend.as_ref(), args).await;
        }
    }
    for path in state.snapshot().keys() {
        assert_eq!(validate(path).as_ref(), Ok(path), "state holds {path:?}");
    }
    let search = ItemSearch {
        namespace_prefix: vec!["fuzz".into()],
        limit: usize::MAX,
        ..ItemSearch::default()
    };
    for item in store.search_items(&search).await.expect("lists memories") {
        assert_eq!(
            validate(&item.key).as_ref(),
            Ok(&item.key),
            "the store holds {:?}",
            item.key
        );
    }
    assert_outside_untouched();
}

/// A successful `write_file` left exactly its content at its path.
async fn assert_written(backend: &dyn Backend, args: &str) {
    let args: serde_json::Value = serde_json::from_str(args).expect("accepted arguments");
    let (Some(path), Some(content)) = (args["file_path"].as_str(), args["content"].as_str()) else {
        panic!("write_file accepted {args}");
    };
    let path = validate(path).expect("an accepted path");
    match backend.read(&path).await {
        Ok(file) => assert_eq!(file.content, content, "{path} reads back otherwise"),
        Err(e) => panic!("{path} was written but reads as {e}"),
    }
}

/// Only `root/` and the unchanged sentinel are in the scratch directory.
fn assert_outside_untouched() {
    let mut names: Vec<String> = fs::read_dir(&*SCRATCH)
        .expect("scratch directory")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["outside.txt", "root"],
        "something was made outside the root"
    );
    assert_eq!(
        fs::read_to_string(SCRATCH.join("outside.txt")).expect("sentinel"),
        SENTINEL,
        "the sentinel outside the root changed"
    );
}
