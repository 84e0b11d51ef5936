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

    /// String: an agent spec (JSON) by name.
    pub fn spec(&self, name: &str) -> String {
        format!("{}:spec:{name}", self.prefix)
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
        ];
        for key in &keys {
            assert_eq!(hash_tag(key), "t1", "{key}");
        }
        assert_eq!(k.thread_log("t1"), "df:t:{t1}:log");
    }

    #[test]
    fn untagged_keys_hash_whole() {
        assert_eq!(hash_tag("df:run:r1"), "df:run:r1");
        assert_eq!(hash_tag("a{}b"), "a{}b");
    }
}
