//! Context compression: keeping what the model sees inside its window
//! without ever rewriting the thread's log.
//!
//! - [`offload`]: oversized tool results and user messages go to files;
//!   the model sees a reference with a head/tail preview.
//! - [`truncate`]: past the trigger, old `write_file`/`edit_file`
//!   arguments are shortened in the request only.
//! - [`budget`]: when to act (the trigger, the keep window, the input
//!   budget) and how big the request is, from running totals.
//! - [`cutoff`]: where a summary cuts, never between a tool call and its
//!   results.
//! - [`summarize`]: the summary itself (a model call), the history file
//!   and the summary message.
//! - [`history`]: the view `[summary, log[cutoff..]]` the model gets.
//! - [`engine`]: the above put together for one agent, shared by the
//!   middleware and the [`compact_conversation`] tool.
//! - [`compact_conversation`]: the tool the model summarizes with on
//!   request.
//!
//! The thread's compression cursor during a step lives in the step's
//! context ([`crate::context::compaction`]), which compression reads and
//! changes. The middleware that applies them is
//! [`crate::middleware::summarization`]; tool-result offloading runs in
//! the filesystem middleware's `wrap_tool`.

pub mod budget;
pub mod compact_conversation;
pub mod cutoff;
pub mod engine;
pub mod history;
pub mod offload;
pub mod summarize;
pub mod truncate;

#[cfg(test)]
pub(crate) mod testing;
