//! The Redis key schema.
//!
//! Every key of one thread carries the thread id as a hash tag (`{...}`), so
//! in a Redis Cluster they share a slot and a step commits in one Lua
//! script. The prefix isolates deployments (and test runs) on one server.

/// Builds the keys of one deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys under `prefix` (e.g. `df`).
    pub fn new(prefix: impl Into<String>) -> Self {
        Keys {
            prefix: prefix.into(),
        }
    }

    /// The deployment prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Hash of a thread's small, rewritten-per-step fields (step, state,
    /// pending tool calls).
    pub fn thread_meta(&self, thread: &str) -> String {
        format!("{}:t:{{{thread}}}:meta", self.prefix)
    }

    /// List: the thread's append-only message log.
    pub fn thread_log(&self, thread: &str) -> String {
        format!("{}:t:{{{thread}}}:log", self.prefix)
    }

    /// Hash: path -> file, the thread's state backend.
    pub fn thread_files(&self, thread: &str) -> String {
        format!("{}:t:{{{thread}}}:files", self.prefix)
    }

    /// Set: the ids of the runs made on the thread, so everything the
    /// thread owns is found without scanning (expiry, deletion).
    pub fn thread_run_ids(&self, thread: &str) -> String {
        format!("{}:t:{{{thread}}}:runs", self.prefix)
    }

    /// Set: the threads of the subagent runs the thread's runs started;
    /// they expire and are deleted with it.
    pub fn thread_children(&self, thread: &str) -> String {
        format!("{}:t:{{{thread}}}:children", self.prefix)
    }

    /// What every key of one thread starts with: the scripts that expire
    /// or delete a thread build its runs' keys from it (see
    /// [`Keys::run`], [`Keys::fan_in`], [`Keys::fan_in_expected`],
    /// [`Keys::cancel`]).
    pub fn thread_prefix(&self, thread: &str) -> String {
        format!("{}:t:{{{thread}}}:", self.prefix)
    }

    /// String: a run record, in its thread's slot.
    pub fn run(&self, thread: &str, run: &str) -> String {
        format!("{}:t:{{{thread}}}:run:{run}", self.prefix)
    }

    /// Hash: tool_call_id -> child result, for a parked run.
    pub fn fan_in(&self, thread: &str, run: &str) -> String {
        format!("{}:t:{{{thread}}}:fanin:{run}", self.prefix)
    }

    /// String: how many child results a parked run waits for.
    pub fn fan_in_expected(&self, thread: &str, run: &str) -> String {
        format!("{}:t:{{{thread}}}:fanin:{run}:n", self.prefix)
    }

    /// String: set when a run should stop at its next step boundary.
    pub fn cancel(&self, thread: &str, run: &str) -> String {
        format!("{}:t:{{{thread}}}:cancel:{run}", self.prefix)
    }

    /// String: run id -> thread id, for lookups by run alone.
    pub fn run_index(&self, run: &str) -> String {
        format!("{}:run:{run}", self.prefix)
    }

    /// Stream: a run's [`RunEvent`](crate::RunEvent)s, for its followers;
    /// expires a while after the last append.
    pub fn run_events(&self, run: &str) -> String {
        format!("{}:ev:{{{run}}}", self.prefix)
    }

    /// Stream: a run's [`RunDelta`](crate::RunDelta)s (streamed tokens),
    /// capped and short-lived.
    pub fn run_deltas(&self, run: &str) -> String {
        format!("{}:dl:{{{run}}}", self.prefix)
    }

    /// String: the spec served under `name` and its version (JSON).
    pub fn spec(&self, name: &str) -> String {
        format!("{}:spec:{name}", self.prefix)
    }

    /// String: one immutable version of `name`'s spec (JSON). Spec names
    /// never hold `@`, so no version key is another name's served key.
    pub fn spec_version(&self, name: &str, version: &str) -> String {
        format!("{}:spec:{name}@{version}", self.prefix)
    }

    /// List: ids of a batch's finished top-level runs, in finishing order.
    pub fn batch_done(&self, batch: &str) -> String {
        format!("{}:batch:{{{batch}}}:done", self.prefix)
    }

    /// Hash: a batch's counters.
    pub fn batch(&self, batch: &str) -> String {
        format!("{}:batch:{{{batch}}}", self.prefix)
    }

    /// Set: run ids of a batch.
    pub fn batch_runs(&self, batch: &str) -> String {
        format!("{}:batch:{{{batch}}}:runs", self.prefix)
    }

    /// Hash: id -> JSON, the HTTP API's records of one kind (threads,
    /// assistants, run metadata). One key per kind keeps a listing one
    /// command.
    pub fn records(&self, kind: &str) -> String {
        format!("{}:rec:{{{kind}}}", self.prefix)
    }

    /// Hash: key -> item, the store items of one namespace. Tagged with
    /// the namespace's root label, like [`Keys::store_index`], so a put
    /// updates the items and the index in one script.
    pub fn store_items(&self, namespace: &[String]) -> String {
        let root = namespace.first().map_or("", String::as_str);
        format!(
            "{}:st:{{{}}}:ns:{}",
            self.prefix,
            store_tag(root),
            crate::item::join_namespace(namespace)
        )
    }

    /// Sorted set (all scores 0, read by lexical range): the dot-joined
    /// namespaces under one root label that hold items, so a prefix search
    /// reads one range instead of scanning the keyspace.
    pub fn store_index(&self, root: &str) -> String {
        format!("{}:st:{{{}}}:idx:{root}", self.prefix, store_tag(root))
    }

    /// Set: the root labels that have held items, for listings without a
    /// prefix.
    pub fn store_roots(&self) -> String {
        format!("{}:st:roots", self.prefix)
    }
}

