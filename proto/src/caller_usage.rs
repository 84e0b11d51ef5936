//! Model calls and tokens of a run tree, split by who made them: the
//! same split as the `caller` label of `deepfleet_model_calls_total` and
//! `deepfleet_model_tokens_total`, so a result line, a batch's summary
//! and the metrics count one thing three times.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// Model calls and their tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallUsage {
    /// Successful model calls.
    pub model_calls: u64,
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CallUsage {
    /// Counts one call that used `usage`.
    pub fn add_call(&mut self, usage: &Usage) {
        self.model_calls += 1;
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        self.cached_input_tokens += usage.cached_input_tokens;
    }

    /// Adds another count to this one.
    pub fn add(&mut self, other: &CallUsage) {
        self.model_calls += other.model_calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
    }

    /// The tokens alone.
    pub fn tokens(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cached_input_tokens: self.cached_input_tokens,
        }
    }
}

/// A run's model calls and tokens by caller. Calls that failed are not
/// here (the metrics count them with `outcome="error"`), nor those of a
/// step that failed after them and ran again (counted once, with the
/// step that committed), nor those of background tasks, which report to
/// no one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageByCaller {
    /// The run's own agent calls.
    #[serde(default)]
    pub main: CallUsage,
    /// The agent calls of its subagents, at every depth.
    #[serde(default)]
    pub subagents: CallUsage,
    /// Summaries compressing the context of the run or of a subagent.
    #[serde(default)]
    pub summarization: CallUsage,
}

impl UsageByCaller {
    /// Every caller's count, labelled as a summary shows them.
    pub fn callers(&self) -> [(&'static str, &CallUsage); 3] {
        [
            ("main", &self.main),
            ("subagents", &self.subagents),
            ("summarization", &self.summarization),
        ]
    }

    /// All callers together.
    pub fn total(&self) -> CallUsage {
        let mut total = CallUsage::default();
        for (_, usage) in self.callers() {
            total.add(usage);
        }
        total
    }

    /// Adds another split to this one, caller by caller (a batch's runs).
    pub fn add(&mut self, other: &UsageByCaller) {
        self.main.add(&other.main);
        self.subagents.add(&other.subagents);
        self.summarization.add(&other.summarization);
    }

    /// Adds what a subagent run used: its own and its subagents' calls
    /// are this run's subagents' calls; summaries stay summaries.
    pub fn add_child(&mut self, child: &UsageByCaller) {
        self.subagents.add(&child.main);
        self.subagents.add(&child.subagents);
        self.summarization.add(&child.summarization);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(model_calls: u64, input_tokens: u64) -> CallUsage {
        CallUsage {
            model_calls,
            input_tokens,
            output_tokens: model_calls,
            cached_input_tokens: 0,
        }
    }

    #[test]
    fn a_childs_calls_are_the_parents_subagents_calls() {
        let grandchild = UsageByCaller {
            main: calls(2, 20),
            summarization: calls(1, 5),
            ..Default::default()
        };
        let mut child = UsageByCaller {
            main: calls(3, 30),
            ..Default::default()
        };
        child.add_child(&grandchild);
        let mut parent = UsageByCaller {
            main: calls(4, 40),
            ..Default::default()
        };
        parent.add_child(&child);
        assert_eq!(
            parent,
            UsageByCaller {
                main: calls(4, 40),
                subagents: calls(5, 50),
                summarization: calls(1, 5),
            }
        );
        assert_eq!(parent.total(), calls(10, 95));
    }

    #[test]
    fn a_record_without_the_split_reads_as_zero() {
        let empty: UsageByCaller = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, UsageByCaller::default());
    }
}
