//! The webhook configuration the scheduler runs with: each tenant's
//! signing secret and how deliveries are tried, and the check a run's
//! `webhook` passes when the run is created.

use std::collections::BTreeMap;
use std::time::Duration;

use deepfleet_proto::TenantId;

use super::backoff::Backoff;
use super::destination::check_literal;
use super::error::WebhookError;
use super::sign::Secret;
use super::target::check_url;

/// Webhook signing and retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookConfig {
    secrets: BTreeMap<TenantId, Secret>,
    /// Attempts per delivery, the first included (at least 1).
    pub max_attempts: u32,
    /// How long one attempt may take.
    pub timeout: Duration,
    /// The waits between attempts.
    pub backoff: Backoff,
    /// Whether webhooks may go to loopback, private and other internal
    /// addresses ([`super::destination`]); off by default.
    pub allow_private: bool,
}

impl Default for WebhookConfig {
    /// No secrets (every webhook is refused), ten attempts of at most
    /// 10 s, from 5 s apart up to an hour apart, to public addresses only.
    fn default() -> Self {
        WebhookConfig {
            secrets: BTreeMap::new(),
            max_attempts: 10,
            timeout: Duration::from_secs(10),
            backoff: Backoff {
                initial: Duration::from_secs(5),
                max: Duration::from_secs(3600),
            },
            allow_private: false,
        }
    }
}

impl WebhookConfig {
    /// Signs `tenant`'s webhooks with `secret`.
    pub fn with_secret(mut self, tenant: TenantId, secret: Secret) -> Self {
        self.secrets.insert(tenant, secret);
        self
    }

    /// The secret signing `tenant`'s webhooks.
    pub fn secret(&self, tenant: &TenantId) -> Result<&Secret, WebhookError> {
        self.secrets
            .get(tenant)
            .ok_or_else(|| WebhookError::NoSecret(tenant.to_string()))
    }

    /// Checks a run's `webhook` for `tenant`: a URL a delivery can go to
    /// (not a literal internal address, unless those are allowed), and a
    /// secret to sign it with. Returns the URL as it will be used.
    pub fn check(&self, tenant: &TenantId, url: &str) -> Result<String, WebhookError> {
        let url = check_url(url)?;
        if !self.allow_private {
            check_literal(&url)?;
        }
        self.secret(tenant)?;
        Ok(url.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_needs_a_valid_url_and_its_tenants_secret() {
        let acme = TenantId::new("acme").unwrap();
        let config =
            WebhookConfig::default().with_secret(acme.clone(), Secret::parse("s").unwrap());
        assert_eq!(
            config.check(&acme, "https://hooks.example.com/x").unwrap(),
            "https://hooks.example.com/x"
        );
        let other = TenantId::new("other").unwrap();
        let err = config
            .check(&other, "https://hooks.example.com/x")
            .unwrap_err();
        assert_eq!(err, WebhookError::NoSecret("other".into()));
        assert!(err.to_string().contains("webhooks.secrets.other"), "{err}");
        assert!(matches!(
            config.check(&acme, "ftp://x"),
            Err(WebhookError::Url(_))
        ));
    }

    #[test]
    fn internal_addresses_are_refused_unless_allowed() {
        let acme = TenantId::new("acme").unwrap();
        let mut config =
            WebhookConfig::default().with_secret(acme.clone(), Secret::parse("s").unwrap());
        let metadata = "http://169.254.169.254/latest/meta-data";
        assert!(matches!(
            config.check(&acme, metadata),
            Err(WebhookError::Url(why)) if why.contains("not a public address")
        ));
        config.allow_private = true;
        assert_eq!(config.check(&acme, metadata).unwrap(), metadata);
    }
}
