//! `[webhooks]`: the signing secrets of run-completion webhooks, by
//! tenant, and how deliveries are retried (see `docs/webhooks.md`). The
//! scheduler refuses a run asking for a webhook when its tenant has no
//! secret: every delivery is signed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Run-completion webhooks.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookSettings {
    /// Signing secrets by tenant id (`[webhooks.secrets] default =
    /// "whsec_..."`): `whsec_` and base64, as Standard Webhooks prints
    /// them, or any other text, used as it is. Default: none (webhooks
    /// are refused).
    #[serde(skip_serializing)]
    pub secrets: BTreeMap<String, String>,
    /// Attempts per delivery, the first included, before it is recorded
    /// as failed. Default: 10.
    pub max_attempts: u32,
    /// Seconds one attempt may take, connecting and answering. Default:
    /// 10.
    pub timeout_secs: u64,
    /// Milliseconds before the first retry; each later one waits three
    /// times longer, up to `retry_max_ms`, give or take a fifth. Default:
    /// 5000.
    pub retry_initial_ms: u64,
    /// Longest wait between two attempts, in milliseconds. Default:
    /// 3600000 (an hour: ten attempts span about three and a half hours).
    pub retry_max_ms: u64,
    /// Whether webhooks may go to loopback, private, link-local and other
    /// internal addresses. Default: false (public addresses only, so a
    /// run's creator cannot make the scheduler reach internal services).
    pub allow_private_destinations: bool,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            secrets: BTreeMap::new(),
            max_attempts: 10,
            timeout_secs: 10,
            retry_initial_ms: 5_000,
            retry_max_ms: 3_600_000,
            allow_private_destinations: false,
        }
    }
}

impl std::fmt::Debug for WebhookSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSettings")
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .field("max_attempts", &self.max_attempts)
            .field("timeout_secs", &self.timeout_secs)
            .field("retry_initial_ms", &self.retry_initial_ms)
            .field("retry_max_ms", &self.retry_max_ms)
            .field(
                "allow_private_destinations",
                &self.allow_private_destinations,
            )
            .finish()
    }
}
