//! The per-thread state backend (to be implemented).

/// Files of one thread, checkpointed with it.
pub struct StateBackend;
