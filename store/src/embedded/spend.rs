//! Spend accounts in the embedded store's `spend` map.

use async_trait::async_trait;

use crate::embedded::EmbeddedStore;
use crate::error::StoreError;
use crate::spend::Spend;

#[async_trait]
impl Spend for EmbeddedStore {
    async fn report_spend(
        &self,
        account: &str,
        run_id: &str,
        own_nano_usd: u64,
    ) -> Result<u64, StoreError> {
        let mut state = self.lock();
        let account = state.spend.entry(account.to_owned()).or_default();
        let before = account.runs.entry(run_id.to_owned()).or_default();
        if own_nano_usd > *before {
            account.total = account.total.saturating_add(own_nano_usd - *before);
            *before = own_nano_usd;
        }
        Ok(account.total)
    }

    async fn spent(&self, account: &str) -> Result<u64, StoreError> {
        Ok(self.lock().spend.get(account).map_or(0, |a| a.total))
    }
}
