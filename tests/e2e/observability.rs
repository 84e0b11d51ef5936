//! Observability end to end: a scrape of `/metrics` after a batch shows
//! exactly the batch's tokens, runs, tool calls and compaction events; the
//! spans of a run
//! whose two subagents ran on two worker processes form one trace tree.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use deepfleet_fleet::Metrics;
use deepfleet_proto::{CallUsage, ResultLine, ResultStatus, ResultUsage, UsageByCaller};
use deepfleet_testkit::script::{Call, ScriptBuilder, When, write_task};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::live_scheduler::free_port;
use crate::support::{distributed, fleet, replay_model, spec, task};

/// Two parallel subagents, each writing a file; the parent then lists the
/// files and answers. Per task: parent 3 model calls (task, task, ls),
/// each child 2 (write_file). The `loud` variant's second child reads a
/// large file and answers with it instead (read_file).
fn delegating() -> String {
    let mut script = ScriptBuilder::new();
    for (input, second) in [
        (r"^Split (?P<n>\d+)$", write_task("beta{{n}}", "/b.txt")),
        (r"^Split (?P<n>\d+) loud$", "Recite /numbers.txt".to_owned()),
    ] {
        let split = When::input(input);
        script = script
            .call(
                split.clone().turn(0),
                [
                    Call::task(&write_task("alpha{{n}}", "/a.txt")),
                    Call::task(&second),
                ],
            )
            .call(split.clone().turn(1), [Call::ls("/")])
            .answer(split.turn(2), "{{last_tool}}");
    }
    let recite = Call::new("read_file", json!({"file_path": "{{path}}", "limit": 2000}));
    script
        .calls_then_answer(
            When::input(r"^Recite (?P<path>\S+)$"),
            [recite],
            "{{last_tool}}",
        )
        .writing_subagents()
        .build()
}

const TASKS: usize = 3;

/// Sums the samples of `family` whose labels include all of `labels`.
fn sum(scrapes: &[String], family: &str, labels: &[(&str, &str)]) -> u64 {
    let mut total = 0.0;
    for line in scrapes.iter().flat_map(|s| s.lines()) {
        let Some(rest) = line.strip_prefix(family) else {
            continue;
        };
        let (set, value) = match rest.strip_prefix('{') {
            Some(rest) => match rest.split_once("} ") {
                Some((set, value)) => (set, value),
                None => continue,
            },
            None => match rest.strip_prefix(' ') {
                Some(value) => ("", value),
                None => continue,
            },
        };
        if labels
            .iter()
            .all(|(k, v)| set.split(',').any(|kv| kv == format!("{k}=\"{v}\"")))
        {
            total += value.trim().parse::<f64>().unwrap();
        }
    }
    total as u64
}

/// Successful model calls of `caller` in the scrapes.
fn caller_calls(scrapes: &[String], caller: &str) -> u64 {
    sum(
        scrapes,
        "deepfleet_model_calls_total",
        &[("caller", caller), ("outcome", "ok")],
    )
}

/// Tokens of `kind` used by `caller` in the scrapes.
fn caller_tokens(scrapes: &[String], caller: &str, kind: &str) -> u64 {
    sum(
        scrapes,
        "deepfleet_model_tokens_total",
        &[("caller", caller), ("type", kind)],
    )
}

/// The successful calls and tokens of `caller` in the scrapes.
fn metrics_of(scrapes: &[String], caller: &str) -> CallUsage {
    CallUsage {
        model_calls: caller_calls(scrapes, caller),
        input_tokens: caller_tokens(scrapes, caller, "input"),
        output_tokens: caller_tokens(scrapes, caller, "output"),
        cached_input_tokens: caller_tokens(scrapes, caller, "cached"),
    }
}

