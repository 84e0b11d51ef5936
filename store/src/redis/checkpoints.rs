//! Checkpoints on Redis. Every thread key carries the thread id as a hash
//! tag, so one thread lives in one slot:
//!
//! - `thread_meta`: hash with `step`, `published`, `tokens`, `base` (where
//!   the conversation starts in the log; absent = 0), `state` (JSON
//!   object), `pending`, `context`, `update` and `notes` (JSON, absent =
//!   none), and the fence of the thread cache (`super::thread_cache`):
//!   `gen` (the thread's generation, given by its first read) and
//!   `files_rev` (raised by every write of the files);
//! - `thread_log`: list of [`LoggedMessage`] JSON, only ever appended to;
//! - `thread_files`: hash path -> [`deepfleet_proto::FileData`] JSON;
//! - `thread_history`: list of (log length, [`crate::history::Change`]
//!   JSON) pairs, one per commit or seed (`store/src/history/`).
//!
//! `lua/commit_step.lua` writes a step (with the run record and the
//! fan-in reset, in the same slot), `lua/load_thread.lua` reads all three
//! structures at once (or, for a thread the store holds, what changed
//! since), `lua/mark_published.lua` raises the mark. A copy
//! spans two slots, so `lua/snapshot_thread.lua` reads the original whole
//! and `lua/restore_thread.lua` writes the copy whole.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use async_trait::async_trait;
use deepfleet_proto::{Keys, LoggedMessage};
use redis::Script;
use serde_json::{Map, Value};

use super::thread_cache::{self, HeldThread, Tail};
use crate::checkpoints::{
    Checkpoint, CheckpointNotes, Checkpoints, CommitOutcome, StepCommit, UpdateMark, log_tokens,
};
use crate::error::StoreError;
use crate::history::Change;
use crate::redis::RedisStore;
use crate::redis::codec::Codec;
use crate::redis::conn::Retry;
use crate::redis::scripts::Call;

static COMMIT_STEP: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/commit_step.lua")));
static LOAD_THREAD: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/load_thread.lua")));
static LOAD_MESSAGES: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/load_messages.lua")));
static MARK_PUBLISHED: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/mark_published.lua")));
static SNAPSHOT_THREAD: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/snapshot_thread.lua")));
static RESTORE_THREAD: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/restore_thread.lua")));

/// Meta fields a copy leaves behind: those of the thread's runs (the copy
/// owns no run) and its generation (the copy is another thread).
const LEFT_BEHIND: [&str; 3] = ["pending", "latest", "gen"];

#[async_trait]
impl Checkpoints for RedisStore {
    async fn load_thread(&self, thread_id: &str) -> Result<Checkpoint, StoreError> {
        let keys = [
            self.keys().thread_meta(thread_id),
            self.keys().thread_log(thread_id),
            self.keys().thread_files(thread_id),
        ];
        let held = self.threads().get(thread_id);
        let call = match held.as_deref() {
            Some(held) => Call::new(&LOAD_THREAD, keys.to_vec())
                .arg(held.generation.as_str())
                .arg(held.first.to_string())
                .arg(held.log_len().to_string())
                .arg(held.files_rev.to_string()),
            None => Call::new(&LOAD_THREAD, keys.to_vec())
                .arg("")
                .arg("0")
                .arg("0")
                .arg("0"),
        }
        .arg(self.threads().new_generation());
        let raw: RawThread = self
            .conn()
            .call("load thread", Retry::Once, |conn| call.invoke(conn))
            .await?;
        let [meta, log, files] = &keys;
        let loaded = checkpoint(
            self.codec(),
            &ThreadKeys { meta, log, files },
            raw,
            held.as_deref(),
            self.threads().holds(),
        );
        match loaded {
            Ok((checkpoint, Some(held))) => {
                self.threads().keep(thread_id, held);
                Ok(checkpoint)
            }
            Ok((checkpoint, None)) => {
                self.threads().forget(thread_id);
                Ok(checkpoint)
            }
            Err(e) => {
                self.threads().forget(thread_id);
                Err(e)
            }
        }
    }

