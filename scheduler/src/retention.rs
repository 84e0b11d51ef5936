//! Each tenant's retention: how long its ended runs live. The scheduler
//! fixes it on a run's record when the run is created
//! ([`deepfleet_proto::RunRecord::expire_after_secs`]); the worker that
//! ends the run applies it.

use std::collections::BTreeMap;
use std::time::Duration;

use deepfleet_proto::TenantId;

/// How long a stateless run's temporary thread outlives the run when no
/// one waits for it (a `/wait` or `/stream` follower removes it as soon
/// as it has answered): long enough for a follower to read the end.
pub const TEMPORARY_THREAD_SECS: u64 = 60;

/// How long each tenant's ended runs live; `None` = until deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionPolicy {
    default: Option<Duration>,
    tenants: BTreeMap<TenantId, Option<Duration>>,
}

impl RetentionPolicy {
    /// `default` for every tenant, except those in `tenants`.
    pub fn new(default: Option<Duration>, tenants: BTreeMap<TenantId, Option<Duration>>) -> Self {
        RetentionPolicy { default, tenants }
    }

    /// How long `tenant`'s ended runs live.
    pub fn for_tenant(&self, tenant: &TenantId) -> Option<Duration> {
        self.tenants.get(tenant).copied().unwrap_or(self.default)
    }

    /// The `expire_after_secs` of a new run of `tenant`.
    pub fn expire_after_secs(&self, tenant: &TenantId) -> Option<u64> {
        self.for_tenant(tenant).map(|ttl| ttl.as_secs().max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_override_the_default() {
        let tenant = |id: &str| TenantId::new(id).unwrap();
        let policy = RetentionPolicy::new(
            Some(Duration::from_secs(3600)),
            BTreeMap::from([
                (tenant("acme"), Some(Duration::from_secs(60))),
                (tenant("keeper"), None),
            ]),
        );
        assert_eq!(policy.expire_after_secs(&tenant("acme")), Some(60));
        assert_eq!(policy.expire_after_secs(&tenant("keeper")), None);
        assert_eq!(policy.expire_after_secs(&TenantId::default()), Some(3600));
        assert_eq!(
            RetentionPolicy::default().expire_after_secs(&tenant("acme")),
            None
        );
    }
}
