//! The Lua scripts (one file each under `store/lua/`) and the keys and
//! arguments they are called with.

use deepfleet_proto::{ChildResult, FileData, Keys, LoggedMessage, ParentLink, RunRecord};
use redis::{FromRedisValue, RedisResult, Script};
use serde_json::{Map, Value};

use super::codec::encode;
use super::conn::Conn;
use crate::{StepCommit, StoreError, ThreadSeed};

/// The scripts, hashed once per store.
pub(super) struct Scripts {
    pub(super) commit_step: Script,
    pub(super) create_run: Script,
    pub(super) record_child_result: Script,
    pub(super) load_thread: Script,
    pub(super) mark_published: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        Scripts {
            commit_step: Script::new(include_str!("../../lua/commit_step.lua")),
            create_run: Script::new(include_str!("../../lua/create_run.lua")),
            record_child_result: Script::new(include_str!("../../lua/record_child_result.lua")),
            load_thread: Script::new(include_str!("../../lua/load_thread.lua")),
            mark_published: Script::new(include_str!("../../lua/mark_published.lua")),
        }
    }
}

/// One script call: its keys (all in one slot) and arguments.
pub(super) struct Call<'s> {
    script: &'s Script,
    keys: Vec<String>,
    args: Vec<String>,
}

impl<'s> Call<'s> {
    pub(super) fn new(script: &'s Script, keys: Vec<String>) -> Self {
        Call {
            script,
            keys,
            args: Vec::new(),
        }
    }

    pub(super) fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The payload this call sends: keys and arguments.
    pub(super) fn bytes(&self) -> u64 {
        let len: usize = self.keys.iter().chain(&self.args).map(String::len).sum();
        u64::try_from(len).unwrap_or(u64::MAX)
    }

    /// EVALSHA, loading the script on NOSCRIPT (a restarted or failed-over
    /// server has an empty script cache).
    pub(super) async fn invoke<T: FromRedisValue>(&self, mut conn: Conn) -> RedisResult<T> {
        let mut invocation = self.script.prepare_invoke();
        for key in &self.keys {
            invocation.key(key);
        }
        for arg in &self.args {
            invocation.arg(arg);
        }
        invocation.invoke_async(&mut conn).await
    }
}

/// `commit_step.lua`.
pub(super) fn commit_step<'s>(
    script: &'s Script,
    keys: &Keys,
    commit: &StepCommit,
) -> Result<Call<'s>, StoreError> {
    let thread = commit.thread_id.as_str();
    let run_id = commit.run.run_id.as_str();
    let meta = keys.thread_meta(thread);
    let run_key = keys.run(thread, run_id);
    let run = encode(&run_key, &commit.run)?;
    let state = match &commit.state {
        Some(state) => encode(&meta, state)?,
        None => String::new(),
    };
    let pending = match &commit.pending {
        Some(pending) => encode(&meta, pending)?,
        None => String::new(),
    };
    let context = match &commit.context {
        Some(context) => encode(&meta, context)?,
        None => String::new(),
    };
    let fan_in = commit
        .fan_in_expected
        .map(|n| n.to_string())
        .unwrap_or_default();
    let call = Call::new(
        script,
        vec![
            meta,
            keys.thread_log(thread),
            keys.thread_files(thread),
            run_key,
            keys.fan_in(thread, run_id),
            keys.fan_in_expected(thread, run_id),
        ],
    )
    .arg(commit.step.to_string())
    .arg(run)
    .arg(state)
    .arg(pending)
    .arg(fan_in)
    .arg(log_tokens(&commit.messages).to_string())
    .arg(context);
    let call = messages(call, &keys.thread_log(thread), &commit.messages)?;
    commit.files.iter().try_fold(call, |call, (path, file)| {
        let file = match file {
            Some(file) => encode(&keys.thread_files(thread), file)?,
            None => String::new(),
        };
        Ok(call.arg(path).arg(file))
    })
}

/// `create_run.lua`. `merge` is the thread state the seed was merged into
/// (`None` = the thread had none) and the merged result, when the seed sets
/// state at all.
pub(super) fn create_run<'s>(
    script: &'s Script,
    keys: &Keys,
    run: &RunRecord,
    seed: &ThreadSeed,
    merge: Option<(Option<&str>, &Map<String, Value>)>,
) -> Result<Call<'s>, StoreError> {
    let thread = run.thread_id.as_str();
    let meta = keys.thread_meta(thread);
    let run_key = keys.run(thread, &run.run_id);
    let record = encode(&run_key, run)?;
    let (changes, seen, merged) = match merge {
        Some((seen, merged)) => ("1", seen.unwrap_or(""), encode(&meta, merged)?),
        None => ("0", "", String::new()),
    };
    let call = Call::new(
        script,
        vec![
            run_key,
            meta.clone(),
            keys.thread_log(thread),
            keys.thread_files(thread),
        ],
    )
    .arg(record)
    .arg(changes)
    .arg(seen)
    .arg(merged)
    .arg(log_tokens(&seed.messages).to_string());
    let call = messages(call, &keys.thread_log(thread), &seed.messages)?;
    seed.files.iter().try_fold(call, |call, (path, file)| {
        let file: &FileData = file;
        Ok(call
            .arg(path)
            .arg(encode(&keys.thread_files(thread), file)?))
    })
}

/// `record_child_result.lua`.
pub(super) fn record_child_result<'s>(
    script: &'s Script,
    keys: &Keys,
    parent: &ParentLink,
    result: &ChildResult,
) -> Result<Call<'s>, StoreError> {
    let fan_in = keys.fan_in(&parent.thread_id, &parent.run_id);
    let value = encode(&fan_in, result)?;
    Ok(Call::new(
        script,
        vec![
            fan_in,
            keys.fan_in_expected(&parent.thread_id, &parent.run_id),
        ],
    )
    .arg(result.tool_call_id.as_str())
    .arg(value))
}

/// Appends a message count and the messages.
fn messages<'s>(
    call: Call<'s>,
    log: &str,
    messages: &[LoggedMessage],
) -> Result<Call<'s>, StoreError> {
    let call = call.arg(messages.len().to_string());
    messages
        .iter()
        .try_fold(call, |call, message| Ok(call.arg(encode(log, message)?)))
}

/// Tokens of appended messages, for the thread's running total.
fn log_tokens(messages: &[LoggedMessage]) -> u64 {
    messages.iter().map(|m| u64::from(m.tokens)).sum()
}
