//! A new run on a thread, admitted and submitted in one call: under the
//! thread's lease, so one admission at a time per thread, and on the
//! thread as it is once the lease is held (a request that raced this one
//! has started or queued its run by then; see [`super::thread_lease`]).

use std::future::Future;

use deepfleet_proto::api::MultitaskStrategy;

use super::Lifecycle;
use super::multitask::Admission;
use crate::error::SchedulerError;
use crate::repo::runs::RunMeta;
use crate::repo::threads::{ThreadRecord, threads};

impl Lifecycle {
    /// Admits a new run on `thread_id` under `strategy`; `make` builds
    /// and records it for the thread as admitted (what it writes before
    /// the run, such as the run's webhook, is there before the run is);
    /// then the run is started, or queued behind the thread's runs or
    /// until its `not_before`. The lease is given back whatever happens.
    pub async fn admit_run<E, F, Fut>(
        &self,
        thread_id: &str,
        strategy: MultitaskStrategy,
        make: F,
    ) -> Result<RunMeta, E>
    where
        E: From<SchedulerError>,
        F: FnOnce(ThreadRecord) -> Fut,
        Fut: Future<Output = Result<RunMeta, E>>,
    {
        let lease = self.lease_thread(thread_id).await?;
        let admitted = async {
            let thread = threads(self.store().as_ref())
                .get(thread_id)
                .await
                .map_err(SchedulerError::from)?
                .ok_or_else(|| SchedulerError::UnknownThread(thread_id.to_owned()))?;
            let admission = self.admit(&thread, strategy).await?;
            let meta = make(thread).await?;
            // A delayed run waits in the thread's queue like one behind a
            // busy thread; the starter leaves it there until its time.
            let queue_behind = admission != Admission::Start || meta.not_before.is_some();
            self.submit(&meta, queue_behind).await?;
            Ok(meta)
        }
        .await;
        self.release_thread(lease).await;
        admitted
    }
}
