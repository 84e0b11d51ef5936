//! [`ProviderFactory`]: providers the embedding code registers with
//! [`crate::Providers`], for names the model crate does not serve itself
//! (the replay provider of tests and examples, a test double).
//!
//! The registry names no such provider: the binary, the workers and the
//! tests register what they need, so the model crate carries no test
//! support.

use std::sync::Arc;

use crate::retry::RetryPolicy;
use crate::{ModelClient, ModelError};

/// Builds the clients of one registered provider.
pub trait ProviderFactory: Send + Sync {
    /// The client answering `model` (the part after `provider:`), retrying
    /// with the registry's `retry` policy.
    ///
    /// Called on every resolution, so an implementation caches whatever is
    /// costly to build or must be shared between the clients it returns.
    fn client(&self, model: &str, retry: RetryPolicy) -> Result<Arc<dyn ModelClient>, ModelError>;
}