/// Record kinds: the `kind` of [`Keys::records`] (and of the store's
/// record methods) for each kind of record the scheduler keeps. Changing a
/// value orphans the records already stored under it.
pub mod records {
    /// API thread records, by thread id.
    pub const THREADS: &str = "threads";
    /// Created assistants, by assistant id.
    pub const ASSISTANTS: &str = "assistants";
    /// Runs waiting for their thread to be free, by run id.
    pub const QUEUED: &str = "queued";
    /// Reply addresses of submitted runs not yet answered, by run id.
    pub const REPLIES: &str = "replies";
    /// Follow marks of streamed runs, by run id.
    pub const FOLLOWED: &str = "followed";
    /// Headers of API batches, by batch id.
    pub const BATCHES: &str = "batches";
    /// Headers of batches of task lines (`deepfleet submit`), by batch id.
    pub const TASK_BATCHES: &str = "task_batches";
    /// What [`task_batch_members`] puts before the batch id.
    pub const TASK_BATCH_MEMBERS_PREFIX: &str = "task_batch/";
    /// What [`thread_runs`] puts before the thread id.
    pub const THREAD_RUNS_PREFIX: &str = "runs/";
    /// What [`batch_members`] puts before the batch id.
    pub const BATCH_MEMBERS_PREFIX: &str = "batch/";

    /// The kind of one thread's run metadata, by run id.
    pub fn thread_runs(thread_id: &str) -> String {
        format!("{THREAD_RUNS_PREFIX}{thread_id}")
    }

    /// The kind of one API batch's members, by run id.
    pub fn batch_members(batch_id: &str) -> String {
        format!("{BATCH_MEMBERS_PREFIX}{batch_id}")
    }

    /// The kind of one task batch's members, by run id.
    pub fn task_batch_members(batch_id: &str) -> String {
        format!("{TASK_BATCH_MEMBERS_PREFIX}{batch_id}")
    }
}

/// A root label made safe as a hash tag: braces would end the tag early.
/// Only the slot depends on it; the key itself stays unique because the
/// full label follows the tag.
fn store_tag(root: &str) -> String {
    let tag: String = root
        .chars()
        .map(|c| if c == '{' || c == '}' { '_' } else { c })
        .collect();
    if tag.is_empty() { "_".to_owned() } else { tag }
}

/// The hash slot tag of a key, as Redis Cluster computes it.
pub fn hash_tag(key: &str) -> &str {
    if let Some(open) = key.find('{')
        && let Some(len) = key[open + 1..].find('}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_keys_share_one_tag() {
        let k = Keys::new("df");
        let keys = [
            k.thread_meta("t1"),
            k.thread_log("t1"),
            k.thread_files("t1"),
            k.run("t1", "r1"),
            k.fan_in("t1", "r1"),
            k.fan_in_expected("t1", "r1"),
            k.cancel("t1", "r1"),
            k.thread_run_ids("t1"),
            k.thread_children("t1"),
        ];
        for key in &keys {
            assert_eq!(hash_tag(key), "t1", "{key}");
        }
        assert_eq!(k.thread_log("t1"), "df:t:{t1}:log");
    }

    /// The thread scripts build a run's keys from the thread prefix.
    #[test]
    fn run_keys_extend_the_thread_prefix() {
        let k = Keys::new("df");
        let p = k.thread_prefix("t1");
        assert_eq!(k.run("t1", "r1"), format!("{p}run:r1"));
        assert_eq!(k.fan_in("t1", "r1"), format!("{p}fanin:r1"));
        assert_eq!(k.fan_in_expected("t1", "r1"), format!("{p}fanin:r1:n"));
        assert_eq!(k.cancel("t1", "r1"), format!("{p}cancel:r1"));
        assert_eq!(k.thread_meta("t1"), format!("{p}meta"));
    }

    #[test]
    fn store_keys_share_their_root_tag() {
        let k = Keys::new("df");
        let ns = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let items = k.store_items(&ns(&["agent", "u1"]));
        assert_eq!(items, "df:st:{agent}:ns:agent.u1");
        assert_eq!(hash_tag(&items), hash_tag(&k.store_index("agent")));
        let odd = k.store_items(&ns(&["a{b}", "c"]));
        assert_eq!(hash_tag(&odd), "a_b_");
        assert_eq!(hash_tag(&odd), hash_tag(&k.store_index("a{b}")));
        assert_ne!(k.store_index("a{b}"), k.store_index("a}b{"));
    }

    #[test]
    fn record_kinds_keep_their_stored_names() {
        assert_eq!(records::thread_runs("t1"), "runs/t1");
        assert_eq!(records::batch_members("b1"), "batch/b1");
        assert_eq!(
            Keys::new("df").records(records::THREADS),
            "df:rec:{threads}"
        );
    }

    #[test]
    fn untagged_keys_hash_whole() {
        assert_eq!(hash_tag("df:run:r1"), "df:run:r1");
        assert_eq!(hash_tag("a{}b"), "a{}b");
    }
}