    async fn load_messages(
        &self,
        thread_id: &str,
        from: u64,
    ) -> Result<Vec<LoggedMessage>, StoreError> {
        let key = self.keys().thread_log(thread_id);
        let call = Call::new(
            &LOAD_MESSAGES,
            vec![self.keys().thread_meta(thread_id), key.clone()],
        )
        .arg(from.to_string());
        let (base, raw): (u64, Vec<String>) = self
            .conn()
            .call("load messages", Retry::Once, |conn| call.invoke(conn))
            .await?;
        raw.iter()
            .enumerate()
            .map(|(i, raw)| {
                self.codec()
                    .decode(format_args!("{key}[{}]", base + from + i as u64), raw)
            })
            .collect()
    }

    async fn commit_step(&self, commit: &StepCommit) -> Result<CommitOutcome, StoreError> {
        let call = commit_step_call(self.keys(), self.codec(), commit)?;
        let (committed, step): (u8, u64) = self.run_script("commit step", &call).await?;
        Ok(match committed {
            1 => CommitOutcome::Committed,
            2 => CommitOutcome::Gone,
            _ => CommitOutcome::Conflict { current: step },
        })
    }

    async fn mark_published(&self, thread_id: &str, step: u64) -> Result<(), StoreError> {
        let call = Call::new(&MARK_PUBLISHED, vec![self.keys().thread_meta(thread_id)])
            .arg(step.to_string());
        self.run_script("mark published", &call).await
    }

    async fn copy_thread(&self, from: &str, to: &str) -> Result<bool, StoreError> {
        let keys = self.keys();
        let call = Call::new(&SNAPSHOT_THREAD, thread_keys(keys, from).to_vec());
        let (meta, log, files, history): RawSnapshot = self
            .conn()
            .call("snapshot thread", Retry::Once, |conn| call.invoke(conn))
            .await?;
        let meta: Vec<(String, String)> = meta
            .into_iter()
            .filter(|(field, _)| !LEFT_BEHIND.contains(&field.as_str()))
            .collect();
        let counts = [meta.len() * 2, log.len(), files.len() * 2, history.len()];
        let call = counts.iter().fold(
            Call::new(&RESTORE_THREAD, thread_keys(keys, to).to_vec()),
            |call, n| call.arg(n.to_string()),
        );
        let pairs = |map: Vec<(String, String)>| map.into_iter().flat_map(|(k, v)| [k, v]);
        let call = pairs(meta)
            .chain(log)
            .chain(pairs(files.into_iter().collect()))
            .chain(history)
            .fold(call, Call::arg);
        let written: u8 = self.run_script("restore thread", &call).await?;
        Ok(written == 1)
    }
}

/// A thread's meta, log, files and history keys, in the order the copy's
/// scripts take them.
fn thread_keys(keys: &Keys, thread: &str) -> [String; 4] {
    [
        keys.thread_meta(thread),
        keys.thread_log(thread),
        keys.thread_files(thread),
        keys.thread_history(thread),
    ]
}

/// The raw reply of `snapshot_thread.lua`: meta fields, log entries,
/// files, history entries, all as stored.
type RawSnapshot = (
    BTreeMap<String, String>,
    Vec<String>,
    BTreeMap<String, String>,
    Vec<String>,
);

