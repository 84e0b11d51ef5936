//! Created assistants: the API shape, with the tenant that owns it.

use deepfleet_proto::api::Assistant;
use deepfleet_proto::keys::records::{ASSISTANTS, assistant_versions, tenant_assistants};
use deepfleet_proto::{SealedContext, TenantId};
use deepfleet_store::Store;
use serde::{Deserialize, Serialize};

use super::{Listing, Owned, Repository, score_at};

/// A created assistant and its tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantRecord {
    /// The tenant it belongs to (records from before tenants: the default
    /// one).
    #[serde(default, skip_serializing_if = "TenantId::is_default")]
    pub tenant: TenantId,
    /// The assistant as the API shows it: its `context` and `config` with
    /// the values of its graph's `context_secrets` redacted.
    #[serde(flatten)]
    pub assistant: Assistant,
    /// The whole context as given, sealed under the fleet's context key,
    /// when redacting it hid a secret: what its runs start with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_context: Option<SealedContext>,
    /// The whole config as given, sealed the same way when redacting it
    /// hid a secret: its `configurable` joins its runs' context, so it
    /// carries keys as often as the context does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_config: Option<SealedContext>,
    /// The highest version made (the shown one may be older, see
    /// `POST /assistants/{id}/latest`); records from before versions: 1.
    /// Left out at 1, so those read and write back unchanged.
    #[serde(default = "first_version", skip_serializing_if = "is_first_version")]
    pub latest: u32,
}

fn first_version() -> u32 {
    1
}

fn is_first_version(version: &u32) -> bool {
    *version == 1
}

impl Owned for AssistantRecord {
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }
}

/// Created assistants, by assistant id (system assistants are not
/// stored), listed in their tenant's [`tenant_assistants`] index by
/// creation time.
pub fn assistants(store: &dyn Store) -> Repository<'_, AssistantRecord> {
    Repository::new(store, ASSISTANTS).indexed(|record: &AssistantRecord| {
        vec![Listing::new(
            tenant_assistants(record.tenant.as_str()),
            score_at(record.assistant.created_at),
        )]
    })
}

/// The versions of assistant `assistant_id`, by version number, each the
/// record as that version made it, listed by number. Records from before
/// versions have none until their first change.
pub fn versions_of<'a>(
    store: &'a dyn Store,
    assistant_id: &str,
) -> Repository<'a, AssistantRecord> {
    Repository::new(store, assistant_versions(assistant_id)).indexed(|record: &AssistantRecord| {
        vec![Listing::new(
            assistant_versions(&record.assistant.assistant_id),
            i64::from(record.assistant.version),
        )]
    })
}
