//! When compression acts, and how big a request is.
//!
//! The numbers are deepagents' (reference Appendix B), applied to tiktoken
//! counts: with a model profile, summarize at 85 % of `max_input_tokens`
//! and keep the newest 10 %; without one, summarize at 170,000 tokens and
//! keep 6 messages.
//!
//! Sizing is a subtraction over running totals ([`Size::of_view`]): the
//! store keeps the log's token total and each summary records how many
//! tokens it replaced, so deciding costs the same at 10 messages as at
//! 10,000.

use deepfleet_proto::{ContextCursor, ModelProfile};

/// A tool result above this many tokens is offloaded to a file.
pub const TOOL_RESULT_TOKEN_LIMIT: u64 = 20_000;
/// A user message above this many tokens is evicted to a file.
pub const USER_MESSAGE_TOKEN_LIMIT: u64 = 50_000;

const TRIGGER_FRACTION: f64 = 0.85;
const KEEP_FRACTION: f64 = 0.10;
const INPUT_BUDGET_FRACTION: f64 = 0.95;
const DEFAULT_TRIGGER_TOKENS: u64 = 170_000;
const DEFAULT_KEEP_MESSAGES: usize = 6;
/// `compact_conversation` works from this share of the trigger on.
const COMPACT_ELIGIBLE_FRACTION: f64 = 0.5;

/// When to summarize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// At this many tokens in the request.
    Tokens(u64),
    /// At this many messages in the request.
    Messages(usize),
}

/// How much of the conversation a summary keeps verbatim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The newest messages that fit in this many tokens.
    Tokens(u64),
    /// The newest this many messages.
    Messages(usize),
}

/// The size of a request as compression sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Size {
    /// Estimated tokens: system prompt, tools and messages.
    pub tokens: u64,
    /// Messages, the summary message included.
    pub messages: usize,
    /// Input plus output tokens the provider reported for the newest
    /// model turn made with the current summary in place, if any.
    pub reported: Option<u64>,
}

/// Running totals a step knows without reading the log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// System prompt and tool schemas, counted once per agent.
    pub fixed: u64,
    /// Tokens of the whole stored log (the store's running total).
    pub log_tokens: u64,
    /// Messages in the stored log.
    pub log_len: usize,
    /// Tokens of the step's messages not yet in the log.
    pub added_tokens: u64,
    /// How many those are.
    pub added_len: usize,
    /// Tokens saved by showing evicted messages as stubs.
    pub evicted_savings: u64,
}

impl Size {
    /// The size of `[summary, log[cutoff..], added]`: a subtraction over
    /// running totals, whatever the length of the log.
    pub fn of_view(cursor: &ContextCursor, totals: &Totals) -> Size {
        let (summary_tokens, summarized, cutoff, lead) = match &cursor.summary {
            Some(s) => (
                u64::from(s.message.tokens),
                s.summarized_tokens,
                usize::try_from(s.cutoff).unwrap_or(usize::MAX),
                1,
            ),
            None => (0, 0, 0, 0),
        };
        let messages = (totals.log_len + totals.added_len).saturating_sub(cutoff) + lead;
        let tokens = totals
            .fixed
            .saturating_add(summary_tokens)
            .saturating_add(totals.log_tokens.saturating_sub(summarized))
            .saturating_add(totals.added_tokens)
            .saturating_sub(totals.evicted_savings);
        Size {
            tokens,
            messages,
            reported: None,
        }
    }

    /// The larger of the estimate and the provider's report.
    pub fn effective_tokens(&self) -> u64 {
        self.tokens.max(self.reported.unwrap_or(0))
    }
}

/// The compression settings of one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// When to summarize.
    pub trigger: Trigger,
    /// What a summary keeps.
    pub keep: Keep,
    /// Largest request worth sending: 95 % of the window minus the
    /// completion's room. Above it, compression acts even under the
    /// trigger.
    pub input_budget: Option<u64>,
}

impl Policy {
    /// deepagents' model-aware defaults.
    pub fn for_profile(profile: Option<ModelProfile>) -> Policy {
        match profile {
            Some(p) => {
                let window = p.max_input_tokens as f64;
                Policy {
                    trigger: Trigger::Tokens(((window * TRIGGER_FRACTION) as u64).max(1)),
                    keep: Keep::Tokens(((window * KEEP_FRACTION) as u64).max(1)),
                    input_budget: Some(
                        ((window * INPUT_BUDGET_FRACTION) as u64)
                            .saturating_sub(p.max_output_tokens),
                    ),
                }
            }
            None => Policy {
                trigger: Trigger::Tokens(DEFAULT_TRIGGER_TOKENS),
                keep: Keep::Messages(DEFAULT_KEEP_MESSAGES),
                input_budget: None,
            },
        }
    }

