//! Spec versions: a spec's content names it, so a version, once stored,
//! is never replaced, and a run pinned to one keeps the agent it started
//! with whoever registers a spec of the same name later.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::spec::AgentSpec;

/// Hex digits of the content digest a version id keeps: 64 bits, far
/// beyond any number of versions one name gets.
const VERSION_HEX: usize = 16;

/// The version id of `spec`: the start of the SHA-256 of its JSON form.
/// The form is deterministic (struct fields in order, maps sorted or in
/// insertion order, both preserved by a round trip), so a spec read back
/// from a store names the version it was stored as.
pub fn spec_version(spec: &AgentSpec) -> String {
    let json = serde_json::to_vec(spec).unwrap_or_default();
    let digest = Sha256::digest(&json);
    let mut hex = String::with_capacity(VERSION_HEX);
    for byte in digest.iter().take(VERSION_HEX / 2) {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// The spec served under its name, with its version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServedSpec {
    /// The version id ([`spec_version`]).
    pub version: String,
    /// The spec.
    pub spec: AgentSpec,
}

impl ServedSpec {
    /// `spec` with its version.
    pub fn new(spec: AgentSpec) -> Self {
        ServedSpec {
            version: spec_version(&spec),
            spec,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> AgentSpec {
        AgentSpec::from_yaml(yaml).unwrap()
    }

    #[test]
    fn a_version_follows_the_content_and_survives_a_round_trip() {
        let a = spec(
            "name: a\nmodel: openai:x\nstate_schema: {type: object, properties: {z: {type: string}, b: {type: integer}}}\n",
        );
        let same = spec(
            "name: a\nmodel: openai:x\nstate_schema: {type: object, properties: {z: {type: string}, b: {type: integer}}}\n",
        );
        let other = spec("name: a\nmodel: openai:x\nsystem_prompt: Be brief.\n");
        assert_eq!(spec_version(&a), spec_version(&same));
        assert_ne!(spec_version(&a), spec_version(&other));
        assert_eq!(spec_version(&a).len(), VERSION_HEX);
        let back: AgentSpec = serde_json::from_slice(&serde_json::to_vec(&a).unwrap()).unwrap();
        assert_eq!(spec_version(&back), spec_version(&a));
    }
}
