//! Spend accounts on Redis: one hash per account (`spend`), a field per
//! run holding its highest report and a `total` field, moved together by
//! `report_spend.lua`. The account's expiry is renewed by every report.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;

use crate::error::StoreError;
use crate::redis::RedisStore;
use crate::redis::conn::Retry;
use crate::redis::scripts::Call;
use crate::spend::{SPEND_TTL_SECS, Spend};

static REPORT_SPEND: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/report_spend.lua")));

#[async_trait]
impl Spend for RedisStore {
    async fn report_spend(
        &self,
        account: &str,
        run_id: &str,
        own_nano_usd: u64,
    ) -> Result<u64, StoreError> {
        let call = Call::new(&REPORT_SPEND, vec![self.keys().spend(account)])
            .arg(run_id.to_owned())
            .arg(own_nano_usd.to_string())
            .arg(SPEND_TTL_SECS.to_string());
        self.run_script("report spend", &call).await
    }

    async fn spent(&self, account: &str) -> Result<u64, StoreError> {
        let total: Option<u64> = self
            .query(
                "read spend",
                Retry::Once,
                redis::cmd("HGET")
                    .arg(self.keys().spend(account))
                    .arg("total"),
            )
            .await?;
        Ok(total.unwrap_or(0))
    }
}
