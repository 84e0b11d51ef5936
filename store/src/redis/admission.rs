//! Admission on Redis: the parts of a batch's window under one hash tag
//! (`Keys::batch_admission`), changed by `lua/admission_*.lua`, plus a set
//! of the batches with an admission for the sweep.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;

use crate::admission::{Admission, AdmissionState, Entered};
use crate::error::StoreError;
use crate::redis::RedisStore;
use crate::redis::conn::Retry;
use crate::redis::scripts::Call;

static ENTER: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/admission_enter.lua")));
static AFTER: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/admission_after.lua")));
static TOP_UP: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/admission_top_up.lua")));

impl RedisStore {
    fn admission_keys(&self, batch_id: &str, parts: &[&str]) -> Vec<String> {
        parts
            .iter()
            .map(|part| self.keys().batch_admission(batch_id, part))
            .collect()
    }

    async fn admission_count(&self, what: &str, cmd: &str, key: String) -> Result<u64, StoreError> {
        self.query(what, Retry::Once, redis::cmd(cmd).arg(key))
            .await
    }
}

#[async_trait]
impl Admission for RedisStore {
    async fn enter_admission(
        &self,
        batch_id: &str,
        run_id: &str,
        window: u32,
    ) -> Result<Entered, StoreError> {
        let keys = self.admission_keys(
            batch_id,
            &["size", "waiting", "members", "admitted", "unstarted"],
        );
        let call = Call::new(&ENTER, keys).arg(run_id).arg(window.to_string());
        let start: u8 = self.run_script("enter admission", &call).await?;
        // After the script, so a sweep that sees the batch sees the run;
        // a set member written twice is one.
        let batches = self.keys().admission_batches();
        self.write::<()>(
            "list admission batch",
            batches.len() + batch_id.len(),
            redis::cmd("SADD").arg(&batches).arg(batch_id),
        )
        .await?;
        Ok(if start == 1 {
            Entered::Start
        } else {
            Entered::Hold
        })
    }

    async fn admit_after(
        &self,
        batch_id: &str,
        ended_run: &str,
    ) -> Result<Option<String>, StoreError> {
        let keys = self.admission_keys(
            batch_id,
            &["size", "waiting", "admitted", "unstarted", "after"],
        );
        let call = Call::new(&AFTER, keys).arg(ended_run);
        let next: Option<String> = self.run_script("admit after", &call).await?;
        Ok(next.filter(|n| !n.is_empty()))
    }

    async fn top_up(&self, batch_id: &str) -> Result<Vec<String>, StoreError> {
        let keys = self.admission_keys(batch_id, &["size", "waiting", "admitted", "unstarted"]);
        self.run_script("top up admission", &Call::new(&TOP_UP, keys))
            .await
    }

    async fn admission_started(&self, batch_id: &str, runs: &[String]) -> Result<(), StoreError> {
        if runs.is_empty() {
            return Ok(());
        }
        let key = self.keys().batch_admission(batch_id, "unstarted");
        let bytes = key.len() + runs.iter().map(String::len).sum::<usize>();
        self.write::<()>(
            "admission started",
            bytes,
            redis::cmd("SREM").arg(&key).arg(runs),
        )
        .await
    }

    async fn admission_state(&self, batch_id: &str) -> Result<AdmissionState, StoreError> {
        let key = |part| self.keys().batch_admission(batch_id, part);
        let window: Option<u32> = self
            .query(
                "admission size",
                Retry::Once,
                redis::cmd("GET").arg(key("size")),
            )
            .await?;
        let waiting = self
            .admission_count("admission waiting", "LLEN", key("waiting"))
            .await?;
        let mut admitted: Vec<String> = self
            .query(
                "admitted runs",
                Retry::Once,
                redis::cmd("SMEMBERS").arg(key("admitted")),
            )
            .await?;
        let mut unstarted: Vec<String> = self
            .query(
                "unstarted runs",
                Retry::Once,
                redis::cmd("SMEMBERS").arg(key("unstarted")),
            )
            .await?;
        admitted.sort();
        unstarted.sort();
        Ok(AdmissionState {
            window: window.unwrap_or(0),
            waiting,
            admitted,
            unstarted,
        })
    }

    async fn admission_batches(&self) -> Result<Vec<String>, StoreError> {
        let mut batches: Vec<String> = self
            .query(
                "admission batches",
                Retry::Once,
                redis::cmd("SMEMBERS").arg(self.keys().admission_batches()),
            )
            .await?;
        batches.sort();
        Ok(batches)
    }

    async fn close_admission(&self, batch_id: &str) -> Result<bool, StoreError> {
        let idle = |state: &AdmissionState| state.waiting == 0 && state.admitted.is_empty();
        if !idle(&self.admission_state(batch_id).await?) {
            return Ok(false);
        }
        let batches = self.keys().admission_batches();
        self.write::<()>(
            "close admission",
            batches.len() + batch_id.len(),
            redis::cmd("SREM").arg(&batches).arg(batch_id),
        )
        .await?;
        // A run entered meanwhile lists the batch again itself, but only if
        // its SADD came after this SREM: look once more.
        if idle(&self.admission_state(batch_id).await?) {
            return Ok(true);
        }
        self.write::<()>(
            "list admission batch",
            batches.len() + batch_id.len(),
            redis::cmd("SADD").arg(&batches).arg(batch_id),
        )
        .await?;
        Ok(false)
    }
}
