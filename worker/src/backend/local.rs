//! The local backend: a directory on the worker's disk, for development.
//!
//! Every virtual path is taken relative to the root. A path with `..` is
//! refused before it reaches the disk; the resolved path (symlinks
//! followed) must stay under the canonical root, so a symlink pointing out
//! is refused too; and files are opened as `disk.rs` says (no symlink
//! followed, regular files only, reads capped). Searches walk the tree
//! holding one file at a time. Not meant for a shared fleet: a spec with
//! a local route reads the worker's disk.

use std::fs::{self, Metadata, OpenOptions};
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use base64::Engine;
use chrono::{DateTime, Utc};
use deepfleet_proto::{Encoding, FileData};

use super::disk::{Abandoned, MAX_FILE_BYTES, blocking, open_regular, read_regular, walk};
use super::pattern::GlobPattern;
use super::search::{GrepScope, Hits, dir_prefix, glob_lists};
use super::{Backend, BackendError, FileInfo, GrepResult};

/// Files under one directory of the worker's disk.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    root: PathBuf,
}

impl LocalBackend {
    /// A backend rooted at `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, BackendError> {
        let root = root.as_ref();
        let root = fs::canonicalize(root).map_err(|e| {
            BackendError::Unavailable(format!("local root {}: {e}", root.display()))
        })?;
        if !root.is_dir() {
            return Err(BackendError::Unavailable(format!(
                "local root {} is not a directory",
                root.display()
            )));
        }
        Ok(LocalBackend { root })
    }

    /// Maps a virtual path to a disk path under the root, refusing `..`
    /// and anything whose existing part resolves outside the root.
    fn resolve(&self, virtual_path: &str) -> Result<PathBuf, BackendError> {
        let mut path = self.root.clone();
        for part in Path::new(virtual_path.trim_start_matches('/')).components() {
            match part {
                Component::Normal(name) => path.push(name),
                Component::CurDir => {}
                _ => {
                    return Err(BackendError::InvalidPath(format!(
                        "Path traversal not allowed: {virtual_path}"
                    )));
                }
            }
        }
        // The deepest existing ancestor decides where the path really is.
        let mut existing = path.as_path();
        while fs::symlink_metadata(existing).is_err() {
            match existing.parent() {
                Some(parent) => existing = parent,
                None => break,
            }
        }
        let real = fs::canonicalize(existing).map_err(|e| io_error(virtual_path, e))?;
        if !real.starts_with(&self.root) {
            return Err(BackendError::InvalidPath(format!(
                "Path:{virtual_path} outside root directory: {}",
                self.root.display()
            )));
        }
        Ok(path)
    }

    /// The virtual path of a disk path under the root.
    fn virtual_path(&self, path: &Path) -> String {
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        format!("/{}", relative.to_string_lossy())
    }
}

fn io_error(path: &str, e: io::Error) -> BackendError {
    match e.kind() {
        io::ErrorKind::NotFound => BackendError::NotFound,
        io::ErrorKind::PermissionDenied => BackendError::PermissionDenied,
        // ELOOP: O_NOFOLLOW met a symlink.
        _ if e.raw_os_error() == Some(libc::ELOOP) => BackendError::InvalidPath(format!(
            "Path:{path} is a symbolic link, which is not followed"
        )),
        _ => BackendError::Other(format!("{path}: {e}")),
    }
}

/// The file at `path` as data: text when it is UTF-8, else base64.
fn read_file(path: &Path) -> io::Result<FileData> {
    let (bytes, meta) = read_regular(path)?;
    let modified: DateTime<Utc> = meta
        .modified()
        .map(Into::into)
        .unwrap_or_else(|_| Utc::now());
    let created: DateTime<Utc> = meta.created().map(Into::into).unwrap_or(modified);
    let (content, encoding) = match String::from_utf8(bytes) {
        Ok(text) => (text, Encoding::Utf8),
        Err(e) => (
            base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
            Encoding::Base64,
        ),
    };
    Ok(FileData {
        content,
        encoding,
        created_at: created,
        modified_at: modified,
    })
}

fn file_info(path: String, meta: &Metadata) -> FileInfo {
    FileInfo {
        path,
        is_dir: false,
        size: meta.len(),
        modified_at: meta.modified().ok().map(Into::into),
    }
}

#[async_trait]
impl Backend for LocalBackend {
    async fn ls(&self, path: &str) -> Result<Vec<FileInfo>, BackendError> {
        let dir = self.resolve(path)?;
        let this = self.clone();
        let shown = path.to_owned();
        blocking(move |_| {
            let meta = fs::symlink_metadata(&dir).map_err(|e| io_error(&shown, e))?;
            if !meta.is_dir() {
                return Err(BackendError::Other(format!(
                    "Path '{shown}': not_a_directory"
                )));
            }
            let mut entries = Vec::new();
            for entry in fs::read_dir(&dir).map_err(|e| io_error(&shown, e))? {
                let entry = entry.map_err(|e| io_error(&shown, e))?;
                let meta = entry.metadata().map_err(|e| io_error(&shown, e))?;
                let mut path = this.virtual_path(&entry.path());
                if meta.is_dir() {
                    path.push('/');
                }
                entries.push(FileInfo {
                    path,
                    is_dir: meta.is_dir(),
                    size: if meta.is_dir() { 0 } else { meta.len() },
                    modified_at: meta.modified().ok().map(Into::into),
                });
            }
            entries.sort_by(|a, b| a.path.cmp(&b.path));
            Ok(entries)
        })
        .await
    }

