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

/// A generous bound on a call that must not block: far above what a
/// refusal takes, far below forever.
const NO_HANG: std::time::Duration = std::time::Duration::from_secs(10);

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success(), "mkfifo {}", path.display());
}

/// Issue #14: opening a FIFO for reading blocks until a writer comes, so
/// `read_file` on one hung its step forever.
#[tokio::test]
async fn reading_a_fifo_is_refused_without_blocking() {
    let (dir, b) = setup();
    mkfifo(&dir.path().join("root/pipe"));
    let read = tokio::time::timeout(NO_HANG, b.read("/pipe"))
        .await
        .expect("reading a FIFO returns");
    let err = read.unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    // Searches and listings pass it by, and do not block either.
    b.write("/a.txt", "alpha").await.unwrap();
    let grep = tokio::time::timeout(NO_HANG, b.grep("alpha", None, None, 5))
        .await
        .expect("grep returns")
        .unwrap();
    assert_eq!(grep.matches.len(), 1);
    let glob = tokio::time::timeout(NO_HANG, b.glob("*", None))
        .await
        .expect("glob returns")
        .unwrap();
    assert_eq!(
        glob.into_iter().map(|f| f.path).collect::<Vec<_>>(),
        ["/a.txt"]
    );
}

/// Issue #14: a device reports a size of 0, so the size check let
/// `/dev/zero` through and the read grew the worker until it died.
#[tokio::test]
async fn reading_a_device_is_refused_before_any_byte() {
    let b = LocalBackend::new("/dev").unwrap();
    for device in ["/zero", "/urandom"] {
        let read = tokio::time::timeout(NO_HANG, b.read(device))
            .await
            .expect("reading a device returns");
        let err = read.unwrap_err();
        assert!(
            err.to_string().contains("not a regular file"),
            "{device}: {err}"
        );
    }
}

/// Issue #14: glob and grep used to copy every file of the tree into
/// memory first. Glob reads no content; grep holds one file at a time,
/// skips files over the cap, and stops once its matches hold too much.
#[tokio::test]
async fn searches_hold_one_bounded_file_at_a_time() {
    let (dir, b) = setup();
    let root = dir.path().join("root");
    fs::write(
        root.join("big.txt"),
        vec![b'x'; MAX_FILE_BYTES as usize + 1],
    )
    .unwrap();
    b.write("/small.txt", "x marks").await.unwrap();
    let glob = b.glob("*.txt", None).await.unwrap();
    let sizes: Vec<(String, u64)> = glob.into_iter().map(|f| (f.path, f.size)).collect();
    assert_eq!(
        sizes,
        [
            ("/big.txt".to_owned(), MAX_FILE_BYTES + 1),
            ("/small.txt".to_owned(), 7)
        ]
    );
    let grep = b.grep("x", None, None, 10).await.unwrap();
    let found: Vec<&str> = grep.matches.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(found, ["/small.txt"]);
}
