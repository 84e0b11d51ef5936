//! Interrupting a batch: SIGINT or SIGTERM to `deepfleet run` (embedded)
//! or `deepfleet submit` (distributed) in the middle of a batch keeps the
//! result line of every run that had finished, and running the same
//! command again picks up where it stopped: finished tasks are not run
//! again and keep their one line, runs still going are followed (or, in
//! embedded mode, continued from the state file) rather than started
//! again.
//!
//! The embedded (with `--state`) and distributed scenarios interrupt
//! their batch twice (SIGINT, then SIGTERM) and let a third invocation
//! finish it. After each interruption the store is the oracle: the runs
//! it shows finished are exactly the lines of the results file, one each.
//! At the end every task has one line, one run and one model call.
//! Without `--state` the model calls are the oracle. The model is the replay engine served slowly, so
//! each interruption lands with runs finished, in flight and queued.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{ResultLine, ResultStatus, RunRecord, RunStatus};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::fleet::API_KEY;
use deepfleet_testkit::script::{ScriptBuilder, When};
use tokio::process::{Child, Command};

use crate::support::{AMQP_URL, CONTEXT_KEY, Fleet, REDIS_URL, distributed, fleet};

/// Tasks in the batch.
pub(crate) const TASKS: usize = 32;
/// How long each model call takes.
pub(crate) const LATENCY: Duration = Duration::from_millis(300);
/// Steps at once: per embedded process, per worker process.
pub(crate) const CONCURRENCY: usize = 2;
/// How long anything in these scenarios may take.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

fn input(i: usize) -> String {
    format!("interrupted batch task {i:02}")
}

/// A batch of [`TASKS`] one-call runs on a slow scripted model, in a
/// directory of its own.
pub(crate) struct SlowBatch {
    dir: tempfile::TempDir,
    pub(crate) server: ScriptedServer,
}

