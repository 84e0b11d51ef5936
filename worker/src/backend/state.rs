//! The per-thread state backend: the thread's files, loaded from its
//! checkpoint and committed with the step.
//!
//! One [`StateBackend`] serves every tool call of a step. Clones share the
//! files, so concurrent calls of one turn read each other's writes (as
//! deepagents' read-your-writes inside a superstep). Directories are not
//! stored: they are implied by the paths of the files under them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use chrono::Utc;
use deepfleet_proto::{Encoding, FileData, InputLimits};

use super::pattern::GlobPattern;
use super::search::{GrepScope, Hits, dir_prefix, glob_lists};
use super::{Backend, BackendError, FileInfo, GrepResult};

/// Files of one thread, checkpointed with it.
#[derive(Debug, Clone, Default)]
pub struct StateBackend {
    inner: Arc<Mutex<Files>>,
    limits: InputLimits,
}

#[derive(Debug, Default)]
struct Files {
    current: BTreeMap<String, FileData>,
    changes: BTreeMap<String, Option<FileData>>,
}

impl StateBackend {
    /// A backend over the checkpoint's files, under the default limits.
    pub fn new(files: BTreeMap<String, FileData>) -> Self {
        Self::with_limits(files, InputLimits::default())
    }

    /// A backend over the checkpoint's files whose writes keep within
    /// `limits`: a file past the size limit, or a new file past the
    /// thread's count, is refused with the limit for the model to read.
    /// Files already there stay readable whatever their size.
    pub fn with_limits(files: BTreeMap<String, FileData>, limits: InputLimits) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Files {
                current: files,
                changes: BTreeMap::new(),
            })),
            limits,
        }
    }

    /// What changed since [`StateBackend::new`], as the delta the checkpoint
    /// applies: `Some` writes a file, `None` deletes it.
    pub fn changes(&self) -> BTreeMap<String, Option<FileData>> {
        self.lock().changes.clone()
    }

    /// The files as they are now.
    pub fn snapshot(&self) -> BTreeMap<String, FileData> {
        self.lock().current.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Files> {
        // Every critical section leaves the maps consistent, so a panic
        // elsewhere while holding the lock does not invalidate them.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn file_info(path: &str, data: &FileData) -> FileInfo {
    FileInfo {
        path: path.to_owned(),
        is_dir: false,
        size: data.content.len() as u64,
        modified_at: Some(data.modified_at),
    }
}

#[async_trait]
impl Backend for StateBackend {
    async fn ls(&self, path: &str) -> Result<Vec<FileInfo>, BackendError> {
        let prefix = dir_prefix(path);
        let files = self.lock();
        let mut entries = Vec::new();
        let mut dirs = BTreeSet::new();
        for (key, data) in files.current.range(prefix.clone()..) {
            let Some(rest) = key.strip_prefix(&prefix) else {
                break;
            };
            match rest.split_once('/') {
                None => entries.push(file_info(key, data)),
                Some((dir, _)) => {
                    dirs.insert(format!("{prefix}{dir}/"));
                }
            }
        }
        entries.extend(dirs.into_iter().map(|path| FileInfo {
            path,
            is_dir: true,
            size: 0,
            modified_at: None,
        }));
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    async fn read(&self, path: &str) -> Result<FileData, BackendError> {
        self.lock()
            .current
            .get(path)
            .cloned()
            .ok_or(BackendError::NotFound)
    }

    async fn write(&self, path: &str, content: &str) -> Result<(), BackendError> {
        let refused = |e: deepfleet_proto::LimitExceeded| BackendError::Other(e.to_string());
        self.limits
            .check_file(path, content.len())
            .map_err(refused)?;
        let now = Utc::now();
        let mut files = self.lock();
        if !files.current.contains_key(path) {
            self.limits
                .check_file_count(files.current.len() + 1)
                .map_err(refused)?;
        }
        let data = match files.current.get(path) {
            Some(old) => FileData {
                content: content.to_owned(),
                encoding: Encoding::Utf8,
                created_at: old.created_at,
                modified_at: now,
            },
            None => FileData::text(content, now),
        };
        files.changes.insert(path.to_owned(), Some(data.clone()));
        files.current.insert(path.to_owned(), data);
        Ok(())
    }

    async fn delete(&self, path: &str) -> Result<(), BackendError> {
        let prefix = dir_prefix(path);
        let mut files = self.lock();
        let doomed: Vec<String> = files
            .current
            .keys()
            .filter(|key| *key == path || key.starts_with(&prefix))
            .cloned()
            .collect();
        if doomed.is_empty() {
            return Err(BackendError::NotFound);
        }
        for key in doomed {
            files.current.remove(&key);
            files.changes.insert(key, None);
        }
        Ok(())
    }

    async fn glob(&self, pattern: &str, path: Option<&str>) -> Result<Vec<FileInfo>, BackendError> {
        let pattern = GlobPattern::new(pattern)?;
        let prefix = dir_prefix(path.unwrap_or("/"));
        let files = self.lock();
        let mut found: Vec<(&String, &FileData)> = files
            .current
            .iter()
            .filter(|(key, _)| glob_lists(&pattern, &prefix, key))
            .collect();
        // Newest first, as deepagents' state backend orders glob results;
        // the path breaks ties so equal stamps still sort deterministically.
        found.sort_by(|(pa, a), (pb, b)| b.modified_at.cmp(&a.modified_at).then(pa.cmp(pb)));
        Ok(found
            .into_iter()
            .map(|(key, data)| file_info(key, data))
            .collect())
    }

    async fn grep(
        &self,
        pattern: &str,
        path: Option<&str>,
        glob: Option<&str>,
        max_count: usize,
    ) -> Result<GrepResult, BackendError> {
        let scope = GrepScope::new(path, glob)?;
        let files = self.lock();
        let mut hits = Hits::new(pattern, max_count);
        for (key, data) in &files.current {
            if data.encoding == Encoding::Base64 || !scope.includes(key) {
                continue;
            }
            if !hits.search(key, &data.content) {
                break;
            }
        }
        Ok(hits.finish())
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