/// The metrics count every caller's calls and tokens as `split` does
/// (issue 19: the summary once counted main calls against all tokens).
fn assert_split_is_the_metrics(scrapes: &[String], split: &UsageByCaller) {
    for (caller, label) in [
        (&split.main, "main"),
        (&split.subagents, "subagent"),
        (&split.summarization, "summarization"),
    ] {
        let metrics = metrics_of(scrapes, label);
        assert_eq!(&metrics, caller, "caller {label}");
    }
}

/// What the batch's result lines say was used.
fn usage(results: &[ResultLine]) -> (u64, u64) {
    results.iter().fold((0, 0), |(i, o), r| {
        (i + r.usage.input_tokens, o + r.usage.output_tokens)
    })
}

fn assert_counts(scrapes: &[String], results: &[ResultLine]) {
    assert!(results.iter().all(|r| r.status == ResultStatus::Success));
    let n = TASKS as u64;
    let (input, output) = usage(results);
    assert!(input > 0 && output > 0, "the replay model reports usage");
    // Result usage includes the subagents' and the summaries'; metrics
    // split it by caller.
    let tokens = |kind| {
        ["main", "subagent", "summarization"]
            .into_iter()
            .map(|caller| caller_tokens(scrapes, caller, kind))
            .sum::<u64>()
    };
    assert_eq!(tokens("input"), input);
    assert_eq!(tokens("output"), output);
    let calls = |caller| caller_calls(scrapes, caller);
    assert_eq!(calls("main"), 3 * n);
    assert_eq!(calls("subagent"), 4 * n);
    let mut split = UsageByCaller::default();
    for line in results {
        split.add(&line.by_caller);
        assert_eq!(u64::from(line.steps), line.by_caller.main.model_calls);
        assert_eq!(
            ResultUsage::from(line.by_caller.total().tokens()),
            line.usage
        );
    }
    assert_split_is_the_metrics(scrapes, &split);
    let runs = |caller| {
        sum(
            scrapes,
            "deepfleet_runs_finished_total",
            &[("caller", caller), ("status", "success")],
        )
    };
    assert_eq!(runs("main"), n);
    assert_eq!(runs("subagent"), 2 * n);
    let tool = |name| {
        sum(
            scrapes,
            "deepfleet_tool_calls_total",
            &[("tool", name), ("status", "success")],
        )
    };
    assert_eq!(tool("task"), 2 * n);
    assert_eq!(tool("write_file"), n);
    assert_eq!(tool("read_file"), n);
    assert_eq!(tool("ls"), n);
    // Each recited file comes back to its parent far over the 20,000-token
    // limit and is offloaded, once per task.
    let offload = [("kind", "offload")];
    assert_eq!(sum(scrapes, "deepfleet_compactions_total", &offload), n);
    assert!(
        sum(
            scrapes,
            "deepfleet_compaction_tokens_removed_total",
            &offload
        ) > 20_000 * n
    );
    assert_eq!(
        sum(scrapes, "deepfleet_step_duration_seconds_count", &[]),
        7 * n
    );
    assert_eq!(sum(scrapes, "deepfleet_dead_letters_total", &[]), 0);
}

