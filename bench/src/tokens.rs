//! Item 6: what a step pays for token counting and for the compression
//! check as the conversation grows.
//!
//! A step counts only the messages it appends (`tokens::logged`), and
//! the compression check works from running totals; the bench times the
//! first here and takes the second from the compression-check bench of
//! the worker crate (`cargo bench -p deepfleet-worker --bench
//! compression_check`, whose table `make bench` saves). Beside them it
//! times what recounting the whole conversation would cost each step,
//! which is what a harness without per-message counts pays.

use std::hint::black_box;
use std::time::Instant;

use deepfleet_fleet::tokens::{count_message, logged};
use deepfleet_proto::{AssistantMessage, LoggedMessage, Message, ToolCall, ToolStatus};

/// Conversation sizes measured.
pub const SIZES: [usize; 7] = [10, 20, 50, 100, 200, 500, 1_000];

/// One size's costs, in nanoseconds per step.
pub struct TokenCost {
    /// Messages already in the conversation.
    pub messages: usize,
    /// Counting the two messages a step appends.
    pub count_step: f64,
    /// Recounting every message of the conversation.
    pub recount_all: f64,
}

/// The step's model turn: one tool call.
fn call(i: usize) -> Message {
    Message::Assistant(AssistantMessage {
        tool_calls: vec![ToolCall {
            id: format!("call_{i}_0"),
            name: "read_file".into(),
            arguments: format!(
                "{{\"file_path\": \"/work/notes-{i}.md\", \"offset\": 0, \"limit\": 100}}"
            ),
        }],
        ..AssistantMessage::default()
    })
}

/// The step's tool result: a page of a file, as read_file returns it.
fn result(i: usize) -> Message {
    let body: String = (0..20)
        .map(|line| format!("line {line} of notes {i}: the quarterly figures and what they mean\n"))
        .collect();
    Message::tool(
        format!("call_{i}_0"),
        "read_file",
        body,
        ToolStatus::Success,
    )
}

/// A conversation of `n` messages: turns of a call and its result.
fn conversation(n: usize) -> Vec<LoggedMessage> {
    (0..n)
        .map(|i| {
            logged(if i % 2 == 0 {
                call(i / 2)
            } else {
                result(i / 2)
            })
        })
        .collect()
}

/// Median nanoseconds of `f` over `rounds` rounds of `per_round` calls.
fn time(rounds: usize, per_round: usize, mut f: impl FnMut() -> u64) -> f64 {
    let mut samples: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..per_round {
                black_box(f());
            }
            started.elapsed().as_nanos() as f64 / per_round as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Costs at every size of [`SIZES`].
pub fn measure() -> Vec<TokenCost> {
    SIZES
        .iter()
        .map(|&n| {
            let history = conversation(n);
            let step = [call(n), result(n)];
            let count_step = time(31, 50, || {
                step.iter()
                    .map(|m| u64::from(logged(black_box(m.clone())).tokens))
                    .sum()
            });
            let recount_all = time(11, 3, || {
                black_box(&history)
                    .iter()
                    .map(|m| u64::from(count_message(&m.message)))
                    .sum()
            });
            TokenCost {
                messages: n,
                count_step,
                recount_all,
            }
        })
        .collect()
}

/// A row of the compression-check bench's table.
#[derive(Debug, PartialEq)]
pub struct CheckCost {
    /// Messages in the conversation.
    pub messages: usize,
    /// The per-step decision, no summary in force (ns).
    pub decision: f64,
    /// The decision with a summary in force (ns).
    pub decision_summarized: f64,
}

/// Reads the rows of the compression-check bench's Markdown table
/// (`| messages | ns | ns | ns |`); other lines are skipped.
pub fn parse_check_table(text: &str) -> Vec<CheckCost> {
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            let messages = cells.first()?.replace(',', "").parse().ok()?;
            Some(CheckCost {
                messages,
                decision: cells.get(1)?.parse().ok()?,
                decision_summarized: cells.get(2)?.parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_check_table() {
        let table = "| messages | decision (ns) | decision, summary in force (ns) | sum over the log (ns) |\n|---:|---:|---:|---:|\n| 10 | 21.5 | 30.0 | 9.1 |\n| 1000 | 22.0 | 31.5 | 700.2 |\n";
        assert_eq!(
            parse_check_table(table),
            vec![
                CheckCost {
                    messages: 10,
                    decision: 21.5,
                    decision_summarized: 30.0
                },
                CheckCost {
                    messages: 1000,
                    decision: 22.0,
                    decision_summarized: 31.5
                },
            ]
        );
    }

    #[test]
    fn conversations_alternate_calls_and_results() {
        let log = conversation(4);
        assert_eq!(log.len(), 4);
        assert!(log.iter().all(|m| m.tokens > 3));
        assert!(matches!(log[1].message, Message::Tool(_)));
    }
}
