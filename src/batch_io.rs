//! Reading batch inputs and writing results: tasks JSONL, agent specs,
//! results JSONL and the summary table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use deepfleet_model::Providers;
use deepfleet_proto::{
    AgentSpec, CallUsage, PendingReview, ResultLine, ResultStatus, TaskLine, UsageByCaller,
};
use deepfleet_worker::agent::AgentOptions;

/// Reads a tasks file. Every malformed line is reported (with its number)
/// before anything runs, so a bad batch starts nothing.
pub fn read_tasks(path: &Path) -> anyhow::Result<Vec<TaskLine>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading tasks from {}", path.display()))?;
    let mut tasks = Vec::new();
    let mut errors = Vec::new();
    let mut ids = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<TaskLine>(line) {
            Ok(task) => {
                if let Some(first) = ids.insert(task.id.clone(), n) {
                    errors.push(format!(
                        "line {n}: duplicate id {:?} (first on line {first})",
                        task.id
                    ));
                }
                tasks.push(task);
            }
            Err(e) => errors.push(format!("line {n}: {e}")),
        }
    }
    if !errors.is_empty() {
        bail!(
            "{} has {} invalid line(s):\n  {}",
            path.display(),
            errors.len(),
            errors.join("\n  ")
        );
    }
    if tasks.is_empty() {
        bail!("{} has no tasks", path.display());
    }
    Ok(tasks)
}

/// Loads an agent spec and checks it as the workers would run it
/// (`providers`, harness profiles in `options`), so a spec that can never
/// work fails here, naming the field and line, before any task runs. A
/// `replay:PATH` model with a relative path is resolved against the
/// spec's directory, so examples run from anywhere; `model_override`
/// replaces every model of the spec.
pub fn load_spec(
    path: &Path,
    model_override: Option<&str>,
    providers: &Providers,
    options: &AgentOptions,
) -> anyhow::Result<AgentSpec> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading agent spec {}", path.display()))?;
    let mut spec =
        AgentSpec::from_yaml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    spec.model = resolve_replay(dir, model_override.unwrap_or(&spec.model));
    for sub in &mut spec.subagents {
        sub.model = match model_override {
            Some(m) => Some(m.to_owned()),
            None => sub.model.as_deref().map(|m| resolve_replay(dir, m)),
        };
    }
    deepfleet_worker::preflight::check(&spec, providers, options)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.located(&text)))?;
    Ok(spec)
}

/// `replay:REL` relative to `dir`; other models unchanged.
fn resolve_replay(dir: &Path, model: &str) -> String {
    match model.strip_prefix("replay:") {
        Some(rel) if Path::new(rel).is_relative() => {
            let abs: PathBuf = dir.join(rel);
            format!("replay:{}", abs.canonicalize().unwrap_or(abs).display())
        }
        _ => model.to_owned(),
    }
}

/// Totals of a finished batch.
#[derive(Debug, Default)]
pub struct Summary {
    runs: usize,
    /// Of `runs`, those an earlier, interrupted process wrote.
    earlier: usize,
    by_status: BTreeMap<&'static str, usize>,
    /// The result lines' model calls and tokens, summed caller by caller.
    usage: UsageByCaller,
    /// The result lines' costs, in nano-dollars (exact, whatever the
    /// number of lines).
    cost_nano_usd: u64,
}

/// One caller's figure in a column of the usage table.
type Figure = fn(&CallUsage) -> u64;

/// The columns of the usage table: a heading and one caller's figure.
const USAGE_COLUMNS: [(&str, Figure); 4] = [
    ("model calls", |u| u.model_calls),
    ("input tokens", |u| u.input_tokens),
    ("cached", |u| u.cached_input_tokens),
    ("output tokens", |u| u.output_tokens),
];

impl Summary {
    /// Counts one result.
    pub fn add(&mut self, line: &ResultLine) {
        self.runs += 1;
        let status = match line.status {
            ResultStatus::Success => "success",
            ResultStatus::Error => "error",
            ResultStatus::Interrupted => "interrupted",
            ResultStatus::Timeout => "timeout",
            ResultStatus::BudgetExceeded => "budget_exceeded",
        };
        *self.by_status.entry(status).or_default() += 1;
        self.usage.add(&line.by_caller);
        self.cost_nano_usd += deepfleet_proto::cost::nanos(line.cost_usd);
    }

