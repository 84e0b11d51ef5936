//! Admission in the embedded store: one [`Window`] per batch in the
//! state's `admissions` map, each operation one critical section.

use async_trait::async_trait;

use crate::admission::window::Window;
use crate::admission::{Admission, AdmissionState, Entered};
use crate::embedded::EmbeddedStore;
use crate::error::StoreError;

#[async_trait]
impl Admission for EmbeddedStore {
    async fn enter_admission(
        &self,
        batch_id: &str,
        run_id: &str,
        window: u32,
    ) -> Result<Entered, StoreError> {
        Ok(self
            .lock()
            .admissions
            .entry(batch_id.to_owned())
            .or_default()
            .enter(run_id, window))
    }

    async fn admit_after(
        &self,
        batch_id: &str,
        ended_run: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .admissions
            .get_mut(batch_id)
            .and_then(|w| w.admit_after(ended_run)))
    }

    async fn top_up(&self, batch_id: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .lock()
            .admissions
            .get_mut(batch_id)
            .map(Window::top_up)
            .unwrap_or_default())
    }

    async fn admission_started(&self, batch_id: &str, runs: &[String]) -> Result<(), StoreError> {
        if let Some(window) = self.lock().admissions.get_mut(batch_id) {
            window.started(runs);
        }
        Ok(())
    }

    async fn admission_state(&self, batch_id: &str) -> Result<AdmissionState, StoreError> {
        Ok(self
            .lock()
            .admissions
            .get(batch_id)
            .map(Window::state)
            .unwrap_or_default())
    }

    async fn admission_batches(&self) -> Result<Vec<String>, StoreError> {
        let state = self.lock();
        let mut batches: Vec<String> = state
            .admissions
            .iter()
            .filter(|(_, w)| !w.is_idle())
            .map(|(b, _)| b.clone())
            .collect();
        batches.sort();
        Ok(batches)
    }

    async fn close_admission(&self, batch_id: &str) -> Result<bool, StoreError> {
        let state = self.lock();
        Ok(state.admissions.get(batch_id).is_none_or(Window::is_idle))
    }
}
