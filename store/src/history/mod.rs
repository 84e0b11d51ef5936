//! Thread history: a checkpoint per committed step, and the thread's
//! state at any of them.
//!
//! A checkpoint is what the thread was right after one step committed;
//! its id is the thread's step then (checkpoint `n` follows the commit of
//! step `n - 1`; `1` is the first), its parent the checkpoint before it.
//! Nothing is copied to make one: each change to the thread (a step's
//! commit, or a run's seed between two steps) appends one [`Change`] to
//! the thread's history, in the same atomic write as the change itself,
//! holding only what that change wrote (the files it wrote or deleted,
//! the custom state when it changed, the run and the time) plus the
//! length of the message log after it. Bytes written per step therefore
//! grow with what the step changed, never with the conversation.
//!
//! The state at checkpoint `n` is rebuilt by replaying the history up to
//! its commit: the messages are the first `log_len` entries of the
//! append-only log (a prefix, so never stored twice), the files and the
//! custom state the changes applied in order. A future fork is a branch:
//! a new log that starts from a parent checkpoint's prefix, leaving the
//! original's log and history as they are.
//!
//! The history lives and dies with the thread's checkpoint
//! ([`crate::Retention`] expires and deletes it with the rest).

mod embedded;
mod redis;

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deepfleet_proto::{FileData, LoggedMessage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::checkpoints::{Checkpoint, StepCommit, log_tokens};
use crate::error::StoreError;
use crate::runs::ThreadSeed;

/// What made a [`Change`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The commit of a step: it makes a checkpoint, and its state
    /// replaces the thread's.
    Commit {
        /// The step committed.
        step: u64,
    },
    /// A run's seed (its input) between two steps: its state fields are
    /// set on top of the thread's. Its writer does not know the thread's
    /// step, and replay needs only its place in the history.
    Seed,
}

/// One change to a thread, as its history keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// What made it.
    pub kind: ChangeKind,
    /// The run that made it.
    pub run_id: String,
    /// When it was made.
    pub at: DateTime<Utc>,
    /// The custom state it wrote, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Map<String, Value>>,
    /// The files it wrote (`None` deleted the path).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, Option<FileData>>,
}

impl Change {
    /// The change a step's commit makes.
    pub(crate) fn of_commit(commit: &StepCommit) -> Self {
        Self {
            kind: ChangeKind::Commit { step: commit.step },
            run_id: commit.run.run_id.clone(),
            at: Utc::now(),
            state: commit.state.clone(),
            files: commit.files.clone(),
        }
    }

    /// The change a run's seed makes, or `None` when it writes neither
    /// files nor state (its messages are told by the next commit's log
    /// length).
    pub(crate) fn of_seed(run_id: &str, seed: &ThreadSeed) -> Option<Self> {
        (!seed.files.is_empty() || !seed.state.is_empty()).then(|| Self {
            kind: ChangeKind::Seed,
            run_id: run_id.to_owned(),
            at: Utc::now(),
            state: (!seed.state.is_empty()).then(|| seed.state.clone()),
            files: seed
                .files
                .iter()
                .map(|(path, file)| (path.clone(), Some(file.clone())))
                .collect(),
        })
    }
}

/// A [`Change`] with the length of the message log right after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Logged {
    /// Messages in the log after the change.
    pub log_len: u64,
    /// The change.
    pub change: Change,
}

/// The thread at one checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointState {
    /// The checkpoint's id: the thread's step right after its commit.
    pub id: u64,
    /// The run whose step made it.
    pub run_id: String,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// The thread as it was then (its step is `id`; nothing pending or
    /// published is kept).
    pub checkpoint: Checkpoint,
}

/// Which checkpoints [`History::checkpoints`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// Only those with an id below this one (all when `None`).
    pub before: Option<u64>,
    /// At most this many, the newest.
    pub limit: usize,
    /// Only this checkpoint.
    pub id: Option<u64>,
    /// Only those made by this run.
    pub run_id: Option<String>,
}

impl HistoryQuery {
    /// The newest `limit` checkpoints.
    pub fn newest(limit: usize) -> Self {
        Self {
            before: None,
            limit,
            id: None,
            run_id: None,
        }
    }

    fn wants(&self, id: u64, run_id: &str) -> bool {
        self.before.is_none_or(|b| id < b)
            && self.id.is_none_or(|want| id == want)
            && self.run_id.as_deref().is_none_or(|want| want == run_id)
    }
}

