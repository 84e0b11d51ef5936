//! Created assistants, stored in their API shape.

use deepfleet_proto::api::Assistant;
use deepfleet_proto::keys::records::ASSISTANTS;
use deepfleet_store::Store;

use super::Records;

/// Created assistants, by assistant id (system assistants are not stored).
pub fn assistants(store: &dyn Store) -> Records<'_, Assistant> {
    Records::new(store, ASSISTANTS)
}
