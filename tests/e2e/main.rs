//! End-to-end scenarios. Each `scenario!` runs twice: embedded (one
//! process, in-memory queue and store) and distributed (RabbitMQ, Redis
//! and two `deepfleet worker` processes). Under `CI=true` a missing
//! RabbitMQ or Redis fails the distributed half instead of skipping it.

mod support;

mod batch;
mod crash;
mod failures;
mod files;
mod http_model;
mod subagents;
