//! What a worker's steps read and write outside the process.

use std::sync::Arc;

use deepfleet_queue::Queue;
use deepfleet_store::Store;

use crate::events::EventSink;

/// The queue, store and event sink of a worker's steps. Each part of a
/// step that does I/O takes this instead of the runner, so none of them
/// calls back into it.
pub(super) struct Io {
    pub(super) queue: Arc<dyn Queue>,
    pub(super) store: Arc<dyn Store>,
    pub(super) events: Arc<dyn EventSink>,
}
