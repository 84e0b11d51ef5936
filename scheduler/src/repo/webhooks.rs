//! Webhook deliveries: one record per run that asked for a webhook,
//! written with the run and kept through its attempts; listed in the
//! [`WEBHOOKS`] index while pending, which the delivery loop reads.

use chrono::{DateTime, Utc};
use deepfleet_proto::TenantId;
use deepfleet_proto::keys::records::WEBHOOKS;
use deepfleet_store::Store;
use serde::{Deserialize, Serialize};

use super::runs::RunMeta;
use super::{Listing, Repository};

/// Where a delivery is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// The run has not ended.
    Waiting,
    /// The run ended; its payload is fixed and an attempt is due at
    /// `next_attempt_at`.
    Due,
    /// The receiver answered 2xx.
    Delivered,
    /// Every attempt failed, or the delivery could not be made.
    Failed,
}

impl DeliveryState {
    /// Whether the delivery loop still has work on it.
    pub fn pending(self) -> bool {
        match self {
            DeliveryState::Waiting | DeliveryState::Due => true,
            DeliveryState::Delivered | DeliveryState::Failed => false,
        }
    }
}

/// One attempt, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// When it was sent.
    pub at: DateTime<Utc>,
    /// The receiver's HTTP status, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One run's webhook delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookRecord {
    /// The run, also the delivery's `webhook-id`.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The tenant whose secret signs it.
    #[serde(default, skip_serializing_if = "TenantId::is_default")]
    pub tenant: TenantId,
    /// Where it goes.
    pub url: String,
    /// Where it is.
    pub state: DeliveryState,
    /// The JSON sent, fixed when the run is seen ended, so every attempt
    /// carries the same body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// When the next attempt is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The attempts made, oldest first.
    #[serde(default)]
    pub attempts: Vec<AttemptRecord>,
    /// When the run was created.
    pub created_at: DateTime<Utc>,
    /// When it was delivered or given up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
}

impl WebhookRecord {
    /// The delivery of the run of `meta` to `url`, waiting for the run to
    /// end.
    pub fn waiting(meta: &RunMeta, url: String) -> Self {
        WebhookRecord {
            run_id: meta.run_id.clone(),
            thread_id: meta.thread_id.clone(),
            tenant: meta.tenant.clone(),
            url,
            state: DeliveryState::Waiting,
            body: None,
            next_attempt_at: None,
            attempts: Vec::new(),
            created_at: meta.created_at,
            finished_at: None,
        }
    }
}

/// Webhook deliveries, by run id; pending ones listed in [`WEBHOOKS`]
/// (all scores 0: run ids are UUIDv7, so that is the order they came in).
pub fn webhooks(store: &dyn Store) -> Repository<'_, WebhookRecord> {
    Repository::new(store, WEBHOOKS).indexed(|record: &WebhookRecord| {
        if record.state.pending() {
            vec![Listing::new(WEBHOOKS, 0)]
        } else {
            Vec::new()
        }
    })
}