    /// Whether a request of `size` should be compressed before it is sent.
    pub fn fires(&self, size: &Size) -> bool {
        let over_trigger = match self.trigger {
            Trigger::Tokens(limit) => size.effective_tokens() >= limit,
            Trigger::Messages(limit) => size.messages >= limit,
        };
        over_trigger || self.input_budget.is_some_and(|b| size.tokens > b)
    }

    /// Whether `compact_conversation` may act: at half the trigger.
    pub fn compact_eligible(&self, size: &Size) -> bool {
        match self.trigger {
            Trigger::Tokens(limit) => {
                let half = ((limit as f64 * COMPACT_ELIGIBLE_FRACTION) as u64).max(1);
                size.effective_tokens() >= half
            }
            Trigger::Messages(limit) => {
                let half = ((limit as f64 * COMPACT_ELIGIBLE_FRACTION) as usize).max(1);
                size.messages >= half
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{LoggedMessage, Message, SummaryEvent};
    use pretty_assertions::assert_eq;

    fn logged(tokens: u32) -> LoggedMessage {
        LoggedMessage {
            message: Message::user("x"),
            tokens,
        }
    }

    // deepagents conformance §13.2 item 16, with this project's tiktoken
    // counts: 0.85 / 0.10 of the window with a profile, 170,000 tokens / 6
    // messages without.
    #[test]
    fn defaults_follow_the_profile() {
        let profile = ModelProfile {
            max_input_tokens: 16_000,
            max_output_tokens: 1_000,
        };
        assert_eq!(
            Policy::for_profile(Some(profile)),
            Policy {
                trigger: Trigger::Tokens(13_600),
                keep: Keep::Tokens(1_600),
                input_budget: Some(14_200),
            }
        );
        assert_eq!(
            Policy::for_profile(None),
            Policy {
                trigger: Trigger::Tokens(170_000),
                keep: Keep::Messages(6),
                input_budget: None,
            }
        );
    }

    #[test]
    fn size_is_a_subtraction_over_totals() {
        let mut cursor = ContextCursor::default();
        let totals = Totals {
            fixed: 100,
            log_tokens: 5_000,
            log_len: 40,
            added_tokens: 30,
            added_len: 2,
            evicted_savings: 0,
        };
        let plain = Size::of_view(&cursor, &totals);
        assert_eq!((plain.tokens, plain.messages), (5_130, 42));
        cursor.summary = Some(SummaryEvent {
            cutoff: 30,
            message: logged(200),
            file_path: None,
            session: "session_x".into(),
            created_at_index: 40,
            summarized_tokens: 4_000,
            created_at: chrono::Utc::now(),
        });
        let summarized = Size::of_view(&cursor, &totals);
        assert_eq!((summarized.tokens, summarized.messages), (1_330, 13));
    }

    #[test]
    fn fires_on_the_trigger_the_budget_or_the_report() {
        let policy = Policy::for_profile(Some(ModelProfile {
            max_input_tokens: 16_000,
            max_output_tokens: 3_000,
        }));
        let size = |tokens, reported| Size {
            tokens,
            messages: 3,
            reported,
        };
        assert!(!policy.fires(&size(12_000, None)));
        // The input budget (15,200 - 3,000) is below the trigger here.
        assert!(policy.fires(&size(12_201, None)));
        assert!(policy.fires(&size(1_000, Some(13_600))));
        let by_count = Policy {
            trigger: Trigger::Messages(5),
            keep: Keep::Messages(2),
            input_budget: None,
        };
        assert!(!by_count.fires(&Size {
            messages: 4,
            ..Size::default()
        }));
        assert!(by_count.fires(&Size {
            messages: 5,
            ..Size::default()
        }));
    }

    // deepagents conformance §13.2 item 18: eligibility at half the trigger.
    #[test]
    fn compaction_is_eligible_from_half_the_trigger() {
        let policy = Policy::for_profile(Some(ModelProfile {
            max_input_tokens: 16_000,
            max_output_tokens: 1_000,
        }));
        let at = |tokens| Size {
            tokens,
            messages: 2,
            reported: None,
        };
        assert!(!policy.compact_eligible(&at(6_799)));
        assert!(policy.compact_eligible(&at(6_800)));
        let by_count = Policy {
            trigger: Trigger::Messages(5),
            keep: Keep::Messages(2),
            input_budget: None,
        };
        assert!(!by_count.compact_eligible(&Size {
            messages: 1,
            ..Size::default()
        }));
        assert!(by_count.compact_eligible(&Size {
            messages: 2,
            ..Size::default()
        }));
    }
}