/// Tasks whose second subagent recites a seeded file of about 40,000
/// tokens (single digits between spaces: one token each, two characters).
fn tasks() -> Vec<deepfleet_proto::TaskLine> {
    let line = "1 2 3 4 5 6 7 8 9 0 ".repeat(2);
    let numbers = format!("{line}\n").repeat(1_900);
    (0..TASKS)
        .map(|i| deepfleet_proto::TaskLine {
            files: Some([("/numbers.txt".to_owned(), numbers.clone())].into()),
            ..task(&format!("t{i}"), &format!("Split {i} loud"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_the_batch_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("observed", &replay_model(dir.path(), &delegating()), "");
    let metrics = Arc::new(Metrics::new().unwrap());
    let mut fleet = fleet().events(metrics.clone()).embedded().unwrap();
    let results = fleet.run(&spec, &tasks()).await.unwrap();
    fleet.shutdown().await.unwrap();
    let scrapes = [metrics.render().unwrap()];
    assert_counts(&scrapes, &results);
    let table = tokio::task::spawn_blocking(move || summary_table(&spec))
        .await
        .unwrap();
    assert_table_is_the_metrics(&table, &scrapes);
}

/// The summary table `deepfleet run` prints for the batch of `spec` and
/// [`tasks`], after checking that it is the sum of its result lines.
fn summary_table(spec: &deepfleet_proto::AgentSpec) -> String {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("agent.yaml"),
        format!("name: {}\nmodel: '{}'\n", spec.name, spec.model),
    )
    .unwrap();
    let tasks: Vec<String> = tasks()
        .iter()
        .map(|t| serde_json::to_string(t).unwrap())
        .collect();
    std::fs::write(d.join("tasks.jsonl"), tasks.join("\n")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .current_dir(d)
        .args(["run", "tasks.jsonl", "--agent", "agent.yaml"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = std::fs::read_to_string(d.join("results.jsonl")).unwrap();
    let mut split = UsageByCaller::default();
    for line in results.lines() {
        split.add(&serde_json::from_str::<ResultLine>(line).unwrap().by_caller);
    }
    for (caller, usage) in split
        .callers()
        .into_iter()
        .chain([("total", &split.total())])
    {
        assert_eq!(
            table_row(&table, caller),
            figures(usage),
            "{caller}\n{table}"
        );
    }
    table
}

/// A usage row of the table: calls, input, cached and output tokens.
fn table_row(table: &str, caller: &str) -> [u64; 4] {
    let line = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(caller))
        .unwrap_or_else(|| panic!("no row {caller} in\n{table}"));
    let numbers: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect();
    numbers.try_into().unwrap()
}

fn figures(u: &CallUsage) -> [u64; 4] {
    [
        u.model_calls,
        u.input_tokens,
        u.cached_input_tokens,
        u.output_tokens,
    ]
}

/// The table of a batch counts what the metrics of the same batch count.
fn assert_table_is_the_metrics(table: &str, scrapes: &[String]) {
    for (row, label) in [
        ("main", "main"),
        ("subagents", "subagent"),
        ("summarization", "summarization"),
    ] {
        let metrics = metrics_of(scrapes, label);
        assert_eq!(table_row(table, row), figures(&metrics), "{row}\n{table}");
    }
}

async fn scrape(port: u16) -> String {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("the worker serves /metrics");
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    body.to_owned()
}

/// Waits until a worker's metrics endpoint answers.
async fn wait_for(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no metrics endpoint on port {port}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_the_batch_across_two_workers() {
    let Some(mut fleet) = distributed(fleet(), 0).await else {
        return;
    };
    let ports = [free_port(), free_port()];
    for port in ports {
        let addr = format!("127.0.0.1:{port}");
        fleet
            .spawn_worker_with(&["--metrics-listen", &addr], &[])
            .unwrap();
    }
    for port in ports {
        wait_for(port).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("observed", &replay_model(dir.path(), &delegating()), "");
    let results = fleet.run(&spec, &tasks()).await.unwrap();
    let mut scrapes = Vec::new();
    for port in ports {
        scrapes.push(scrape(port).await);
    }
    fleet.shutdown().await.unwrap();
    assert_counts(&scrapes, &results);
    assert_eq!(sum(&scrapes, "deepfleet_queue_consumers", &[]), 2);
    assert_eq!(sum(&scrapes, "deepfleet_steps_in_flight", &[]), 0);
}

/// One exported span, as the OTLP/JSON collector received it.
#[derive(Debug, Clone)]
struct Span {
    trace: String,
    id: String,
    parent: String,
    attributes: BTreeMap<String, String>,
}

/// An OTLP/HTTP collector (JSON encoding) keeping every span it receives.
async fn collector() -> (String, Arc<Mutex<Vec<Span>>>) {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let sink = spans.clone();
    let app = Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let sink = sink.clone();
            async move {
                let doc: Value = serde_json::from_slice(&body).unwrap();
                sink.lock().unwrap().extend(parse_spans(&doc));
                "{}"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, spans)
}

fn parse_spans(doc: &Value) -> Vec<Span> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let mut out = Vec::new();
    for rs in doc["resourceSpans"].as_array().into_iter().flatten() {
        for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
            for span in ss["spans"].as_array().into_iter().flatten() {
                let attributes = span["attributes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|kv| {
                        let value = &kv["value"];
                        let value = value
                            .get("stringValue")
                            .map(text)
                            .unwrap_or_else(|| value.to_string());
                        (text(&kv["key"]), value)
                    })
                    .collect();
                out.push(Span {
                    trace: text(&span["traceId"]),
                    id: text(&span["spanId"]),
                    parent: text(&span["parentSpanId"]),
                    attributes,
                });
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_and_its_subagents_on_two_workers_form_one_trace() {
    let Some(mut fleet) = distributed(fleet(), 0).await else {
        return;
    };
    let (url, spans) = collector().await;
    for _ in 0..2 {
        fleet
            .spawn_worker_with(
                &["--otlp-endpoint", &url],
                &[
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                    ("OTEL_BSP_SCHEDULE_DELAY", "100"),
                ],
            )
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("traced", &replay_model(dir.path(), &delegating()), "");
    let batch = fleet
        .run_batch(&spec, &[task("t0", "Split 0")])
        .await
        .unwrap();
    assert_eq!(batch.results[0].status, ResultStatus::Success);
    let run_id = batch.runs[0].run_id.clone();

    // Spans arrive in batches; wait for the whole tree (3 runs, 7 steps,
    // 7 model calls, 5 tool calls).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let tree = loop {
        let all = spans.lock().unwrap().clone();
        let root = all
            .iter()
            .find(|s| s.attributes.get("deepfleet.run.id") == Some(&run_id));
        if let Some(root) = root {
            let tree: Vec<Span> = all
                .iter()
                .filter(|s| s.trace == root.trace)
                .cloned()
                .collect();
            if tree.len() >= 22 {
                break tree;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "spans missing: {all:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    fleet.shutdown().await.unwrap();

    let op = |s: &Span| {
        s.attributes
            .get("gen_ai.operation.name")
            .cloned()
            .unwrap_or_default()
    };
    let mut counts: HashMap<String, usize> = HashMap::new();
    for span in &tree {
        *counts.entry(op(span)).or_default() += 1;
    }
    assert_eq!(counts.get("invoke_agent"), Some(&3), "{counts:?}");
    assert_eq!(counts.get("chat"), Some(&7), "{counts:?}");
    assert_eq!(counts.get("execute_tool"), Some(&5), "{counts:?}");
    assert_eq!(counts.get(""), Some(&7), "step spans: {counts:?}");

    // One root, and every other span's parent is in the tree.
    let ids: HashSet<&str> = tree.iter().map(|s| s.id.as_str()).collect();
    let roots: Vec<&Span> = tree.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1, "{roots:#?}");
    assert_eq!(roots[0].attributes.get("deepfleet.run.id"), Some(&run_id));
    for span in &tree {
        assert!(
            span.parent.is_empty() || ids.contains(span.parent.as_str()),
            "orphan: {span:#?}"
        );
    }
    // Each subagent's run hangs under one of the parent's `task` calls.
    let by_id: HashMap<&str, &Span> = tree.iter().map(|s| (s.id.as_str(), s)).collect();
    let children: Vec<&Span> = tree
        .iter()
        .filter(|s| op(s) == "invoke_agent" && !s.parent.is_empty())
        .collect();
    assert_eq!(children.len(), 2);
    let mut task_spans = HashSet::new();
    for child in children {
        let parent = by_id[child.parent.as_str()];
        assert_eq!(
            parent
                .attributes
                .get("gen_ai.tool.name")
                .map(String::as_str),
            Some("task")
        );
        task_spans.insert(parent.id.clone());
    }
    assert_eq!(task_spans.len(), 2, "one task span per subagent");
}