impl SlowBatch {
    pub(crate) async fn new() -> Self {
        let script = ScriptBuilder::new().answer(When::always(), "done: {{input}}");
        let engine = ReplayEngine::new(Script::from_yaml(&script.build()).unwrap());
        let server = ScriptedServer::start(Arc::new(engine), LATENCY)
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let tasks: String = (0..TASKS)
            .map(|i| {
                format!(
                    "{}\n",
                    serde_json::json!({"id": format!("t{i:02}"), "input": input(i)})
                )
            })
            .collect();
        std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
        std::fs::write(
            dir.path().join("agent.yaml"),
            "name: slow-batch\nmodel: 'openai:scripted-model'\n",
        )
        .unwrap();
        SlowBatch { dir, server }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `deepfleet run` on the batch, its store kept in `state.json` when
    /// `state`.
    fn run(&self, state: bool) -> Child {
        let concurrency = CONCURRENCY.to_string();
        let mut args = vec![
            "run",
            "tasks.jsonl",
            "--agent",
            "agent.yaml",
            "--out",
            "results.jsonl",
            "--concurrency",
            &concurrency,
        ];
        if state {
            args.extend(["--state", "state.json"]);
        }
        self.deepfleet(&args)
            .env("OPENAI_BASE_URL", self.server.url())
            .env("OPENAI_API_KEY", API_KEY)
            .spawn()
            .unwrap()
    }

    /// `deepfleet submit` of the batch into `fleet`.
    fn submit(&self, fleet: &Fleet) -> Child {
        self.deepfleet(&["submit", "tasks.jsonl", "--agent", "agent.yaml"])
            .args(["--queue", AMQP_URL, "--store", REDIS_URL])
            .args(["--out", "results.jsonl"])
            .env("DEEPFLEET__QUEUE_NAME", &fleet.queue_name)
            .env("DEEPFLEET__KEY_PREFIX", &fleet.prefix)
            .env("OPENAI_API_KEY", API_KEY)
            .spawn()
            .unwrap()
    }

    /// Submits the batch again and returns once the command has attached
    /// to it (it prints the batch's id first): the runs the first submit
    /// left in the fleet go on as soon as the workers do, and must not
    /// end before a follower is there to see them, so the workers are let
    /// go only after this. Its stderr is passed on.
    async fn submit_attached(&self, fleet: &Fleet) -> Child {
        use tokio::io::{AsyncBufReadExt, BufReader};
        let mut cmd = self.deepfleet(&["submit", "tasks.jsonl", "--agent", "agent.yaml"]);
        cmd.args(["--queue", AMQP_URL, "--store", REDIS_URL])
            .args(["--out", "results.jsonl"])
            .env("DEEPFLEET__QUEUE_NAME", &fleet.queue_name)
            .env("DEEPFLEET__KEY_PREFIX", &fleet.prefix)
            .env("OPENAI_API_KEY", API_KEY)
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let attached = tokio::time::timeout(PATIENCE, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                eprintln!("{line}");
                if line.starts_with("batch ") {
                    return;
                }
            }
            panic!("the submit exited before attaching to its batch");
        })
        .await;
        assert!(attached.is_ok(), "the submit did not attach to its batch");
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("{line}");
            }
        });
        child
    }

    pub(crate) fn deepfleet(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_deepfleet"));
        cmd.current_dir(self.dir.path())
            .args(args)
            .env("DEEPFLEET__CONTEXT_KEY", CONTEXT_KEY.as_str())
            .env("RUST_LOG", "warn")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        cmd
    }

    /// The results file's lines (none before it exists).
    pub(crate) fn lines(&self) -> Vec<ResultLine> {
        std::fs::read_to_string(self.path("results.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Model calls so far, by the task whose input they carry.
    pub(crate) fn calls_per_task(&self) -> BTreeMap<String, usize> {
        let mut calls = BTreeMap::new();
        for request in self.server.requests() {
            let body = request.to_string();
            let task = (0..TASKS)
                .find(|&i| body.contains(&input(i)))
                .unwrap_or_else(|| panic!("a model call of no task: {body}"));
            *calls.entry(format!("t{task:02}")).or_default() += 1;
        }
        calls
    }

    /// Waits until the model has taken `n` calls in all.
    pub(crate) async fn wait_for_calls(&self, n: usize) {
        let waited = tokio::time::timeout(PATIENCE, async {
            while self.server.requests().len() < n {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "the model got {} of {n} calls in time",
            self.server.requests().len()
        );
    }

    /// The top-level runs the embedded state file holds.
    fn embedded_runs(&self) -> Vec<RunRecord> {
        let text = std::fs::read_to_string(self.path("state.json")).unwrap();
        let snapshot: serde_json::Value = serde_json::from_str(&text).unwrap();
        let runs: BTreeMap<String, RunRecord> =
            serde_json::from_value(snapshot["state"]["runs"].clone()).unwrap();
        runs.into_values().filter(|r| r.parent.is_none()).collect()
    }
}

/// The top-level runs `fleet`'s Redis holds.
pub(crate) async fn fleet_runs(fleet: &Fleet) -> Vec<RunRecord> {
    let client = redis::Client::open(REDIS_URL).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let pattern = format!("{}:run:*", fleet.prefix);
    let (mut cursor, mut ids) = (0_u64, Vec::new());
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut con)
            .await
            .unwrap();
        ids.extend(keys.into_iter().filter_map(|k| {
            k.strip_prefix(&format!("{}:run:", fleet.prefix))
                .map(str::to_owned)
        }));
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    let mut runs = Vec::new();
    for id in ids {
        if let Some(run) = fleet.store.find_run(&id).await.unwrap() {
            runs.extend(Some(run).filter(|r| r.parent.is_none()));
        }
    }
    runs
}

/// Whether a run has ended as a batch sees it (a run parked on a human
/// decision has its line too).
fn finished(status: RunStatus) -> bool {
    status.is_terminal() || status == RunStatus::AwaitingHuman
}

/// The store's runs agree with the results file: each task has at most
/// one run, and the tasks whose run finished are exactly the lines, one
/// each. Returns how many lines there are.
fn assert_lines_match_store(lines: &[ResultLine], runs: &[RunRecord], when: &str) -> usize {
    let mut runs_per_task: BTreeMap<&str, usize> = BTreeMap::new();
    for run in runs {
        *runs_per_task
            .entry(run.task_id.as_deref().unwrap_or("?"))
            .or_default() += 1;
    }
    let twice: Vec<_> = runs_per_task.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "{when}: tasks with more than one run: {twice:?}"
    );
    let done: BTreeSet<&str> = runs
        .iter()
        .filter(|r| finished(r.status))
        .filter_map(|r| r.task_id.as_deref())
        .collect();
    let mut written: BTreeMap<&str, usize> = BTreeMap::new();
    for line in lines {
        *written.entry(line.id.as_str()).or_default() += 1;
    }
    let repeated: Vec<_> = written.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        repeated.is_empty(),
        "{when}: repeated result lines: {repeated:?}"
    );
    let written: BTreeSet<&str> = written.into_keys().collect();
    assert_eq!(
        done, written,
        "{when}: the runs the store shows finished (left) and the result lines (right)"
    );
    assert!(
        !done.is_empty(),
        "{when}: no run had finished; the test proves nothing"
    );
    lines.len()
}

/// Sends `signal` (`INT`, `TERM`, `STOP`, `CONT`) to `pid`.
pub(crate) fn signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} {pid} failed");
}

