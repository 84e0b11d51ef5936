//! Context compression inside real runs (issue #4): offloading a large
//! result, summarizing a long run in a small window, and recovering from
//! a context overflow. Each runs embedded and on RabbitMQ + Redis.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use deepfleet_proto::{ContentBlock, Message, ResultStatus};
use deepfleet_testkit::script::{Call, Failure, ScriptBuilder, When};

use crate::support::{replay_model, scenario, spec, task};

/// A text well over 20,000 tokens: 3,000 numbered rows.
fn large_report() -> String {
    (0..3000)
        .map(|i| format!("row {i}: the quick brown fox jumps over the lazy dog, sample {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The main agent delegates; the subagent answers with the large report;
/// the main agent repeats what it got back.
fn offload_script() -> String {
    ScriptBuilder::new()
        .delegating("^go", &["produce the report"])
        // The report as a file holds it: ending in a newline.
        .answer(When::input("^produce"), &format!("{}\n", large_report()))
        .build()
}

// deepagents conformance §13.2 item 10 through the fleet: the task
// result is offloaded and the model reads the stub.
scenario!(a_large_result_is_offloaded, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("offload", &replay_model(dir.path(), &offload_script()), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await.unwrap()[0];
    assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
    assert!(
        r.output.starts_with(
            "Tool result too large, the result of this tool call call_0_0 was saved in the filesystem at this path: /large_tool_results/call_0_0\n"
        ),
        "{}",
        &r.output[..r.output.len().min(300)]
    );
    assert!(r.output.contains("... [2990 lines truncated] ..."));
    assert_eq!(
        r.files
            .get("/large_tool_results/call_0_0")
            .map(|f| f.trim_end()),
        Some(large_report().as_str())
    );
});

const STEPS: usize = 60;

/// Seed files `/steps/01.md` .. `/steps/60.md`, each pointing at the next
/// and padded to about 500 tokens; the last holds the answer.
fn chain_files() -> BTreeMap<String, String> {
    (1..=STEPS)
        .map(|n| {
            let head = if n == STEPS {
                "FINAL ANSWER: 4242".to_owned()
            } else {
                format!("next: {:02}", n + 1)
            };
            let mut body = format!("{head}\n");
            for line in 0..40 {
                writeln!(
                    body,
                    "Step {n} note {line}: the surveyor logged elevation, bearing and soil type."
                )
                .unwrap();
            }
            (format!("/steps/{n:02}.md"), body)
        })
        .collect()
}

/// What the summarization call answers.
const SUMMARY_REPLY: &str = "## SESSION INTENT\nFollow the chain of step files to the answer.\n## SUMMARY\nRead the step files in order; each names the next.\n## ARTIFACTS\nNone\n## NEXT STEPS\nKeep reading the step file named by the last one.";

/// The summarization call's input.
const CONDENSE: &str = "^Condense the conversation";

/// Reads the step file each one names, until one holds the answer.
fn chain_script() -> String {
    ScriptBuilder::new()
        .answer(When::input(CONDENSE), SUMMARY_REPLY)
        .answer(
            When::after_tool(r"FINAL ANSWER: (?P<a>\d+)"),
            "The answer is {{a}}.",
        )
        .call(
            When::after_tool(r"next: (?P<n>\d+)"),
            [Call::read_file("/steps/{{n}}.md")],
        )
        .call(When::at_turn(0), [Call::read_file("/steps/01.md")])
        .build()
}

// Issue #4, done-when: a 60-step run in a 16k-token window completes,
// summarizing as often as needed; the history file holds every summarized
// message and the answer is right.
scenario!(sixty_steps_in_a_16k_window, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "chain",
        &replay_model(dir.path(), &chain_script()),
        "model_profile: {max_input_tokens: 16000, max_output_tokens: 1000}\n",
    );
    let mut t = task("t1", "Follow the step files to the answer.");
    t.files = Some(chain_files().into_iter().collect());
    let batch = fleet.run_batch(&spec, &[t]).await.unwrap();
    let r = &batch.results[0];
    assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
    assert_eq!(r.output, "The answer is 4242.");
    assert_eq!(r.steps, STEPS as u32 + 1);

    let thread = fleet
        .store
        .load_thread(&batch.runs[0].thread_id)
        .await
        .unwrap();
    assert_eq!(
        thread.messages.len(),
        1 + 2 * STEPS + 1,
        "the log keeps every message"
    );
    let summary = thread.context.summary.expect("the run was summarized");
    let history = r
        .files
        .get(summary.file_path.as_deref().unwrap())
        .expect("the history file");
    let sections = history.matches("## Summarized at ").count();
    assert!(sections >= 2, "only {sections} summaries");
    // Each summary is a model call of its own, counted apart from the
    // run's and within its tokens (issue 19).
    assert_eq!(r.by_caller.summarization.model_calls, sections as u64);
    assert_eq!(r.by_caller.main.model_calls, u64::from(r.steps));
    assert_eq!(
        deepfleet_proto::ResultUsage::from(r.by_caller.total().tokens()),
        r.usage
    );
    let cutoff = usize::try_from(summary.cutoff).unwrap();
    assert!(cutoff > STEPS, "cutoff {cutoff}");
    for (i, entry) in thread.messages[..cutoff].iter().enumerate() {
        let marker = match &entry.message {
            Message::Tool(m) => match &m.content[0] {
                ContentBlock::Text { text } => text.clone(),
                other => panic!("{other:?}"),
            },
            // Call ids repeat once summaries shorten the view (the replay
            // model numbers calls by turn); the arguments do not.
            Message::Assistant(m) => format!(
                "name=\"read_file\">{}</tool_call>",
                m.tool_calls[0].arguments
            ),
            other => other.text(),
        };
        assert_eq!(
            history.matches(marker.as_str()).count(),
            1,
            "message {i} is not in the history file exactly once"
        );
    }
});

/// Follows `go X` from file to file until one says `OVERFLOW`; the
/// request after it overflows the context, `overflows` times (every time
/// when `None`), then gets an answer.
fn overflow_script(overflows: Option<u32>) -> String {
    let mut overflow = Failure::new(400, "This model's maximum context length is 100 tokens");
    if let Some(n) = overflows {
        overflow = overflow.times(n);
    }
    ScriptBuilder::new()
        .answer(
            When::input(CONDENSE),
            "## SESSION INTENT\nread\n## SUMMARY\nread a-d\n## ARTIFACTS\nNone\n## NEXT STEPS\nanswer",
        )
        .fail(When::after_tool("OVERFLOW"), overflow)
        .answer(
            When::after_tool("OVERFLOW"),
            "recovered with {{turn}} turns in view",
        )
        .call(
            When::after_tool(r"go (?P<f>\w)"),
            [Call::read_file("/{{f}}.md")],
        )
        .call(When::at_turn(0), [Call::read_file("/a.md")])
        .build()
}

fn overflow_task() -> deepfleet_proto::TaskLine {
    let mut t = task("t1", "read the files");
    t.files = Some(
        [
            ("/a.md".to_owned(), "go b".to_owned()),
            ("/b.md".to_owned(), "go c".to_owned()),
            ("/c.md".to_owned(), "go d".to_owned()),
            ("/d.md".to_owned(), "OVERFLOW".to_owned()),
        ]
        .into(),
    );
    t
}

// deepagents conformance §13.2 item 17: an overflow summarizes and the
// step is retried once, with fewer turns in view.
scenario!(an_overflow_is_recovered_once, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "overflow",
        &replay_model(dir.path(), &overflow_script(Some(1))),
        "",
    );
    let r = &fleet.run(&spec, &[overflow_task()]).await.unwrap()[0];
    assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
    // 4 turns were in the log; keeping 6 messages leaves 3 in view.
    assert_eq!(r.output, "recovered with 3 turns in view");
    assert!(
        r.files
            .keys()
            .any(|p| p.starts_with("/conversation_history/session_")),
        "{:?}",
        r.files.keys()
    );
});

// A request that still overflows after the summary fails the run with
// `context_overflow`.
scenario!(a_second_overflow_fails_the_run, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let script = overflow_script(None);
    let spec = spec("overflow-twice", &replay_model(dir.path(), &script), "");
    let r = &fleet.run(&spec, &[overflow_task()]).await.unwrap()[0];
    assert_eq!(r.status, ResultStatus::Error);
    let error = r.error.as_deref().unwrap_or_default();
    assert!(error.contains("context_overflow"), "{error}");
    assert!(error.contains("still does not fit"), "{error}");
});