/// `commit_step.lua`.
fn commit_step_call(
    keys: &Keys,
    codec: &Codec,
    commit: &StepCommit,
) -> Result<Call<'static>, StoreError> {
    let thread = commit.thread_id.as_str();
    let run_id = commit.run.run_id.as_str();
    let meta = keys.thread_meta(thread);
    let run_key = keys.run(thread, run_id);
    let run = codec.encode(&run_key, &commit.run)?;
    let state = match &commit.state {
        Some(state) => codec.encode(&meta, state)?,
        None => String::new(),
    };
    let pending = match &commit.pending {
        Some(pending) => codec.encode(&meta, pending)?,
        None => String::new(),
    };
    let context = match &commit.context {
        Some(context) => codec.encode(&meta, context)?,
        None => String::new(),
    };
    let fan_in = commit
        .fan_in_expected
        .map(|n| n.to_string())
        .unwrap_or_default();
    let call = Call::new(
        &COMMIT_STEP,
        vec![
            meta,
            keys.thread_log(thread),
            keys.thread_files(thread),
            run_key,
            keys.fan_in(thread, run_id),
            keys.fan_in_expected(thread, run_id),
            keys.thread_history(thread),
        ],
    )
    .arg(commit.step.to_string())
    .arg(run)
    .arg(state)
    .arg(pending)
    .arg(fan_in)
    .arg(log_tokens(&commit.messages).to_string())
    .arg(context)
    .arg(codec.encode(&keys.thread_history(thread), &Change::of_commit(commit))?);
    let call = call.messages(codec, &keys.thread_log(thread), &commit.messages)?;
    commit.files.iter().try_fold(call, |call, (path, file)| {
        let file = match file {
            Some(file) => codec.encode(&keys.thread_files(thread), file)?,
            None => String::new(),
        };
        Ok(call.arg(path).arg(file))
    })
}

/// The raw reply of `load_thread.lua`: meta fields, the log index the
/// entries start at, the entries, the files and whether they were read.
type RawThread = (
    BTreeMap<String, String>,
    u64,
    Vec<String>,
    BTreeMap<String, String>,
    u8,
);

/// Key names of the thread's three structures, for error reports.
struct ThreadKeys<'a> {
    meta: &'a str,
    log: &'a str,
    files: &'a str,
}

/// Builds a checkpoint from what `load_thread.lua` returned for a load
/// that named `held` (absent structures read as an empty thread), and,
/// when the store `hold`s threads, what it may hold of this one from now
/// on (nothing for a thread without a generation: one that does not
/// exist).
fn checkpoint(
    codec: &Codec,
    keys: &ThreadKeys<'_>,
    raw: RawThread,
    held: Option<&HeldThread>,
    hold: bool,
) -> Result<(Checkpoint, Option<HeldThread>), StoreError> {
    let (mut meta, from, log, files, files_read) = raw;
    let counter = |field: &str, raw: Option<String>| -> Result<u64, StoreError> {
        raw.map_or(Ok(0), |raw| {
            raw.parse().map_err(|e| StoreError::Corrupt {
                key: format!("{} {field}", keys.meta),
                reason: format!("{raw:?}: {e}"),
            })
        })
    };
    let step = counter("step", meta.remove("step"))?;
    let published = counter("published", meta.remove("published"))?;
    let log_base = counter("base", meta.remove("base"))?;
    let files_rev = counter("files_rev", meta.remove("files_rev"))?;
    let generation = meta.remove("gen");
    let update: Option<UpdateMark> =
        codec.decode_opt(format_args!("{} update", keys.meta), meta.remove("update"))?;
    let notes: Option<CheckpointNotes> =
        codec.decode_opt(format_args!("{} notes", keys.meta), meta.remove("notes"))?;
    let state: Map<String, Value> = codec
        .decode_opt(format_args!("{} state", keys.meta), meta.remove("state"))?
        .unwrap_or_default();
    let pending = codec.decode_opt(
        format_args!("{} pending", keys.meta),
        meta.remove("pending"),
    )?;
    let tokens = counter("tokens", meta.remove("tokens"))?;
    let context = codec
        .decode_opt(
            format_args!("{} context", keys.meta),
            meta.remove("context"),
        )?
        .unwrap_or_default();
    let tail = Tail {
        base: log_base,
        from,
        log_bytes: stored_bytes(&log),
        messages: log
            .iter()
            .enumerate()
            .map(|(i, raw)| codec.decode(format_args!("{}[{}]", keys.log, from + i as u64), raw))
            .collect::<Result<_, _>>()?,
        files: if files_read == 1 {
            let bytes = stored_bytes(files.iter().flat_map(|(path, file)| [path, file]));
            let files = files
                .into_iter()
                .map(|(path, raw)| {
                    let file = codec.decode(format_args!("{} {path}", keys.files), &raw)?;
                    Ok((path, file))
                })
                .collect::<Result<_, StoreError>>()?;
            Some((files, bytes))
        } else {
            None
        },
    };
    let done = thread_cache::complete(held, tail);
    let held = generation.filter(|_| hold).map(|generation| HeldThread {
        generation,
        first: log_base,
        messages: done.messages.clone(),
        files_rev,
        files: done.files.clone(),
        log_bytes: done.log_bytes,
        files_bytes: done.files_bytes,
    });
    let checkpoint = Checkpoint {
        step,
        published,
        messages: done.messages,
        log_base,
        files: done.files,
        state,
        pending,
        tokens,
        context,
        // The mark tells of the current state only until a step follows.
        update: update.filter(|mark| mark.checkpoint == step),
        notes: notes.filter(|notes| notes.checkpoint == step),
    };
    Ok((checkpoint, held))
}

