//! The threads runs go to: found or made for a new run, and deleted with
//! the run they have in flight.

use deepfleet_proto::TenantId;
use serde_json::Map;

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::repo::threads::{ThreadRecord, threads};

impl Lifecycle {
    /// Deletes a thread's record, cancelling the run it has in flight.
    pub async fn delete_thread(&self, record: &ThreadRecord) -> Result<(), SchedulerError> {
        let store = self.store().as_ref();
        if let Some(run) = self.active_run(record).await? {
            store.request_cancel(&record.thread_id, &run.run_id).await?;
        }
        threads(store).delete(&record.thread_id).await?;
        Ok(())
    }

    /// The thread of `tenant` a new run goes to: `thread_id`'s (made when
    /// missing and `create_missing`), or a new temporary one for a
    /// stateless run. `None` when the thread does not exist, or is another
    /// tenant's (which is never replaced).
    pub async fn thread_for_run(
        &self,
        tenant: &TenantId,
        thread_id: Option<&str>,
        create_missing: bool,
    ) -> Result<Option<ThreadRecord>, SchedulerError> {
        let repo = threads(self.store().as_ref());
        let record = match thread_id {
            Some(id) => match repo.get(id).await? {
                Some(thread) => return Ok((thread.tenant == *tenant).then_some(thread)),
                None if create_missing => {
                    ThreadRecord::new(tenant.clone(), id.to_owned(), Map::new())
                }
                None => return Ok(None),
            },
            None => ThreadRecord {
                temporary: true,
                ..ThreadRecord::new(tenant.clone(), uuid::Uuid::now_v7().to_string(), Map::new())
            },
        };
        // Another request may have made the thread meanwhile: only the one
        // that inserted it uses a new record, the others read the winner's.
        if repo.insert(&record.thread_id, &record).await? {
            return Ok(Some(record));
        }
        Ok(repo.get_owned(&record.thread_id, tenant).await?)
    }
}
