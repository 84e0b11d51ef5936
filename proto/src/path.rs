//! The rules of virtual paths: what the file tools, seed files and every
//! backend accept.
//!
//! Every backend sees the same absolute, normalised form, so a file written
//! as `notes.md` is found again as `/notes.md` or `/./notes.md`. The error
//! texts are the ones deepagents returns, because models tuned on it react
//! to them.

/// Normalises `path` to an absolute virtual path (`\` becomes `/`, `.` and
/// empty components are dropped, a leading `/` is forced), or returns the
/// model-facing error text when the path could escape the root or is a
/// Windows drive path.
pub fn validate(path: &str) -> Result<String, String> {
    let unified = path.replace('\\', "/");
    if path.starts_with('~') || unified.split('/').any(|part| part == "..") {
        return Err(format!("Error: Path traversal not allowed: {path}"));
    }
    if is_windows_absolute(path) {
        return Err(format!(
            "Error: Windows absolute paths are not supported: {path}. Please use virtual paths starting with / (e.g., /workspace/file.txt)"
        ));
    }
    let parts: Vec<&str> = unified
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    Ok(format!("/{}", parts.join("/")))
}

/// `C:`-style prefixes: a drive letter followed by a colon.
fn is_windows_absolute(path: &str) -> bool {
    let mut chars = path.chars();
    matches!(
        (chars.next(), chars.next()),
        (Some(letter), Some(':')) if letter.is_ascii_alphabetic()
    )
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::validate;

    #[test]
    fn normalises_to_absolute_paths() {
        for (input, expected) in [
            ("/notes.md", "/notes.md"),
            ("notes.md", "/notes.md"),
            ("/a//b/./c.txt", "/a/b/c.txt"),
            ("./a/b/", "/a/b"),
            ("a\\b\\c.txt", "/a/b/c.txt"),
            ("/", "/"),
            ("", "/"),
            ("//server/x", "/server/x"),
            ("/dir/..name", "/dir/..name"),
            ("/dir/x~", "/dir/x~"),
        ] {
            assert_eq!(validate(input), Ok(expected.to_owned()), "input {input:?}");
        }
    }

    #[test]
    fn rejects_traversal() {
        for input in ["../etc", "/a/../../etc/passwd", "/a/..", "..", "a\\..\\b"] {
            assert_eq!(
                validate(input),
                Err(format!("Error: Path traversal not allowed: {input}")),
            );
        }
    }

    #[test]
    fn rejects_home_paths() {
        assert_eq!(
            validate("~/secret.txt"),
            Err("Error: Path traversal not allowed: ~/secret.txt".to_owned()),
        );
    }

    #[test]
    fn rejects_windows_drive_paths() {
        assert_eq!(
            validate("C:\\x"),
            Err("Error: Windows absolute paths are not supported: C:\\x. Please use virtual paths starting with / (e.g., /workspace/file.txt)".to_owned()),
        );
        assert!(validate("d:/data/file.txt").is_err());
    }
}
