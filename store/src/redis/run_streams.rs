//! Run event and delta streams on Redis: one Redis Stream per run and kind
//! (`run_events`, `run_deltas`), appended with `XADD` and read with
//! `XRANGE`. Single-key commands, so they work unchanged on a cluster.

use async_trait::async_trait;
use deepfleet_proto::{RunDelta, RunEvent};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StoreError;
use crate::redis::RedisStore;
use crate::redis::conn::Retry;
use crate::run_streams::{
    RUN_DELTAS_MAX, RUN_DELTAS_TTL_SECS, RUN_EVENTS_MAX, RUN_EVENTS_TTL_SECS, RunStreams,
};

/// The stream entry's one field, holding the event's JSON.
const FIELD: &str = "e";

#[async_trait]
impl RunStreams for RedisStore {
    /// `XADD` with an approximate cap and a fresh expiry, in one round
    /// trip (a pipeline on the stream's one key). Not retried: a repeated
    /// append would duplicate the event (followers tolerate duplicates,
    /// but there is no need to make them).
    async fn append_run_event(&self, run_id: &str, event: &RunEvent) -> Result<(), StoreError> {
        let key = self.keys().run_events(run_id);
        self.xadd(&key, event, RUN_EVENTS_MAX, RUN_EVENTS_TTL_SECS)
            .await
    }

    async fn run_events(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, RunEvent)>, StoreError> {
        self.xrange(&self.keys().run_events(run_id), after, max)
            .await
    }

    /// Appends to a run's delta stream, as `append_run_event` does to its
    /// event stream, under the deltas' tighter cap and expiry.
    async fn append_run_delta(&self, run_id: &str, delta: &RunDelta) -> Result<(), StoreError> {
        let key = self.keys().run_deltas(run_id);
        self.xadd(&key, delta, RUN_DELTAS_MAX, RUN_DELTAS_TTL_SECS)
            .await
    }

    async fn run_deltas(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, RunDelta)>, StoreError> {
        self.xrange(&self.keys().run_deltas(run_id), after, max)
            .await
    }
}

impl RedisStore {
    async fn xadd<T: Serialize>(
        &self,
        key: &str,
        value: &T,
        cap: usize,
        ttl_secs: u64,
    ) -> Result<(), StoreError> {
        let raw = self.codec().encode(key, value)?;
        self.count(u64::try_from(raw.len() + key.len()).unwrap_or(u64::MAX));
        let mut pipe = redis::pipe();
        pipe.cmd("XADD")
            .arg(key)
            .arg("MAXLEN")
            .arg("~")
            .arg(cap)
            .arg("*")
            .arg(FIELD)
            .arg(raw)
            .ignore()
            .cmd("EXPIRE")
            .arg(key)
            .arg(ttl_secs)
            .ignore();
        let pipe = &pipe;
        self.conn()
            .call(
                "append to a run stream",
                Retry::Never,
                |mut conn| async move { pipe.query_async::<()>(&mut conn).await },
            )
            .await
    }

    async fn xrange<T: DeserializeOwned>(
        &self,
        key: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, T)>, StoreError> {
        // `(id` is exclusive (Redis 6.2+).
        let start = after.map_or_else(|| "-".to_owned(), |id| format!("({id}"));
        let entries: Vec<(String, Vec<String>)> = self
            .query(
                "read a run stream",
                Retry::Once,
                redis::cmd("XRANGE")
                    .arg(key)
                    .arg(start)
                    .arg("+")
                    .arg("COUNT")
                    .arg(max.max(1)),
            )
            .await?;
        entries
            .into_iter()
            .map(|(id, fields)| {
                let raw = fields
                    .chunks(2)
                    .find(|pair| pair.first().map(String::as_str) == Some(FIELD))
                    .and_then(|pair| pair.get(1))
                    .ok_or_else(|| StoreError::Corrupt {
                        key: format!("{key} {id}"),
                        reason: format!("no `{FIELD}` field"),
                    })?;
                Ok((
                    id.clone(),
                    self.codec().decode(format_args!("{key} {id}"), raw)?,
                ))
            })
            .collect()
    }
}
