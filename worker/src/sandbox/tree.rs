//! The thread's files on disk for one command, and what the command made
//! of them.
//!
//! [`materialize`] writes the files into the directory the sandbox sees as
//! `/`; [`collect`] walks it afterwards and tells what to write back and
//! what to delete. The walk runs after the sandbox is gone (its pid
//! namespace dies with it), so nothing changes under it; even so it never
//! follows a symlink and opens files with `O_NOFOLLOW`, since the worker
//! reading a link the command planted could read a host file.
//!
//! Only UTF-8 text files of at most [`MAX_FILE_BYTES`] flow back: the
//! thread's file tools write text. Anything else the command leaves (a
//! binary, a symlink, a FIFO, a file past the caps) stays out of the
//! thread, each with a note the model reads, never silently.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, lchown};
use std::path::{Component, Path};

use base64::Engine;
use deepfleet_proto::{Encoding, FileData};

use crate::backend::disk::{MAX_FILE_BYTES, open_regular, read_capped};

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
    walk.dir(root, "", 0);
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
            "the files were not all read back (more than {MAX_ENTRIES} entries, or nested more \
             than {MAX_DEPTH} deep), so no deletion was applied"
        ));
    }
    changes
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
    fn dir(&mut self, dir: &Path, prefix: &str, depth: usize) {
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
            let on_disk = dir.join(&name);
            if kind.is_dir() {
                self.dir(&on_disk, &path, depth + 1);
            } else if kind.is_file() {
                self.file(&on_disk, path);
            } else if kind.is_symlink() {
                self.changes
                    .notes
                    .push(format!("{path} is a symbolic link, which is not kept"));
            } else {
                self.changes.notes.push(format!(
                    "{path} is not a regular file (a FIFO, socket or device), which is not kept"
                ));
            }
            if !self.complete {
                return;
            }
        }
    }

    fn file(&mut self, on_disk: &Path, path: String) {
        self.seen.insert(path.clone());
        let bytes =
            open_regular(on_disk, OpenOptions::new().read(true)).and_then(|(file, meta)| {
                if meta.len() > MAX_FILE_BYTES {
                    return Err(io::Error::other(format!(
                        "it is larger than {MAX_FILE_BYTES} bytes"
                    )));
                }
                read_capped(file, MAX_FILE_BYTES, meta.len())
            });
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

/// A directory entry: its sort key, name and kind.
type Entry = (Vec<u8>, String, fs::FileType);

/// The entries of `dir` with their sort keys and kinds (symlinks not
/// followed), and the names that are not UTF-8 (no thread path can hold
/// them).
fn read_sorted(dir: &Path) -> io::Result<(Vec<Entry>, Vec<String>)> {
    let mut entries = Vec::new();
    let mut unnamed = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let name = match entry.file_name().into_string() {
            Ok(name) => name,
            Err(raw) => {
                unnamed.push(raw.to_string_lossy().into_owned());
                continue;
            }
        };
        let mut key = name.as_bytes().to_vec();
        if kind.is_dir() {
            key.push(b'/');
        }
        entries.push((key, name, kind));
    }
    Ok((entries, unnamed))
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
