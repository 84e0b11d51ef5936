//! Runs on Redis: the `run` record JSON in its thread's slot, the
//! `run_index` (run id -> thread id) in a slot of its own, and the
//! `cancel` flag. Creation is `lua/create_run.lua`, which writes the
//! record and the thread seed in one step, adds the run to the thread's
//! run ids and makes it the thread's latest run; a subagent run is also
//! added to its parent thread's subagent threads, which expire and are
//! deleted with the parent.

use std::sync::LazyLock;

use async_trait::async_trait;
use deepfleet_proto::{FileData, Keys, RunRecord};
use redis::Script;
use serde_json::{Map, Value};

use crate::checkpoints::log_tokens;
use crate::error::StoreError;
use crate::history::Change;
use crate::redis::RedisStore;
use crate::redis::codec::Codec;
use crate::redis::conn::Retry;
use crate::redis::scripts::Call;
use crate::runs::{Runs, ThreadSeed};

static CREATE_RUN: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/create_run.lua")));

/// How often `create_run` merges its seed state again when a commit
/// changed the thread's state in between.
const CREATE_ATTEMPTS: usize = 5;

#[async_trait]
impl Runs for RedisStore {
    async fn create_run(
        &self,
        run: &RunRecord,
        seed: &ThreadSeed,
    ) -> Result<Option<u64>, StoreError> {
        // Before the child's thread exists, so no crash leaves a child
        // thread its parent does not know (a repeat adds nothing).
        if let Some(parent) = &run.parent {
            let children = self.keys().thread_children(&parent.thread_id);
            self.write::<()>(
                "register subagent thread",
                children.len() + run.thread_id.len(),
                redis::cmd("SADD").arg(&children).arg(&run.thread_id),
            )
            .await?;
        }
        let mut created = None;
        for _ in 0..CREATE_ATTEMPTS {
            match self.try_create(run, seed).await? {
                Creation::Created(step) => created = Some(Some(step)),
                Creation::Existed => created = Some(None),
                Creation::StateMoved => continue,
            }
            break;
        }
        let Some(created) = created else {
            return Err(StoreError::Command(format!(
                "create run {}: thread state kept changing",
                run.run_id
            )));
        };
        // Written after the thread part, and also when the run existed, so
        // a creation interrupted between the two is completed by a retry.
        let index = self.keys().run_index(&run.run_id);
        self.write::<()>(
            "index run",
            index.len() + run.thread_id.len(),
            redis::cmd("SET").arg(&index).arg(&run.thread_id),
        )
        .await?;
        Ok(created)
    }

    async fn get_run(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Option<RunRecord>, StoreError> {
        self.get_json("get run", &self.keys().run(thread_id, run_id))
            .await
    }

    async fn find_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        let thread: Option<String> = self
            .query(
                "find run",
                Retry::Once,
                redis::cmd("GET").arg(self.keys().run_index(run_id)),
            )
            .await?;
        match thread {
            Some(thread) => self.get_run(&thread, run_id).await,
            None => Ok(None),
        }
    }

    async fn request_cancel(&self, thread_id: &str, run_id: &str) -> Result<(), StoreError> {
        let key = self.keys().cancel(thread_id, run_id);
        self.write(
            "request cancel",
            key.len() + 1,
            redis::cmd("SET").arg(&key).arg("1"),
        )
        .await
    }

    async fn cancel_requested(&self, thread_id: &str, run_id: &str) -> Result<bool, StoreError> {
        self.query(
            "cancel requested",
            Retry::Once,
            redis::cmd("EXISTS").arg(self.keys().cancel(thread_id, run_id)),
        )
        .await
    }
}

/// What one attempt at creating a run did.
enum Creation {
    /// Created; the thread is at this step.
    Created(u64),
    /// The run existed; nothing was written.
    Existed,
    /// A commit changed the thread's state since it was read; nothing was
    /// written, merge again.
    StateMoved,
}

impl RedisStore {
    /// One attempt at `create_run`'s thread part.
    async fn try_create(&self, run: &RunRecord, seed: &ThreadSeed) -> Result<Creation, StoreError> {
        // The script refuses the merge if the state changed since this read,
        // so a concurrent commit is never overwritten.
        let seen = if seed.state.is_empty() {
            None
        } else {
            Some(self.raw_state(&run.thread_id).await?)
        };
        let merged = seen
            .as_ref()
            .map(|seen| merge_state(self.keys(), self.codec(), &run.thread_id, seen, &seed.state))
            .transpose()?;
        let merge = seen
            .as_ref()
            .zip(merged.as_ref())
            .map(|(seen, merged)| (seen.as_deref(), merged));
        let call = create_run_call(self.keys(), self.codec(), run, seed, merge)?;
        Ok(
            match self.run_script::<Option<i64>>("create run", &call).await? {
                None => Creation::Existed,
                Some(-1) => Creation::StateMoved,
                Some(step) => Creation::Created(u64::try_from(step).unwrap_or_default()),
            },
        )
    }

    /// Reads the thread's `state` field as stored, for the seed merge.
    async fn raw_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        let meta = self.keys().thread_meta(thread_id);
        self.query(
            "read state",
            Retry::Once,
            redis::cmd("HGET").arg(&meta).arg("state"),
        )
        .await
    }
}

/// The thread state `seen` (as stored) with the seed's fields set on top.
fn merge_state(
    keys: &Keys,
    codec: &Codec,
    thread_id: &str,
    seen: &Option<String>,
    seed: &Map<String, Value>,
) -> Result<Map<String, Value>, StoreError> {
    let meta = keys.thread_meta(thread_id);
    let mut state: Map<String, Value> = match seen {
        Some(raw) => codec.decode(format_args!("{meta} state"), raw)?,
        None => Map::new(),
    };
    state.extend(seed.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(state)
}

/// `create_run.lua`. `merge` is the thread state the seed was merged into
/// (`None` = the thread had none) and the merged result, when the seed sets
/// state at all.
fn create_run_call(
    keys: &Keys,
    codec: &Codec,
    run: &RunRecord,
    seed: &ThreadSeed,
    merge: Option<(Option<&str>, &Map<String, Value>)>,
) -> Result<Call<'static>, StoreError> {
    let thread = run.thread_id.as_str();
    let meta = keys.thread_meta(thread);
    let run_key = keys.run(thread, &run.run_id);
    let record = codec.encode(&run_key, run)?;
    let (changes, seen, merged) = match merge {
        Some((seen, merged)) => ("1", seen.unwrap_or(""), codec.encode(&meta, merged)?),
        None => ("0", "", String::new()),
    };
    let history = match Change::of_seed(&run.run_id, seed) {
        Some(change) => codec.encode(&keys.thread_history(thread), &change)?,
        None => String::new(),
    };
    let call = Call::new(
        &CREATE_RUN,
        vec![
            run_key,
            meta.clone(),
            keys.thread_log(thread),
            keys.thread_files(thread),
            keys.thread_run_ids(thread),
            keys.thread_children(thread),
            keys.thread_history(thread),
        ],
    )
    .arg(record)
    .arg(changes)
    .arg(seen)
    .arg(merged)
    .arg(log_tokens(&seed.messages).to_string())
    .arg(run.run_id.as_str())
    .arg(keys.thread_prefix(thread))
    .arg(history);
    let call = call.messages(codec, &keys.thread_log(thread), &seed.messages)?;
    seed.files.iter().try_fold(call, |call, (path, file)| {
        let file: &FileData = file;
        Ok(call
            .arg(path)
            .arg(codec.encode(&keys.thread_files(thread), file)?))
    })
}
