//! Issue #14: faulty providers, and the time bounds of a step.
//!
//! Every fault the scripted server injects (`deepfleet_testkit::faults`),
//! on each wire protocol, streamed and not, each cell a run on an
//! embedded fleet of its own: a transient fault is retried and the run
//! succeeds, a permanent one ends the run with a recorded reason, a
//! broken tool call is an error the model reads. No worker panics and no
//! run hangs (every wait is bounded). `RELIABILITY.md` ("Faulty
//! providers") is the table this test asserts; it prints it too.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use deepfleet_model::ProviderConfig;
use deepfleet_proto::{ResultLine, ResultStatus};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::faults::{Fault, Faults};
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use deepfleet_worker::TimeLimits;
use futures::StreamExt;
use pretty_assertions::assert_eq;

use crate::support::{fleet, replay_model, spec, task};

/// The providers under test, one per wire protocol.
const PROVIDERS: [&str; 3] = ["openai", "anthropic", "google_genai"];
/// What a cell's run may take before the test calls it hung.
const CELL_LIMIT: Duration = Duration::from_secs(180);
/// Cells run at once.
const PARALLEL_CELLS: usize = 8;
/// The oversized answer: 50 MB, past the 16 MiB default cap.
const HUGE: usize = 50 * 1024 * 1024;

/// How a run came out, in the words of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Succeeded after the fault was retried.
    Retried,
    /// The model read the broken call's tool error, then succeeded.
    ToolError,
    /// Succeeded with an empty answer.
    EmptyAnswer,
    /// Ended `error` with this code and, for a model failure, its kind.
    Ended(&'static str),
}

impl Outcome {
    fn cell(&self) -> String {
        match self {
            Outcome::Retried => "retried, succeeded".to_owned(),
            Outcome::ToolError => "model read a tool error, succeeded".to_owned(),
            Outcome::EmptyAnswer => "succeeded with an empty answer".to_owned(),
            Outcome::Ended(reason) => format!("ended: `{reason}`"),
        }
    }
}