/// Interrupts `child` with `name` and waits for it to exit.
pub(crate) async fn interrupt(child: &mut Child, name: &str) -> ExitStatus {
    signal(child.id().expect("the batch is running"), name);
    tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap_or_else(|_| panic!("the batch did not exit after SIG{name}"))
        .unwrap()
}

/// The exit code a batch interrupted by `name` reports: 128 + the signal.
fn assert_interrupted_exit(status: ExitStatus, name: &str) {
    let code = match name {
        "INT" => 130,
        _ => 143,
    };
    assert_eq!(
        (status.code(), status.signal()),
        (Some(code), None),
        "SIG{name} should end the batch cleanly with {code}"
    );
}

/// The batch's end: one line per task, each the task's own answer, and
/// exactly one model call per task over all the invocations.
pub(crate) fn assert_complete(batch: &SlowBatch) {
    let mut lines = batch.lines();
    lines.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<&str> = lines.iter().map(|l| l.id.as_str()).collect();
    let want: Vec<String> = (0..TASKS).map(|i| format!("t{i:02}")).collect();
    assert_eq!(ids, want, "one line per task");
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(
            (line.status, line.output.as_str()),
            (
                ResultStatus::Success,
                format!("done: {}", input(i)).as_str()
            ),
            "{:?}",
            line.error
        );
    }
    let calls = batch.calls_per_task();
    let twice: Vec<_> = calls.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "tasks not called exactly once: {twice:?}");
    assert_eq!(calls.len(), TASKS, "{calls:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_batch_survives_sigint_and_sigterm_and_resumes() {
    let batch = SlowBatch::new().await;

    let mut first = batch.run(true);
    batch.wait_for_calls(CONCURRENCY + 2).await;
    tokio::time::sleep(LATENCY + Duration::from_millis(100)).await;
    let status = interrupt(&mut first, "INT").await;
    let after_first =
        assert_lines_match_store(&batch.lines(), &batch.embedded_runs(), "after SIGINT");
    assert_interrupted_exit(status, "INT");
    assert!(after_first < TASKS, "the batch ended before SIGINT");

    let calls = batch.server.requests().len();
    let mut second = batch.run(true);
    batch.wait_for_calls(calls + CONCURRENCY + 2).await;
    tokio::time::sleep(LATENCY + Duration::from_millis(100)).await;
    let status = interrupt(&mut second, "TERM").await;
    let after_second =
        assert_lines_match_store(&batch.lines(), &batch.embedded_runs(), "after SIGTERM");
    assert_interrupted_exit(status, "TERM");
    assert!(
        after_first < after_second && after_second < TASKS,
        "lines after SIGINT {after_first}, after SIGTERM {after_second}"
    );

    let status = tokio::time::timeout(PATIENCE, batch.run(true).wait())
        .await
        .expect("the resumed batch did not finish")
        .unwrap();
    assert!(status.success(), "the resumed batch exited with {status}");
    assert_lines_match_store(&batch.lines(), &batch.embedded_runs(), "at the end");
    assert_complete(&batch);
    assert!(
        !batch.path("results.jsonl.unfinished").exists(),
        "a finished batch leaves no marker"
    );
}

