//! Re-sealing a deployment's values under the keyring's current key:
//! what `deepfleet rotate-keys` runs after a new key became current, and
//! after encryption was turned on over values stored in clear.
//!
//! It walks the prefix with `SCAN`, and reads each key's values in
//! batches (`HSCAN`, `LRANGE`), re-sealing those that are clear or under
//! another key; the key id is in each envelope's header, so values
//! already current are skipped without decrypting. Each batch is written
//! by `lua/reseal.lua` as a compare-and-set on the values read, so a
//! value a worker rewrote meanwhile is never overwritten. That makes the
//! walk safe beside a running fleet, idempotent, and resumable by
//! running it again: a second pass only re-reads headers.
//!
//! Stream entries (run events and token deltas) cannot be rewritten in
//! place and expire within a day of their run's last event
//! ([`crate::RUN_EVENTS_TTL_SECS`]); the walk counts them and leaves them,
//! so a retired key stays in the keyring for that long.

use std::sync::LazyLock;

use redis::Script;

use super::RedisStore;
use super::conn::Retry;
use super::scripts::Call;
use crate::at_rest::Keyring;
use crate::error::StoreError;

static RESEAL: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/reseal.lua")));

/// Values read and written per batch.
const BATCH: usize = 200;

/// What [`RedisStore::reseal`] found and did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ResealReport {
    /// Keys under the prefix.
    pub keys: u64,
    /// Values now sealed under the current key that were not before.
    pub resealed: u64,
    /// Values that were sealed under the current key already.
    pub current: u64,
    /// Values that changed between the read and the write, and were left
    /// as their new writer sealed them.
    pub changed: u64,
    /// Values that do not open (a key id the ring lacks, or altered);
    /// left as they are and logged.
    pub unreadable: u64,
    /// Stream keys, whose entries expire rather than being re-sealed.
    pub streams: u64,
}

/// Where a key keeps sealed values, by the key schema of
/// [`deepfleet_proto::Keys`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holds {
    /// A string that is one sealed value (run records, specs, API records).
    Value,
    /// A hash whose named fields are sealed (a thread's meta: its
    /// counters stay clear for the scripts).
    Fields(&'static [&'static str]),
    /// A hash whose every value is sealed (files, items, fan-in).
    AllFields,
    /// A list whose every entry is sealed (the message log).
    Entries,
    /// A stream of sealed entries.
    Stream,
    /// Ids, counters and flags, in clear.
    Nothing,
}

/// What `key` (under `prefix`) holds.
fn holds(prefix: &str, key: &str) -> Holds {
    let Some(rest) = key.strip_prefix(prefix).and_then(|r| r.strip_prefix(':')) else {
        return Holds::Nothing;
    };
    if let Some(thread) = rest.strip_prefix("t:{") {
        let Some((_, part)) = thread.split_once("}:") else {
            return Holds::Nothing;
        };
        return match part.split_once(':') {
            None if part == "meta" => {
                Holds::Fields(&["state", "pending", "context", "update", "notes"])
            }
            None if part == "log" || part == "history" => Holds::Entries,
            None if part == "files" => Holds::AllFields,
            Some(("run", _)) => Holds::Value,
            // `fanin:RUN` holds results, `fanin:RUN:n` the count.
            Some(("fanin", run)) if !run.ends_with(":n") => Holds::AllFields,
            _ => Holds::Nothing,
        };
    }
    match rest.split_once(':') {
        Some(("ev" | "dl", _)) => Holds::Stream,
        Some(("spec", _)) => Holds::Value,
        Some(("rec", _)) => Holds::Value,
        Some(("st", store)) if store.contains("}:ns:") => Holds::AllFields,
        _ => Holds::Nothing,
    }
}

/// Values of one key read in one batch: where each is and what it was.
type Read = Vec<(String, String)>;

