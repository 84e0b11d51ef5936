//! Token counting with tiktoken.
//!
//! Each message is counted once, when it is appended to the log, and the
//! count is stored beside it ([`deepfleet_proto::LoggedMessage`]); a step
//! therefore only counts what it adds, however long the conversation.
//! Texts every model call sends again (an agent's system prompt, its tool
//! schemas) are counted once and remembered by their hash
//! ([`count_recurring`]): encoding a few kilobytes of prompt per call was
//! over a third of a step's CPU.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{LazyLock, Mutex};

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

/// Distinct recurring texts remembered; past this many the memory starts
/// over (prompts differ per agent and per thread's memory, not per step).
const REMEMBERED_TEXTS: usize = 4096;

/// Counts of recurring texts by (hash, length).
static REMEMBERED: LazyLock<Mutex<HashMap<(u64, usize), u32>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// One hasher for the process, so a text always hashes the same.
static HASHER: LazyLock<std::collections::hash_map::RandomState> =
    LazyLock::new(std::collections::hash_map::RandomState::new);

/// Tokens in a text that recurs across model calls (a system prompt, a
/// tool's schema): encoded the first time, then answered from memory.
/// Hashing a prompt costs microseconds; encoding it, hundreds.
pub fn count_recurring(text: &str) -> u32 {
    let key = (HASHER.hash_one(text), text.len());
    let remembered = |key| {
        REMEMBERED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .copied()
    };
    if let Some(tokens) = remembered(key) {
        return tokens;
    }
    // Encoded outside the lock: another thread may count the same text
    // meanwhile, to the same number.
    let tokens = count_text(text);
    let mut memory = REMEMBERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if memory.len() >= REMEMBERED_TEXTS {
        memory.clear();
    }
    memory.insert(key, tokens);
    tokens
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
        let prompt = "You write short briefings. ".repeat(40);
        assert_eq!(count_recurring(&prompt), count_text(&prompt));
        assert_eq!(count_recurring(&prompt), count_text(&prompt));
        assert_eq!(count_recurring("hello world"), 2);
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
