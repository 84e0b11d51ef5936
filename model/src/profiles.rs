//! Known models' limits: the largest prompt and completion, in tokens.
//!
//! Context compression triggers on a fraction of `max_input_tokens`, so a
//! wrong number here either summarises too early or lets a call overflow.
//! Names match exactly first, then by the longest listed prefix (so dated
//! snapshots such as `claude-sonnet-4-5-20250929` and future members of a
//! family find their family). Names are looked up without a routing
//! prefix (`models/`, `anthropic/` on OpenRouter). A model not listed has
//! no profile, and compression falls back to its documented defaults.
//!
//! Figures are the providers' published limits; where a family has grown
//! its limits over versions, the family prefix holds the conservative one
//! and newer versions are listed by name.

use std::collections::HashMap;

use deepfleet_proto::ModelProfile;

const fn profile(max_input_tokens: u64, max_output_tokens: u64) -> ModelProfile {
    ModelProfile {
        max_input_tokens,
        max_output_tokens,
    }
}

/// `(name or prefix, limits)`.
const KNOWN: &[(&str, ModelProfile)] = &[
    // OpenAI. GPT-5 models have a 400k window, of which 128k is output.
    ("gpt-5", profile(272_000, 128_000)),
    ("gpt-5-chat", profile(128_000, 16_384)),
    ("gpt-5.1-chat", profile(128_000, 16_384)),
    ("gpt-4.1", profile(1_047_576, 32_768)),
    ("gpt-4o", profile(128_000, 16_384)),
    ("o1", profile(200_000, 100_000)),
    ("o3", profile(200_000, 100_000)),
    ("o4-mini", profile(200_000, 100_000)),
    ("gpt-oss", profile(131_072, 131_072)),
    // Anthropic.
    ("claude-opus-4", profile(200_000, 32_000)),
    ("claude-opus-4-5", profile(200_000, 64_000)),
    ("claude-opus-4-6", profile(200_000, 128_000)),
    ("claude-opus-", profile(200_000, 64_000)),
    ("claude-sonnet-4", profile(200_000, 64_000)),
    ("claude-sonnet-", profile(200_000, 64_000)),
    ("claude-haiku-4", profile(200_000, 64_000)),
    ("claude-haiku-", profile(200_000, 64_000)),
    ("claude-3-7-sonnet", profile(200_000, 64_000)),
    ("claude-3-5-sonnet", profile(200_000, 8_192)),
    ("claude-3-5-haiku", profile(200_000, 8_192)),
    // Google.
    ("gemini-1.5-pro", profile(2_097_152, 8_192)),
    ("gemini-1.5-flash", profile(1_048_576, 8_192)),
    ("gemini-2.0-flash", profile(1_048_576, 8_192)),
    ("gemini-2.5-pro", profile(1_048_576, 65_536)),
    ("gemini-2.5-flash", profile(1_048_576, 65_536)),
    ("gemini-3", profile(1_048_576, 65_536)),
];

/// The built-in profile of `model`, if it is known.
pub fn builtin(model: &str) -> Option<ModelProfile> {
    find(KNOWN.iter().map(|(name, p)| (*name, *p)), model)
}

/// The profile of `model`: `overrides` (a provider's configured table,
/// matched the same way) first, then the built-in table.
pub fn lookup(overrides: &HashMap<String, ModelProfile>, model: &str) -> Option<ModelProfile> {
    find(overrides.iter().map(|(name, p)| (name.as_str(), *p)), model).or_else(|| builtin(model))
}

fn find<'a>(
    table: impl Iterator<Item = (&'a str, ModelProfile)> + Clone,
    model: &str,
) -> Option<ModelProfile> {
    let name = model.rsplit('/').next().unwrap_or(model);
    for candidate in [model, name] {
        if let Some((_, p)) = table.clone().find(|(known, _)| *known == candidate) {
            return Some(p);
        }
    }
    table
        .filter(|(known, _)| name.starts_with(known) || model.starts_with(known))
        .max_by_key(|(known, _)| known.len())
        .map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn exact_names_then_longest_prefixes_match() {
        let cases = [
            ("gpt-4.1", Some(profile(1_047_576, 32_768))),
            ("gpt-4.1-mini", Some(profile(1_047_576, 32_768))),
            ("gpt-5.5", Some(profile(272_000, 128_000))),
            ("gpt-5-chat-latest", Some(profile(128_000, 16_384))),
            ("claude-sonnet-4-5-20250929", Some(profile(200_000, 64_000))),
            ("claude-sonnet-5", Some(profile(200_000, 64_000))),
            ("claude-opus-4-1-20250805", Some(profile(200_000, 32_000))),
            ("claude-opus-4-5", Some(profile(200_000, 64_000))),
            ("models/gemini-2.5-flash", Some(profile(1_048_576, 65_536))),
            ("gemini-3.6-flash", Some(profile(1_048_576, 65_536))),
            ("anthropic/claude-haiku-4.5", Some(profile(200_000, 64_000))),
            ("z-ai/glm-5.2", None),
            ("north-mini-code-1.0", None),
            ("", None),
        ];
        for (model, expected) in cases {
            assert_eq!(builtin(model), expected, "{model}");
        }
    }

    #[test]
    fn configured_profiles_win_over_the_table() {
        let overrides = HashMap::from([
            ("gpt-4.1".to_owned(), profile(500_000, 8_000)),
            ("glm-".to_owned(), profile(200_000, 128_000)),
        ]);
        assert_eq!(lookup(&overrides, "gpt-4.1"), Some(profile(500_000, 8_000)));
        assert_eq!(
            lookup(&overrides, "gpt-4.1-mini"),
            Some(profile(500_000, 8_000))
        );
        assert_eq!(
            lookup(&overrides, "accounts/fireworks/models/glm-5p2"),
            Some(profile(200_000, 128_000))
        );
        assert_eq!(lookup(&overrides, "gpt-4o"), Some(profile(128_000, 16_384)));
        assert_eq!(lookup(&overrides, "unknown"), None);
    }
}
