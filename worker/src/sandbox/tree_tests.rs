use super::*;
use chrono::Utc;
use pretty_assertions::assert_eq;

fn files(entries: &[(&str, &str)]) -> BTreeMap<String, FileData> {
    entries
        .iter()
        .map(|(p, c)| ((*p).to_owned(), FileData::text(*c, Utc::now())))
        .collect()
}

#[test]
fn files_land_at_their_paths_and_reserved_ones_are_hidden_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut seeded = files(&[
        ("/src/app.py", "print(1)\n"),
        ("/tmp/x", "scratch"),
        ("/a.txt", "a"),
    ]);
    seeded.insert(
        "/logo.png".to_owned(),
        FileData {
            content: "AAEC".to_owned(),
            encoding: Encoding::Base64,
            ..FileData::text("", Utc::now())
        },
    );
    let (before, notes) = materialize(dir.path(), &seeded, None).unwrap();
    assert_eq!(
        fs::read_to_string(dir.path().join("src/app.py")).unwrap(),
        "print(1)\n"
    );
    assert_eq!(fs::read(dir.path().join("logo.png")).unwrap(), [0, 1, 2]);
    assert!(!dir.path().join("tmp").exists());
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        ["/a.txt", "/logo.png", "/src/app.py"]
    );
    assert_eq!(
        notes,
        ["/tmp/x is hidden from commands: /tmp belongs to the sandbox's system"]
    );
}

#[test]
fn changes_deletions_and_what_cannot_flow_back_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let seeded = files(&[
        ("/keep.txt", "same"),
        ("/edit.txt", "old"),
        ("/gone.txt", "bye"),
        ("/now-binary.txt", "text"),
    ]);
    let (before, _) = materialize(dir.path(), &seeded, None).unwrap();
    let root = dir.path();
    fs::write(root.join("edit.txt"), "new").unwrap();
    fs::remove_file(root.join("gone.txt")).unwrap();
    fs::write(root.join("now-binary.txt"), [0xff, 0xfe]).unwrap();
    fs::create_dir_all(root.join("out/deep")).unwrap();
    fs::write(root.join("out/deep/result.csv"), "a,b\n").unwrap();
    std::os::unix::fs::symlink("/etc/shadow", root.join("shadow")).unwrap();
    // A link to a host directory is not walked into.
    std::os::unix::fs::symlink("/etc", root.join("host-etc")).unwrap();
    // The mount points bwrap leaves behind are not thread files.
    fs::create_dir(root.join("proc")).unwrap();
    fs::write(root.join("etcetera.txt"), "x").unwrap();
    fs::create_dir(root.join("tmp")).unwrap();
    fs::write(root.join("tmp/junk"), "x").unwrap();

    let changes = collect(root, &before);
    assert_eq!(
        changes,
        Changes {
            written: [
                ("/edit.txt".to_owned(), "new".to_owned()),
                ("/etcetera.txt".to_owned(), "x".to_owned()),
                ("/out/deep/result.csv".to_owned(), "a,b\n".to_owned()),
            ]
            .into(),
            deleted: vec!["/gone.txt".to_owned()],
            notes: vec![
                "/host-etc is a symbolic link, which is not kept".to_owned(),
                "/now-binary.txt was not kept: it is not UTF-8 text, and only text files flow \
                 back into the thread's files"
                    .to_owned(),
                "/shadow is a symbolic link, which is not kept".to_owned(),
            ],
        }
    );
}

#[test]
fn an_oversized_file_keeps_its_old_version_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (before, _) = materialize(dir.path(), &files(&[("/big.log", "small")]), None).unwrap();
    let big = fs::File::create(dir.path().join("big.log")).unwrap();
    big.set_len(MAX_FILE_BYTES + 1).unwrap();
    let changes = collect(dir.path(), &before);
    assert_eq!(changes.deleted, Vec::<String>::new());
    assert!(changes.written.is_empty());
    assert_eq!(
        changes.notes,
        [format!(
            "/big.log was not kept: it is larger than {MAX_FILE_BYTES} bytes"
        )]
    );
}

#[test]
fn a_tree_too_large_to_read_back_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (before, _) = materialize(dir.path(), &files(&[("/a.txt", "a")]), None).unwrap();
    fs::remove_file(dir.path().join("a.txt")).unwrap();
    fs::create_dir(dir.path().join("many")).unwrap();
    for i in 0..=MAX_ENTRIES {
        fs::write(dir.path().join(format!("many/{i}")), "").unwrap();
    }
    let changes = collect(dir.path(), &before);
    assert!(changes.deleted.is_empty());
    assert!(
        changes
            .notes
            .last()
            .unwrap()
            .contains("no deletion was applied"),
        "{:?}",
        changes.notes
    );
}
