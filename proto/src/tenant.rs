//! Tenants and roles: who calls the HTTP API or submits on the queue, and
//! what they may do.
//!
//! Every record the scheduler keeps and every run belongs to one tenant;
//! the tenant comes from the caller's API key, never from a request body
//! or a model's words. The long-term store keeps each tenant's namespaces
//! under a root label of its own ([`store_namespace`]), so one tenant's
//! agents and API calls cannot address another's items.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The tenant of callers without a key: embedded runs, a loopback
/// listener without keys, and records written before tenants existed.
pub const DEFAULT_TENANT: &str = "default";

/// The header that carries an API key: on HTTP (what `langgraph-sdk`
/// sends for `api_key`), and on a queue submission.
pub const CREDENTIAL_HEADER: &str = "x-api-key";

/// The longest tenant id.
pub const MAX_TENANT_LEN: usize = 64;

/// A tenant id: 1 to 64 ASCII letters, digits, `-` or `_`, so it is safe
/// in a store label, a Redis key and a log line.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(try_from = "String", into = "String")]
pub struct TenantId(String);

/// Why a string is not a tenant id or a role.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TenantError {
    /// The tenant id breaks the rules of [`TenantId`].
    #[error("tenant id {0:?} must be 1 to {MAX_TENANT_LEN} ASCII letters, digits, '-' or '_'")]
    BadTenant(String),
    /// Not one of the roles.
    #[error("role {0:?} is not one of read, submit, admin")]
    BadRole(String),
}

impl TenantId {
    /// `id` as a tenant id, if it is one.
    pub fn new(id: impl Into<String>) -> Result<Self, TenantError> {
        let id = id.into();
        let valid = !id.is_empty()
            && id.len() <= MAX_TENANT_LEN
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if valid {
            Ok(TenantId(id))
        } else {
            Err(TenantError::BadTenant(id))
        }
    }

    /// The tenant id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the [`DEFAULT_TENANT`].
    pub fn is_default(&self) -> bool {
        self.0 == DEFAULT_TENANT
    }
}

impl Default for TenantId {
    fn default() -> Self {
        TenantId(DEFAULT_TENANT.to_owned())
    }
}

impl TryFrom<String> for TenantId {
    type Error = TenantError;

    fn try_from(id: String) -> Result<Self, Self::Error> {
        TenantId::new(id)
    }
}

impl From<TenantId> for String {
    fn from(id: TenantId) -> Self {
        id.0
    }
}

impl FromStr for TenantId {
    type Err = TenantError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TenantId::new(s)
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a key may do, each role allowing what the one before it does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads assistants, threads, runs, batches, store items and streams.
    Read,
    /// Also creates threads, runs, batches and store items, and cancels
    /// and deletes its tenant's threads and runs.
    Submit,
    /// Also creates, changes and deletes assistants.
    Admin,
}

impl Role {
    /// Whether this role may do what `needed` may.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }

    /// The role's name, as configured.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Submit => "submit",
            Role::Admin => "admin",
        }
    }
}

impl FromStr for Role {
    type Err = TenantError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read" => Ok(Role::Read),
            "submit" => Ok(Role::Submit),
            "admin" => Ok(Role::Admin),
            other => Err(TenantError::BadRole(other.to_owned())),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who made a request: the tenant and role of its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The tenant everything the request reads or writes belongs to.
    pub tenant: TenantId,
    /// What the key may do.
    pub role: Role,
}

impl Caller {
    /// The caller without a key where none is needed: the default tenant,
    /// allowed everything.
    pub fn open() -> Self {
        Caller {
            tenant: TenantId::default(),
            role: Role::Admin,
        }
    }
}

/// What the root label of a tenant's store namespaces starts with.
const STORE_ROOT_PREFIX: &str = "tenant:";

/// The namespace `namespace` of `tenant`'s store, as the store keeps it:
/// under a root label of the tenant's own. Callers never see that label
/// ([`caller_namespace`] takes it off), so no namespace a caller names can
/// reach another tenant's.
pub fn store_namespace(tenant: &TenantId, namespace: &[String]) -> Vec<String> {
    let mut scoped = Vec::with_capacity(namespace.len() + 1);
    scoped.push(format!("{STORE_ROOT_PREFIX}{tenant}"));
    scoped.extend(namespace.iter().cloned());
    scoped
}

/// A stored namespace of `tenant` as its callers name it; `None` for a
/// namespace outside the tenant's.
pub fn caller_namespace(tenant: &TenantId, stored: &[String]) -> Option<Vec<String>> {
    let (root, rest) = stored.split_first()?;
    (root.strip_prefix(STORE_ROOT_PREFIX) == Some(tenant.as_str())).then(|| rest.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn tenant_ids_are_safe_labels() {
        assert!(TenantId::new("acme-1_b").is_ok());
        for bad in ["", "a.b", "a b", "a:b", "é", &"x".repeat(65)] {
            assert!(TenantId::new(bad).is_err(), "{bad:?}");
        }
        assert!(TenantId::default().is_default());
        let parsed: TenantId = serde_json::from_str("\"acme\"").unwrap();
        assert_eq!(parsed.as_str(), "acme");
        assert!(serde_json::from_str::<TenantId>("\"a.b\"").is_err());
    }

    #[test]
    fn roles_are_ordered() {
        assert!(Role::Admin.allows(Role::Submit) && Role::Submit.allows(Role::Read));
        assert!(!Role::Read.allows(Role::Submit) && !Role::Submit.allows(Role::Admin));
        for role in [Role::Read, Role::Submit, Role::Admin] {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn store_namespaces_round_trip_per_tenant() {
        let acme = TenantId::new("acme").unwrap();
        let other = TenantId::new("other").unwrap();
        let ns = vec!["agent".to_owned(), "u1".to_owned()];
        let stored = store_namespace(&acme, &ns);
        assert_eq!(stored, ["tenant:acme", "agent", "u1"]);
        assert_eq!(caller_namespace(&acme, &stored), Some(ns));
        assert_eq!(caller_namespace(&other, &stored), None);
        assert_eq!(caller_namespace(&acme, &[]), None);
    }
}
