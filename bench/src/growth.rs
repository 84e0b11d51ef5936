//! Item 5: bytes written to and read from Redis per step as a
//! conversation grows.
//!
//! One run loops on `read_file` for hundreds of steps; the testkit drives
//! its steps one at a time (`deepfleet_testkit::growth`).

use std::path::Path;

use anyhow::Context;
use deepfleet_proto::{AgentSpec, TaskLine};
use deepfleet_testkit::fleet::task;
use deepfleet_testkit::growth::{self, StepBytes};
use deepfleet_testkit::script::ScriptBuilder;

/// The turn the looping run answers at.
const LAST_TURN: u32 = 600;

/// Bytes each step wrote and read, steps `0..=last`.
pub async fn bytes_per_step(work_dir: &Path, last: usize) -> anyhow::Result<Vec<StepBytes>> {
    let script = work_dir.join("growth-script.yaml");
    let text = ScriptBuilder::new()
        .reading_until(LAST_TURN, "/notes.md")
        .build();
    std::fs::write(&script, text).with_context(|| format!("writing {}", script.display()))?;
    let spec = AgentSpec::from_yaml(&format!(
        "name: bench-growth\nmodel: 'replay:{}'\nlimits: {{max_steps: 1000}}\n",
        script.display()
    ))?;
    let task = TaskLine {
        files: Some([("/notes.md".to_owned(), "a short note\n".to_owned())].into()),
        ..task("long", "read the notes, again and again")
    };
    growth::bytes_per_step(&spec, &task, last).await
}
