//! The benchmark scenario (`bench/scenario.yaml`), the tasks that start it,
//! and the reading of the scripted server's request log into per-step
//! intervals.
//!
//! Every system under test talks to the same scripted server, so the one
//! clock that sees them all alike is the server's: with zero model
//! latency, the time between two consecutive model calls of a run is
//! exactly the framework's time for that step (tools, state, checkpoint,
//! prompt assembly, HTTP client), as the reference measured deepagents.

use std::collections::HashMap;
use std::time::Instant;

use anyhow::Context;
use deepfleet_proto::{AgentSpec, TaskLine};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::fleet::task;
use serde_json::Value;

/// The replay script shared by deepfleet and deepagents.
pub const SCRIPT: &str = include_str!("../scenario.yaml");

/// Model calls of one scenario run: 8 of the main agent, 2 of its subagent.
pub const CALLS_PER_RUN: usize = 10;
/// Model calls of one short (concurrency) run.
pub const QUICK_CALLS: usize = 3;
/// Main-agent calls of one scenario run.
const MAIN_CALLS: usize = 8;
/// The main-agent call that follows the `task` call: the interval ending
/// there contains a whole subagent run.
const AFTER_TASK: usize = 5;

/// The scripted model engine.
pub fn engine() -> anyhow::Result<ReplayEngine> {
    Ok(ReplayEngine::new(
        Script::from_yaml(SCRIPT).context("parsing bench/scenario.yaml")?,
    ))
}

/// The agent every deepfleet run uses: the default stack on the scripted
/// model, as `create_deep_agent(model)` is on the Python side.
pub fn spec(name: &str) -> anyhow::Result<AgentSpec> {
    Ok(AgentSpec::from_yaml(&format!(
        "name: {name}\nmodel: 'openai:scripted-model'\nlimits: {{max_steps: 50}}\n"
    ))?)
}

/// The `n`-th run of the full scenario.
pub fn scenario_task(n: usize) -> TaskLine {
    task(
        &format!("bench-{n}"),
        &format!("Bench run {n}: prepare the report."),
    )
}

/// The `n`-th short run (write, read, answer).
pub fn quick_task(n: usize) -> TaskLine {
    task(&format!("quick-{n}"), &format!("Quick run {n}"))
}

/// Whether a run's answer is the scenario's: it names the report the
/// final `grep` found (tool output formats differ between harnesses, the
/// path does not).
pub fn output_ok(id: &str, output: &str) -> bool {
    if let Some(n) = id.strip_prefix("bench-") {
        output.starts_with(&format!("Run {n} done:"))
            && output.contains(&format!("/work/report-{n}.md"))
    } else if let Some(n) = id.strip_prefix("quick-") {
        output == format!("Quick run {n} done.")
    } else {
        false
    }
}

/// Step intervals read from the server's log, in milliseconds.
#[derive(Debug, Default)]
pub struct Intervals {
    /// Ordinary steps (one tool call each, no delegation).
    pub plain: Vec<f64>,
    /// The step that delegates to a subagent (its whole 2-call run inside).
    pub task: Vec<f64>,
    /// Main-agent runs whose 8 calls were all seen.
    pub complete_runs: usize,
}

/// The scenario run a request belongs to: its first user message.
fn run_number(body: &Value) -> Option<usize> {
    let first_user = body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?;
    let text = first_user["content"].as_str()?;
    text.strip_prefix("Bench run ")?
        .split(':')
        .next()?
        .parse()
        .ok()
}

/// The body of run `n`'s fourth main-agent call: a typical mid-run
/// request (system prompt, tool schemas, a few turns).
pub fn sample_request(requests: &[(Instant, Value)], n: usize) -> Option<Value> {
    requests
        .iter()
        .map(|(_, body)| body)
        .filter(|body| run_number(body) == Some(n))
        .nth(3)
        .cloned()
}

/// Milliseconds between consecutive arrivals, in arrival order.
pub fn gaps(requests: &[(Instant, Value)]) -> Vec<f64> {
    requests
        .windows(2)
        .map(|pair| pair[1].0.duration_since(pair[0].0).as_secs_f64() * 1e3)
        .collect()
}

/// Splits the main agents' calls into step intervals, leaving out runs
/// numbered below `warmup`.
pub fn intervals(requests: &[(Instant, Value)], warmup: usize) -> Intervals {
    let mut calls: HashMap<usize, Vec<Instant>> = HashMap::new();
    for (at, body) in requests {
        if let Some(n) = run_number(body).filter(|n| *n >= warmup) {
            calls.entry(n).or_default().push(*at);
        }
    }
    let mut out = Intervals::default();
    for times in calls.values_mut() {
        if times.len() != MAIN_CALLS {
            continue;
        }
        times.sort();
        out.complete_runs += 1;
        for (k, pair) in times.windows(2).enumerate() {
            let ms = pair[1].duration_since(pair[0]).as_secs_f64() * 1e3;
            if k + 1 == AFTER_TASK {
                out.task.push(ms);
            } else {
                out.plain.push(ms);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn call(at: Instant, input: &str) -> (Instant, Value) {
        (
            at,
            json!({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": input}]}),
        )
    }

    #[test]
    fn splits_plain_and_task_steps_per_run() {
        let start = Instant::now();
        let mut log = Vec::new();
        for k in 0..MAIN_CALLS {
            // Main-agent calls 1 ms apart, except the delegated step (10 ms).
            let offset = k as u64 + if k >= AFTER_TASK { 9 } else { 0 };
            log.push(call(
                start + Duration::from_millis(offset),
                "Bench run 3: prepare the report.",
            ));
        }
        // The subagent's calls and a warm-up run are not main-agent steps.
        log.push(call(start, "Check /work/report-3.md for run 3 and answer."));
        log.push(call(start, "Bench run 0: prepare the report."));
        let found = intervals(&log, 1);
        assert_eq!(found.complete_runs, 1);
        assert_eq!(found.plain.len(), MAIN_CALLS - 2);
        assert!(found.plain.iter().all(|ms| (ms - 1.0).abs() < 1e-6));
        assert_eq!(found.task.len(), 1);
        assert!((found.task[0] - 10.0).abs() < 1e-6);
    }

    #[test]
    fn checks_answers_by_run() {
        assert!(output_ok("bench-4", "Run 4 done: /work/report-4.md"));
        assert!(!output_ok("bench-4", "Run 4 done: /work/report-5.md"));
        assert!(output_ok("quick-2", "Quick run 2 done."));
        assert!(!output_ok("other", "Quick run 2 done."));
    }

    #[test]
    fn the_script_parses_and_the_spec_validates() {
        assert!(engine().is_ok());
        assert!(spec("bench").is_ok());
    }
}