/// Thread history.
///
/// Implementations must append a thread's history entry in the same
/// atomic write as the change it tells ([`crate::Checkpoints::commit_step`],
/// [`crate::Runs::create_run`]), so the history never misses or invents a
/// checkpoint, and expire and delete it with the thread.
#[async_trait]
pub trait History: Send + Sync + 'static {
    /// The thread's checkpoints that `query` asks for, newest first.
    /// Empty for an unknown thread.
    async fn checkpoints(
        &self,
        thread_id: &str,
        query: &HistoryQuery,
    ) -> Result<Vec<CheckpointState>, StoreError>;

    /// The thread at checkpoint `id`, or `None` when it has none such.
    async fn checkpoint_at(
        &self,
        thread_id: &str,
        id: u64,
    ) -> Result<Option<CheckpointState>, StoreError> {
        let query = HistoryQuery {
            id: Some(id),
            ..HistoryQuery::newest(1)
        };
        Ok(self.checkpoints(thread_id, &query).await?.pop())
    }

    /// Drops every checkpoint but the newest (`POST /threads/prune` with
    /// `keep_latest`): the changes up to its commit become one change
    /// that writes the whole state then, so the current state and the
    /// newest checkpoint read as before and the log stays whole. Written
    /// at once, and only over the history it read (a commit meanwhile
    /// makes it write nothing). Answers whether anything was dropped.
    async fn keep_latest_checkpoint(&self, thread_id: &str) -> Result<bool, StoreError>;
}

/// `history` with its changes up to the newest commit folded into that
/// commit (all its files, the whole custom state then) and the changes
/// after it kept; `None` when there is nothing before it to drop.
pub(crate) fn keep_latest(history: &[Logged]) -> Option<Vec<Logged>> {
    let last = history
        .iter()
        .rposition(|l| matches!(l.change.kind, ChangeKind::Commit { .. }))?;
    if last == 0 {
        return None;
    }
    let mut files = BTreeMap::new();
    let mut state = Map::new();
    for Logged { change, .. } in &history[..=last] {
        apply(change, &mut files, &mut state);
    }
    let newest = &history[last];
    let folded = Logged {
        log_len: newest.log_len,
        change: Change {
            state: Some(state),
            files: files.into_iter().map(|(p, f)| (p, Some(f))).collect(),
            ..newest.change.clone()
        },
    };
    Some(
        std::iter::once(folded)
            .chain(history[last + 1..].iter().cloned())
            .collect(),
    )
}

