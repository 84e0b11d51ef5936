//! Conversation messages: as the checkpoint log stores them, as Agent
//! Server clients read them, and as a run's `input` brings them.
//!
//! Each input is decoded as a `Message`, as a logged message of the
//! checkpoint and as a run's API `input`. Checked: nothing panics; a
//! decoded message or log entry encodes back to exactly itself; every
//! decoded message can be counted in tokens and shown to API clients as
//! a LangChain dict; the messages of an accepted `input` are user
//! messages with text, and round-trip too.

use crate::json::assert_round_trip;
use deepfleet_fleet::tokens::{count_message, logged};
use deepfleet_proto::{LoggedMessage, Message};
use deepfleet_scheduler::convert::{input_messages, message_dict, to_json};

/// Checks one input; a failure panics, as libFuzzer expects.
pub fn check(data: &[u8]) {
    if let Ok(message) = serde_json::from_slice::<Message>(data) {
        check_message(&message);
    }
    if let Ok(entry) = serde_json::from_slice::<LoggedMessage>(data) {
        assert_exact_round_trip(&entry);
        check_message(&entry.message);
    }
    if let Ok(input) = serde_json::from_slice::<serde_json::Value>(data)
        && let Ok(messages) = input_messages(&input)
    {
        for message in &messages {
            assert!(matches!(message, Message::User(_)), "{message:?}");
            assert!(!message.text().trim().is_empty(), "{message:?}");
            check_message(message);
        }
    }
}

fn check_message(message: &Message) {
    assert_exact_round_trip(message);
    assert_round_trip(message);
    let entry = logged(message.clone());
    assert_eq!(entry.tokens, count_message(message));
    let dict = to_json(&message_dict("thread", 0, message));
    assert!(!dict.is_null(), "an API dict always encodes");
}

fn assert_exact_round_trip<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(value).expect("encodes");
    let back: T = serde_json::from_str(&text).expect("decodes what it encoded");
    assert_eq!(&back, value, "{text}");
}
