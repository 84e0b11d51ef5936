//! The run queue: runs created while their thread was busy, waiting to
//! start (their input is not applied to the thread yet).

use deepfleet_proto::keys::records::{QUEUED, thread_queue};
use deepfleet_store::Store;

use super::runs::RunMeta;
use super::{Listing, Repository, score_at};

/// Queued runs, by run id; each is also in its thread's run metadata, and
/// listed in its thread's [`thread_queue`] oldest first.
pub fn queued(store: &dyn Store) -> Repository<'_, RunMeta> {
    Repository::new(store, QUEUED).indexed(|meta: &RunMeta| {
        vec![Listing::new(
            thread_queue(&meta.thread_id),
            score_at(meta.created_at),
        )]
    })
}