/// Without `--state` the runs an interruption leaves start over when the
/// command runs again; those that ended keep their one line, and none
/// runs twice (the runs in flight end while the worker stops).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_batch_without_state_resumes_from_its_results() {
    let batch = SlowBatch::new().await;
    let mut first = batch.run(false);
    batch.wait_for_calls(CONCURRENCY + 2).await;
    tokio::time::sleep(LATENCY + Duration::from_millis(100)).await;
    let status = interrupt(&mut first, "TERM").await;
    let lines = batch.lines();
    let called = batch.calls_per_task();
    assert_interrupted_exit(status, "TERM");
    assert!(
        !lines.is_empty() && lines.len() < TASKS,
        "{} lines after SIGTERM",
        lines.len()
    );
    let written: BTreeSet<&str> = lines.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(written.len(), lines.len(), "repeated result lines");
    let called: BTreeSet<&str> = called.keys().map(String::as_str).collect();
    assert_eq!(
        written, called,
        "every run that called the model ended and has its line"
    );

    let status = tokio::time::timeout(PATIENCE, batch.run(false).wait())
        .await
        .expect("the resumed batch did not finish")
        .unwrap();
    assert!(status.success(), "the resumed batch exited with {status}");
    assert_complete(&batch);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distributed_batch_survives_sigint_and_sigterm_and_resumes() {
    let batch = SlowBatch::new().await;
    let builder = fleet()
        .model_url(Some(batch.server.url()))
        .concurrency(u16::try_from(CONCURRENCY).unwrap());
    let Some(fleet) = distributed(builder, 2).await else {
        return;
    };
    // The workers are paused around each interruption, so no run ends
    // between the signal and the look at the store.
    let workers = |name: &str| {
        fleet
            .worker_pids()
            .into_iter()
            .for_each(|p| signal(p, name))
    };

    let mut first = batch.submit(&fleet);
    batch.wait_for_calls(2 * CONCURRENCY + 2).await;
    tokio::time::sleep(LATENCY + Duration::from_millis(100)).await;
    workers("STOP");
    let status = interrupt(&mut first, "INT").await;
    let after_first =
        assert_lines_match_store(&batch.lines(), &fleet_runs(&fleet).await, "after SIGINT");
    assert_interrupted_exit(status, "INT");
    assert!(after_first < TASKS, "the batch ended before SIGINT");

    let calls = batch.server.requests().len();
    let mut second = batch.submit_attached(&fleet).await;
    workers("CONT");
    batch.wait_for_calls(calls + 2 * CONCURRENCY + 2).await;
    tokio::time::sleep(LATENCY + Duration::from_millis(100)).await;
    workers("STOP");
    let status = interrupt(&mut second, "TERM").await;
    let after_second =
        assert_lines_match_store(&batch.lines(), &fleet_runs(&fleet).await, "after SIGTERM");
    assert_interrupted_exit(status, "TERM");
    assert!(
        after_first < after_second && after_second < TASKS,
        "lines after SIGINT {after_first}, after SIGTERM {after_second}"
    );

    let mut third = batch.submit_attached(&fleet).await;
    workers("CONT");
    let status = tokio::time::timeout(PATIENCE, third.wait())
        .await
        .expect("the resumed batch did not finish")
        .unwrap();
    assert!(status.success(), "the resumed batch exited with {status}");
    assert_lines_match_store(&batch.lines(), &fleet_runs(&fleet).await, "at the end");
    assert_complete(&batch);
    fleet.shutdown().await.unwrap();
}
