//! Fan-in on Redis: `fan_in` (hash: `task` call id -> child result JSON)
//! and `fan_in_expected` (how many the parked run waits for), in the
//! parent thread's slot. `lua/record_child_result.lua` records a result
//! and counts what is left in one step.

use std::sync::LazyLock;

use async_trait::async_trait;
use deepfleet_proto::{ChildResult, Keys, ParentLink};
use redis::Script;

use crate::error::StoreError;
use crate::fan_in::FanIn;
use crate::redis::RedisStore;
use crate::redis::codec::Codec;
use crate::redis::conn::Retry;
use crate::redis::scripts::Call;

static RECORD_CHILD_RESULT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/record_child_result.lua")));

#[async_trait]
impl FanIn for RedisStore {
    async fn record_child_result(
        &self,
        parent: &ParentLink,
        result: &ChildResult,
    ) -> Result<u32, StoreError> {
        let call = record_child_result_call(self.keys(), self.codec(), parent, result)?;
        let remaining: Option<i64> = self.run_script("record child result", &call).await?;
        match remaining {
            Some(n) => Ok(u32::try_from(n.max(0)).unwrap_or(u32::MAX)),
            None => Err(StoreError::NotFound(format!(
                "fan-in of run {}",
                parent.run_id
            ))),
        }
    }

    async fn child_results(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Vec<ChildResult>, StoreError> {
        let key = self.keys().fan_in(thread_id, run_id);
        let raw: Vec<String> = self
            .query("child results", Retry::Once, redis::cmd("HVALS").arg(&key))
            .await?;
        raw.iter()
            .map(|raw| self.codec().decode(&key, raw))
            .collect()
    }
}

/// `record_child_result.lua`.
fn record_child_result_call(
    keys: &Keys,
    codec: &Codec,
    parent: &ParentLink,
    result: &ChildResult,
) -> Result<Call<'static>, StoreError> {
    let fan_in = keys.fan_in(&parent.thread_id, &parent.run_id);
    let value = codec.encode(&fan_in, result)?;
    Ok(Call::new(
        &RECORD_CHILD_RESULT,
        vec![
            fan_in,
            keys.fan_in_expected(&parent.thread_id, &parent.run_id),
        ],
    )
    .arg(result.tool_call_id.as_str())
    .arg(value))
}
