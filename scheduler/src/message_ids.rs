//! The ids the API gives a thread's messages. deepfleet's log holds no
//! ids of its own, so a message's id is derived from its thread and its
//! place in the conversation: stable across reads, the same on every
//! branch for the messages a fork keeps, and what an update names to
//! replace or remove one.

/// A message's id: a UUIDv5 of the thread and the position.
pub fn message_id(thread_id: &str, index: usize) -> String {
    uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_OID,
        format!("{thread_id}/{index}").as_bytes(),
    )
    .to_string()
}
