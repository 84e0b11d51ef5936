//! API keys: a presented key becomes its tenant and role, for every entry
//! that takes keys (the HTTP API and the submissions queue).
//!
//! Keys are known by their SHA-256 hashes only ([`ApiKeys::parse`] reads
//! the `<sha256 hex> <tenant> <role>` lines of the settings); a presented
//! key is hashed and compared with every configured hash in constant
//! time, and is never logged.

use std::sync::Arc;

use deepfleet_proto::tenant::{Caller, Role, TenantId};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The configured keys, by hash.
#[derive(Clone, Default)]
pub struct ApiKeys {
    entries: Arc<Vec<Entry>>,
}

struct Entry {
    hash: [u8; 32],
    caller: Caller,
}

/// Why a key line cannot be used; names its origin, never a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {reason} (expected `<sha256 hex> <tenant> <role>`)")]
pub struct KeyLineError {
    /// Where the line came from (`api.keys.ci`, `/keys:3`).
    pub origin: String,
    /// What is wrong with it.
    pub reason: String,
}

impl ApiKeys {
    /// No keys: the API is open.
    pub fn open() -> Self {
        ApiKeys::default()
    }

    /// The keys of `lines`, each `(origin, "<sha256 hex> <tenant>
    /// <role>")`. A hash listed twice is refused: it could only map one
    /// key to two tenants.
    pub fn parse<'a>(
        lines: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, KeyLineError> {
        let mut entries: Vec<Entry> = Vec::new();
        for (origin, text) in lines {
            let bad = |reason: String| KeyLineError {
                origin: origin.to_owned(),
                reason,
            };
            let fields: Vec<&str> = text.split_whitespace().collect();
            let [hash, tenant, role] = fields.as_slice() else {
                return Err(bad(format!("{} fields", fields.len())));
            };
            let hash =
                parse_hash(hash).ok_or_else(|| bad("the hash is not 64 hex digits".into()))?;
            let tenant = TenantId::new(*tenant).map_err(|e| bad(e.to_string()))?;
            let role: Role = role
                .parse()
                .map_err(|e: deepfleet_proto::tenant::TenantError| bad(e.to_string()))?;
            if entries.iter().any(|e| e.hash == hash) {
                return Err(bad("this hash is configured twice".into()));
            }
            entries.push(Entry {
                hash,
                caller: Caller { tenant, role },
            });
        }
        Ok(ApiKeys {
            entries: Arc::new(entries),
        })
    }

    /// Whether no key is configured (every caller is [`Caller::open`]).
    pub fn is_open(&self) -> bool {
        self.entries.is_empty()
    }

    /// The caller presenting `key` (any key when the API is open); `None`
    /// for a missing or unknown key. Every configured hash is compared,
    /// in constant time, so the answer's timing says nothing of which
    /// hashes exist.
    pub fn identify(&self, key: Option<&str>) -> Option<Caller> {
        if self.is_open() {
            return Some(Caller::open());
        }
        let presented = hash(key?);
        let mut found = None;
        for entry in self.entries.iter() {
            if bool::from(entry.hash.ct_eq(&presented)) {
                found = Some(entry.caller.clone());
            }
        }
        found
    }
}

/// The SHA-256 of `key`, as configured: 64 lowercase hex digits.
pub fn key_hash(key: &str) -> String {
    hash(key).iter().map(|b| format!("{b:02x}")).collect()
}

/// The configuration line of a key: `<sha256 hex> <tenant> <role>`.
pub fn key_line(key: &str, tenant: &TenantId, role: Role) -> String {
    format!("{} {tenant} {role}", key_hash(key))
}

fn hash(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}
