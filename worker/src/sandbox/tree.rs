//! The thread's files on disk for one command, and what the command made
//! of them.
//!
//! [`materialize`] writes the files into the directory the sandbox sees as
//! `/`; [`collect`] walks it afterwards and tells what to write back and
//! what to delete. The walk may overlap the last moments of the sandbox's
//! processes (`bwrap` reports the exit before its pid namespace is torn
//! down), so it resolves every entry relative to its directory's
//! descriptor and never follows a symlink, in any component: the worker
//! following a link the command planted would read a host file.
//!
//! Only UTF-8 text files of at most [`MAX_FILE_BYTES`] flow back: the
//! thread's file tools write text. Anything else the command leaves (a
//! binary, a symlink, a FIFO, a file past the caps) stays out of the
//! thread, each with a note the model reads, never silently.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, lchown};
use std::path::{Component, Path};

use base64::Engine;
use deepfleet_proto::{Encoding, FileData};
use rustix::fs::{AtFlags, CWD, Dir, FileType, Mode, OFlags, openat, statat};

use crate::backend::disk::{MAX_FILE_BYTES, read_capped};

/// Top-level names the sandbox mounts its own system paths or scratch
/// space at: thread files under them are hidden from commands, and
/// nothing under them flows back.
pub const RESERVED: &[&str] = &[
    "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr",
];

/// Entries one walk reads back at most: past it the tree is not trusted
/// to be complete, so nothing is deleted.
pub const MAX_ENTRIES: usize = 10_000;
/// Bytes of changed files one command may write back in all.
pub const MAX_CHANGED_BYTES: u64 = 32 * 1024 * 1024;
/// How deep the walk goes.
const MAX_DEPTH: usize = 64;

/// The files as the command found them: path to bytes, for telling what
/// it changed.
pub type Before = BTreeMap<String, Vec<u8>>;

/// Whether `path` (an absolute virtual path) lies under a reserved name.
pub fn is_reserved(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    RESERVED.contains(&first)
}

/// Writes `files` under `root` (owned by `owner` when given, so the
/// sandbox user may change them), skipping reserved paths. Returns what
/// was written, and notes on what was not.
pub fn materialize(
    root: &Path,
    files: &BTreeMap<String, FileData>,
    owner: Option<u32>,
) -> io::Result<(Before, Vec<String>)> {
    let mut before = Before::new();
    let mut notes = Vec::new();
    for (path, data) in files {
        if is_reserved(path) {
            notes.push(format!(
                "{path} is hidden from commands: /{} belongs to the sandbox's system",
                path.trim_start_matches('/').split('/').next().unwrap_or("")
            ));
            continue;
        }
        let Some(relative) = relative(path) else {
            notes.push(format!("{path} is not a plain path; it was left out"));
            continue;
        };
        let bytes = match data.encoding {
            Encoding::Utf8 => data.content.as_bytes().to_vec(),
            Encoding::Base64 => {
                match base64::engine::general_purpose::STANDARD.decode(&data.content) {
                    Ok(bytes) => bytes,
                    Err(_) => {
                        notes.push(format!("{path} holds invalid base64; it was left out"));
                        continue;
                    }
                }
            }
        };
        let target = root.join(relative);
        if let Some(parent) = target.parent() {
            make_dirs(root, parent, owner)?;
        }
        fs::write(&target, &bytes)?;
        if let Some(uid) = owner {
            lchown(&target, Some(uid), Some(uid))?;
        }
        before.insert(path.clone(), bytes);
    }
    Ok((before, notes))
}

/// Creates `dir` and its missing parents below `root`, each owned by
/// `owner`.
fn make_dirs(root: &Path, dir: &Path, owner: Option<u32>) -> io::Result<()> {
    if dir == root || dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        make_dirs(root, parent, owner)?;
    }
    fs::DirBuilder::new().mode(0o755).create(dir)?;
    if let Some(uid) = owner {
        lchown(dir, Some(uid), Some(uid))?;
    }
    Ok(())
}

/// The path relative to the tree, if every component is a plain name.
fn relative(path: &str) -> Option<&Path> {
    let relative = Path::new(path.trim_start_matches('/'));
    let plain = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    (plain && !relative.as_os_str().is_empty()).then_some(relative)
}

/// What a command did to the files.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Files created or changed, with their new text.
    pub written: BTreeMap<String, String>,
    /// Files the command deleted.
    pub deleted: Vec<String>,
    /// What did not flow back, and why: one line each, for the model.
    pub notes: Vec<String>,
}

/// Reads `root` back after a command and compares it with `before`.
pub fn collect(root: &Path, before: &Before) -> Changes {
    let mut walk = Walk {
        before,
        seen: BTreeSet::new(),
        changes: Changes::default(),
        entries: 0,
        bytes: 0,
        complete: true,
    };
    match open_dir(CWD, root) {
        Ok(dir) => walk.dir(&dir, "", 0),
        Err(e) => {
            walk.complete = false;
            walk.changes
                .notes
                .push(format!("the files could not be read back: {e}"));
        }
    }
    let Walk {
        seen,
        mut changes,
        complete,
        ..
    } = walk;
    if complete {
        changes.deleted = before
            .keys()
            .filter(|path| !seen.contains(*path))
            .cloned()
            .collect();
    } else {
        changes.notes.push(format!(
            "the files were not all read back (more than {MAX_ENTRIES} entries, nested more \
             than {MAX_DEPTH} deep, or unreadable), so no deletion was applied"
        ));
    }
    changes
}