/// Applies one change to the files and custom state replayed so far: a
/// commit's state replaces the thread's, a seed's is set on top of it.
fn apply(change: &Change, files: &mut BTreeMap<String, FileData>, state: &mut Map<String, Value>) {
    for (path, file) in &change.files {
        match file {
            Some(file) => files.insert(path.clone(), file.clone()),
            None => files.remove(path),
        };
    }
    match (change.kind, &change.state) {
        (ChangeKind::Commit { .. }, Some(new)) => *state = new.clone(),
        (ChangeKind::Seed, Some(set)) => {
            state.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        (_, None) => {}
    }
}

/// Replays `history` over `log` into the checkpoints `query` asks for,
/// newest first. The checkpoints are picked first, so only those are
/// built: the replay itself only applies each change's files and state.
pub(crate) fn replay(
    log: &[LoggedMessage],
    history: &[Logged],
    query: &HistoryQuery,
) -> Vec<CheckpointState> {
    let mut wanted: Vec<usize> = history
        .iter()
        .enumerate()
        .rev()
        .filter_map(|(i, Logged { change, .. })| match change.kind {
            ChangeKind::Commit { step } => query
                .wants(step.saturating_add(1), &change.run_id)
                .then_some(i),
            ChangeKind::Seed => None,
        })
        .take(query.limit)
        .collect();
    wanted.reverse();
    let Some(&last) = wanted.last() else {
        return Vec::new();
    };
    let mut files = BTreeMap::new();
    let mut state = Map::new();
    let mut kept = Vec::with_capacity(wanted.len());
    let mut next = wanted.iter().peekable();
    for (i, Logged { log_len, change }) in history.iter().enumerate().take(last + 1) {
        apply(change, &mut files, &mut state);
        let (ChangeKind::Commit { step }, Some(_)) = (change.kind, next.next_if(|&&w| w == i))
        else {
            continue;
        };
        let len = usize::try_from(*log_len)
            .unwrap_or(usize::MAX)
            .min(log.len());
        let messages = log[..len].to_vec();
        kept.push(CheckpointState {
            id: step.saturating_add(1),
            run_id: change.run_id.clone(),
            created_at: change.at,
            checkpoint: Checkpoint {
                step: step.saturating_add(1),
                tokens: log_tokens(&messages),
                messages,
                files: files.clone(),
                state: state.clone(),
                ..Checkpoint::default()
            },
        });
    }
    kept.reverse();
    kept
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use deepfleet_proto::{ContentBlock, Message, RunRecord, UserMessage};
    use serde_json::json;

    use super::*;

    fn at() -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000, 0)
            .single()
            .unwrap_or_default()
    }

    fn message(text: &str) -> LoggedMessage {
        LoggedMessage {
            message: Message::User(UserMessage {
                content: vec![ContentBlock::text(text)],
                source: None,
            }),
            tokens: 1,
        }
    }

    fn file(text: &str) -> FileData {
        FileData::text(text, at())
    }

    fn commit(step: u64, log_len: u64, files: &[(&str, Option<&str>)]) -> Logged {
        let run = RunRecord::new("r1", "t", "agent", at());
        let commit = StepCommit {
            thread_id: "t".into(),
            step,
            messages: Vec::new(),
            files: files
                .iter()
                .map(|(p, f)| ((*p).to_owned(), f.map(file)))
                .collect(),
            state: Some(Map::from_iter([("n".to_owned(), json!(step))])),
            pending: None,
            run,
            fan_in_expected: None,
            context: None,
        };
        Logged {
            log_len,
            change: Change::of_commit(&commit),
        }
    }

    #[test]
    fn replays_prefixes_files_and_state_newest_first() {
        let log: Vec<_> = ["a", "b", "c", "d"].into_iter().map(message).collect();
        let history = [
            commit(0, 2, &[("/x", Some("1"))]),
            commit(1, 3, &[("/x", Some("2")), ("/y", Some("3"))]),
            commit(2, 4, &[("/x", None)]),
        ];
        let all = replay(&log, &history, &HistoryQuery::newest(10));
        assert_eq!(all.iter().map(|c| c.id).collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(all[2].checkpoint.messages, log[..2]);
        assert_eq!(all[2].checkpoint.files["/x"], file("1"));
        assert_eq!(all[1].checkpoint.files["/x"], file("2"));
        assert!(!all[0].checkpoint.files.contains_key("/x"));
        assert_eq!(all[0].checkpoint.files.len(), 1);
        assert_eq!(all[1].checkpoint.state["n"], json!(1));
        let query = HistoryQuery {
            before: Some(3),
            ..HistoryQuery::newest(1)
        };
        let page = replay(&log, &history, &query);
        assert_eq!(page.len(), 1);
        assert_eq!(page[0].id, 2);
        assert_eq!(page[0].checkpoint.messages, log[..3]);
        let by_id = HistoryQuery {
            id: Some(1),
            ..HistoryQuery::newest(10)
        };
        assert_eq!(replay(&log, &history, &by_id), all[2..]);
        let by_run = HistoryQuery {
            run_id: Some("other".into()),
            ..HistoryQuery::newest(10)
        };
        assert!(replay(&log, &history, &by_run).is_empty());
    }

    #[test]
    fn seeds_set_fields_and_files_but_make_no_checkpoint() {
        let seed = ThreadSeed {
            messages: vec![message("hi")],
            files: BTreeMap::from([("/s".to_owned(), file("seed"))]),
            state: Map::from_iter([("todo".to_owned(), json!(1))]),
        };
        let Some(seeded) = Change::of_seed("r0", &seed) else {
            panic!("a seed with files is a change");
        };
        let mut first = commit(0, 2, &[]);
        first.change.state = None;
        let history = [
            Logged {
                log_len: 1,
                change: seeded,
            },
            first,
        ];
        let log = vec![message("hi"), message("ho")];
        let all = replay(&log, &history, &HistoryQuery::newest(10));
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].checkpoint.files["/s"], file("seed"));
        assert_eq!(all[0].checkpoint.state["todo"], json!(1));
        assert!(Change::of_seed("r", &ThreadSeed::default()).is_none());
    }

    #[test]
    fn keeping_the_latest_folds_up_to_the_newest_commit_and_keeps_later_seeds() {
        let seed = ThreadSeed {
            messages: Vec::new(),
            files: BTreeMap::from([("/s".to_owned(), file("seed"))]),
            state: Map::new(),
        };
        let Some(seeded) = Change::of_seed("r1", &seed) else {
            panic!("a seed with files is a change");
        };
        let later = Logged {
            log_len: 4,
            change: seeded,
        };
        let history = [
            commit(0, 2, &[("/x", Some("1"))]),
            commit(1, 3, &[("/x", None), ("/y", Some("2"))]),
            later.clone(),
        ];
        let Some(kept) = keep_latest(&history) else {
            panic!("an older checkpoint is there to drop");
        };
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[1], later);
        assert_eq!(
            (kept[0].log_len, kept[0].change.kind),
            (3, ChangeKind::Commit { step: 1 })
        );
        assert_eq!(
            kept[0].change.files,
            BTreeMap::from([("/y".to_owned(), Some(file("2")))])
        );
        let log: Vec<_> = ["a", "b", "c", "d"].into_iter().map(message).collect();
        let all = HistoryQuery::newest(10);
        assert_eq!(replay(&log, &kept, &all), replay(&log, &history, &all)[..1]);
        assert_eq!(keep_latest(&kept[..1]), None);
        assert_eq!(keep_latest(&[later]), None);
    }
}
