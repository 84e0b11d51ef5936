//! The body of a delivery: the run's Run resource with its thread's
//! values or its failure ([`RunWebhook`]), made once when the run is seen
//! ended and kept on the delivery, so every attempt sends the same bytes.

use deepfleet_proto::api::RunWebhook;

use crate::repo::runs::RunMeta;
use crate::runs::{FinalBody, Runs, RunsError, final_body, run_resource};
use crate::webhooks::WebhookError;

/// The largest `values` sent: past it (a thread with big files) the
/// receiver gets the run without them and reads the state from the API.
const MAX_VALUES_BYTES: usize = 1 << 20;

/// The JSON body announcing that the run of `meta` ended.
pub async fn body(runs: &Runs, meta: &RunMeta) -> Result<String, WebhookError> {
    let unreadable = |e: RunsError| WebhookError::Payload(e.to_string());
    let run = run_resource(runs, meta).await.map_err(unreadable)?;
    let (values, error) = match final_body(runs, meta).await.map_err(unreadable)? {
        FinalBody::Values(values) => (Some(values), None),
        FinalBody::Failed(failure) => (None, Some(failure)),
    };
    let values =
        values.filter(|v| serde_json::to_vec(v).is_ok_and(|b| b.len() <= MAX_VALUES_BYTES));
    let webhook = RunWebhook { run, values, error };
    serde_json::to_string(&webhook).map_err(|e| WebhookError::Payload(e.to_string()))
}
