//! Virtual path validation: what every file tool, seed file and backend
//! route accepts.
//!
//! Each input is a path as a model, a task line or a submission could
//! give it. Checked: validation never panics; an accepted path is
//! absolute, normalised (no empty, `.` or `..` component, no `\`) and
//! validates to itself again, keeps the input's components in order, and
//! joined to a local root never leaves it; a refused path names itself in
//! the error and is one of the kinds refused: traversal, a home path or a
//! Windows drive path.

use std::path::{Component, Path};

use deepfleet_proto::path::validate;

/// Checks one input; a failure panics, as libFuzzer expects.
pub fn check(data: &[u8]) {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let unified = input.replace('\\', "/");
    let kept: Vec<&str> = unified
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let traversal = input.starts_with('~') || unified.split('/').any(|part| part == "..");
    let drive = {
        let mut chars = input.chars();
        matches!((chars.next(), chars.next()), (Some(c), Some(':')) if c.is_ascii_alphabetic())
    };
    match validate(input) {
        Ok(path) => {
            assert!(!traversal && !drive, "{input:?} was accepted as {path:?}");
            assert!(path.starts_with('/'), "{path:?} is not absolute");
            assert!(!path.contains('\\'), "{path:?} keeps a backslash");
            assert!(path == "/" || !path.ends_with('/'), "{path:?}");
            let parts: Vec<&str> = path.split('/').skip(1).filter(|p| !p.is_empty()).collect();
            assert_eq!(parts, kept, "{input:?} became {path:?}");
            assert!(
                path == "/"
                    || path
                        .split('/')
                        .skip(1)
                        .all(|p| !p.is_empty() && p != "." && p != ".."),
                "{path:?} is not normalised"
            );
            assert_eq!(validate(&path), Ok(path.clone()), "not idempotent");
            let root = Path::new("/srv/root");
            let joined = root.join(path.trim_start_matches('/'));
            assert!(
                joined
                    .components()
                    .skip(root.components().count())
                    .all(|c| matches!(c, Component::Normal(_))),
                "{path:?} leaves the root as {joined:?}"
            );
            assert!(joined.starts_with(root));
        }
        Err(message) => {
            assert!(traversal || drive, "{input:?} was refused: {message}");
            assert!(message.starts_with("Error: "), "{message}");
            assert!(message.contains(input), "{message} does not name {input:?}");
        }
    }
}
