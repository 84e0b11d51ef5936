//! Following a run: the one loop under every follow path. `/wait` and
//! `/join`, the SSE modes of a run's and a thread's stream, the protocol's
//! event stream, A2A streaming and the bounded waits of A2A and MCP calls
//! are each a [`Wire`]: what they send of a run. [`follow`] looks at the
//! run every [`POLL`] while it is quiet, hands each look to the wire,
//! gives it a chance to send a keep-alive, and says why it stopped.
//!
//! A look reads the run's record (has it ended?) and, for wires that
//! show steps, the run's event stream from where the last look ended.
//! Workers append to that stream after each commit, so any scheduler
//! instance can follow any run, and a step costs reading just its events.

use std::time::Duration;

use deepfleet_proto::{RunEvent, RunStatus};
use deepfleet_store::StoreError;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Runs;
use super::error::RunsError;
use crate::error::SchedulerError;
use crate::repo::runs::RunMeta;

/// How often a follower looks at a quiet run.
pub const POLL: Duration = Duration::from_millis(150);
/// How long a wire may stay silent before it sends a keep-alive
/// (reference: 5 s).
pub const KEEP_ALIVE: Duration = Duration::from_secs(5);
/// Events read from a run's stream per look.
const EVENTS_PER_READ: usize = 256;
/// The position before a run's first event.
pub const START: &str = "0-0";

/// Why following a run stopped.
#[derive(Debug)]
pub enum Stopped {
    /// The run ended (its status, if it started) and the wire sent its
    /// end. A run waiting on a human has ended, as the API sees it.
    Ended(Option<RunStatus>),
    /// The wire had what it wanted before the run ended.
    Answered,
    /// The client went away.
    ClientGone,
    /// Reading the run failed.
    Failed(RunsError),
}

impl From<RunsError> for Stopped {
    fn from(e: RunsError) -> Self {
        Stopped::Failed(e)
    }
}

impl From<StoreError> for Stopped {
    fn from(e: StoreError) -> Self {
        Stopped::Failed(e.into())
    }
}

impl From<SchedulerError> for Stopped {
    fn from(e: SchedulerError) -> Self {
        Stopped::Failed(e.into())
    }
}

/// The client of a wire went away: nothing it sends arrives any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

impl From<Gone> for Stopped {
    fn from(_: Gone) -> Self {
        Stopped::ClientGone
    }
}

/// One look at the followed run.
#[derive(Debug)]
pub struct Look {
    /// The steps committed since the last look (for wires that read
    /// them), each with its position in the run's event stream.
    pub steps: Vec<(String, RunEvent)>,
    /// The run's status, once it started.
    pub status: Option<RunStatus>,
}

/// What an edge sends of a followed run.
pub trait Wire {
    /// Whether looks read the run's steps (a wait needs its status only).
    fn reads_steps(&self) -> bool;

    /// Whether the client went away.
    fn gone(&self) -> bool;

    /// Sends what one look found. A wire may stop here (`Answered`) when
    /// it has what it wanted.
    fn look(&mut self, look: &Look) -> impl Future<Output = Result<(), Stopped>> + Send;

    /// Called after every look: the wire sends a keep-alive if it has
    /// been silent for [`KEEP_ALIVE`].
    fn quiet(&mut self) -> impl Future<Output = Result<(), Gone>> + Send;

    /// The run ended and every step of it was looked at: the wire sends
    /// the end.
    fn ended(
        &mut self,
        status: Option<RunStatus>,
    ) -> impl Future<Output = Result<(), Stopped>> + Send;
}

/// Follows the run of `meta` from `cursor` (a position in its event
/// stream; [`START`] for its beginning) until it
/// ends, the wire stops or its client goes away. `cursor` is left after
/// the last step looked at, so following can go on from there.
pub async fn follow<W: Wire>(
    runs: &Runs,
    meta: &RunMeta,
    cursor: &mut String,
    wire: &mut W,
) -> Stopped {
    match follow_until_ended(runs, meta, cursor, wire).await {
        Ok(status) => Stopped::Ended(status),
        Err(stopped) => stopped,
    }
}

