//! History on Redis: `thread_history`, a list in the thread's slot of
//! (log length, [`Change`] JSON) pairs, appended by `lua/commit_step.lua`,
//! `lua/create_run.lua` and `lua/update_thread.lua` beside the change
//! itself. `lua/load_history.lua` reads it with the log and the step at
//! once; `lua/replace_history.lua` swaps in the history that keeps only
//! the newest checkpoint; `lua/note_checkpoint.lua` writes a note on the
//! current checkpoint beside the thread and in its history.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;

use serde_json::{Map, Value};

use crate::checkpoints::CheckpointNotes;
use crate::error::StoreError;
use crate::history::{Change, History, Logged, ThreadUpdate, Timeline, UpdateOutcome, keep_latest};
use crate::redis::RedisStore;
use crate::redis::codec::Codec;
use crate::redis::conn::Retry;
use crate::redis::scripts::Call;

static LOAD_HISTORY: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/load_history.lua")));
static REPLACE_HISTORY: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/replace_history.lua")));
static UPDATE_THREAD: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/update_thread.lua")));
static NOTE_CHECKPOINT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/note_checkpoint.lua")));

/// Tries at a note before giving up on a thread that keeps changing.
const NOTE_ATTEMPTS: usize = 8;

#[async_trait]
impl History for RedisStore {
    async fn timeline(&self, thread_id: &str) -> Result<Timeline, StoreError> {
        let meta_key = self.keys().thread_meta(thread_id);
        let log_key = self.keys().thread_log(thread_id);
        let history_key = self.keys().thread_history(thread_id);
        let call = Call::new(
            &LOAD_HISTORY,
            vec![meta_key.clone(), log_key.clone(), history_key.clone()],
        );
        let (step, base, log, history): (String, String, Vec<String>, Vec<String>) = self
            .conn()
            .call("load history", Retry::Once, |conn| call.invoke(conn))
            .await?;
        let counter = |field: &str, raw: &str| {
            raw.parse().map_err(|e| StoreError::Corrupt {
                key: format!("{meta_key} {field}"),
                reason: format!("{raw:?}: {e}"),
            })
        };
        let log = log
            .iter()
            .enumerate()
            .map(|(i, raw)| self.codec().decode(format_args!("{log_key}[{i}]"), raw))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Timeline {
            step: counter("step", &step)?,
            base: counter("base", &base)?,
            log,
            history: entries(self.codec(), &history_key, &history)?,
        })
    }

    async fn keep_latest_checkpoint(&self, thread_id: &str) -> Result<bool, StoreError> {
        let key = self.keys().thread_history(thread_id);
        let raw: Vec<String> = self
            .query(
                "load history",
                Retry::Once,
                redis::cmd("LRANGE").arg(&key).arg(0).arg(-1),
            )
            .await?;
        let Some(kept) = keep_latest(&entries(self.codec(), &key, &raw)?) else {
            return Ok(false);
        };
        let call = Call::new(&REPLACE_HISTORY, vec![key.clone()]).arg(raw.len().to_string());
        let call = kept.iter().try_fold(call, |call, logged| {
            let change = self.codec().encode(&key, &logged.change)?;
            Ok::<_, StoreError>(call.arg(logged.log_len.to_string()).arg(change))
        })?;
        let replaced: u8 = self.run_script("replace history", &call).await?;
        Ok(replaced == 1)
    }

    async fn update_thread(&self, update: &ThreadUpdate) -> Result<UpdateOutcome, StoreError> {
        let keys = self.keys();
        let thread = update.thread_id.as_str();
        let (meta, log, files, history) = (
            keys.thread_meta(thread),
            keys.thread_log(thread),
            keys.thread_files(thread),
            keys.thread_history(thread),
        );
        let codec = self.codec();
        let call = Call::new(
            &UPDATE_THREAD,
            vec![meta.clone(), log.clone(), files.clone(), history.clone()],
        )
        .arg(update.fence.step.to_string())
        .arg(update.fence.base.to_string())
        .arg(update.fence.log_len.to_string())
        .arg(update.new_base().map(|b| b.to_string()).unwrap_or_default())
        .arg(update.tokens().to_string())
        .arg(codec.encode(&meta, &update.state)?)
        .arg(if update.clear_pending { "1" } else { "0" })
        .arg(codec.encode(&meta, &update.mark())?)
        .arg(codec.encode(&history, &update.change())?);
        let call = call.messages(codec, &log, update.messages())?;
        let call = update.files.iter().try_fold(call, |call, (path, file)| {
            Ok::<_, StoreError>(call.arg(path).arg(codec.encode(&files, file)?))
        })?;
        let (written, _step): (u8, u64) = self.run_script("update thread", &call).await?;
        Ok(if written == 1 {
            UpdateOutcome::Updated {
                checkpoint: update.checkpoint(),
            }
        } else {
            UpdateOutcome::Conflict
        })
    }

    async fn note_checkpoint(
        &self,
        thread_id: &str,
        metadata: &Map<String, Value>,
    ) -> Result<Option<CheckpointNotes>, StoreError> {
        let keys = self.keys();
        let (meta, log, history) = (
            keys.thread_meta(thread_id),
            keys.thread_log(thread_id),
            keys.thread_history(thread_id),
        );
        let codec = self.codec();
        for _ in 0..NOTE_ATTEMPTS {
            let (step, raw): (Option<String>, Option<String>) = self
                .query(
                    "read checkpoint notes",
                    Retry::Once,
                    redis::cmd("HMGET").arg(&meta).arg("step").arg("notes"),
                )
                .await?;
            let step: u64 =
                step.as_deref()
                    .unwrap_or("0")
                    .parse()
                    .map_err(|e| StoreError::Corrupt {
                        key: format!("{meta} step"),
                        reason: format!("{step:?}: {e}"),
                    })?;
            if step == 0 {
                return Ok(None);
            }
            let current: Option<CheckpointNotes> =
                codec.decode_opt(format_args!("{meta} notes"), raw.clone())?;
            let notes = CheckpointNotes::patched(current, step, metadata);
            let call = Call::new(
                &NOTE_CHECKPOINT,
                vec![meta.clone(), log.clone(), history.clone()],
            )
            .arg(step.to_string())
            .arg(raw.unwrap_or_default())
            .arg(codec.encode(&meta, &notes)?)
            .arg(codec.encode(&history, &Change::of_note(step, metadata))?);
            let written: u8 = self.run_script("note checkpoint", &call).await?;
            if written == 1 {
                return Ok(Some(notes));
            }
        }
        Err(StoreError::Command(format!(
            "thread {thread_id} kept changing while its checkpoint was noted"
        )))
    }
}

/// Decodes the history list's (log length, change) pairs.
fn entries(codec: &Codec, key: &str, raw: &[String]) -> Result<Vec<Logged>, StoreError> {
    raw.chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            let [len, change] = pair else {
                return Err(StoreError::Corrupt {
                    key: format!("{key}[{}]", 2 * i),
                    reason: "a log length without its change".to_owned(),
                });
            };
            let at = format!("{key}[{}]", 2 * i);
            let log_len = codec
                .open(&at, len)?
                .parse()
                .map_err(|e| StoreError::Corrupt {
                    key: at.clone(),
                    reason: format!("{len:?}: {e}"),
                })?;
            let change: Change = codec.decode(format_args!("{key}[{}]", 2 * i + 1), change)?;
            Ok(Logged { log_len, change })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpaired_entry_is_corrupt() {
        let raw = ["3".to_owned()];
        assert!(matches!(
            entries(&Codec::default(), "h", &raw),
            Err(StoreError::Corrupt { key, .. }) if key == "h[0]"
        ));
    }

    #[test]
    fn a_bad_length_is_corrupt() {
        let raw = ["x".to_owned(), "{}".to_owned()];
        assert!(matches!(
            entries(&Codec::default(), "h", &raw),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
