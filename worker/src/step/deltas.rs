//! Token streaming for followed runs: the model calls of a step whose run
//! someone streams go through [`ModelClient::stream`], and their deltas
//! reach the run's delta stream, coalesced.
//!
//! Workers stream only while a follower's [`Followed`] mark is fresh, so
//! runs nobody watches pay one record read per step (sent with the
//! step's load, in the same round trip) and keep the
//! provider's own `stream` setting. A [`DeltaForwarder`] never blocks the
//! model call: [`DeltaSink::deliver`] only queues, and a task of its own
//! appends one [`RunDelta`] per source and [`FLUSH`] window (a 400-token
//! answer over 4 s is some 80 appends, not 400). The step awaits
//! [`DeltaForwarder::finish`] before it commits, so every delta of a step
//! is in the stream before the step's commit event: a follower can show
//! the partial chunks first and the complete message after.
//!
//! [`ModelClient::stream`]: deepfleet_model::ModelClient::stream

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use deepfleet_model::{CallPurpose, Delta, DeltaEvent, DeltaSink};
use deepfleet_proto::run_delta::{FOLLOWED, Followed};
use deepfleet_proto::{DeltaSource, RunDelta, ToolCallChunk};
use deepfleet_store::Store;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::warn;

/// How long deltas gather before one append.
pub const FLUSH: Duration = Duration::from_millis(50);

/// Whether someone streams `run_id` now. A store error counts as no: the
/// step goes on unstreamed rather than fail over a courtesy.
pub async fn followed(store: &dyn Store, run_id: &str) -> bool {
    match store.get_record(FOLLOWED, run_id).await {
        Ok(Some(value)) => {
            serde_json::from_value::<Followed>(value).is_ok_and(|mark| mark.holds(Utc::now()))
        }
        Ok(None) => false,
        Err(e) => {
            warn!(run_id, error = %e, "reading the run's follow mark");
            false
        }
    }
}

/// Queues a step's deltas and appends them to the run's delta stream.
pub struct DeltaForwarder {
    tx: Mutex<Option<mpsc::UnboundedSender<DeltaEvent>>>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl DeltaForwarder {
    /// Starts forwarding the deltas of `run_id`'s thread step `step`, whose
    /// AI message will have log index `index`.
    pub fn start(store: Arc<dyn Store>, run_id: String, step: u64, index: u64) -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(forward(store, run_id, step, index, rx));
        Arc::new(DeltaForwarder {
            tx: Mutex::new(Some(tx)),
            task: Mutex::new(Some(task)),
        })
    }

    /// Stops taking deltas and waits until the queued ones are appended.
    pub async fn finish(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task
            && let Err(e) = task.await
        {
            warn!(error = %e, "the delta forwarder stopped");
        }
    }
}

impl DeltaSink for DeltaForwarder {
    fn deliver(&self, event: DeltaEvent) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            // Closed only once the step finished: nothing left to show.
            let _ = tx.send(event);
        }
    }
}

async fn forward(
    store: Arc<dyn Store>,
    run_id: String,
    step: u64,
    index: u64,
    mut rx: mpsc::UnboundedReceiver<DeltaEvent>,
) {
    let mut open = true;
    while open {
        let Some(first) = rx.recv().await else {
            break;
        };
        let mut window = vec![first];
        let deadline = tokio::time::sleep(FLUSH);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                next = rx.recv() => match next {
                    Some(event) => window.push(event),
                    None => {
                        open = false;
                        break;
                    }
                },
                () = &mut deadline => break,
            }
        }
        for delta in coalesce(step, index, window) {
            // Best effort, like run events: the commit is the record.
            if let Err(e) = store.append_run_delta(&run_id, &delta).await {
                warn!(%run_id, step, error = %e, "appending a token delta");
            }
        }
    }
}

fn source_of(purpose: CallPurpose) -> DeltaSource {
    match purpose {
        CallPurpose::Agent => DeltaSource::Agent,
        CallPurpose::Summarization => DeltaSource::Summarization,
    }
}

