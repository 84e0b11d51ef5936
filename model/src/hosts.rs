//! The providers deepfleet knows by name: the wire protocol each speaks,
//! its default API root, and the key variables its own SDK reads.
//!
//! Adding a provider (an OpenAI-compatible host, say) is one row of
//! [`KNOWN`]. A name not listed speaks Chat Completions once a base URL is
//! configured for it; every provider reads `{PROVIDER}_BASE_URL` and
//! `{PROVIDER}_API_KEY` (see [`crate::Providers`]).

use crate::protocols::Wire;

/// A provider known by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KnownHost {
    /// The `provider` of `provider:model`.
    pub(crate) name: &'static str,
    /// The protocol it speaks.
    pub(crate) wire: Wire,
    /// Its API root when none is configured.
    pub(crate) base_url: &'static str,
    /// Key variables tried after `{PROVIDER}_API_KEY`, in order.
    pub(crate) key_variables: &'static [&'static str],
    /// Whether a call without a key is refused (all hosted APIs; a local
    /// Ollama takes none), so a missing key fails before the first call.
    pub(crate) needs_key: bool,
}

const fn chat_completions(name: &'static str, base_url: &'static str) -> KnownHost {
    KnownHost {
        name,
        wire: Wire::ChatCompletions,
        base_url,
        key_variables: &[],
        needs_key: true,
    }
}

/// Every provider known by name.
const KNOWN: &[KnownHost] = &[
    chat_completions("openai", "https://api.openai.com/v1"),
    chat_completions("openrouter", "https://openrouter.ai/api/v1"),
    chat_completions("fireworks", "https://api.fireworks.ai/inference/v1"),
    chat_completions("baseten", "https://inference.baseten.co/v1"),
    KnownHost {
        needs_key: false,
        ..chat_completions("ollama", "http://localhost:11434/v1")
    },
    KnownHost {
        name: "anthropic",
        wire: Wire::Messages,
        base_url: "https://api.anthropic.com",
        key_variables: &[],
        needs_key: true,
    },
    KnownHost {
        name: "google_genai",
        wire: Wire::GenerateContent,
        base_url: "https://generativelanguage.googleapis.com/v1beta",
        key_variables: &["GOOGLE_API_KEY", "GEMINI_API_KEY"],
        needs_key: true,
    },
];

/// The provider called `name`, if deepfleet knows it.
pub(crate) fn known(name: &str) -> Option<&'static KnownHost> {
    KNOWN.iter().find(|host| host.name == name)
}

/// The protocol `name` speaks: its row's, else Chat Completions.
pub(crate) fn wire_of(name: &str) -> Wire {
    known(name).map_or(Wire::ChatCompletions, |host| host.wire)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_unknown_names_speak_chat_completions() {
        let names: HashSet<_> = KNOWN.iter().map(|host| host.name).collect();
        assert_eq!(names.len(), KNOWN.len());
        assert_eq!(wire_of("anthropic"), Wire::Messages);
        assert_eq!(wire_of("google_genai"), Wire::GenerateContent);
        assert_eq!(wire_of("my-proxy"), Wire::ChatCompletions);
        assert_eq!(known("my-proxy"), None);
    }
}
