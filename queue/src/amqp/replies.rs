//! Answering a message's sender: to its `reply_to` queue, else to its
//! tenant's results queue.

use async_trait::async_trait;
use lapin::types::{AMQPValue, FieldTable};

use super::{AmqpQueue, Route, persistent};
use crate::{QueueError, Replies, ReplyAddress};

/// The header naming the reply queue an answer could not reach (it was
/// deleted, or its exclusive owner disconnected), on an answer that went
/// to a results queue instead.
pub const UNREACHABLE_REPLY_TO_HEADER: &str = "x-deepfleet-reply-to";

#[async_trait]
impl Replies for AmqpQueue {
    /// Publishes to the default exchange with `reply_to` as routing key
    /// (mandatory, confirmed). Without a `reply_to`, or when the broker
    /// returns the answer as unroutable, it goes to the tenant's results
    /// queue `{queue}.results.{tenant}` (through the direct exchange
    /// `{queue}.results-by-tenant`), or without a tenant to
    /// `{queue}.results`, with the lost reply queue in
    /// [`UNREACHABLE_REPLY_TO_HEADER`].
    async fn reply(&self, to: &ReplyAddress, payload: Vec<u8>) -> Result<(), QueueError> {
        let mut properties = persistent().with_content_type("application/json".into());
        if let Some(id) = &to.correlation_id {
            properties = properties.with_correlation_id(id.as_str().into());
        }
        let results = Route::Results(to.tenant.as_ref());
        let Some(queue) = to.reply_to.as_deref().filter(|q| !q.is_empty()) else {
            return self
                .shared
                .publish_with(results, &payload, properties)
                .await;
        };
        match self
            .shared
            .publish_with(Route::Reply(queue), &payload, properties.clone())
            .await
        {
            Err(QueueError::NotConfirmed(why)) => {
                tracing::warn!(reply_to = queue, %why, "reply queue unreachable; answering on the results queue");
                let mut headers = FieldTable::default();
                headers.insert(
                    UNREACHABLE_REPLY_TO_HEADER.into(),
                    AMQPValue::LongString(queue.into()),
                );
                self.shared
                    .publish_with(results, &payload, properties.with_headers(headers))
                    .await
            }
            other => other,
        }
    }
}