async fn follow_until_ended<W: Wire>(
    runs: &Runs,
    meta: &RunMeta,
    cursor: &mut String,
    wire: &mut W,
) -> Result<Option<RunStatus>, Stopped> {
    loop {
        // A client gone is noticed within a poll, not at the next
        // keep-alive.
        if wire.gone() {
            return Err(Stopped::ClientGone);
        }
        // Status first: a run seen ended has appended all it will, but
        // its last event may still be on the way, hence the catch-up.
        let (done, status) = runs.life.finished(meta).await?;
        let steps = if wire.reads_steps() {
            runs.store()
                .run_events(&meta.run_id, Some(cursor), EVENTS_PER_READ)
                .await?
        } else {
            Vec::new()
        };
        let caught_up = steps.len() < EVENTS_PER_READ;
        if let Some((last, _)) = steps.last() {
            cursor.clone_from(last);
        }
        wire.look(&Look { steps, status }).await?;
        if done && caught_up {
            wire.ended(status).await?;
            return Ok(status);
        }
        wire.quiet().await?;
        if caught_up {
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Waits until the run of `meta` has ended (a run parked on a human
/// decision has), at most `limit`; returns whether it did. The bound is
/// what keeps the A2A and MCP calls, which answer only once the run ends,
/// from waiting for ever.
pub async fn ended_within(runs: &Runs, meta: &RunMeta, limit: Duration) -> Result<bool, RunsError> {
    let mut cursor = START.to_owned();
    match tokio::time::timeout(limit, follow(runs, meta, &mut cursor, &mut Unseen)).await {
        Ok(Stopped::Failed(e)) => Err(e),
        Ok(_) => Ok(true),
        Err(_) => Ok(false),
    }
}

/// The wire of a wait without a client: nothing is sent.
struct Unseen;

impl Wire for Unseen {
    fn reads_steps(&self) -> bool {
        false
    }

    fn gone(&self) -> bool {
        false
    }

    async fn look(&mut self, _: &Look) -> Result<(), Stopped> {
        Ok(())
    }

    async fn quiet(&mut self) -> Result<(), Gone> {
        Ok(())
    }

    async fn ended(&mut self, _: Option<RunStatus>) -> Result<(), Stopped> {
        Ok(())
    }
}

/// Where a wire's items go: a bounded channel to the response body, and
/// when it last took one, for keep-alives.
pub struct Outbox<T> {
    tx: mpsc::Sender<T>,
    last_sent: Instant,
}

impl<T> Outbox<T> {
    /// An outbox over `tx`.
    pub fn new(tx: mpsc::Sender<T>) -> Self {
        Outbox {
            tx,
            last_sent: Instant::now(),
        }
    }

    /// Sends `item`, waiting while the client is slow to read.
    pub async fn send(&mut self, item: T) -> Result<(), Gone> {
        self.tx.send(item).await.map_err(|_| Gone)?;
        self.last_sent = Instant::now();
        Ok(())
    }

    /// Whether the client went away.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Whether nothing went out for [`KEEP_ALIVE`].
    pub fn keep_alive_due(&self) -> bool {
        self.last_sent.elapsed() >= KEEP_ALIVE
    }

    /// Counts as having sent now: what the wire did (a step it looked
    /// at) keeps the client's connection as busy as a send would.
    pub fn touch(&mut self) {
        self.last_sent = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use deepfleet_proto::AgentSpec;
    use deepfleet_queue::Queue;
    use deepfleet_queue::memory::MemoryQueue;
    use deepfleet_store::Store;
    use deepfleet_store::embedded::EmbeddedStore;

    use super::*;
    use crate::intake::Intake;
    use crate::lifecycle::Lifecycle;
    use crate::runs::Graphs;

    /// A wire that records what it was handed.
    #[derive(Default)]
    struct Recorder {
        looks: usize,
        ended: Option<Option<RunStatus>>,
        gone: bool,
    }

    impl Wire for Recorder {
        fn reads_steps(&self) -> bool {
            true
        }

        fn gone(&self) -> bool {
            self.gone
        }

        async fn look(&mut self, _: &Look) -> Result<(), Stopped> {
            self.looks += 1;
            Ok(())
        }

        async fn quiet(&mut self) -> Result<(), Gone> {
            Ok(())
        }

        async fn ended(&mut self, status: Option<RunStatus>) -> Result<(), Stopped> {
            self.ended = Some(status);
            Ok(())
        }
    }

    async fn runs() -> Runs {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let steps: Arc<dyn Queue> = Arc::new(MemoryQueue::new());
        let intake = Intake::new(store, steps);
        intake
            .register(&AgentSpec::from_yaml("name: helper\nmodel: openai:x\n").unwrap())
            .await
            .unwrap();
        Runs {
            life: Lifecycle::new(intake),
            graphs: Graphs::new(["helper".to_owned()]),
            started_at: chrono::Utc::now(),
            tenant_runs_in_flight: None,
        }
    }

    fn meta(cancelled: bool) -> RunMeta {
        let mut meta: RunMeta = serde_json::from_value(serde_json::json!({
            "run_id": "r1", "thread_id": "t1", "tenant": "default",
            "assistant_id": "a", "graph_id": "helper",
            "multitask_strategy": "reject", "created_at": chrono::Utc::now(),
        }))
        .unwrap();
        meta.cancelled = cancelled;
        meta
    }

    #[tokio::test]
    async fn a_run_cancelled_before_it_started_has_ended() {
        let runs = runs().await;
        let mut wire = Recorder::default();
        let mut cursor = START.to_owned();
        let stopped = follow(&runs, &meta(true), &mut cursor, &mut wire).await;
        assert!(matches!(stopped, Stopped::Ended(None)), "{stopped:?}");
        assert_eq!((wire.looks, wire.ended), (1, Some(None)));
    }

    #[tokio::test]
    async fn a_client_gone_stops_the_follower_before_it_reads() {
        let runs = runs().await;
        let mut wire = Recorder {
            gone: true,
            ..Recorder::default()
        };
        let mut cursor = START.to_owned();
        let stopped = follow(&runs, &meta(false), &mut cursor, &mut wire).await;
        assert!(matches!(stopped, Stopped::ClientGone), "{stopped:?}");
        assert_eq!(wire.looks, 0);
    }

    #[tokio::test]
    async fn a_bounded_wait_answers_whether_the_run_ended_in_time() {
        let runs = runs().await;
        let ended = ended_within(&runs, &meta(true), POLL).await.unwrap();
        assert!(ended);
        let pending = ended_within(&runs, &meta(false), 2 * POLL).await.unwrap();
        assert!(!pending);
    }
}
