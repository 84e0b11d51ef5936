//! The thread-centric streaming protocol of `@langchain/protocol` (the
//! JavaScript SDK's `client.threads.stream`), over HTTP: commands at
//! `POST /threads/{id}/commands` ([`commands`]) and filtered event
//! streams at `POST /threads/{id}/stream/events` ([`event_stream`]).
//! [`wire`] is its messages, [`filter`] what a stream asks for, and
//! [`translate`] how a committed step becomes its events, [`tokens`] how
//! a model call's tokens do while it runs.

pub mod commands;
pub mod event_stream;
pub mod filter;
pub mod tokens;
pub mod translate;
pub mod wire;

use super::routes::{READ, Routes};

pub(super) fn routes() -> Routes {
    Routes::new()
        .post("/threads/{thread_id}/commands", READ, commands::command)
        .post(
            "/threads/{thread_id}/stream/events",
            READ,
            event_stream::stream_events,
        )
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod router_tests;
