//! `model_params`: the sampling settings an agent's model calls carry,
//! set per agent and per subagent in the spec and sent to each provider
//! in its own terms (`docs/agent-spec.md` has the mapping).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec_error::SpecError;

/// The largest `temperature` a spec may set (the OpenAI and Gemini
/// ceiling; Anthropic's is 1, and it refuses more itself).
pub const MAX_TEMPERATURE: f64 = 2.0;

/// Sampling settings of a role's model calls; an unset field is the
/// provider's default. A subagent's set fields win over the agent's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelParams {
    /// Sampling temperature, 0 to 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling: the probability mass sampled from, above 0 and
    /// at most 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Cap on the tokens of one answer, at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// How hard a reasoning model thinks before it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// How much reasoning a model spends on an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// Little: fast and cheap.
    Low,
    /// The usual amount.
    Medium,
    /// Much: slow, for hard problems.
    High,
}

impl ReasoningEffort {
    /// The name the spec and OpenAI use.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

impl ModelParams {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == ModelParams::default()
    }

    /// These params, with `base`'s filling the fields left unset.
    pub fn over(&self, base: &ModelParams) -> ModelParams {
        ModelParams {
            temperature: self.temperature.or(base.temperature),
            top_p: self.top_p.or(base.top_p),
            max_output_tokens: self.max_output_tokens.or(base.max_output_tokens),
            reasoning_effort: self.reasoning_effort.or(base.reasoning_effort),
        }
    }

    /// Checks the ranges; `field` is where the params sit in the spec.
    pub(crate) fn validate(&self, field: &str) -> Result<(), SpecError> {
        let at = |name: &str| format!("{field}.{name}");
        if let Some(t) = self.temperature
            && !(0.0..=MAX_TEMPERATURE).contains(&t)
        {
            return Err(SpecError::field(
                at("temperature"),
                format!("must be from 0 to {MAX_TEMPERATURE} (got {t})"),
            ));
        }
        if let Some(p) = self.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return Err(SpecError::field(
                at("top_p"),
                format!("must be above 0 and at most 1 (got {p})"),
            ));
        }
        if self.max_output_tokens == Some(0) {
            return Err(SpecError::field(
                at("max_output_tokens"),
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AgentSpec;
    use pretty_assertions::assert_eq;

    #[test]
    fn params_parse_and_a_subagent_overrides_per_field() {
        let spec = AgentSpec::from_yaml(
            "name: a\nmodel: openai:x\nmodel_params:\n  temperature: 0.2\n  top_p: 0.9\n  \
             reasoning_effort: high\nsubagents:\n  - name: r\n    description: d\n    \
             model_params: {temperature: 1.0, max_output_tokens: 500}\n",
        )
        .unwrap();
        let sub = spec.subagents[0].model_params.over(&spec.model_params);
        assert_eq!(
            sub,
            ModelParams {
                temperature: Some(1.0),
                top_p: Some(0.9),
                max_output_tokens: Some(500),
                reasoning_effort: Some(ReasoningEffort::High),
            }
        );
    }

    #[test]
    fn out_of_range_params_name_the_field_and_line() {
        for (yaml, field, line) in [
            (
                "model_params:\n  temperature: 2.5\n",
                "model_params.temperature",
                4,
            ),
            ("model_params:\n  top_p: 0\n", "model_params.top_p", 4),
            (
                "model_params: {max_output_tokens: 0}\n",
                "model_params.max_output_tokens",
                3,
            ),
            (
                "subagents:\n  - name: r\n    description: d\n    model_params:\n      \
                 temperature: -1\n",
                "subagents[0].model_params.temperature",
                7,
            ),
        ] {
            let err =
                AgentSpec::from_yaml(&format!("name: a\nmodel: openai:x\n{yaml}")).unwrap_err();
            assert_eq!(
                (err.field.as_str(), err.line),
                (field, Some(line)),
                "{yaml}"
            );
        }
        let err = AgentSpec::from_yaml(
            "name: a\nmodel: openai:x\nmodel_params:\n  reasoning_effort: extreme\n",
        )
        .unwrap_err();
        assert_eq!(err.field, "model_params.reasoning_effort");
    }
}
