//! The worker's disk as the local backend touches it, within bounds.
//!
//! Files are opened with `O_NOFOLLOW` (a symlink swapped in after the
//! path check is not followed) and `O_NONBLOCK` (opening a FIFO would
//! otherwise wait for a writer, forever), then refused unless they are
//! regular files: a device or a pipe has no size to check, and reading
//! `/dev/zero` never ends. Reads stop one byte past [`MAX_FILE_BYTES`]
//! whatever the size said, so a file that grows meanwhile is bounded too.
//! Walks visit regular files in path order and stop when the caller
//! gives up (a tool call past its timeout), as blocking work cannot be
//! cancelled otherwise.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::BackendError;

/// Largest file read, as deepagents' filesystem backend.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Opens `path` as `options` say, without following a symlink in its
/// last component and without blocking on a FIFO, and refuses anything
/// but a regular file.
pub fn open_regular(path: &Path, options: &mut OpenOptions) -> io::Result<(File, Metadata)> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a device, pipe or socket), which is not opened",
        ));
    }
    Ok((file, meta))
}

/// The bytes of the regular file at `path`, refused past [`MAX_FILE_BYTES`].
pub fn read_regular(path: &Path) -> io::Result<(Vec<u8>, Metadata)> {
    let (file, meta) = open_regular(path, OpenOptions::new().read(true))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(MAX_FILE_BYTES));
    }
    Ok((read_capped(file, MAX_FILE_BYTES, meta.len())?, meta))
}

/// Everything `reader` holds, if that is at most `limit` bytes; reads
/// one byte more than `limit` at most. `hint` is the size expected.
pub fn read_capped(reader: impl Read, limit: u64, hint: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(usize::try_from(hint.min(limit)).unwrap_or(0));
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("file is larger than {limit} bytes"),
    )
}

/// Set when the task waiting for a piece of blocking work stops waiting.
#[derive(Debug, Clone, Default)]
pub struct Abandoned(Arc<AtomicBool>);

impl Abandoned {
    /// Whether nobody waits for the work any more.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Sets its [`Abandoned`] when dropped.
struct AbandonOnDrop(Abandoned);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}

/// Runs blocking file IO off the async workers. If the caller stops
/// waiting (its future is dropped), `f` sees its [`Abandoned`] set.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce(&Abandoned) -> Result<T, BackendError> + Send + 'static,
) -> Result<T, BackendError> {
    let abandoned = Abandoned::default();
    let _guard = AbandonOnDrop(abandoned.clone());
    tokio::task::spawn_blocking(move || f(&abandoned))
        .await
        .map_err(|e| BackendError::Unavailable(format!("file task failed: {e}")))?
}

/// Calls `visit` with each regular file under `dir` and its metadata, in
/// the order of their full paths (symlinks not followed), until `visit`
/// breaks or the work is abandoned (an error then).
pub fn walk(
    dir: &Path,
    abandoned: &Abandoned,
    visit: &mut dyn FnMut(&Path, &Metadata) -> ControlFlow<()>,
) -> io::Result<()> {
    walk_dir(dir, abandoned, visit).map(drop)
}

fn walk_dir(
    dir: &Path,
    abandoned: &Abandoned,
    visit: &mut dyn FnMut(&Path, &Metadata) -> ControlFlow<()>,
) -> io::Result<ControlFlow<()>> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        // A directory sorts as its name and `/`, as its files' paths do.
        let mut key = entry.file_name().into_encoded_bytes();
        if kind.is_dir() {
            key.push(b'/');
        }
        entries.push((key, entry.path(), kind));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, path, kind) in entries {
        if abandoned.is_set() {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "the search was abandoned",
            ));
        }
        let flow = if kind.is_dir() {
            walk_dir(&path, abandoned, visit)?
        } else if kind.is_file() {
            visit(&path, &fs::symlink_metadata(&path)?)
        } else {
            ControlFlow::Continue(())
        };
        if flow.is_break() {
            return Ok(flow);
        }
    }
    Ok(ControlFlow::Continue(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn walks_visit_files_in_path_order_and_stop_when_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("a")).unwrap();
        for file in ["a/b.txt", "a.txt", "a-z.txt", "z.txt"] {
            fs::write(dir.path().join(file), "x").unwrap();
        }
        let mut seen = Vec::new();
        walk(dir.path(), &Abandoned::default(), &mut |path, _| {
            let relative = path.strip_prefix(dir.path()).unwrap();
            seen.push(format!("/{}", relative.display()));
            ControlFlow::Continue(())
        })
        .unwrap();
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(seen, sorted);
        assert_eq!(seen.len(), 4);

        let abandoned = Abandoned::default();
        drop(AbandonOnDrop(abandoned.clone()));
        let err = walk(
            dir.path(),
            &abandoned,
            &mut |_, _| ControlFlow::Continue(()),
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Interrupted);
    }

    /// Reads of an endless source stop one byte past the cap: the bytes held
    /// are bounded whatever the metadata said (a file that grows after its
    /// size was checked, a special file that got through).
    #[test]
    fn a_read_holds_at_most_the_cap_plus_one_byte() {
        struct Counted<'a>(&'a std::cell::Cell<u64>);
        impl Read for Counted<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                buf.fill(b'a');
                self.0.set(self.0.get() + buf.len() as u64);
                Ok(buf.len())
            }
        }
        let pulled = std::cell::Cell::new(0);
        let err = read_capped(Counted(&pulled), 1_000, 0).unwrap_err();
        assert!(err.to_string().contains("larger than 1000 bytes"), "{err}");
        assert_eq!(pulled.get(), 1_001);
        let pulled = std::cell::Cell::new(0);
        let fits = read_capped(Counted(&pulled).take(1_000), 1_000, 1_000).unwrap();
        assert_eq!(fits.len(), 1_000);
    }
}
