//! The mark that a results file belongs to a batch that has not ended:
//! `RESULTS.unfinished` beside it, holding the batch's id and a
//! fingerprint of its tasks.
//!
//! It is written before the batch's first run is submitted and removed
//! once every task has its result line. Running the same command again
//! while it is there continues that batch under the same id, so the runs
//! it submitted (named by batch and task) are found again instead of
//! started twice.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use deepfleet_proto::{ResultLine, TaskLine};
use serde::{Deserialize, Serialize};

use crate::results_file::ResultsFile;

/// What the mark holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Mark {
    /// The batch the results file belongs to.
    batch_id: String,
    /// [`fingerprint`] of its tasks.
    tasks: String,
}

/// A batch being written to a results file.
pub struct UnfinishedBatch {
    mark_path: PathBuf,
    mark: Mark,
    /// Whether this continues a batch an earlier process left.
    continued: bool,
}

impl UnfinishedBatch {
    /// The batch of `tasks` writing to `results`, with the file open: the
    /// unfinished batch recorded there, continued, with the lines it has;
    /// or, without one (or with `fresh`), a new batch (`new_id`, or a
    /// fresh id) and an empty file. An unfinished batch of other tasks is
    /// refused unless `fresh`.
    pub fn open(
        results: &Path,
        tasks: &[TaskLine],
        fresh: bool,
        new_id: Option<&str>,
    ) -> anyhow::Result<(Self, ResultsFile, Vec<ResultLine>)> {
        let mark_path = mark_path(results);
        let tasks_fingerprint = fingerprint(tasks)?;
        if !fresh && let Some(mark) = read_mark(&mark_path)? {
            if mark.tasks != tasks_fingerprint {
                bail!(
                    "{} holds an unfinished batch of other tasks (see {}): run the same tasks \
                     again to finish it, or pass --fresh to start over (its results are replaced)",
                    results.display(),
                    mark_path.display()
                );
            }
            let (file, lines) = ResultsFile::reopen(results)?;
            let batch = UnfinishedBatch {
                mark_path,
                mark,
                continued: true,
            };
            return Ok((batch, file, lines));
        }
        // In this order, a process that dies in between leaves either the
        // old mark with the old results, or no mark.
        remove_mark(&mark_path)?;
        let file = ResultsFile::create(results)?;
        let mark = Mark {
            batch_id: new_id.map_or_else(|| uuid::Uuid::now_v7().to_string(), str::to_owned),
            tasks: tasks_fingerprint,
        };
        write_mark(&mark_path, &mark)?;
        let batch = UnfinishedBatch {
            mark_path,
            mark,
            continued: false,
        };
        Ok((batch, file, Vec::new()))
    }

    /// Batch `batch_id` re-attached to write into `results`: the file
    /// reopened with the lines it has (created when missing), which no
    /// task gets a second of, and the unfinished batch recorded there, if
    /// any. An unfinished batch of another id is refused.
    pub fn attach(
        results: &Path,
        batch_id: &str,
    ) -> anyhow::Result<(Option<Self>, ResultsFile, Vec<ResultLine>)> {
        let mark_path = mark_path(results);
        let mark = read_mark(&mark_path)?;
        if let Some(mark) = &mark
            && mark.batch_id != batch_id
        {
            bail!(
                "{} holds the unfinished batch {} (see {}), not {batch_id}: write to another file",
                results.display(),
                mark.batch_id,
                mark_path.display()
            );
        }
        let (file, lines) = ResultsFile::reopen(results)?;
        let batch = mark.map(|mark| UnfinishedBatch {
            mark_path,
            mark,
            continued: true,
        });
        Ok((batch, file, lines))
    }

    /// The batch's id.
    pub fn batch_id(&self) -> &str {
        &self.mark.batch_id
    }

    /// Whether this continues a batch an earlier process left.
    pub fn continued(&self) -> bool {
        self.continued
    }

    /// Marks the batch ended: every task has its line.
    pub fn finish(self) -> anyhow::Result<()> {
        remove_mark(&self.mark_path)
    }
}

