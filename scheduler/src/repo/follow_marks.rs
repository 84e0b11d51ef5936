//! Follow marks: which runs someone streams, so workers stream their
//! model calls (see `worker/src/step/deltas.rs`, which reads them).

use deepfleet_proto::keys::records::FOLLOWED;
use deepfleet_proto::run_delta::Followed;
use deepfleet_store::Store;

use super::Repository;

/// Follow marks, by run id.
pub fn follow_marks(store: &dyn Store) -> Repository<'_, Followed> {
    Repository::new(store, FOLLOWED)
}
