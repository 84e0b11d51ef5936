//! Token counting in OpenAI's `o200k_base` encoding.
//!
//! Counts come from `bpe-openai`, which gives the same tokens as
//! tiktoken (a test below holds it to `tiktoken-rs` on prose, code, JSON
//! and mixed scripts) at about half the CPU per count, and loads its
//! tables in a third of the time: both were a tenth of an embedded
//! batch's CPU with `tiktoken-rs`.
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

use bpe_openai::Tokenizer;
use deepfleet_proto::{ContentBlock, LoggedMessage, Message};

/// Per-message overhead of the chat format (role markers).
const MESSAGE_OVERHEAD: u32 = 3;
/// What providers charge for a typical image, as a flat estimate.
const IMAGE_TOKENS: u32 = 85;

/// The tokenizer of current OpenAI models; a close enough estimate for
/// other providers, whose reported usage corrects it.
fn tokenizer() -> &'static Tokenizer {
    bpe_openai::o200k_base()
}

/// Loads the tokenizer now rather than at the first count: it takes a
/// noticeable time (tens of milliseconds), which a worker spends before it
/// takes deliveries, not while holding them.
pub fn warm() {
    tokenizer();
}

/// Tokens in a text.
pub fn count_text(text: &str) -> u32 {
    u32::try_from(tokenizer().count(text)).unwrap_or(u32::MAX)
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

    /// Texts of every kind a conversation carries, and the edges of the
    /// pre-tokenizer: contractions in both cases, digit runs, whitespace
    /// before a word and at the end, combining marks, emoji sequences.
    const SAMPLES: &[&str] = &[
        "",
        " ",
        "   \n\n  \t",
        "Summarize the three findings in one paragraph.",
        "I'LL SAY IT'S DONE, they've said; we'd've known.",
        "fn main() {\n    let x: Vec<u32> = (0..1234567).collect();\n}\n",
        r#"{"path": "/memories/notes.md", "offset": 0, "limit": 2000, "ok": true}"#,
        "数据分析的结果表明，模型在长上下文中表现良好。",
        "Привет, мир! Ça va? Grüße aus Köln — naïve café.",
        "مرحبا بالعالم ١٢٣٤٥ שלום עולם",
        "e\u{301}e\u{301} \u{200b}zero\u{200b}width ﬁne ǅungla",
        "👍🏽 family: 👨‍👩‍👧‍👦 flags: 🇩🇪🇯🇵 done.",
        "trailing spaces   ",
        "line one\r\nline two\r\n\r\n",
        "path/to/file.rs:42:7 https://example.com/a?b=c&d=e#f",
    ];

    /// Pseudo-random strings over an alphabet of edge cases, the same on
    /// every run.
    fn generated() -> Vec<String> {
        const PIECES: &[&str] = &[
            "a", "Zq", " ", "  ", "\n", "\r\n", "\t", "'s", "'LL", "0", "123", "-", "_", "{", "\"",
            ".", "/", "é", "中文", "😀", "\u{301}", "ا", "ж", "١", " \n ",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(state >> 33).unwrap_or(0)
        };
        (0..2_000)
            .map(|_| {
                let len = next() % 64;
                (0..len).map(|_| PIECES[next() % PIECES.len()]).collect()
            })
            .collect()
    }

    #[test]
    fn counts_are_tiktokens() {
        let reference = tiktoken_rs::o200k_base_singleton();
        let generated = generated();
        let texts = SAMPLES
            .iter()
            .copied()
            .chain(generated.iter().map(String::as_str));
        for text in texts {
            let expected = reference.encode_ordinary(text).len();
            assert_eq!(count_text(text) as usize, expected, "{text:?}");
        }
    }

    #[test]
    fn logged_keeps_the_count() {
        let entry = logged(Message::assistant("fine"));
        assert_eq!(entry.tokens, count_message(&entry.message));
    }
}
