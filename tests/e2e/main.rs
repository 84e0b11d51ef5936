//! The binary's integration tests, one test binary (`chaos` and `image`
//! stay apart: they are long, and run on their own too). End-to-end
//! scenarios: each `scenario!` runs twice, embedded (one process,
//! in-memory queue and store) and distributed (RabbitMQ, Redis and two
//! `deepfleet worker` processes); beside them, the binary as a process
//! meets its configuration (`configuration`), as a pod runs it
//! (`deploy`) and as a new user first runs a fleet (`first_run`). Under
//! `CI=true` a missing RabbitMQ or Redis fails the distributed half
//! instead of skipping it.
// Test support helpers are not `#[test]` fns, so the test exemption of
// clippy.toml does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A scenario reads top to bottom as one story; its length is not a smell.
#![allow(clippy::too_many_lines)]

mod support;

mod a2a;
mod admission;
mod agent_server;
mod async_subagents;
mod batch;
mod batch_handles;
mod budgets;
mod call_ids;
mod chat_ui;
mod coder;
mod compression;
mod concurrency;
mod configuration;
mod crash;
mod crons;
mod deadlines;
mod deploy;
mod dev_server;
mod encryption;
mod failures;
mod faulty_providers;
mod files;
mod first_run;
mod growth;
mod hitl;
mod http_model;
mod http_tools;
mod interrupted_batch;
mod js_sdk;
mod kept_steps;
mod limits;
mod live_scheduler;
mod manifest;
mod mcp;
mod mcp_endpoint;
mod memory;
mod observability;
mod priority;
mod providers;
mod queue_intake;
mod rate_limits;
mod redelivery;
mod resume_cli;
mod retention;
mod sandbox;
mod scale;
mod secrets;
mod shutdown;
mod spec_check;
mod spec_versions;
mod streaming;
mod subagents;
mod tenants;
mod webhooks;
