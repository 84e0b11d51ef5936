//! Telling whoever follows a batch that no worker consumes its queue: the
//! batch would otherwise wait without a word until one starts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use deepfleet_queue::Queue;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How often the broker is asked, and how often the warning is repeated
/// while nothing consumes.
#[derive(Debug, Clone, Copy)]
pub struct Cadence {
    pub poll: Duration,
    pub repeat: Duration,
}

impl Default for Cadence {
    fn default() -> Self {
        Cadence {
            poll: Duration::from_secs(1),
            repeat: Duration::from_secs(30),
        }
    }
}

/// What the watch has to say.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Notice {
    /// Nothing consumes the queue, for `waited` so far.
    NoConsumer { waited: Duration },
    /// After a warning, `count` consumers are attached.
    Consumed { count: u32 },
    /// The broker could not be asked.
    Unknown { error: String },
}

/// Turns successive consumer counts into notices: a warning at the first
/// zero, again every `repeat` while it lasts, and word when consumers
/// appear after a warning. A queue consumed from the start says nothing.
#[derive(Debug)]
struct Tracker {
    repeat: Duration,
    zero_since: Option<Instant>,
    warned_at: Option<Instant>,
    failing: bool,
}

impl Tracker {
    fn new(repeat: Duration) -> Self {
        Tracker {
            repeat,
            zero_since: None,
            warned_at: None,
            failing: false,
        }
    }

    fn observe(&mut self, count: Result<u32, String>, now: Instant) -> Option<Notice> {
        let count = match count {
            Ok(count) => count,
            // Said once per run of failures; the counts resume after.
            Err(error) => {
                return (!std::mem::replace(&mut self.failing, true))
                    .then_some(Notice::Unknown { error });
            }
        };
        self.failing = false;
        if count > 0 {
            self.zero_since = None;
            return self.warned_at.take().map(|_| Notice::Consumed { count });
        }
        let since = *self.zero_since.get_or_insert(now);
        let due = self
            .warned_at
            .is_none_or(|at| now.duration_since(at) >= self.repeat);
        due.then(|| {
            self.warned_at = Some(now);
            Notice::NoConsumer {
                waited: now.duration_since(since),
            }
        })
    }
}

/// The line a notice prints, for the queue `name`.
fn message(notice: &Notice, name: &str) -> String {
    match notice {
        Notice::NoConsumer { waited } if waited.is_zero() => format!(
            "warning: no worker consumes queue {name}: the batch waits until one starts \
             (`deepfleet worker` on the same broker and queue_name)"
        ),
        Notice::NoConsumer { waited } => format!(
            "warning: still no worker consumes queue {name} (waiting for {}s)",
            waited.as_secs()
        ),
        Notice::Consumed { count } => {
            let plural = if *count == 1 { "" } else { "s" };
            format!("queue {name} now has {count} consumer{plural}: the batch goes on")
        }
        Notice::Unknown { error } => {
            format!("warning: could not ask the broker who consumes queue {name}: {error}")
        }
    }
}

/// One look at `queue`'s consumers (named `name` on the broker), for a
/// batch nobody follows (`submit --detach`): warns on stderr if none.
pub async fn warn_if_unconsumed(queue: &dyn Queue, name: &str) {
    if let Ok(Some(0)) = queue.consumers().await {
        let notice = Notice::NoConsumer {
            waited: Duration::ZERO,
        };
        eprintln!("{}", message(&notice, name));
    }
}

/// Longest wait for the last look at the consumers when the batch ends.
const LAST_LOOK: Duration = Duration::from_secs(2);

/// Watches a queue's consumers in the background until finished or
/// dropped.
pub struct ConsumerWatch {
    task: JoinHandle<()>,
    stop: Option<oneshot::Sender<()>>,
}

impl ConsumerWatch {
    /// Watches `queue` (named `name` on the broker), printing what it has
    /// to say to stderr. A backend that cannot count its consumers is
    /// not watched.
    pub fn start(queue: Arc<dyn Queue>, name: String) -> Self {
        Self::start_with(queue, name, Cadence::default(), |line| eprintln!("{line}"))
    }

    /// [`ConsumerWatch::start`] with its timing and output given.
    pub fn start_with(
        queue: Arc<dyn Queue>,
        name: String,
        cadence: Cadence,
        report: impl Fn(&str) + Send + 'static,
    ) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut tracker = Tracker::new(cadence.repeat);
            let mut ticks = tokio::time::interval(cadence.poll);
            loop {
                let last = tokio::select! {
                    _ = ticks.tick() => false,
                    _ = &mut stopped => true,
                };
                let count = match queue.consumers().await {
                    Ok(Some(count)) => Ok(count),
                    Ok(None) => return,
                    Err(e) => Err(e.to_string()),
                };
                if let Some(notice) = tracker.observe(count, Instant::now()) {
                    // The last look only closes a warning; a fresh one
                    // would say nothing useful once the batch is over.
                    if !last || matches!(notice, Notice::Consumed { .. }) {
                        report(&message(&notice, &name));
                    }
                }
                if last {
                    return;
                }
            }
        });
        ConsumerWatch {
            task,
            stop: Some(stop),
        }
    }

    /// Stops watching after one last look, so that a batch a late worker
    /// finished between two polls still says that the warning is over.
    pub async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(LAST_LOOK, &mut self.task).await;
    }
}