    async fn read(&self, path: &str) -> Result<FileData, BackendError> {
        let disk = self.resolve(path)?;
        let shown = path.to_owned();
        blocking(move |_| {
            if fs::symlink_metadata(&disk).is_ok_and(|m| m.is_dir()) {
                return Err(BackendError::IsDirectory);
            }
            read_file(&disk).map_err(|e| io_error(&shown, e))
        })
        .await
    }

    async fn write(&self, path: &str, content: &str) -> Result<(), BackendError> {
        let disk = self.resolve(path)?;
        let this = self.clone();
        let (shown, content) = (path.to_owned(), content.to_owned());
        blocking(move |_| {
            if let Some(parent) = disk.parent() {
                fs::create_dir_all(parent).map_err(|e| io_error(&shown, e))?;
                // A directory created through a symlink swapped in meanwhile
                // would land outside: check where the parent really is.
                let real = fs::canonicalize(parent).map_err(|e| io_error(&shown, e))?;
                if !real.starts_with(&this.root) {
                    return Err(BackendError::InvalidPath(format!(
                        "Path:{shown} outside root directory: {}",
                        this.root.display()
                    )));
                }
            }
            let (mut file, _) = open_regular(
                &disk,
                OpenOptions::new().write(true).create(true).truncate(true),
            )
            .map_err(|e| io_error(&shown, e))?;
            file.write_all(content.as_bytes())
                .map_err(|e| io_error(&shown, e))
        })
        .await
    }

    async fn delete(&self, path: &str) -> Result<(), BackendError> {
        let disk = self.resolve(path)?;
        if disk == self.root {
            return Err(BackendError::Unsupported(
                "deleting the root of a local route is not allowed".to_owned(),
            ));
        }
        let shown = path.to_owned();
        blocking(move |_| {
            let meta = fs::symlink_metadata(&disk).map_err(|e| io_error(&shown, e))?;
            let removed = if meta.is_dir() {
                fs::remove_dir_all(&disk)
            } else {
                fs::remove_file(&disk)
            };
            removed.map_err(|e| io_error(&shown, e))
        })
        .await
    }

    async fn glob(&self, pattern: &str, path: Option<&str>) -> Result<Vec<FileInfo>, BackendError> {
        let pattern = GlobPattern::new(pattern)?;
        let base = path.unwrap_or("/");
        let dir = self.resolve(base)?;
        let prefix = dir_prefix(base);
        let this = self.clone();
        blocking(move |abandoned| {
            let mut found = Vec::new();
            this.walk_from(&dir, abandoned, &mut |disk, meta| {
                let key = this.virtual_path(disk);
                if glob_lists(&pattern, &prefix, &key) {
                    found.push(file_info(key, meta));
                }
                ControlFlow::Continue(())
            })?;
            Ok(found)
        })
        .await
    }

    async fn grep(
        &self,
        pattern: &str,
        path: Option<&str>,
        glob: Option<&str>,
        max_count: usize,
    ) -> Result<GrepResult, BackendError> {
        let scope = GrepScope::new(path, glob)?;
        let start = self.resolve(path.unwrap_or("/"))?;
        let mut hits = Hits::new(pattern, max_count);
        let this = self.clone();
        blocking(move |abandoned| {
            this.walk_from(&start, abandoned, &mut |disk, meta| {
                let key = this.virtual_path(disk);
                if meta.len() > MAX_FILE_BYTES || !scope.includes(&key) {
                    return ControlFlow::Continue(());
                }
                // A file that vanished or cannot be read is not searched.
                match read_file(disk) {
                    Ok(data) if data.encoding == Encoding::Utf8 => {
                        if hits.search(&key, &data.content) {
                            ControlFlow::Continue(())
                        } else {
                            ControlFlow::Break(())
                        }
                    }
                    _ => ControlFlow::Continue(()),
                }
            })?;
            Ok(hits.finish())
        })
        .await
    }
}

impl LocalBackend {
    /// Walks the regular files at or under `start` (nothing when it does
    /// not exist), in path order.
    fn walk_from(
        &self,
        start: &Path,
        abandoned: &Abandoned,
        visit: &mut dyn FnMut(&Path, &Metadata) -> ControlFlow<()>,
    ) -> Result<(), BackendError> {
        let shown = self.virtual_path(start);
        let meta = match fs::symlink_metadata(start) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error(&shown, e)),
        };
        if meta.is_file() {
            // One file: whether the visit stops the walk makes no difference.
            let _ = visit(start, &meta);
        } else if meta.is_dir() {
            walk(start, abandoned, visit).map_err(|e| io_error(&shown, e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "local_tests.rs"]
mod tests;