/// `RESULTS.unfinished`.
fn mark_path(results: &Path) -> PathBuf {
    let mut name = results.as_os_str().to_owned();
    name.push(".unfinished");
    PathBuf::from(name)
}

/// Identifies a list of tasks: a name-based UUID of their JSON.
pub fn fingerprint(tasks: &[TaskLine]) -> anyhow::Result<String> {
    let bytes = serde_json::to_vec(tasks).context("encoding the tasks")?;
    Ok(uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, &bytes).to_string())
}

fn read_mark(path: &Path) -> anyhow::Result<Option<Mark>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    serde_json::from_str(&text).map(Some).with_context(|| {
        format!(
            "{} is not the mark of an unfinished batch; remove it, or pass --fresh",
            path.display()
        )
    })
}

/// Writes the mark durably before the first run is submitted.
fn write_mark(path: &Path, mark: &Mark) -> anyhow::Result<()> {
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(path)?;
        file.write_all(&serde_json::to_vec(mark)?)?;
        file.sync_all()
    };
    write().with_context(|| format!("recording the unfinished batch in {}", path.display()))
}

fn remove_mark(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(inputs: &[&str]) -> Vec<TaskLine> {
        inputs
            .iter()
            .enumerate()
            .map(|(i, input)| TaskLine {
                id: format!("t{i}"),
                input: (*input).to_owned(),
                context: None,
                files: None,
                state: None,
                timeout_secs: None,
            })
            .collect()
    }

    #[test]
    fn an_unfinished_batch_is_continued_until_it_finishes() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results.jsonl");
        let batch = tasks(&["a", "b"]);
        let (first, _, lines) = UnfinishedBatch::open(&results, &batch, false, None).unwrap();
        assert!(!first.continued() && lines.is_empty());
        assert!(dir.path().join("results.jsonl.unfinished").exists());
        let (again, _, _) = UnfinishedBatch::open(&results, &batch, false, None).unwrap();
        assert!(again.continued());
        assert_eq!(again.batch_id(), first.batch_id());
        again.finish().unwrap();
        assert!(!dir.path().join("results.jsonl.unfinished").exists());
        let (next, _, _) = UnfinishedBatch::open(&results, &batch, false, None).unwrap();
        assert!(!next.continued());
        assert_ne!(next.batch_id(), first.batch_id());
    }

    #[test]
    fn other_tasks_are_refused_unless_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results.jsonl");
        let (first, _, _) = UnfinishedBatch::open(&results, &tasks(&["a"]), false, None).unwrap();
        let other = tasks(&["a changed"]);
        let err = UnfinishedBatch::open(&results, &other, false, None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("unfinished batch of other tasks"), "{err}");
        assert!(err.contains("--fresh"), "{err}");
        let (fresh, _, _) = UnfinishedBatch::open(&results, &other, true, None).unwrap();
        assert!(!fresh.continued());
        assert_ne!(fresh.batch_id(), first.batch_id());
    }

    #[test]
    fn a_new_batch_takes_the_id_it_is_given_and_attaching_checks_it() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results.jsonl");
        let (batch, file, _) =
            UnfinishedBatch::open(&results, &tasks(&["a"]), false, Some("b-1")).unwrap();
        assert_eq!(batch.batch_id(), "b-1");
        drop(file);
        let err = UnfinishedBatch::attach(&results, "b-2")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("unfinished batch b-1"), "{err}");
        let (mark, _, lines) = UnfinishedBatch::attach(&results, "b-1").unwrap();
        assert!(mark.is_some() && lines.is_empty());
        let elsewhere = dir.path().join("other.jsonl");
        let (mark, _, _) = UnfinishedBatch::attach(&elsewhere, "b-2").unwrap();
        assert!(mark.is_none() && elsewhere.exists());
    }

    #[test]
    fn the_mark_sits_beside_the_results() {
        assert_eq!(
            mark_path(Path::new("out/r.jsonl")),
            PathBuf::from("out/r.jsonl.unfinished")
        );
    }
}