    /// What the batch's runs cost, in dollars.
    pub fn cost_usd(&self) -> f64 {
        deepfleet_proto::cost::usd(self.cost_nano_usd)
    }

    /// Counts one result an earlier process of the same batch wrote.
    pub fn add_earlier(&mut self, line: &ResultLine) {
        self.add(line);
        self.earlier += 1;
    }

    /// Whether every run succeeded.
    pub fn all_succeeded(&self) -> bool {
        self.by_status.get("success").copied().unwrap_or(0) == self.runs
    }

    /// The table printed at the end of a batch: runs, time, then model
    /// calls and tokens by caller (the split of the metrics' `caller`
    /// label) and their total.
    pub fn table(&self, wall: Duration) -> String {
        let secs = wall.as_secs_f64();
        let mut rows: Vec<(String, String)> = vec![("runs".into(), self.runs.to_string())];
        for (status, n) in &self.by_status {
            rows.push((format!("  {status}"), n.to_string()));
        }
        if self.earlier > 0 {
            rows.push(("  written before".into(), self.earlier.to_string()));
        }
        rows.push(("wall time".into(), format!("{secs:.2} s")));
        rows.push(("cost".into(), format!("${:.6}", self.cost_usd())));
        if secs > 0.0 {
            let now = self.runs - self.earlier;
            rows.push(("runs/s".into(), format!("{:.1}", now as f64 / secs)));
        }
        let total = self.usage.total();
        let usage: Vec<(&str, &CallUsage)> = self
            .usage
            .callers()
            .into_iter()
            .chain([("total", &total)])
            .collect();
        let width = rows
            .iter()
            .map(|(k, _)| k.len())
            .chain(usage.iter().map(|(k, _)| k.len()))
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for (k, v) in rows {
            let _ = writeln!(out, "{k:<width$}  {v:>12}");
        }
        let _ = write!(out, "\n{:<width$}", "");
        for (heading, _) in USAGE_COLUMNS {
            let _ = write!(out, "  {heading:>13}");
        }
        for (caller, figures) in usage {
            let _ = write!(out, "\n{caller:<width$}");
            for (_, figure) in USAGE_COLUMNS {
                let _ = write!(out, "  {:>13}", figure(figures));
            }
        }
        out.push('\n');
        out
    }
}

