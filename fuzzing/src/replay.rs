//! Replays every kept input of `fuzz/corpus/TARGET/` and every saved
//! crash of `fuzz/artifacts/TARGET/` through its target's check. A target
//! with no kept input fails: a corpus that went missing would otherwise
//! pass by checking nothing.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{Check, TARGETS};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files directly under `dir`, sorted; none when it does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a readable entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `check` on each input, naming the input that failed.
fn replay(target: &str, check: Check, inputs: &[PathBuf]) {
    for input in inputs {
        let data = fs::read(input).expect("a readable input");
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(
            outcome.is_ok(),
            "fuzz target {target} fails on {}",
            input.display()
        );
    }
}

#[test]
fn every_kept_input_passes_its_target() {
    for (target, check) in TARGETS {
        let kept = inputs(&fuzz_dir().join("corpus").join(target));
        assert!(!kept.is_empty(), "fuzz/corpus/{target} holds no input");
        replay(target, *check, &kept);
    }
}

#[test]
fn every_saved_crash_passes_its_target_now() {
    for (target, check) in TARGETS {
        let saved = inputs(&fuzz_dir().join("artifacts").join(target));
        replay(target, *check, &saved);
    }
}

/// The one line each file of `fuzz/fuzz_targets/` holds besides its
/// doc: libFuzzer's input handed to the check of the same name.
fn target_line(target: &str) -> String {
    format!("libfuzzer_sys::fuzz_target!(|data: &[u8]| deepfleet_fuzzing::{target}::check(data));")
}

/// The fuzz crate builds only under `make fuzz` (its own workspace, with
/// coverage instrumentation), so this is what keeps it building between
/// those runs: each target is the one line above, naming a check that
/// [`TARGETS`] holds, which the workspace's own build type-checks.
#[test]
fn every_fuzz_target_is_one_line_calling_its_check() {
    for (target, _) in TARGETS {
        let path = fuzz_dir().join("fuzz_targets").join(format!("{target}.rs"));
        let source = fs::read_to_string(&path).expect("a fuzz target");
        let code: Vec<&str> = source
            .lines()
            .filter(|line| !line.starts_with("//") && !line.trim().is_empty())
            .collect();
        assert_eq!(
            code,
            ["#![no_main]", target_line(target).as_str()],
            "{}",
            path.display()
        );
    }
}

#[test]
fn every_target_of_the_fuzz_crate_is_replayed() {
    let mut bins: Vec<String> = inputs(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter_map(|path| Some(path.file_stem()?.to_str()?.to_owned()))
        .collect();
    bins.sort_unstable();
    let replayed: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(bins, replayed, "fuzz/fuzz_targets/ against TARGETS");
}

#[test]
fn an_input_that_fails_its_check_fails_the_replay_by_name() {
    fn refuses_x(data: &[u8]) {
        assert!(!data.contains(&b'x'), "an x");
    }
    let dir = tempfile::tempdir().expect("a scratch dir");
    for (name, data) in [("a-fine", "abc"), ("b-bad", "xyz")] {
        fs::write(dir.path().join(name), data).expect("written");
    }
    let found = inputs(dir.path());
    let outcome = std::panic::catch_unwind(|| replay("t", refuses_x, &found));
    let message = outcome.expect_err("the bad input fails the replay");
    let message = message
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(message.contains("fuzz target t fails on") && message.ends_with("b-bad"));
}
