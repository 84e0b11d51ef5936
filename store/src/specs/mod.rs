//! Agent specs by name: what the scheduler registers and every step of a
//! run loads to build its agent.

mod embedded;
mod redis;

use async_trait::async_trait;
use deepfleet_proto::AgentSpec;

use crate::error::StoreError;

/// Agent specs, keyed by [`AgentSpec::name`].
///
/// Implementations must make a put visible to every later get, from any
/// process sharing the store, and a put of an existing name replace it
/// whole.
#[async_trait]
pub trait Specs: Send + Sync + 'static {
    /// Saves an agent spec under its name, replacing an older one.
    async fn put_spec(&self, spec: &AgentSpec) -> Result<(), StoreError>;

    /// Loads an agent spec by name.
    async fn get_spec(&self, name: &str) -> Result<Option<AgentSpec>, StoreError>;
}
