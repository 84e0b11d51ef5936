//! The run queue: runs created while their thread was busy, waiting to
//! start (their input is not applied to the thread yet).

use deepfleet_proto::keys::records::QUEUED;
use deepfleet_store::Records;

use super::Repository;
use super::runs::RunMeta;

/// Queued runs, by run id; each is also in its thread's run metadata.
pub fn queued(store: &dyn Records) -> Repository<'_, RunMeta> {
    Repository::new(store, QUEUED)
}