impl RedisStore {
    /// Re-seals every value under this store's prefix that is not sealed
    /// under its keyring's current key; see the module docs. Fails with
    /// [`StoreError::Invalid`] when the store has no keyring.
    pub async fn reseal(&self) -> Result<ResealReport, StoreError> {
        if self.codec().keyring().is_none() {
            return Err(StoreError::Invalid(
                "re-sealing needs encryption keys; none are configured".to_owned(),
            ));
        }
        let mut report = ResealReport::default();
        for node in &self.data_nodes().await? {
            let mut cursor = 0_u64;
            loop {
                let (next, keys) = self.scan_prefix(node, cursor).await?;
                for key in keys {
                    report.keys += 1;
                    self.reseal_key(&key, &mut report).await?;
                }
                tracing::info!(?report, "re-sealing");
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(report)
    }

    async fn reseal_key(&self, key: &str, report: &mut ResealReport) -> Result<(), StoreError> {
        match holds(self.keys().prefix(), key) {
            Holds::Nothing => {}
            Holds::Stream => report.streams += 1,
            Holds::Value => {
                let raw: Option<String> = self
                    .query("read a value", Retry::Once, redis::cmd("GET").arg(key))
                    .await?;
                let read = raw.map(|raw| (String::new(), raw)).into_iter().collect();
                self.reseal_batch(key, "string", read, report).await?;
            }
            Holds::Fields(fields) => {
                let raw: Vec<Option<String>> = self
                    .query(
                        "read fields",
                        Retry::Once,
                        redis::cmd("HMGET").arg(key).arg(fields),
                    )
                    .await?;
                let read = fields
                    .iter()
                    .zip(raw)
                    .filter_map(|(field, raw)| Some(((*field).to_owned(), raw?)))
                    .collect();
                self.reseal_batch(key, "hash", read, report).await?;
            }
            Holds::AllFields => {
                let mut cursor = 0_u64;
                loop {
                    let (next, read): (u64, Read) = self
                        .query(
                            "scan a hash",
                            Retry::Once,
                            redis::cmd("HSCAN")
                                .arg(key)
                                .arg(cursor)
                                .arg("COUNT")
                                .arg(BATCH),
                        )
                        .await?;
                    self.reseal_batch(key, "hash", read, report).await?;
                    if next == 0 {
                        break;
                    }
                    cursor = next;
                }
            }
            Holds::Entries => {
                let mut start = 0_usize;
                loop {
                    let raw: Vec<String> = self
                        .query(
                            "read a list",
                            Retry::Once,
                            redis::cmd("LRANGE")
                                .arg(key)
                                .arg(start)
                                .arg(start + BATCH - 1),
                        )
                        .await?;
                    let n = raw.len();
                    let read = raw
                        .into_iter()
                        .enumerate()
                        .map(|(i, raw)| ((start + i).to_string(), raw))
                        .collect();
                    self.reseal_batch(key, "list", read, report).await?;
                    if n < BATCH {
                        break;
                    }
                    start += BATCH;
                }
            }
        }
        Ok(())
    }

    /// Re-seals the values `read` from `key` that need it, in one
    /// compare-and-set.
    async fn reseal_batch(
        &self,
        key: &str,
        kind: &str,
        read: Read,
        report: &mut ResealReport,
    ) -> Result<(), StoreError> {
        let Some(keyring) = self.codec().keyring() else {
            return Ok(());
        };
        let mut call = Call::new(&RESEAL, vec![key.to_owned()]).arg(kind);
        let mut sent = 0;
        for (at, raw) in read {
            match self.resealed(keyring, key, &at, &raw) {
                Ok(None) => report.current += 1,
                Ok(Some(sealed)) => {
                    call = call.arg(at).arg(raw).arg(sealed);
                    sent += 1;
                }
                Err(e) => {
                    tracing::warn!(key, at, error = %e, "a value does not open; left as it is");
                    report.unreadable += 1;
                }
            }
        }
        if sent > 0 {
            let replaced: u64 = self.run_script("re-seal", &call).await?;
            report.resealed += replaced;
            report.changed += sent - replaced.min(sent);
        }
        Ok(())
    }

    /// `raw` sealed under the current key, or `None` when it is already.
    fn resealed(
        &self,
        keyring: &Keyring,
        key: &str,
        at: &str,
        raw: &str,
    ) -> Result<Option<String>, StoreError> {
        if keyring.is_current(raw) {
            return Ok(None);
        }
        let what = if at.is_empty() {
            key.to_owned()
        } else {
            format!("{key} {at}")
        };
        let json = self.codec().open(&what, raw)?;
        self.codec().seal(&what, json).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::Keys;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_key_of_the_schema_is_classified() {
        let keys = Keys::new("df:x");
        let ns = ["memories".to_owned(), "a:b".to_owned()];
        let cases = [
            (
                keys.thread_meta("t:1"),
                Holds::Fields(&["state", "pending", "context", "update", "notes"]),
            ),
            (keys.thread_log("t:1"), Holds::Entries),
            (keys.thread_files("t1"), Holds::AllFields),
            (keys.thread_history("t1"), Holds::Entries),
            (keys.run("t1", "r:1"), Holds::Value),
            (keys.fan_in("t1", "r1"), Holds::AllFields),
            (keys.fan_in_expected("t1", "r1"), Holds::Nothing),
            (keys.cancel("t1", "r1"), Holds::Nothing),
            (keys.run_index("r1"), Holds::Nothing),
            (keys.run_events("r1"), Holds::Stream),
            (keys.run_deltas("r1"), Holds::Stream),
            (keys.spec("agent"), Holds::Value),
            (keys.batch_done("b1"), Holds::Nothing),
            (keys.batch("b1"), Holds::Nothing),
            (keys.batch_runs("b1"), Holds::Nothing),
            (keys.record("threads", "t1"), Holds::Value),
            (keys.record("runs/t1", "r1"), Holds::Value),
            (keys.record_index("threads/acme"), Holds::Nothing),
            (keys.store_items(&ns), Holds::AllFields),
            (keys.store_index("memories"), Holds::Nothing),
            (keys.store_roots(), Holds::Nothing),
            ("other:t:{t1}:log".to_owned(), Holds::Nothing),
        ];
        for (key, want) in cases {
            assert_eq!(holds("df:x", &key), want, "{key}");
        }
    }
}
