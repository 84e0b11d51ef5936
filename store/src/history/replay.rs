//! Rebuilding a thread's past from its log and history: the checkpoints
//! a query asks for, the state before a run, and the history folded into
//! its newest checkpoint.

use std::collections::{BTreeMap, BTreeSet};

use deepfleet_proto::{FileData, LoggedMessage};
use serde_json::{Map, Value};

use super::{Change, ChangeKind, CheckpointSource, CheckpointState, HistoryQuery, Logged, Restore};
use crate::checkpoints::{Checkpoint, CheckpointNotes, log_tokens};

/// The files, custom state and conversation start replayed so far, and
/// the newest checkpoint passed.
#[derive(Default)]
struct Replayed {
    files: BTreeMap<String, FileData>,
    state: Map<String, Value>,
    base: u64,
    checkpoint: Option<u64>,
}

impl Replayed {
    /// Applies one change: a commit's state replaces the thread's, a
    /// seed's is set on top of it, an update's files and state are all
    /// there is.
    fn apply(&mut self, change: &Change) {
        if matches!(change.kind, ChangeKind::Update { .. }) {
            self.files.clear();
            self.state.clear();
        }
        for (path, file) in &change.files {
            match file {
                Some(file) => self.files.insert(path.clone(), file.clone()),
                None => self.files.remove(path),
            };
        }
        match (change.kind, &change.state) {
            (ChangeKind::Commit { .. } | ChangeKind::Update { .. }, Some(new)) => {
                self.state = new.clone();
            }
            (ChangeKind::Seed, Some(set)) => {
                self.state
                    .extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            (ChangeKind::Note { .. }, _) | (_, None) => {}
        }
        if let Some(base) = change.base {
            self.base = base;
        }
    }

    /// The thread as replayed, with the first `log_len` entries of `log`
    /// from the current base on as its conversation.
    fn checkpoint(&self, log: &[LoggedMessage], log_len: u64, step: u64) -> Checkpoint {
        let end = usize::try_from(log_len)
            .unwrap_or(usize::MAX)
            .min(log.len());
        let start = usize::try_from(self.base).unwrap_or(usize::MAX).min(end);
        let messages = log[start..end].to_vec();
        Checkpoint {
            step,
            tokens: log_tokens(&messages),
            messages,
            files: self.files.clone(),
            state: self.state.clone(),
            ..Checkpoint::default()
        }
    }
}

/// The checkpoint a change makes (its id, parent and source), if it
/// makes one; `previous` is the newest checkpoint before it.
fn made(change: &Change, previous: Option<u64>) -> Option<(u64, Option<u64>, CheckpointSource)> {
    match change.kind {
        ChangeKind::Commit { step } => {
            Some((step.saturating_add(1), previous, CheckpointSource::Loop))
        }
        ChangeKind::Update {
            step,
            parent,
            source,
        } => Some((step.saturating_add(1), parent, source)),
        ChangeKind::Seed | ChangeKind::Note { .. } => None,
    }
}

/// `history` with its changes up to the newest checkpoint folded into
/// that one (all its files, the whole custom state then, its base, no
/// parent) and the changes after it kept; `None` when there is nothing
/// before it to drop.
pub(crate) fn keep_latest(history: &[Logged]) -> Option<Vec<Logged>> {
    let last = history
        .iter()
        .rposition(|l| made(&l.change, None).is_some())?;
    if last == 0 {
        return None;
    }
    let mut replayed = Replayed::default();
    for Logged { change, .. } in &history[..=last] {
        replayed.apply(change);
    }
    let newest = &history[last];
    // The checkpoints before it are gone, so it names no parent.
    let kind = match newest.change.kind {
        ChangeKind::Update { step, source, .. } => ChangeKind::Update {
            step,
            parent: None,
            source,
        },
        kind => kind,
    };
    let folded = Logged {
        log_len: newest.log_len,
        change: Change {
            kind,
            state: Some(replayed.state),
            files: replayed
                .files
                .into_iter()
                .map(|(p, f)| (p, Some(f)))
                .collect(),
            base: (replayed.base > 0).then_some(replayed.base),
            ..newest.change.clone()
        },
    };
    Some(
        std::iter::once(folded)
            .chain(history[last + 1..].iter().cloned())
            .collect(),
    )
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
        .filter_map(|(i, Logged { change, .. })| {
            let (id, _, source) = made(change, None)?;
            query.wants(id, &change.run_id, source).then_some(i)
        })
        .take(query.limit)
        .collect();
    wanted.reverse();
    let Some(&last) = wanted.last() else {
        return Vec::new();
    };
    let ids: BTreeSet<u64> = wanted
        .iter()
        .filter_map(|&w| made(&history[w].change, None).map(|(id, _, _)| id))
        .collect();
    let notes = notes_of(history, |id| ids.contains(&id));
    let mut replayed = Replayed::default();
    let mut kept = Vec::with_capacity(wanted.len());
    let mut next = wanted.iter().peekable();
    for (i, Logged { log_len, change }) in history.iter().enumerate().take(last + 1) {
        replayed.apply(change);
        let Some((id, parent, source)) = made(change, replayed.checkpoint) else {
            continue;
        };
        replayed.checkpoint = Some(id);
        if next.next_if(|&&w| w == i).is_none() {
            continue;
        }
        let mut checkpoint = replayed.checkpoint(log, *log_len, id);
        checkpoint.notes = notes.get(&id).cloned();
        kept.push(CheckpointState {
            id,
            run_id: change.run_id.clone(),
            parent,
            source,
            created_at: change.at,
            checkpoint,
        });
    }
    kept.reverse();
    kept
}

/// The notes `history` holds on the checkpoints `wanted` accepts, each
/// checkpoint's merged in order.
fn notes_of(history: &[Logged], wanted: impl Fn(u64) -> bool) -> BTreeMap<u64, CheckpointNotes> {
    let mut notes = BTreeMap::new();
    for Logged { change, .. } in history {
        if let (ChangeKind::Note { checkpoint }, Some(metadata)) = (change.kind, &change.metadata)
            && wanted(checkpoint)
        {
            let merged = CheckpointNotes::patched(notes.remove(&checkpoint), checkpoint, metadata);
            notes.insert(checkpoint, merged);
        }
    }
    notes
}

/// Whether `logged` is a note, which changes nothing of the thread.
fn is_note(logged: &Logged) -> bool {
    matches!(logged.change.kind, ChangeKind::Note { .. })
}

/// The thread right before `run_id`'s first change, with the newest
/// checkpoint then as the parent; `None` when the run made no change or
/// another change followed its first.
pub(crate) fn before_run(
    log: &[LoggedMessage],
    history: &[Logged],
    run_id: &str,
) -> Option<Restore> {
    let first = history
        .iter()
        .position(|l| l.change.run_id == run_id && !is_note(l))?;
    if history[first..]
        .iter()
        .any(|l| l.change.run_id != run_id && !is_note(l))
    {
        return None;
    }
    let mut replayed = Replayed::default();
    let mut log_len = 0;
    for logged in history[..first].iter().filter(|l| !is_note(l)) {
        replayed.apply(&logged.change);
        if let Some((id, _, _)) = made(&logged.change, replayed.checkpoint) {
            replayed.checkpoint = Some(id);
        }
        log_len = logged.log_len;
    }
    let step = replayed.checkpoint.unwrap_or(0);
    Some(Restore {
        parent: replayed.checkpoint,
        checkpoint: replayed.checkpoint(log, log_len, step),
    })
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
