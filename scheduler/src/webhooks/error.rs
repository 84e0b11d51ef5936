//! Why a webhook was refused or could not be set up.

/// A webhook that cannot be sent as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The URL is not one a webhook can go to.
    #[error("webhook: {0}")]
    Url(String),
    /// The run's tenant has no signing secret: its webhooks could not be
    /// signed.
    #[error(
        "webhook: no signing secret is configured for tenant '{0}' (webhooks.secrets.{0}), \
         so its webhooks cannot be signed"
    )]
    NoSecret(String),
    /// A configured secret does not parse.
    #[error("webhook secret: {0}")]
    Secret(String),
    /// The body could not be made (the store failed reading the run).
    #[error("webhook body: {0}")]
    Payload(String),
    /// The HTTP client could not be built.
    #[error("webhook client: {0}")]
    Client(String),
}