/// Opens the directory `name` under `dir` without following a symlink.
fn open_dir(dir: impl AsFd, name: impl rustix::path::Arg) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(openat(dir, name, flags, Mode::empty())?)
}

struct Walk<'a> {
    before: &'a Before,
    /// Regular files found: not deleted, whether or not they flow back.
    seen: BTreeSet<String>,
    changes: Changes,
    entries: usize,
    bytes: u64,
    complete: bool,
}

impl Walk<'_> {
    /// Walks the directory open as `dir`, whose thread path is `prefix`.
    /// Every entry is opened relative to its directory's descriptor, with
    /// `O_NOFOLLOW`: a process of the sandbox still dying while this runs
    /// cannot swap a directory for a symlink to a host path.
    fn dir(&mut self, dir: &OwnedFd, prefix: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.complete = false;
            return;
        }
        let (mut entries, unnamed) = match read_sorted(dir) {
            Ok(read) => read,
            Err(e) => {
                self.complete = false;
                self.changes
                    .notes
                    .push(format!("{prefix}/ could not be read back: {e}"));
                return;
            }
        };
        for name in unnamed {
            self.changes.notes.push(format!(
                "{prefix}/{name} was not kept: its name is not UTF-8"
            ));
        }
        // Sorted as full paths sort: a directory as its name and `/`.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, name, kind) in entries {
            if depth == 0 && RESERVED.contains(&name.as_str()) {
                continue;
            }
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                self.complete = false;
                return;
            }
            let path = format!("{prefix}/{name}");
            match kind {
                FileType::Directory => match open_dir(dir, name.as_str()) {
                    Ok(sub) => self.dir(&sub, &path, depth + 1),
                    Err(e) => {
                        self.complete = false;
                        self.changes
                            .notes
                            .push(format!("{path}/ could not be read back: {e}"));
                    }
                },
                FileType::RegularFile => self.file(dir, &name, path),
                FileType::Symlink => self
                    .changes
                    .notes
                    .push(format!("{path} is a symbolic link, which is not kept")),
                _ => self.changes.notes.push(format!(
                    "{path} is not a regular file (a FIFO, socket or device), which is not kept"
                )),
            }
            if !self.complete {
                return;
            }
        }
    }

    fn file(&mut self, dir: &OwnedFd, name: &str, path: String) {
        self.seen.insert(path.clone());
        let bytes = read_file(dir, name);
        let bytes = match bytes {
            Ok(bytes) => bytes,
            Err(e) => {
                self.changes.notes.push(format!("{path} was not kept: {e}"));
                return;
            }
        };
        if self.before.get(&path) == Some(&bytes) {
            return;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            self.changes.notes.push(format!(
                "{path} was not kept: it is not UTF-8 text, and only text files flow back into \
                 the thread's files"
            ));
            return;
        };
        self.bytes += text.len() as u64;
        if self.bytes > MAX_CHANGED_BYTES {
            self.changes.notes.push(format!(
                "{path} was not kept: the command changed more than {MAX_CHANGED_BYTES} bytes of \
                 files in all"
            ));
            return;
        }
        self.changes.written.insert(path, text);
    }
}

/// The bytes of the regular file `name` under `dir`, refused past
/// [`MAX_FILE_BYTES`]. `O_NONBLOCK`: a FIFO swapped in is not waited on.
fn read_file(dir: &OwnedFd, name: &str) -> io::Result<Vec<u8>> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = File::from(openat(dir, name, flags, Mode::empty())?);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("it is no longer a regular file"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(io::Error::other(format!(
            "it is larger than {MAX_FILE_BYTES} bytes"
        )));
    }
    read_capped(file, MAX_FILE_BYTES, meta.len())
}

/// A directory entry: its sort key, name and kind.
type Entry = (Vec<u8>, String, FileType);

/// The entries of the directory open as `dir` with their sort keys and
/// kinds (symlinks not followed), and the names that are not UTF-8 (no
/// thread path can hold them).
fn read_sorted(dir: &OwnedFd) -> io::Result<(Vec<Entry>, Vec<String>)> {
    let mut entries = Vec::new();
    let mut unnamed = Vec::new();
    for entry in Dir::read_from(dir)? {
        let entry = entry?;
        let raw = entry.file_name().to_bytes();
        if raw == b"." || raw == b".." {
            continue;
        }
        let Ok(name) = std::str::from_utf8(raw) else {
            unnamed.push(String::from_utf8_lossy(raw).into_owned());
            continue;
        };
        let kind = match entry.file_type() {
            FileType::Unknown => {
                let stat = statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
                FileType::from_raw_mode(stat.st_mode)
            }
            kind => kind,
        };
        let mut key = raw.to_vec();
        if kind == FileType::Directory {
            key.push(b'/');
        }
        entries.push((key, name.to_owned(), kind));
    }
    Ok((entries, unnamed))
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