/// Stored bytes of `values`, for the thread cache's budget.
fn stored_bytes<'a>(values: impl IntoIterator<Item = &'a String>) -> u64 {
    values.into_iter().map(|v| v.len() as u64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: ThreadKeys<'static> = ThreadKeys {
        meta: "m",
        log: "l",
        files: "f",
    };

    fn raw(meta: BTreeMap<String, String>, from: u64, log: Vec<String>) -> RawThread {
        (meta, from, log, BTreeMap::new(), 1)
    }

    #[test]
    fn empty_thread_is_default_and_not_held() {
        let raw = raw(BTreeMap::new(), 0, Vec::new());
        assert_eq!(
            checkpoint(&Codec::default(), &KEYS, raw, None, true).unwrap(),
            (Checkpoint::default(), None)
        );
    }

    #[test]
    fn bad_log_entry_names_its_index() {
        let raw = raw(BTreeMap::new(), 3, vec!["nope".to_owned()]);
        match checkpoint(&Codec::default(), &KEYS, raw, None, true) {
            Err(StoreError::Corrupt { key, .. }) => assert_eq!(key, "l[3]"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_step_is_corrupt() {
        let meta = BTreeMap::from([("step".to_owned(), "x".to_owned())]);
        assert!(matches!(
            checkpoint(
                &Codec::default(),
                &KEYS,
                raw(meta, 0, Vec::new()),
                None,
                true
            ),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_thread_with_a_generation_is_held_as_read() {
        let meta = BTreeMap::from([
            ("gen".to_owned(), "g1".to_owned()),
            ("files_rev".to_owned(), "2".to_owned()),
            ("step".to_owned(), "1".to_owned()),
        ]);
        let entry = r#"{"m":{"role":"user","content":[{"type":"text","text":"hi"}]},"t":1}"#;
        let raw = || raw(meta.clone(), 0, vec![entry.into()]);
        let (loaded, held) = checkpoint(&Codec::default(), &KEYS, raw(), None, true).unwrap();
        let held = held.unwrap();
        assert_eq!(held.generation, "g1");
        assert_eq!((held.first, held.log_len(), held.files_rev), (0, 1, 2));
        assert_eq!(held.messages, loaded.messages);
        assert_eq!(held.log_bytes, entry.len() as u64);
        // A store that holds nothing keeps nothing.
        let (_, kept) = checkpoint(&Codec::default(), &KEYS, raw(), None, false).unwrap();
        assert_eq!(kept, None);
    }
}