/// `events` as few [`RunDelta`]s as keep their order: a new one starts
/// when the source changes or text follows tool-call chunks; argument text
/// of one call in a row is joined.
pub fn coalesce(step: u64, index: u64, events: Vec<DeltaEvent>) -> Vec<RunDelta> {
    let mut out: Vec<RunDelta> = Vec::new();
    for event in events {
        let source = source_of(event.purpose);
        let is_text = matches!(event.delta, Delta::Text { .. });
        let fresh = match out.last() {
            Some(last) => last.source != source || (is_text && !last.tool_calls.is_empty()),
            None => true,
        };
        if fresh {
            out.push(RunDelta {
                step,
                index,
                source,
                ..RunDelta::default()
            });
        }
        let Some(last) = out.last_mut() else {
            continue;
        };
        match event.delta {
            Delta::Text { text } => last.text.push_str(&text),
            Delta::ToolCall {
                index,
                id,
                name,
                arguments,
            } => match last.tool_calls.last_mut() {
                Some(chunk) if chunk.index == index && id.is_none() && name.is_none() => {
                    chunk.arguments.push_str(&arguments)
                }
                _ => last.tool_calls.push(ToolCallChunk {
                    index,
                    id,
                    name,
                    arguments,
                }),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_store::embedded::EmbeddedStore;
    use deepfleet_store::prelude::*;
    use pretty_assertions::assert_eq;

    fn text(purpose: CallPurpose, text: &str) -> DeltaEvent {
        DeltaEvent {
            purpose,
            delta: Delta::Text { text: text.into() },
        }
    }

    fn call(index: usize, id: Option<&str>, arguments: &str) -> DeltaEvent {
        DeltaEvent {
            purpose: CallPurpose::Agent,
            delta: Delta::ToolCall {
                index,
                id: id.map(str::to_owned),
                name: id.map(|_| "ls".to_owned()),
                arguments: arguments.into(),
            },
        }
    }

    #[test]
    fn coalescing_keeps_order_sources_and_calls_apart() {
        let events = vec![
            text(CallPurpose::Summarization, "Sum"),
            text(CallPurpose::Summarization, "mary"),
            text(CallPurpose::Agent, "Let me "),
            text(CallPurpose::Agent, "look."),
            call(0, Some("c0"), ""),
            call(0, None, "{\"pa"),
            call(0, None, "th\":\"/\"}"),
            call(1, Some("c1"), "{}"),
            text(CallPurpose::Agent, "!"),
        ];
        let chunk = |index, id: Option<&str>, arguments: &str| ToolCallChunk {
            index,
            id: id.map(str::to_owned),
            name: id.map(|_| "ls".to_owned()),
            arguments: arguments.into(),
        };
        let delta = |source, text: &str, tool_calls| RunDelta {
            step: 4,
            index: 9,
            source,
            text: text.into(),
            tool_calls,
        };
        assert_eq!(
            coalesce(4, 9, events),
            vec![
                delta(DeltaSource::Summarization, "Summary", vec![]),
                delta(
                    DeltaSource::Agent,
                    "Let me look.",
                    vec![
                        chunk(0, Some("c0"), "{\"path\":\"/\"}"),
                        chunk(1, Some("c1"), "{}"),
                    ]
                ),
                delta(DeltaSource::Agent, "!", vec![]),
            ]
        );
    }

    #[tokio::test]
    async fn finish_appends_everything_delivered() {
        let store = Arc::new(EmbeddedStore::new());
        let forwarder = DeltaForwarder::start(store.clone(), "r".into(), 2, 5);
        for word in ["a ", "b ", "c"] {
            forwarder.deliver(text(CallPurpose::Agent, word));
        }
        forwarder.finish().await;
        // Late deltas (none should come) are dropped, not appended.
        forwarder.deliver(text(CallPurpose::Agent, "late"));
        let deltas = store.run_deltas("r", None, 100).await.unwrap();
        let joined: String = deltas.iter().map(|(_, d)| d.text.as_str()).collect();
        assert_eq!(joined, "a b c");
        assert!(deltas.iter().all(|(_, d)| d.step == 2 && d.index == 5));
    }

    #[tokio::test]
    async fn only_a_fresh_mark_streams() {
        let store = EmbeddedStore::new();
        assert!(!followed(&store, "r").await);
        let mark = |secs: i64| {
            serde_json::to_value(Followed {
                until: Utc::now() + chrono::Duration::seconds(secs),
            })
            .unwrap()
        };
        store.put_record(FOLLOWED, "r", &mark(30)).await.unwrap();
        assert!(followed(&store, "r").await);
        store.put_record(FOLLOWED, "r", &mark(-1)).await.unwrap();
        assert!(!followed(&store, "r").await);
    }
}
