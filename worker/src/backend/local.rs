//! The local backend: a directory on the worker's disk, for development.
//!
//! Every virtual path is taken relative to the root. A path with `..` is
//! refused before it reaches the disk; the resolved path (symlinks
//! followed) must stay under the canonical root, so a symlink pointing out
//! is refused too; and files are opened with `O_NOFOLLOW`, so a symlink
//! swapped in after the check is not followed either. Not meant for a
//! shared fleet: a spec with a local route reads the worker's disk.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use base64::Engine;
use chrono::{DateTime, Utc};
use deepfleet_proto::{Encoding, FileData};

use super::{Backend, BackendError, FileInfo, GrepResult, StateBackend};

/// Largest file read, as deepagents' filesystem backend.
const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

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

    /// Every regular file under `dir` (symlinks not followed), as data.
    fn walk(&self, dir: &Path, out: &mut BTreeMap<String, FileData>) -> io::Result<()> {
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                self.walk(&entry.path(), out)?;
            } else if kind.is_file() && entry.metadata()?.len() <= MAX_FILE_BYTES {
                let data = read_file(&entry.path())?;
                out.insert(self.virtual_path(&entry.path()), data);
            }
        }
        Ok(())
    }

    /// A state backend over a snapshot of the tree, for glob and grep.
    async fn snapshot(&self) -> Result<StateBackend, BackendError> {
        let this = self.clone();
        blocking(move || {
            let mut files = BTreeMap::new();
            this.walk(&this.root, &mut files)
                .map_err(|e| io_error("/", e))?;
            Ok(StateBackend::new(files))
        })
        .await
    }
}

/// Runs blocking file IO off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, BackendError> + Send + 'static,
) -> Result<T, BackendError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BackendError::Unavailable(format!("file task failed: {e}")))?
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

/// Opens without following a symlink in the last component.
fn open_nofollow(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW).open(path)
}

fn read_file(path: &Path) -> io::Result<FileData> {
    let mut file = open_nofollow(path, OpenOptions::new().read(true))?;
    let meta = file.metadata()?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(io::Error::other(format!(
            "file is larger than {MAX_FILE_BYTES} bytes"
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
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

#[async_trait]
impl Backend for LocalBackend {
    async fn ls(&self, path: &str) -> Result<Vec<FileInfo>, BackendError> {
        let dir = self.resolve(path)?;
        let this = self.clone();
        let shown = path.to_owned();
        blocking(move || {
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
        blocking(move || {
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
        blocking(move || {
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
            let mut file = open_nofollow(
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
        blocking(move || {
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
        if let Some(path) = path {
            self.resolve(path)?;
        }
        let mut found = self.snapshot().await?.glob(pattern, path).await?;
        found.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(found)
    }

    async fn grep(
        &self,
        pattern: &str,
        path: Option<&str>,
        glob: Option<&str>,
        max_count: usize,
    ) -> Result<GrepResult, BackendError> {
        if let Some(path) = path {
            self.resolve(path)?;
        }
        self.snapshot()
            .await?
            .grep(pattern, path, glob, max_count)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn setup() -> (tempfile::TempDir, LocalBackend) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("root")).unwrap();
        let backend = LocalBackend::new(dir.path().join("root")).unwrap();
        (dir, backend)
    }

    #[tokio::test]
    async fn files_round_trip_under_the_root() {
        let (dir, b) = setup();
        b.write("/notes/a.md", "alpha\nbeta").await.unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("root/notes/a.md")).unwrap(),
            "alpha\nbeta"
        );
        assert_eq!(b.read("/notes/a.md").await.unwrap().content, "alpha\nbeta");
        let paths = |v: Vec<FileInfo>| v.into_iter().map(|f| f.path).collect::<Vec<_>>();
        assert_eq!(paths(b.ls("/").await.unwrap()), ["/notes/"]);
        assert_eq!(paths(b.glob("*.md", None).await.unwrap()), ["/notes/a.md"]);
        assert_eq!(
            b.grep("beta", None, None, 5).await.unwrap().matches[0].line,
            2
        );
        assert_eq!(b.read("/notes").await, Err(BackendError::IsDirectory));
        b.delete("/notes").await.unwrap();
        assert_eq!(b.read("/notes/a.md").await, Err(BackendError::NotFound));
    }

    #[tokio::test]
    async fn traversal_is_refused() {
        let (dir, b) = setup();
        fs::write(dir.path().join("secret.txt"), "s").unwrap();
        for path in ["/../secret.txt", "/a/../../secret.txt"] {
            assert!(
                matches!(b.read(path).await, Err(BackendError::InvalidPath(_))),
                "{path}"
            );
        }
        assert!(matches!(
            b.write("/../x.txt", "x").await,
            Err(BackendError::InvalidPath(_))
        ));
        assert!(!dir.path().join("x.txt").exists());
    }

    #[tokio::test]
    async fn symlink_escapes_are_refused() {
        let (dir, b) = setup();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("secret.txt"), "s").unwrap();
        let root = dir.path().join("root");
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("file-link")).unwrap();

        let err = b.read("/link/secret.txt").await.unwrap_err();
        assert!(err.to_string().contains("outside root directory"), "{err}");
        assert!(matches!(
            b.read("/file-link").await,
            Err(BackendError::InvalidPath(_))
        ));
        assert!(matches!(
            b.write("/link/new.txt", "x").await,
            Err(BackendError::InvalidPath(_))
        ));
        assert!(!outside.join("new.txt").exists());
        assert!(matches!(
            b.ls("/link").await,
            Err(BackendError::InvalidPath(_))
        ));
        // Searches do not follow links out of the root either.
        assert_eq!(
            b.grep("s", None, None, 5).await.unwrap().matches,
            Vec::new()
        );
    }

    #[test]
    fn nofollow_refuses_a_symlink_swapped_in() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("target"), "t").unwrap();
        std::os::unix::fs::symlink(dir.path().join("target"), dir.path().join("link")).unwrap();
        let err = read_file(&dir.path().join("link")).unwrap_err();
        assert!(matches!(
            io_error("/link", err),
            BackendError::InvalidPath(_)
        ));
    }
}
