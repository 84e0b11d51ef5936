//! Created assistants, stored in their API shape.

use deepfleet_proto::api::Assistant;
use deepfleet_proto::keys::records::ASSISTANTS;
use deepfleet_store::Records;

use super::Repository;

/// Created assistants, by assistant id (system assistants are not stored).
pub fn assistants(store: &dyn Records) -> Repository<'_, Assistant> {
    Repository::new(store, ASSISTANTS)
}