/// How to resume the interrupted runs of a batch: for each task, the run
/// to resume and the calls waiting, then the command to run.
pub fn resume_hint(reviews: &[(String, PendingReview)], state_file: Option<&Path>) -> String {
    let mut out = format!("\n{} run(s) wait for a human decision:\n", reviews.len());
    for (task, review) in reviews {
        let calls: Vec<String> = review
            .action_requests
            .iter()
            .zip(&review.review_configs)
            .map(|(request, config)| {
                let allowed: Vec<&str> = config
                    .allowed_decisions
                    .iter()
                    .map(|d| d.as_str())
                    .collect();
                format!("{} [{}]", request.name, allowed.join("|"))
            })
            .collect();
        let _ = writeln!(
            out,
            "  task {task}: run {} on {}",
            review.run_id,
            calls.join(", ")
        );
    }
    let where_ = match state_file {
        Some(path) => format!("--state {}", path.display()),
        None => "--queue ... --store ...".to_owned(),
    };
    let _ = writeln!(
        out,
        "resume each with one decision per call, in order:\n  deepfleet resume {where_} --run RUN_ID --decisions decisions.json\n\
         decisions.json: [{{\"type\": \"approve\"}}, {{\"type\": \"reject\", \"message\": \"why\"}}, ...]"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_lines_are_all_reported_with_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"id\": \"a\", \"input\": \"x\"}\n{bad json}\n\n{\"id\": \"a\", \"input\": \"y\"}\n{\"id\": \"b\", \"input\": \"z\", \"fles\": {}}\n",
        )
        .unwrap();
        let err = read_tasks(&path).unwrap_err().to_string();
        assert!(err.contains("3 invalid line(s)"), "{err}");
        assert!(err.contains("line 2:"), "{err}");
        assert!(
            err.contains("line 4: duplicate id \"a\" (first on line 1)"),
            "{err}"
        );
        assert!(err.contains("line 5: unknown field `fles`"), "{err}");
    }

    #[test]
    fn resume_hint_names_runs_calls_and_the_command() {
        use deepfleet_proto::{ActionRequest, DecisionType, ReviewConfig};
        let review = PendingReview {
            run_id: "r-1".into(),
            thread_id: "t-1".into(),
            action_requests: vec![ActionRequest {
                name: "write_file".into(),
                args: serde_json::json!({}),
                description: "d".into(),
                tool_call_id: "c1".into(),
            }],
            review_configs: vec![ReviewConfig {
                action_name: "write_file".into(),
                allowed_decisions: vec![DecisionType::Approve, DecisionType::Reject],
            }],
        };
        let hint = resume_hint(&[("t1".into(), review)], Some(Path::new("s.json")));
        assert!(
            hint.contains("task t1: run r-1 on write_file [approve|reject]"),
            "{hint}"
        );
        assert!(
            hint.contains(
                "deepfleet resume --state s.json --run RUN_ID --decisions decisions.json"
            ),
            "{hint}"
        );
    }

    #[test]
    fn replay_paths_resolve_against_the_spec() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.yaml"), "rules: []\n").unwrap();
        let spec_path = dir.path().join("agent.yaml");
        std::fs::write(&spec_path, "name: a\nmodel: replay:s.yaml\n").unwrap();
        let _ = rustls::crypto::ring::default_provider().install_default();
        let providers =
            deepfleet_replay::register(Providers::with_env(Default::default(), |name| {
                (name == "OPENAI_API_KEY").then(|| "sk-test".to_owned())
            }));
        let options = AgentOptions::default();
        let spec = load_spec(&spec_path, None, &providers, &options).unwrap();
        let expected = dir.path().join("s.yaml").canonicalize().unwrap();
        assert_eq!(spec.model, format!("replay:{}", expected.display()));
        let spec = load_spec(
            &spec_path,
            Some("openai:gpt-4.1-mini"),
            &providers,
            &options,
        )
        .unwrap();
        assert_eq!(spec.model, "openai:gpt-4.1-mini");
    }

    fn line(id: &str, by_caller: deepfleet_proto::UsageByCaller) -> ResultLine {
        ResultLine {
            id: id.into(),
            status: ResultStatus::Success,
            output: String::new(),
            error: None,
            steps: u32::try_from(by_caller.main.model_calls).unwrap(),
            usage: by_caller.total().tokens().into(),
            by_caller,
            cost_usd: 0.0,
            files: BTreeMap::new(),
            review: None,
        }
    }

    /// The figures of the table's row `name`.
    fn row(table: &str, name: &str) -> Vec<u64> {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row {name} in\n{table}"));
        line.split_whitespace()
            .skip(1)
            .map(|n| n.parse().unwrap())
            .collect()
    }

    /// The table's usage rows are the result lines' split, summed caller
    /// by caller, and its total row their sum (issue 19: "model calls"
    /// once counted the main runs only while tokens counted subagents).
    #[test]
    fn the_tables_usage_is_the_sum_over_result_lines() {
        use deepfleet_proto::{CallUsage, UsageByCaller};
        let calls = |model_calls, input_tokens, cached_input_tokens| CallUsage {
            model_calls,
            input_tokens,
            output_tokens: 2 * model_calls,
            cached_input_tokens,
        };
        let lines = [
            line(
                "a",
                UsageByCaller {
                    main: calls(3, 300, 100),
                    subagents: calls(4, 200, 0),
                    summarization: calls(1, 50, 0),
                },
            ),
            line(
                "b",
                UsageByCaller {
                    main: calls(2, 120, 20),
                    ..UsageByCaller::default()
                },
            ),
        ];
        let mut summary = Summary::default();
        for l in &lines {
            summary.add(l);
        }
        let table = summary.table(Duration::from_secs(2));
        assert_eq!(row(&table, "main"), [5, 420, 120, 10], "{table}");
        assert_eq!(row(&table, "subagents"), [4, 200, 0, 8], "{table}");
        assert_eq!(row(&table, "summarization"), [1, 50, 0, 2], "{table}");
        let total = row(&table, "total");
        let calls: u64 = lines.iter().map(|l| l.by_caller.total().model_calls).sum();
        let input: u64 = lines.iter().map(|l| l.usage.input_tokens).sum();
        let cached: u64 = lines.iter().map(|l| l.usage.cached_input_tokens).sum();
        let output: u64 = lines.iter().map(|l| l.usage.output_tokens).sum();
        assert_eq!(total, [calls, input, cached, output], "{table}");
        assert!(table.contains("model calls"), "{table}");
    }
}
