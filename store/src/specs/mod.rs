//! Agent specs: immutable versions, and the one version served under each
//! name, which is what the scheduler registers and runs that name an agent
//! start with. Every step of a run loads the version the run was pinned
//! to, so registering a spec of the same name later (a newer deployment, or
//! `deepfleet submit` bringing its own) never changes a run under way, and
//! only the scheduler's registration changes what a name serves.

use async_trait::async_trait;
use deepfleet_proto::{AgentSpec, ServedSpec};

use crate::error::StoreError;

/// Agent spec versions by name and [`deepfleet_proto::spec_version`], and
/// the served version of each name.
///
/// Implementations must make a put visible to every later get, from any
/// process sharing the store; a version, once stored, never changes (its
/// id is its content), and serving a version replaces only the name's
/// served pointer.
#[async_trait]
pub trait Specs: Send + Sync + 'static {
    /// Stores `spec` as a version of its name, serving nothing; returns the
    /// version id. Idempotent.
    async fn put_spec_version(&self, spec: &AgentSpec) -> Result<String, StoreError>;

    /// Stores `spec` as a version and serves it under its name, replacing
    /// the name's served version; returns the version id.
    async fn serve_spec(&self, spec: &AgentSpec) -> Result<String, StoreError>;

    /// The spec served under `name`, with its version.
    async fn served_spec(&self, name: &str) -> Result<Option<ServedSpec>, StoreError>;

    /// One version of `name`'s spec.
    async fn get_spec_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<AgentSpec>, StoreError>;

    /// The spec served under `name`.
    async fn get_spec(&self, name: &str) -> Result<Option<AgentSpec>, StoreError> {
        Ok(self.served_spec(name).await?.map(|served| served.spec))
    }
}
