//! The runs service: the one application layer under every entry that
//! makes or follows runs (the HTTP API, A2A, MCP, the submissions queue,
//! crons, and the CLI's task lines). It knows nothing of their wires: it takes checked
//! requests, answers [`Run`](deepfleet_proto::api::Run) resources and
//! final bodies, and refuses with a [`RunsError`] that each edge maps to
//! its own.
//!
//! Creating a run is [`request`] (every check, before anything is
//! written: [`options`], [`modes`], [`state_values`], the assistant from
//! [`assistants`]), then [`create`] (the thread, one admission through
//! the lifecycle, the tenant's [`in_flight`] count); a task line is
//! checked and drafted by [`tasks`]. Either way the run itself is made by
//! [`make_run`](crate::make_run::make_run). [`resource`] renders
//! a run, [`final_body()`] what an ended one answers, and [`follow`] is the
//! one loop that follows a run for every edge.

pub mod assistants;
pub mod create;
mod error;
pub mod final_body;
pub mod follow;
pub mod graphs;
pub mod in_flight;
pub mod modes;
pub mod options;
pub mod request;
pub mod resource;
mod service;
pub mod state_values;
pub mod tasks;
pub mod thread_runs;
pub mod threads;

pub use create::create_run;
pub use error::RunsError;
pub use final_body::{FinalBody, final_body};
pub use graphs::Graphs;
pub use resource::{created_resource, load_run, run_resource};
pub use service::Runs;
