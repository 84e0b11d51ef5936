//! The Redis key schema.
//!
//! Every key of one thread carries the thread id as a hash tag (`{...}`), so
//! in a Redis Cluster they share a slot and a step commits in one Lua
//! script. The prefix isolates deployments (and test runs) on one server.
//!
//! The HTTP API's records are one key each ([`Keys::record`]), listed in
//! sorted-set indexes ([`Keys::record_index`]); both are tagged by their
//! scope (a thread, a batch, a tenant), so a kind is never one hot key and
//! a thread's records sit in its slot. `docs/records.md` lays them out.

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

    /// List: the thread's history, one entry per change to it (a step's
    /// commit or a run's seed), in commit order (`store/src/history/`).
    pub fn thread_history(&self, thread: &str) -> String {
        format!("{}:t:{{{thread}}}:history", self.prefix)
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

    /// Hash: a spend account ([`crate::Budget::account`]): each run's
    /// highest report of its own cost and their `total`.
    pub fn spend(&self, account: &str) -> String {
        format!("{}:spend:{{{account}}}", self.prefix)
    }

    /// Set: the runs holding a slot of a concurrency pool
    /// ([`crate::ConcurrencyLimit`]): the tenant's own
    /// (`slots:{tenant}`) or one of its assistants'
    /// (`slots:{tenant}:agent:NAME`). Tagged by the tenant, so one script
    /// takes a run's slots in all its pools at once.
    pub fn concurrency_slots(&self, tenant: &str, agent: Option<&str>) -> String {
        match agent {
            Some(agent) => format!("{}:slots:{{{tenant}}}:agent:{agent}", self.prefix),
            None => format!("{}:slots:{{{tenant}}}", self.prefix),
        }
    }

    /// Set: the names ([`crate::SlotPool::name`]) of the pools that may
    /// have holders, which the slot sweep walks.
    pub fn concurrency_pools(&self) -> String {
        format!("{}:slots:pools", self.prefix)
    }

    /// Hash: a batch's counters.
    pub fn batch(&self, batch: &str) -> String {
        format!("{}:batch:{{{batch}}}", self.prefix)
    }

    /// Set: run ids of a batch.
    pub fn batch_runs(&self, batch: &str) -> String {
        format!("{}:batch:{{{batch}}}:runs", self.prefix)
    }

    /// One part of a batch's admission window (`store::admission`):
    /// `size` (string), `waiting` (list), `members`, `admitted` and
    /// `unstarted` (sets), `after` (hash: ended run -> admitted run).
    /// Tagged by the batch, so one script updates all of them.
    pub fn batch_admission(&self, batch: &str, part: &str) -> String {
        format!("{}:batch:{{{batch}}}:adm:{part}", self.prefix)
    }

    /// Set: the batches whose admission has runs waiting or admitted,
    /// which the admission sweep walks.
    pub fn admission_batches(&self) -> String {
        format!("{}:adm:batches", self.prefix)
    }

    /// String: one of the HTTP API's records (JSON), by `kind` and `id`.
    ///
    /// One key per record, so that records spread over a cluster's slots
    /// (no hot key per kind) and each can expire on its own. The hash tag
    /// is the record's scope: for a scoped kind (`name/scope`, see
    /// [`records`]) the scope, so one thread's run metadata
    /// (`runs/{thread}`) shares the thread's slot with its checkpoint
    /// ([`Keys::thread_meta`]) and a batch's members share one slot; for
    /// any other kind the id, so a thread record sits in its thread's
    /// slot too. `df:rec:threads:{t1}`, `df:rec:runs:{t1}:r1`.
    pub fn record(&self, kind: &str, id: &str) -> String {
        match kind.split_once('/') {
            Some((name, scope)) => format!("{}:rec:{name}:{{{scope}}}:{id}", self.prefix),
            None => format!("{}:rec:{kind}:{{{id}}}", self.prefix),
        }
    }

    /// Sorted set: an index of records (see [`records`] for the names),
    /// record id -> score, read page by page in score order, so a listing
    /// costs its page rather than the number of records.
    ///
    /// Tagged like [`Keys::record`]: a scoped index (`runs/{thread}`,
    /// `threads/{tenant}`) by its scope, so a thread's indexes share its
    /// slot and each tenant's indexes share one; an unscoped one by its
    /// name. `df:ix:threads:{acme}`, `df:ix:{replies}`.
    pub fn record_index(&self, index: &str) -> String {
        match index.split_once('/') {
            Some((name, scope)) => format!("{}:ix:{name}:{{{scope}}}", self.prefix),
            None => format!("{}:ix:{{{index}}}", self.prefix),
        }
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

/// Record kinds and index names: the `kind` of [`Keys::record`] (and of
/// the store's record methods) for each kind of record the scheduler
/// keeps, and the `index` of [`Keys::record_index`] for each listing.
/// Changing a value orphans what is already stored under it.
///
/// A name `name/scope` is scoped: its keys carry the scope as their hash
/// tag, so everything of one thread (or batch, or tenant) shares a slot.
pub mod records {
    /// API thread records, by thread id.
    pub const THREADS: &str = "threads";
    /// Created assistants, by assistant id.
    pub const ASSISTANTS: &str = "assistants";
    /// Runs waiting for their thread to be free, by run id.
    pub const QUEUED: &str = "queued";
    /// Reply addresses of submitted runs not yet answered, by run id; also
    /// the index the reply loop reads them from (the only unscoped index:
    /// it holds only runs not answered yet).
    pub const REPLIES: &str = "replies";
    /// Webhook deliveries of runs, by run id: pending ones (also listed in
    /// this index, which the delivery loop reads) and, until they expire,
    /// delivered and failed ones with their attempts.
    pub const WEBHOOKS: &str = "webhooks";
    /// Leases on webhook deliveries, by run id: the scheduler instance
    /// holding one is the only one sending or recording that delivery.
    pub const WEBHOOK_CLAIMS: &str = "webhook_claims";
    /// Leases on threads, by thread id: the request holding one is the
    /// only one deciding what the thread runs next (see the scheduler's
    /// `lifecycle::thread_lease`).
    pub const THREAD_LEASES: &str = "thread_leases";
    /// Follow marks of streamed runs, by run id.
    pub const FOLLOWED: &str = "followed";
    /// A2A tasks (the runs `POST /a2a/{assistant_id}` started), by task
    /// id (the run id): the thread the run is on, since A2A's `tasks/get`
    /// names the task alone.
    pub const A2A_TASKS: &str = "a2a_tasks";
    /// Headers of API batches, by batch id.
    pub const BATCHES: &str = "batches";
    /// Headers of batches of task lines (`deepfleet submit`), by batch id.
    pub const TASK_BATCHES: &str = "task_batches";
    /// Index: the threads that have queued runs (thread id, scored by when
    /// a run was last queued on it), which the run starter walks.
    pub const QUEUED_THREADS: &str = "queued_threads";
    /// Index: the threads with a run to roll back once it has stopped
    /// (thread id, scored by when it was asked), which the run starter
    /// walks.
    pub const ROLLBACK_THREADS: &str = "rollback_threads";
    /// Index: the threads with a time to live (thread id, scored by when
    /// it may run out, µs: a lower bound, as a run's start moves it on),
    /// which the run starter's ttl sweep claims from.
    pub const THREAD_TTL_DUE: &str = "thread_ttl_due";
    /// Crons, by cron id.
    pub const CRONS: &str = "crons";
    /// Index: every enabled cron (cron id, scored by its next fire time,
    /// µs), which the schedulers' cron loops read and claim from.
    pub const CRON_DUE: &str = "cron_due";
    /// What [`task_batch_members`] puts before the batch id.
    pub const TASK_BATCH_MEMBERS_PREFIX: &str = "task_batch/";
    /// What [`thread_runs`] puts before the thread id.
    pub const THREAD_RUNS_PREFIX: &str = "runs/";
    /// What [`assistant_versions`] puts before the assistant id.
    pub const ASSISTANT_VERSIONS_PREFIX: &str = "assistant_versions/";

    /// The kind of one assistant's versions, by version number, and the
    /// index of them by number.
    pub fn assistant_versions(assistant_id: &str) -> String {
        format!("{ASSISTANT_VERSIONS_PREFIX}{assistant_id}")
    }
    /// What [`batch_members`] puts before the batch id.
    pub const BATCH_MEMBERS_PREFIX: &str = "batch/";

    /// The kind of one thread's run metadata, by run id, and the index
    /// of its runs by creation time.
    pub fn thread_runs(thread_id: &str) -> String {
        format!("{THREAD_RUNS_PREFIX}{thread_id}")
    }

    /// The kind of one API batch's members, by run id, and the index of
    /// them in submission order.
    pub fn batch_members(batch_id: &str) -> String {
        format!("{BATCH_MEMBERS_PREFIX}{batch_id}")
    }

    /// The kind of one task batch's members, by run id, and the index of
    /// them in file order.
    pub fn task_batch_members(batch_id: &str) -> String {
        format!("{TASK_BATCH_MEMBERS_PREFIX}{batch_id}")
    }

    /// Index: a tenant's threads (not the temporary ones of stateless
    /// runs) by creation time, for thread search.
    pub fn tenant_threads(tenant: &str) -> String {
        format!("{THREADS}/{tenant}")
    }

    /// Index: a tenant's crons by creation time.
    pub fn tenant_crons(tenant: &str) -> String {
        format!("{CRONS}/{tenant}")
    }

    /// Index: a tenant's created assistants by creation time.
    pub fn tenant_assistants(tenant: &str) -> String {
        format!("{ASSISTANTS}/{tenant}")
    }

    /// Index: the queued runs of one thread, oldest first.
    pub fn thread_queue(thread_id: &str) -> String {
        format!("{QUEUED}/{thread_id}")
    }

    /// Index: the runs of a tenant that may be in flight, by creation
    /// time, for the tenant's in-flight limit.
    pub fn tenant_in_flight(tenant: &str) -> String {
        format!("in_flight/{tenant}")
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
            k.thread_history("t1"),
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
        assert_eq!(records::task_batch_members("b1"), "task_batch/b1");
        assert_eq!(records::tenant_threads("acme"), "threads/acme");
    }

    #[test]
    fn records_share_their_scopes_slot() {
        let k = Keys::new("df");
        assert_eq!(k.record(records::THREADS, "t1"), "df:rec:threads:{t1}");
        let run = k.record(&records::thread_runs("t1"), "r1");
        assert_eq!(run, "df:rec:runs:{t1}:r1");
        let thread_keys = [
            k.record(records::THREADS, "t1"),
            run,
            k.record_index(&records::thread_runs("t1")),
            k.record_index(&records::thread_queue("t1")),
        ];
        for key in &thread_keys {
            assert_eq!(hash_tag(key), hash_tag(&k.thread_meta("t1")), "{key}");
        }
        let batch = k.record(&records::batch_members("b1"), "r1");
        assert_eq!(hash_tag(&batch), "b1");
        assert_eq!(
            hash_tag(&k.record_index(&records::batch_members("b1"))),
            "b1"
        );
        // Unscoped kinds spread by id.
        assert_eq!(hash_tag(&k.record(records::QUEUED, "r1")), "r1");
        assert_ne!(
            hash_tag(&k.record(records::QUEUED, "r1")),
            hash_tag(&k.record(records::QUEUED, "r2"))
        );
    }

    #[test]
    fn indexes_are_tagged_by_scope_or_name() {
        let k = Keys::new("df");
        let threads = k.record_index(&records::tenant_threads("acme"));
        assert_eq!(threads, "df:ix:threads:{acme}");
        assert_eq!(
            hash_tag(&threads),
            hash_tag(&k.record_index(&records::tenant_in_flight("acme")))
        );
        assert_eq!(k.record_index(records::REPLIES), "df:ix:{replies}");
        // A record and an index of the same name never share a key.
        assert_ne!(
            k.record(&records::thread_runs("t1"), "x"),
            k.record_index(&records::thread_runs("t1"))
        );
    }

    #[test]
    fn untagged_keys_hash_whole() {
        assert_eq!(hash_tag("df:run:r1"), "df:run:r1");
        assert_eq!(hash_tag("a{}b"), "a{}b");
    }
}
