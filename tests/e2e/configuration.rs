//! Configuration as a process meets it: a `DEEPFLEET__...` variable meant
//! for something else is a warning, not a failed start-up; logs on a pipe
//! are JSON lines and text when asked; `--help` shows each flag's
//! variable; the example configuration file starts the binary.
//!
//! Needs no servers: `deepfleet keygen` reads the configuration like
//! every command and then touches nothing.

use std::process::{Command, Output};

/// `deepfleet ARGS` with `vars` and no `DEEPFLEET` variables or
/// `RUST_LOG` of the test's own environment.
fn deepfleet(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deepfleet"));
    for (name, _) in std::env::vars_os() {
        let inherited = name.to_string_lossy();
        if inherited.to_uppercase().starts_with("DEEPFLEET") || inherited == "RUST_LOG" {
            command.env_remove(&name);
        }
    }
    command
        .args(args)
        .envs(vars.iter().copied())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_variable_naming_no_setting_is_a_warning_in_json_on_a_pipe() {
    let out = deepfleet(&["keygen"], &[("DEEPFLEET__LOG", "debug")]);
    let logs = stderr(&out);
    assert!(out.status.success(), "{logs}");
    let line: serde_json::Value = serde_json::from_str(logs.trim()).unwrap();
    assert_eq!(line["level"], "WARN", "{logs}");
    assert_eq!(line["fields"]["variable"], "DEEPFLEET__LOG", "{logs}");
    let message = line["fields"]["message"].as_str().unwrap();
    assert!(message.contains("DEEPFLEET__LOG_FORMAT"), "{message}");
}

#[test]
fn logs_are_text_when_the_setting_says_so() {
    let out = deepfleet(
        &["keygen"],
        &[
            ("DEEPFLEET__LOG", "debug"),
            ("DEEPFLEET__LOG_FORMAT", "text"),
        ],
    );
    let logs = stderr(&out);
    assert!(out.status.success(), "{logs}");
    assert!(serde_json::from_str::<serde_json::Value>(logs.trim()).is_err());
    assert!(logs.contains("WARN"), "{logs}");
    assert!(logs.contains("DEEPFLEET__LOG names no setting"), "{logs}");
    assert!(!logs.contains('\u{1b}'), "colours on a pipe: {logs:?}");
}

#[test]
fn a_variable_of_the_wrong_type_stops_the_start_naming_it() {
    let out = deepfleet(&["keygen"], &[("DEEPFLEET__WORKER__GRACE_SECS", "soon")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("DEEPFLEET__WORKER__GRACE_SECS"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_shows_the_variable_of_each_flag_that_has_one() {
    let worker = deepfleet(&["worker", "--help"], &[]);
    let help = String::from_utf8_lossy(&worker.stdout);
    for variable in [
        "DEEPFLEET_CONFIG",
        "DEEPFLEET__QUEUE",
        "DEEPFLEET__STORE",
        "DEEPFLEET__WORKER__CONCURRENCY",
        "DEEPFLEET__METRICS_LISTEN",
        "DEEPFLEET__OTLP_ENDPOINT",
    ] {
        assert!(help.contains(&format!("[env: {variable}=")), "{help}");
    }
    let scheduler = deepfleet(&["scheduler", "--help"], &[]);
    let help = String::from_utf8_lossy(&scheduler.stdout);
    assert!(
        help.contains("[env: DEEPFLEET__SCHEDULER__LISTEN="),
        "{help}"
    );
}

#[test]
fn the_example_file_starts_the_binary_quietly() {
    let out = deepfleet(
        &["--config", "deploy/deepfleet.example.toml", "keygen"],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}
