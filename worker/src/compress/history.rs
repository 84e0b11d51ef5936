//! The view of the log the model gets.
//!
//! The log is append-only; what the model sees is
//! `[summary, log[cutoff..], added]` with evicted messages replaced by
//! their stubs.

use deepfleet_proto::{ContextCursor, LoggedMessage};

/// The model's view of a thread, with token counts, for the decisions
/// that need more than totals (where to cut, what to truncate).
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// `[summary?, log[start..], added]`.
    pub messages: Vec<LoggedMessage>,
    /// Log index of the first message after the summary.
    pub start: usize,
    /// 1 when `messages[0]` is the summary, else 0.
    pub lead: usize,
}

impl View {
    /// Builds the view for `cursor` over the stored log and the step's
    /// added messages. Costs what the view holds, not the log.
    pub fn build(
        cursor: &ContextCursor,
        history: &[LoggedMessage],
        added: &[LoggedMessage],
    ) -> View {
        let start = cursor
            .summary
            .as_ref()
            .map_or(0, |s| usize::try_from(s.cutoff).unwrap_or(usize::MAX))
            .min(history.len() + added.len());
        let mut messages = Vec::new();
        if let Some(summary) = &cursor.summary {
            messages.push(summary.message.clone());
        }
        let lead = messages.len();
        let from_history = history.get(start..).unwrap_or_default();
        let from_added = added
            .get(start.saturating_sub(history.len())..)
            .unwrap_or_default();
        messages.extend(from_history.iter().chain(from_added).cloned());
        for evicted in &cursor.evicted {
            if let Some(i) = usize::try_from(evicted.index)
                .ok()
                .and_then(|i| i.checked_sub(start))
                && let Some(slot) = messages.get_mut(lead + i)
            {
                *slot = evicted.stub.clone();
            }
        }
        View {
            messages,
            start,
            lead,
        }
    }

    /// The log index of `messages[i]` (for `i >= lead`).
    pub fn log_index(&self, i: usize) -> usize {
        self.start + i - self.lead
    }

    /// Tokens of the view's messages.
    pub fn tokens(&self) -> u64 {
        self.messages.iter().map(|m| u64::from(m.tokens)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_fleet::tokens::logged;
    use deepfleet_proto::{EvictedMessage, Message, SummaryEvent};
    use pretty_assertions::assert_eq;

    fn texts(view: &View) -> Vec<String> {
        view.messages.iter().map(|m| m.message.text()).collect()
    }

    #[test]
    fn view_starts_at_the_summary_and_shows_stubs() {
        let history: Vec<_> = (0..5)
            .map(|i| logged(Message::user(format!("m{i}"))))
            .collect();
        let added = vec![logged(Message::user("m5"))];
        let plain = View::build(&ContextCursor::default(), &history, &added);
        assert_eq!(plain.messages.len(), 6);
        assert_eq!(plain.lead, 0);
        let cursor = ContextCursor {
            summary: Some(SummaryEvent {
                cutoff: 3,
                message: logged(Message::user("summary")),
                file_path: None,
                session: "session_x".into(),
                created_at_index: 5,
                summarized_tokens: 0,
                created_at: chrono::Utc::now(),
            }),
            evicted: vec![EvictedMessage {
                index: 4,
                path: "/p".into(),
                stub: logged(Message::user("stub")),
            }],
        };
        let view = View::build(&cursor, &history, &added);
        assert_eq!(texts(&view), ["summary", "m3", "stub", "m5"]);
        assert_eq!(view.log_index(1), 3);
        assert_eq!(view.log_index(3), 5);
    }
}
