//! Token counting with tiktoken.
//!
//! Each message is counted once, when it is appended to the log, and the
//! count is stored beside it ([`deepfleet_proto::LoggedMessage`]); a step
//! therefore only counts what it adds, however long the conversation.

use deepfleet_proto::{ContentBlock, LoggedMessage, Message};
use tiktoken_rs::CoreBPE;

/// Per-message overhead of the chat format (role markers).
const MESSAGE_OVERHEAD: u32 = 3;
/// What providers charge for a typical image, as a flat estimate.
const IMAGE_TOKENS: u32 = 85;

/// The tokenizer of current OpenAI models; a close enough estimate for
/// other providers, whose reported usage corrects it.
fn bpe() -> &'static CoreBPE {
    tiktoken_rs::o200k_base_singleton()
}

/// Loads the tokenizer now rather than at the first count: it takes a
/// noticeable time (most of a second in a debug build), which a worker
/// spends before it takes deliveries, not while holding them.
pub fn warm() {
    bpe();
}

/// Tokens in a text.
pub fn count_text(text: &str) -> u32 {
    u32::try_from(bpe().encode_ordinary(text).len()).unwrap_or(u32::MAX)
}

/// Tokens of one message as sent to a model: content, tool calls and
/// role overhead.
pub fn count_message(message: &Message) -> u32 {
    let mut total = MESSAGE_OVERHEAD;
    for block in message.content() {
        total = total.saturating_add(match block {
            ContentBlock::Text { text } => count_text(text),
            ContentBlock::Image { .. } => IMAGE_TOKENS,
        });
    }
    for call in message.tool_calls() {
        total = total
            .saturating_add(count_text(&call.name))
            .saturating_add(count_text(&call.arguments));
    }
    total
}

/// Wraps a message for the log with its token count.
pub fn logged(message: Message) -> LoggedMessage {
    let tokens = count_message(&message);
    LoggedMessage { message, tokens }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_text_and_overhead() {
        assert_eq!(count_text("hello world"), 2);
        assert_eq!(
            count_message(&Message::user("hello world")),
            2 + MESSAGE_OVERHEAD
        );
    }

    #[test]
    fn logged_keeps_the_count() {
        let entry = logged(Message::assistant("fine"));
        assert_eq!(entry.tokens, count_message(&entry.message));
    }
}