/// One row: a fault, how many requests get it, and the outcome expected
/// on every protocol and mode.
struct Row {
    name: &'static str,
    fault: Fault,
    times: Option<u32>,
    expected: Outcome,
    /// Where a protocol's answer means something else.
    except: Vec<(&'static str, Outcome)>,
}

impl Row {
    fn expected_on(&self, provider: &str) -> &Outcome {
        self.except
            .iter()
            .find(|(p, _)| *p == provider)
            .map_or(&self.expected, |(_, outcome)| outcome)
    }
}

fn rows() -> Vec<Row> {
    let status = |status, retry_after| Fault::Status {
        status,
        retry_after,
    };
    let row = |name, fault, times, expected| Row {
        name,
        fault,
        times,
        expected,
        except: Vec::new(),
    };
    use Outcome::{EmptyAnswer, Ended, Retried, ToolError};
    vec![
        row(
            "429 with `Retry-After: 1`, twice",
            status(429, Some(1)),
            Some(2),
            Retried,
        ),
        row(
            "429 without `Retry-After`, twice",
            status(429, None),
            Some(2),
            Retried,
        ),
        row(
            "429 storm (every request)",
            status(429, Some(1)),
            None,
            Ended("attempts_exhausted (RateLimited)"),
        ),
        row("500, twice", status(500, None), Some(2), Retried),
        row("503, twice", status(503, None), Some(2), Retried),
        row(
            "500 on every request",
            status(500, None),
            None,
            Ended("attempts_exhausted (Server)"),
        ),
        row("never answers, once", Fault::Hang, Some(1), Retried),
        row(
            "never answers (every request)",
            Fault::Hang,
            None,
            Ended("attempts_exhausted (Timeout)"),
        ),
        row("stalls mid-answer, once", Fault::Stall, Some(1), Retried),
        row(
            "connection cut mid-answer, once",
            Fault::Truncate,
            Some(1),
            Retried,
        ),
        row(
            "malformed JSON, once",
            Fault::MalformedJson,
            Some(1),
            Ended("model_bad_request (InvalidResponse)"),
        ),
        row(
            "tool call with bad JSON arguments, once",
            Fault::BadToolArguments,
            Some(1),
            ToolError,
        ),
        row(
            "tool call without a name, once",
            Fault::MissingToolName,
            Some(1),
            ToolError,
        ),
        row(
            "bad tool arguments on every turn",
            Fault::BadToolArguments,
            None,
            Ended("max_steps"),
        ),
        // A Messages answer may carry no content (the model's choice); a
        // Gemini answer without candidates is a blocked prompt, a
        // filtered turn.
        Row {
            except: vec![("anthropic", EmptyAnswer), ("google_genai", EmptyAnswer)],
            ..row(
                "no choices / content / candidates, once",
                Fault::Empty,
                Some(1),
                Ended("model_bad_request (InvalidResponse)"),
            )
        },
        row(
            "50 MB answer, once",
            Fault::Oversized { bytes: HUGE },
            Some(1),
            Ended("model_bad_request (ResponseTooLarge)"),
        ),
    ]
}

/// The script every cell runs: `done`, or the tool error it read.
fn script() -> Script {
    let text = ScriptBuilder::new()
        .answer(When::after_tool("^Error"), "recovered: {{last_tool}}")
        .answer(When::always(), "done")
        .build();
    Script::from_yaml(&text).unwrap()
}

/// `error` as the table names it: the recorded code, and the model
/// error's kind when a model call failed.
fn reason(error: &str) -> String {
    let code = error.split(':').next().unwrap_or_default();
    let kind = error
        .split_once("model call failed: ")
        .and_then(|(_, rest)| rest.split([' ', ':']).next());
    match kind {
        Some(kind) => format!("{code} ({kind})"),
        None => code.to_owned(),
    }
}

fn observed(result: &ResultLine) -> String {
    match result.status {
        ResultStatus::Success if result.output.starts_with("recovered: Error") => {
            Outcome::ToolError.cell()
        }
        ResultStatus::Success if result.output.is_empty() => Outcome::EmptyAnswer.cell(),
        ResultStatus::Success if result.output == "done" => Outcome::Retried.cell(),
        ResultStatus::Success => format!("succeeded with {:?}", result.output),
        _ => format!(
            "ended: `{}`",
            reason(result.error.as_deref().unwrap_or_default())
        ),
    }
}

/// Runs one cell: a fresh server injecting the row's fault, an embedded
/// fleet with `provider` on it, one run. Returns what came out.
async fn cell(row: &Row, provider: &'static str, stream: bool) -> String {
    let faults = Arc::new(match row.times {
        Some(times) => Faults::times(row.fault.clone(), times),
        None => Faults::always(row.fault.clone()),
    });
    let server = ScriptedServer::start_faulty(
        Arc::new(ReplayEngine::new(script())),
        Duration::ZERO,
        faults,
    )
    .await
    .unwrap();
    // Hangs end at the request timeout, stalls at the idle timeout.
    let (timeout, idle) = match row.fault {
        Fault::Hang => (1, 1),
        Fault::Stall => (30, 1),
        _ => (30, 10),
    };
    let config = ProviderConfig {
        base_url: Some(match provider {
            "openai" => server.url(),
            _ => server.root_url(),
        }),
        api_key: Some("test-key".into()),
        timeout_secs: Some(timeout),
        idle_timeout_secs: Some(idle),
        stream,
        ..ProviderConfig::default()
    };
    let mut fleet = fleet()
        .providers(HashMap::from([(provider.to_owned(), config)]))
        .run_limit(CELL_LIMIT)
        .embedded()
        .unwrap();
    let spec = spec(
        "faulty",
        &format!("{provider}:scripted-model"),
        "limits: {max_steps: 3}\n",
    );
    let results = fleet.run(&spec, &[task("t1", "go")]).await;
    fleet.shutdown().await.unwrap();
    let results = results.unwrap_or_else(|e| panic!("{provider} stream={stream}: {e:#}"));
    observed(&results[0])
}

/// Panics outside the test's own assertions: a worker, client or server
/// that panicked on a fault.
static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_tests = info
                .location()
                .is_some_and(|l| l.file().starts_with("tests/"));
            if !in_tests {
                PANICS.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_on_every_protocol_is_retried_or_recorded() {
    count_panics();
    let rows = rows();
    let mut cells = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        for provider in PROVIDERS {
            for stream in [false, true] {
                cells.push((index, row, provider, stream));
            }
        }
    }
    let outcomes: Vec<((usize, &str, bool), String)> = futures::stream::iter(cells)
        .map(|(index, row, provider, stream)| async move {
            ((index, provider, stream), cell(row, provider, stream).await)
        })
        .buffer_unordered(PARALLEL_CELLS)
        .collect()
        .await;
    let outcomes: HashMap<(usize, &str, bool), String> = outcomes.into_iter().collect();

    let mut table = String::from(
        "| fault | openai | openai, streamed | anthropic | anthropic, streamed | gemini | gemini, streamed |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let mut mismatches = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        table.push_str(&format!("| {} |", row.name));
        for provider in PROVIDERS {
            for stream in [false, true] {
                let seen = &outcomes[&(index, provider, stream)];
                table.push_str(&format!(" {seen} |"));
                if *seen != row.expected_on(provider).cell() {
                    mismatches.push(format!(
                        "{} on {provider} stream={stream}: {seen}",
                        row.name
                    ));
                }
            }
        }
        table.push('\n');
    }
    eprintln!("{table}");
    assert_eq!(mismatches, Vec::<String>::new(), "\n{table}");
    assert_eq!(
        PANICS.load(Ordering::SeqCst),
        0,
        "a fault made something panic"
    );
}

/// Issue #14: a step with no bound on its time held its worker's slot
/// for as long as its model call hung. Past `worker.step_timeout_secs`
/// it is abandoned and retried, then the run ends naming the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_past_its_time_limit_is_retried_then_recorded() {
    let faults = Arc::new(Faults::always(Fault::Hang));
    let server = ScriptedServer::start_faulty(
        Arc::new(ReplayEngine::new(script())),
        Duration::ZERO,
        faults.clone(),
    )
    .await
    .unwrap();
    let limits = TimeLimits {
        step: Duration::from_millis(500),
        ..TimeLimits::default()
    };
    // The model call alone would wait 60 s.
    let mut fleet = fleet()
        .model_url(Some(server.url()))
        .model_timeout(Duration::from_secs(60))
        .time_limits(limits)
        .run_limit(CELL_LIMIT)
        .embedded()
        .unwrap();
    let spec = spec("slow", "openai:scripted-model", "");
    let results = fleet.run(&spec, &[task("t1", "go")]).await.unwrap();
    fleet.shutdown().await.unwrap();
    let r = &results[0];
    assert_eq!(r.status, ResultStatus::Error);
    assert_eq!(
        r.error.as_deref(),
        Some(
            "attempts_exhausted: the step ran longer than 0.5 s (worker.step_timeout_secs) \
             and was stopped"
        )
    );
    // Each of the five attempts reached the model once.
    assert_eq!(faults.served(), 5);
}

/// Issue #14: `read_file` on a FIFO through a local route blocked its
/// step forever. Now it is an error the model reads, and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_through_a_local_route_is_an_error_the_model_reads() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(tree.join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let script = ScriptBuilder::new()
        .calls_then_answer(
            When::always(),
            [Call::read_file("/workspace/pipe")],
            "{{last_tool}}",
        )
        .build();
    let routes = format!(
        "backend:\n  routes:\n    /workspace/: {{local: {{root: '{}'}}}}\n",
        tree.display()
    );
    let spec = spec("fifo", &replay_model(dir.path(), &script), &routes);
    let mut fleet = fleet().run_limit(CELL_LIMIT).embedded().unwrap();
    let results = fleet.run(&spec, &[task("t1", "go")]).await.unwrap();
    fleet.shutdown().await.unwrap();
    let r = &results[0];
    assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
    assert!(r.output.contains("not a regular file"), "{}", r.output);
}
