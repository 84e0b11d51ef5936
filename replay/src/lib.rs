//! The replay model: a scripted stand-in for a provider, for tests,
//! examples and benchmarks.
//!
//! A [`Script`] (YAML rules) drives a [`ReplayEngine`], which answers Chat
//! Completions wire requests; [`ReplayClient`] puts it behind
//! [`deepfleet_model::ModelClient`] in process, and the test kit serves it
//! over HTTP. [`register`] adds the `replay:PATH` provider to a
//! [`deepfleet_model::Providers`] ([`ReplayProvider`], one engine per
//! path); the model crate itself knows nothing of it.
//!
//! ```yaml
//! latency_ms: 20         # each answer takes this long (default 0)
//! rules:                 # tried in order; the first whose `when` matches answers
//!   - when:              # every condition is optional; none = always
//!       input: '^Write a note about (?P<topic>\w+)'  # first user message
//!       turn: 0          # assistant messages already in the request
//!       system: 'regex'  # the leading system message
//!       last_tool: 'regex'  # the last tool message (no tool message = no match)
//!     reply:
//!       text: 'Saved {{topic}}.'
//!       tool_calls:
//!         - name: write_file
//!           args: {file_path: '/notes/{{topic}}.md'}  # strings are templated
//!         - name: ls
//!           raw_args: '{"path": '  # sent verbatim (broken JSON on purpose)
//!           id: call_0_0             # default call_{turn}_{index}; may repeat or be ''
//!       usage: {input_tokens: 10, output_tokens: 5}   # default: chars / 4
//!   - when: {turn: 3}
//!     error: {status: 429, message: 'slow down', retry_after: 1, times: 2}
//! ```
//!
//! Variables are the named groups of the rule's patterns plus `input`,
//! `last_tool` and `turn`. Tool-call ids are `call_{turn}_{index}`. A
//! `times`-limited error fails that many matching requests (counted per
//! engine), then steps aside for the next rule. A request no rule matches
//! gets a 400 naming the turn and the start of the input.

#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod client;
mod engine;
mod provider;
mod script;
mod template;

pub use client::ReplayClient;
pub use engine::{ReplayEngine, ScriptedError};
pub use provider::{PROVIDER, ReplayProvider, register};
pub use script::{Script, ScriptError};

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
