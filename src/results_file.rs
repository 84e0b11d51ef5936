//! A batch's results file: one JSON line per task, each written (and
//! flushed) as its run ends, so a batch that is interrupted keeps every
//! line it had. Reopened to continue that batch, it says which tasks have
//! their line and refuses them a second one. An open results file is
//! locked, so two processes never follow one batch into it (neither
//! would know of the lines the other writes, and a task could get two).

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use deepfleet_proto::ResultLine;

/// An open results file.
pub struct ResultsFile {
    path: PathBuf,
    file: File,
    /// Tasks with a line. `None` appends whatever comes: `deepfleet
    /// resume` adds a task's final line after its `interrupted` one.
    written: Option<HashSet<String>>,
}

impl ResultsFile {
    /// A new, empty results file at `path`, replacing an old one.
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("creating {}", path.display()))?;
        lock(&file, path)?;
        file.set_len(0)
            .with_context(|| format!("emptying {}", path.display()))?;
        Ok(ResultsFile {
            path: path.to_owned(),
            file,
            written: Some(HashSet::new()),
        })
    }

    /// Reopens the results file of an interrupted batch (creating it if it
    /// is gone) and returns it with the lines it holds. A last line cut
    /// short (its process died while writing it) is removed, and its task
    /// counts as without a line; any other line that is not a result line
    /// is an error that names it.
    pub fn reopen(path: &Path) -> anyhow::Result<(Self, Vec<ResultLine>)> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        lock(&file, path)?;
        let (lines, complete) = read_lines(&file, path)?;
        file.set_len(complete)
            .and_then(|()| file.seek(SeekFrom::End(0)).map(drop))
            .with_context(|| format!("removing the cut-off last line of {}", path.display()))?;
        let written = lines.iter().map(|l| l.id.clone()).collect();
        let results = ResultsFile {
            path: path.to_owned(),
            file,
            written: Some(written),
        };
        Ok((results, lines))
    }

    /// Opens `path` (created when missing) to append lines to, a task's
    /// later line superseding its earlier one.
    pub fn append(path: &Path) -> anyhow::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        lock(&file, path)?;
        Ok(ResultsFile {
            path: path.to_owned(),
            file,
            written: None,
        })
    }

    /// Whether task `id` has its line.
    pub fn has(&self, id: &str) -> bool {
        self.written.as_ref().is_some_and(|w| w.contains(id))
    }

    /// Writes `line` in one write and flushes it, unless its task has a
    /// line already; returns whether it was written.
    pub fn write(&mut self, line: &ResultLine) -> anyhow::Result<bool> {
        if self.has(&line.id) {
            return Ok(false);
        }
        let mut bytes = serde_json::to_vec(line)?;
        bytes.push(b'\n');
        self.file
            .write_all(&bytes)
            .and_then(|()| self.file.flush())
            .with_context(|| format!("writing to {}", self.path.display()))?;
        if let Some(written) = &mut self.written {
            written.insert(line.id.clone());
        }
        Ok(true)
    }

    /// Makes what was written durable (the lines are in the operating
    /// system's hands after each write already).
    pub fn sync(&self) -> anyhow::Result<()> {
        self.file
            .sync_data()
            .with_context(|| format!("syncing {}", self.path.display()))
    }
}

/// Takes the file's exclusive lock (released when the process ends).
fn lock(file: &File, path: &Path) -> anyhow::Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => bail!(
            "{} is being written by another deepfleet process; wait for it to end, or \
             interrupt it, before running this batch again",
            path.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
}

/// The complete lines of `file` and the length they span: a last line
/// without its newline is left out.
fn read_lines(file: &File, path: &Path) -> anyhow::Result<(Vec<ResultLine>, u64)> {
    let mut reader = BufReader::new(file);
    let mut lines = Vec::new();
    let mut complete = 0_u64;
    let mut buf = Vec::new();
    for n in 1_u64.. {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if read == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        complete += read as u64;
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<ResultLine>(&buf) {
            Ok(line) => lines.push(line),
            Err(e) => bail!(
                "{} line {n} is not a result line ({e}); it is the results file of an \
                 unfinished batch: fix or remove that line, or pass --fresh to start the batch over",
                path.display()
            ),
        }
    }
    Ok((lines, complete))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{ResultStatus, ResultUsage};

    fn line(id: &str) -> ResultLine {
        ResultLine {
            id: id.into(),
            status: ResultStatus::Success,
            output: format!("out {id}"),
            error: None,
            steps: 1,
            usage: ResultUsage::default(),
            by_caller: Default::default(),
            cost_usd: 0.0,
            files: Default::default(),
            review: None,
        }
    }

    fn ids(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<ResultLine>(l).unwrap().id)
            .collect()
    }

    #[test]
    fn each_line_is_on_disk_once_written_and_a_task_gets_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let mut results = ResultsFile::create(&path).unwrap();
        assert!(results.write(&line("a")).unwrap());
        // Read back while the file is still open: nothing waits in a buffer.
        assert_eq!(ids(&path), ["a"]);
        assert!(!results.write(&line("a")).unwrap());
        assert!(results.write(&line("b")).unwrap());
        assert_eq!(ids(&path), ["a", "b"]);
        assert!(results.has("b") && !results.has("c"));
    }

    #[test]
    fn reopening_keeps_the_lines_and_drops_a_cut_off_last_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let whole = serde_json::to_string(&line("a")).unwrap();
        let cut = &serde_json::to_string(&line("b")).unwrap()[..10];
        std::fs::write(&path, format!("{whole}\n\n{cut}")).unwrap();
        let (mut results, lines) = ResultsFile::reopen(&path).unwrap();
        assert_eq!(lines, [line("a")]);
        assert!(results.has("a") && !results.has("b"));
        assert!(!results.write(&line("a")).unwrap());
        assert!(results.write(&line("b")).unwrap());
        assert_eq!(ids(&path), ["a", "b"]);
    }

    #[test]
    fn a_line_that_is_not_a_result_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let whole = serde_json::to_string(&line("a")).unwrap();
        std::fs::write(&path, format!("{whole}\n{{\"id\": 3}}\n")).unwrap();
        let err = ResultsFile::reopen(&path).err().unwrap().to_string();
        assert!(err.contains("line 2 is not a result line"), "{err}");
        assert!(err.contains("--fresh"), "{err}");
    }

    #[test]
    fn a_results_file_in_use_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let mut results = ResultsFile::create(&path).unwrap();
        results.write(&line("a")).unwrap();
        let err = ResultsFile::reopen(&path).err().unwrap().to_string();
        assert!(err.contains("another deepfleet process"), "{err}");
        let err = ResultsFile::create(&path).err().unwrap().to_string();
        assert!(err.contains("another deepfleet process"), "{err}");
        assert_eq!(ids(&path), ["a"], "a refused create empties nothing");
        drop(results);
        assert!(ResultsFile::reopen(&path).is_ok());
    }

    #[test]
    fn appending_keeps_every_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let mut results = ResultsFile::create(&path).unwrap();
        results.write(&line("a")).unwrap();
        drop(results);
        let mut appended = ResultsFile::append(&path).unwrap();
        assert!(appended.write(&line("a")).unwrap());
        assert_eq!(ids(&path), ["a", "a"]);
    }
}