impl Drop for ConsumerWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use deepfleet_queue::memory::MemoryQueue;

    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn warns_at_once_repeats_and_says_when_a_consumer_comes() {
        let t0 = Instant::now();
        let mut tracker = Tracker::new(Duration::from_secs(30));
        let seen: Vec<Option<Notice>> =
            [(0, 0), (0, 1), (0, 30), (0, 45), (0, 61), (2, 62), (2, 63)]
                .into_iter()
                .map(|(count, at)| tracker.observe(Ok(count), t0 + SECOND * at))
                .collect();
        assert_eq!(
            seen,
            vec![
                Some(Notice::NoConsumer {
                    waited: Duration::ZERO
                }),
                None,
                Some(Notice::NoConsumer {
                    waited: SECOND * 30
                }),
                None,
                Some(Notice::NoConsumer {
                    waited: SECOND * 61
                }),
                Some(Notice::Consumed { count: 2 }),
                None,
            ]
        );
        // Losing every consumer later warns again, from zero.
        assert_eq!(
            tracker.observe(Ok(0), t0 + SECOND * 70),
            Some(Notice::NoConsumer {
                waited: Duration::ZERO
            })
        );
    }

    #[test]
    fn a_queue_consumed_from_the_start_says_nothing_and_errors_are_said_once() {
        let t0 = Instant::now();
        let mut tracker = Tracker::new(Duration::from_secs(30));
        assert_eq!(tracker.observe(Ok(1), t0), None);
        let failed = tracker.observe(Err("channel closed".into()), t0 + SECOND);
        assert_eq!(
            failed,
            Some(Notice::Unknown {
                error: "channel closed".into()
            })
        );
        assert_eq!(
            tracker.observe(Err("channel closed".into()), t0 + SECOND * 2),
            None
        );
        assert_eq!(tracker.observe(Ok(1), t0 + SECOND * 3), None);
    }

    #[test]
    fn messages_name_the_queue() {
        let first = message(
            &Notice::NoConsumer {
                waited: Duration::ZERO,
            },
            "q.steps",
        );
        assert!(
            first.starts_with("warning: no worker consumes queue q.steps"),
            "{first}"
        );
        let again = message(
            &Notice::NoConsumer {
                waited: SECOND * 30,
            },
            "q.steps",
        );
        assert_eq!(
            again,
            "warning: still no worker consumes queue q.steps (waiting for 30s)"
        );
        let back = message(&Notice::Consumed { count: 1 }, "q.steps");
        assert_eq!(back, "queue q.steps now has 1 consumer: the batch goes on");
    }

    #[tokio::test]
    async fn the_watch_reports_a_queue_nobody_consumes_then_its_consumer() {
        let queue = Arc::new(MemoryQueue::new());
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&lines);
        let cadence = Cadence {
            poll: Duration::from_millis(10),
            repeat: Duration::from_secs(3600),
        };
        let _watch = ConsumerWatch::start_with(queue.clone(), "q".into(), cadence, move |l| {
            sink.lock().unwrap().push(l.to_owned());
        });
        let said = |n: usize| {
            let lines = Arc::clone(&lines);
            async move {
                while lines.lock().unwrap().len() < n {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(5), said(1))
            .await
            .unwrap();
        let _consumer = queue.consume(1).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), said(2))
            .await
            .unwrap();
        let lines = lines.lock().unwrap().clone();
        assert!(
            lines[0].starts_with("warning: no worker consumes queue q"),
            "{lines:?}"
        );
        assert_eq!(lines[1], "queue q now has 1 consumer: the batch goes on");
    }

    #[tokio::test]
    async fn finishing_takes_a_last_look_that_closes_a_warning() {
        let queue = Arc::new(MemoryQueue::new());
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&lines);
        // The next poll would come only after the test is over.
        let cadence = Cadence {
            poll: Duration::from_secs(3600),
            repeat: Duration::from_secs(3600),
        };
        let watch = ConsumerWatch::start_with(queue.clone(), "q".into(), cadence, move |l| {
            sink.lock().unwrap().push(l.to_owned());
        });
        while lines.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let _consumer = queue.consume(1).await.unwrap();
        watch.finish().await;
        let lines = lines.lock().unwrap().clone();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[1], "queue q now has 1 consumer: the batch goes on");
    }

    #[tokio::test]
    async fn a_last_look_at_an_unconsumed_queue_adds_no_warning() {
        let queue = Arc::new(MemoryQueue::new());
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&lines);
        let cadence = Cadence {
            poll: Duration::from_secs(3600),
            repeat: Duration::ZERO,
        };
        let watch = ConsumerWatch::start_with(queue.clone(), "q".into(), cadence, move |l| {
            sink.lock().unwrap().push(l.to_owned());
        });
        while lines.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        watch.finish().await;
        assert_eq!(lines.lock().unwrap().len(), 1);
    }
}
