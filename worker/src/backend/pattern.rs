//! deepagents glob semantics over virtual paths.
//!
//! globset alone cannot express them: a bare pattern matches the basename at
//! any depth, and a name starting with `.` only matches a pattern segment
//! that starts with a literal `.` (so `*` and `**` skip dot-files and
//! dot-directories). Patterns are therefore matched one path component at a
//! time, with globset compiling each segment.

use globset::{GlobBuilder, GlobMatcher};

use crate::backend::BackendError;

/// A compiled glob pattern.
#[derive(Debug, Clone)]
pub struct GlobPattern {
    segments: Vec<Segment>,
    bare: bool,
}

#[derive(Debug, Clone)]
enum Segment {
    /// `**`: zero or more components, none of them a dot-name.
    AnyDepth,
    /// One component.
    Name {
        matcher: GlobMatcher,
        /// Whether the segment spells out a leading `.`.
        dot: bool,
    },
}

impl GlobPattern {
    /// Compiles `pattern`. A pattern without `/` matches basenames at any
    /// depth; one with `/` (leading or not) is anchored at the search root.
    pub fn new(pattern: &str) -> Result<Self, BackendError> {
        if pattern.split('/').any(|part| part == "..") {
            return Err(BackendError::InvalidPath(format!(
                "glob pattern must not contain '..': {pattern}"
            )));
        }
        let bare = !pattern.contains('/');
        let mut segments = Vec::new();
        if bare {
            segments.push(Segment::AnyDepth);
        }
        for part in pattern.split('/').filter(|part| !part.is_empty()) {
            if part == "**" {
                if !matches!(segments.last(), Some(Segment::AnyDepth)) {
                    segments.push(Segment::AnyDepth);
                }
                continue;
            }
            let glob = GlobBuilder::new(part)
                .literal_separator(true)
                .build()
                .map_err(|e| {
                    BackendError::InvalidPath(format!("invalid glob pattern '{pattern}': {e}"))
                })?;
            segments.push(Segment::Name {
                matcher: glob.compile_matcher(),
                dot: part.starts_with('.'),
            });
        }
        Ok(Self { segments, bare })
    }

    /// Whether the pattern has no `/` (and so matches basenames).
    pub fn is_bare(&self) -> bool {
        self.bare
    }

    /// Whether `relative` (a path below the search root, without a leading
    /// `/`) matches.
    pub fn matches(&self, relative: &str) -> bool {
        let parts: Vec<&str> = relative.split('/').filter(|p| !p.is_empty()).collect();
        !parts.is_empty() && match_from(&self.segments, &parts)
    }
}

fn match_from(segments: &[Segment], parts: &[&str]) -> bool {
    match segments.split_first() {
        None => parts.is_empty(),
        Some((Segment::AnyDepth, rest)) => {
            for skip in 0..=parts.len() {
                if match_from(rest, &parts[skip..]) {
                    return true;
                }
                // `**` never descends through a dot-directory.
                if parts.get(skip).is_some_and(|part| part.starts_with('.')) {
                    return false;
                }
            }
            false
        }
        Some((Segment::Name { matcher, dot }, rest)) => match parts.split_first() {
            Some((first, tail)) => {
                (*dot || !first.starts_with('.'))
                    && matcher.is_match(first)
                    && match_from(rest, tail)
            }
            None => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::GlobPattern;

    fn matches(pattern: &str, relative: &str) -> bool {
        match GlobPattern::new(pattern) {
            Ok(p) => p.matches(relative),
            Err(e) => panic!("pattern {pattern:?} rejected: {e}"),
        }
    }

    #[test]
    fn truth_table() {
        for (pattern, relative, expected) in [
            // Bare patterns match the basename at any depth.
            ("*.py", "a.py", true),
            ("*.py", "src/deep/a.py", true),
            ("a.py", "src/a.py", true),
            ("*.py", "a.pyc", false),
            // Patterns with `/` are anchored at the root.
            ("src/*.py", "src/a.py", true),
            ("src/*.py", "lib/src/a.py", false),
            ("src/*.py", "src/deep/a.py", false),
            ("/src/*.py", "src/a.py", true),
            ("/a.py", "src/a.py", false),
            ("**/*.py", "a.py", true),
            ("**/*.py", "x/y/a.py", true),
            ("src/**", "src/x/y.txt", true),
            ("src/**/*.rs", "src/lib.rs", true),
            // Dot-names need an explicit `.`.
            ("*", ".env", false),
            (".*", ".env", true),
            ("*.py", ".hidden/a.py", false),
            ("**/*.py", ".git/a.py", false),
            (".git/*", ".git/config", true),
            ("**/.env", "app/.env", true),
            ("*", "x", true),
            // Braces and classes come from globset.
            ("*.{rs,toml}", "crate/Cargo.toml", true),
            ("file[0-9].txt", "file7.txt", true),
        ] {
            assert_eq!(
                matches(pattern, relative),
                expected,
                "{pattern:?} vs {relative:?}"
            );
        }
    }

    #[test]
    fn rejects_parent_components() {
        assert!(GlobPattern::new("../*.py").is_err());
        assert!(GlobPattern::new("src/../../x").is_err());
        assert!(GlobPattern::new("..*").is_ok());
    }
}
