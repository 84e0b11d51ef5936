//! Agent specs, as `deepfleet run --agent`, the scheduler and the workers
//! load them.
//!
//! Each input is a YAML document. Checked: loading never panics; an error
//! names a line inside the document; a spec that loads is valid, stores
//! as JSON and reads back unchanged and still valid (the store keeps
//! specs as JSON), and registering it with the scheduler either succeeds
//! (and the store then serves the same spec) or refuses it with a spec
//! error.

use std::sync::Arc;

use crate::json::{assert_round_trip, assert_same};
use crate::runtime::block_on;
use deepfleet_proto::AgentSpec;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_scheduler::{Intake, SchedulerError};
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;

/// Checks one input; a failure panics, as libFuzzer expects.
pub fn check(data: &[u8]) {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let spec = match AgentSpec::from_yaml(source) {
        Ok(spec) => spec,
        Err(e) => {
            assert!(!e.message.is_empty(), "an error says what is wrong");
            if let Some(line) = e.line {
                let lines = yaml_lines(source);
                assert!(
                    (1..=lines + 1).contains(&line),
                    "line {line} is outside a document of {lines} lines: {e}"
                );
            }
            return;
        }
    };
    if let Err(e) = spec.validate() {
        panic!("a loaded spec fails validation: {e}");
    }
    assert_round_trip(&spec);
    let stored = serde_json::to_string(&spec).expect("encodes");
    let reloaded: AgentSpec = serde_json::from_str(&stored).expect("decodes");
    if let Err(e) = reloaded.validate() {
        panic!("a stored spec fails validation once reloaded: {e}");
    }
    block_on(register(&spec));
}

/// The lines of `source` as the YAML parser counts them: a lone CR, NEL
/// (U+0085) and the Unicode line and paragraph separators break a line
/// as LF and CRLF do (`str::lines` sees none of them), and the error
/// lines come from the parser.
fn yaml_lines(source: &str) -> usize {
    const BREAKS: [char; 5] = ['\r', '\n', '\u{85}', '\u{2028}', '\u{2029}'];
    let breaks = source.replace("\r\n", "\n").matches(BREAKS).count();
    let unterminated = !source.is_empty() && !source.ends_with(BREAKS);
    breaks + usize::from(unterminated)
}

/// Registers `spec` with an intake over an embedded store.
async fn register(spec: &AgentSpec) {
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
    let intake = Intake::new(Arc::clone(&store), Arc::new(MemoryQueue::new()));
    match intake.register(spec).await {
        Ok(()) => {
            let served = store
                .get_spec(&spec.name)
                .await
                .expect("reads the spec")
                .expect("the registered spec is served");
            assert_same(&served, spec);
        }
        Err(SchedulerError::Spec(e)) => {
            assert!(!e.message.is_empty(), "a refusal says why");
        }
        Err(e) => panic!("registering a valid spec failed with a non-spec error: {e}"),
    }
}
