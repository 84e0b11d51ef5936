//! Created assistants: the API shape, with the tenant that owns it.

use deepfleet_proto::api::Assistant;
use deepfleet_proto::keys::records::{ASSISTANTS, tenant_assistants};
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
    /// The assistant as the API shows it: its `context` with the values of
    /// its graph's `context_secrets` redacted.
    #[serde(flatten)]
    pub assistant: Assistant,
    /// The whole context as given, sealed under the fleet's context key,
    /// when redacting it hid a secret: what its runs start with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_context: Option<SealedContext>,
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
