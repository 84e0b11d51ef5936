//! What `glob` and `grep` look at and how `grep` collects its hits, shared
//! by the backends that search file by file (state and local), so they
//! agree on which files a search covers and hold the same bounded result.

use super::pattern::GlobPattern;
use super::{BackendError, GrepMatch, GrepResult};

/// Most bytes of matched lines one `grep` holds. The tool shows far less
/// (its output is cut at 80,000 characters); past this the search stops,
/// marked truncated, so a search matching every line of a large tree
/// cannot copy the tree into memory.
pub const MAX_MATCH_BYTES: usize = 8 * 1024 * 1024;

/// `path` as a directory prefix ending with `/`.
pub fn dir_prefix(path: &str) -> String {
    format!("{}/", path.trim_end_matches('/'))
}

/// Whether `glob` under `path` lists the file at `key`.
pub fn glob_lists(pattern: &GlobPattern, prefix: &str, key: &str) -> bool {
    key.strip_prefix(prefix)
        .is_some_and(|relative| pattern.matches(relative))
}

/// The files one `grep` searches: those under its path (or the path
/// itself, when it names a file) whose name its glob filter matches.
#[derive(Debug)]
pub struct GrepScope {
    path: String,
    prefix: String,
    filter: Option<GlobPattern>,
}

impl GrepScope {
    /// The scope of a search under `path` (the root when `None`), its
    /// file names filtered by `glob`.
    pub fn new(path: Option<&str>, glob: Option<&str>) -> Result<Self, BackendError> {
        let path = path.unwrap_or("/").to_owned();
        Ok(GrepScope {
            prefix: dir_prefix(&path),
            path,
            filter: glob.map(GlobPattern::new).transpose()?,
        })
    }

    /// Whether the file at `key` is searched.
    pub fn includes(&self, key: &str) -> bool {
        // A file path searches that one file.
        let Some(relative) = key
            .strip_prefix(&self.prefix)
            .or_else(|| (key == self.path).then(|| key.rsplit('/').next().unwrap_or_default()))
        else {
            return false;
        };
        let Some(filter) = &self.filter else {
            return true;
        };
        let name = if filter.is_bare() {
            relative.rsplit('/').next().unwrap_or_default()
        } else {
            relative
        };
        filter.matches(name)
    }
}

/// Collects one `grep`'s hits, up to `max_count` of them and
/// [`MAX_MATCH_BYTES`] of their text.
#[derive(Debug)]
pub struct Hits {
    pattern: String,
    max_count: usize,
    held: usize,
    result: GrepResult,
}

impl Hits {
    /// No hits yet for the literal `pattern`.
    pub fn new(pattern: &str, max_count: usize) -> Self {
        Hits {
            pattern: pattern.to_owned(),
            max_count,
            held: 0,
            result: GrepResult::default(),
        }
    }

    /// Searches the text of the file at `key`; `false` once the search is
    /// over (a cap was reached, and the result says it was truncated).
    pub fn search(&mut self, key: &str, content: &str) -> bool {
        for (index, line) in content.lines().enumerate() {
            if !line.contains(&self.pattern) {
                continue;
            }
            if self.result.matches.len() == self.max_count
                || self.held.saturating_add(line.len()) > MAX_MATCH_BYTES
            {
                self.result.truncated = true;
                return false;
            }
            self.held += line.len();
            self.result.matches.push(GrepMatch {
                path: key.to_owned(),
                line: index + 1,
                text: line.to_owned(),
            });
        }
        true
    }

    /// The hits, in the order searched.
    pub fn finish(self) -> GrepResult {
        self.result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn scopes_cover_a_directory_or_one_file_filtered_by_name() {
        let under = GrepScope::new(Some("/src"), None).unwrap();
        assert!(under.includes("/src/a.py") && !under.includes("/srcx/a.py"));
        let file = GrepScope::new(Some("/a.txt"), Some("*.txt")).unwrap();
        assert!(file.includes("/a.txt") && !file.includes("/b.txt"));
        let filtered = GrepScope::new(None, Some("*.py")).unwrap();
        assert!(filtered.includes("/deep/x.py") && !filtered.includes("/x.rs"));
    }

    /// Issue #14: matching every line of a large tree must not copy the
    /// tree into the result.
    #[test]
    fn hits_stop_at_the_count_or_the_bytes_they_hold() {
        let mut counted = Hits::new("x", 2);
        assert!(!counted.search("/a", "x\nx\nx\n"));
        let result = counted.finish();
        assert_eq!((result.matches.len(), result.truncated), (2, true));

        let line = "x".repeat(1024 * 1024);
        let file = format!("{line}\n").repeat(20);
        let mut held = Hits::new("x", usize::MAX);
        assert!(!held.search("/big", &file));
        let result = held.finish();
        let bytes: usize = result.matches.iter().map(|m| m.text.len()).sum();
        assert!(result.truncated);
        assert!(bytes <= MAX_MATCH_BYTES, "{bytes}");
        assert_eq!(result.matches.len(), MAX_MATCH_BYTES / line.len());
    }
}
