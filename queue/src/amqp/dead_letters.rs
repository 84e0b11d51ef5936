//! Reading dead letters back from `{queue}.dead`.

use async_trait::async_trait;
use lapin::message::BasicGetMessage;
use lapin::options::{BasicAckOptions, BasicGetOptions};
use lapin::types::{AMQPValue, FieldTable};

use super::{AmqpQueue, connection_error};
use crate::{DeadLetter, DeadLetters, QueueError};

/// The header holding the reason given to
/// [`Delivery::dead_letter`](crate::Delivery::dead_letter).
pub(super) const REASON_HEADER: &str = "x-deepfleet-reason";

/// Why a message was dead-lettered: the reason we gave, or else the one
/// the broker recorded in the newest `x-death` entry (`delivery_limit`
/// when it hit the delivery limit).
fn reason(headers: Option<&FieldTable>) -> String {
    let Some(headers) = headers.map(FieldTable::inner) else {
        return "unknown".into();
    };
    if let Some(AMQPValue::LongString(reason)) = headers.get(REASON_HEADER) {
        return String::from_utf8_lossy(reason.as_bytes()).into_owned();
    }
    let broker_reason = match headers.get("x-death") {
        Some(AMQPValue::FieldArray(deaths)) => {
            deaths.as_slice().first().and_then(|death| match death {
                AMQPValue::FieldTable(death) => match death.inner().get("reason") {
                    Some(AMQPValue::LongString(reason)) => {
                        Some(String::from_utf8_lossy(reason.as_bytes()).into_owned())
                    }
                    _ => None,
                },
                _ => None,
            })
        }
        _ => None,
    };
    broker_reason.unwrap_or_else(|| "unknown".into())
}

#[async_trait]
impl DeadLetters for AmqpQueue {
    async fn drain_dead_letters(&self, max: usize) -> Result<Vec<DeadLetter>, QueueError> {
        let channel = self.shared.open_channel().await?;
        let mut drained = Vec::new();
        while drained.len() < max {
            let got = channel
                .basic_get(
                    self.shared.names.dead.as_str().into(),
                    BasicGetOptions { no_ack: false },
                )
                .await
                .map_err(connection_error)?;
            let Some(BasicGetMessage { delivery, .. }) = got else {
                break;
            };
            let dead = DeadLetter {
                reason: reason(delivery.properties.headers().as_ref()),
                payload: delivery.data,
            };
            // Acked one by one, so an error part-way loses nothing: what
            // was not acked stays in the queue.
            delivery
                .acker
                .ack(BasicAckOptions::default())
                .await
                .map_err(|err| QueueError::Settle(err.to_string()))?;
            drained.push(dead);
        }
        Ok(drained)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::{FieldArray, LongString};
    use pretty_assertions::assert_eq;

    fn table(entries: &[(&str, AMQPValue)]) -> FieldTable {
        let mut table = FieldTable::default();
        for (key, value) in entries {
            table.insert((*key).into(), value.clone());
        }
        table
    }

    fn text(s: &str) -> AMQPValue {
        AMQPValue::LongString(LongString::from(s))
    }

    fn death(reason: &str) -> AMQPValue {
        AMQPValue::FieldTable(table(&[("reason", text(reason)), ("queue", text("q"))]))
    }

    #[test]
    fn our_reason_wins() {
        let headers = table(&[
            (REASON_HEADER, text("bad input")),
            (
                "x-death",
                AMQPValue::FieldArray(FieldArray::from(vec![death("expired")])),
            ),
        ]);
        assert_eq!(reason(Some(&headers)), "bad input");
    }

    #[test]
    fn broker_reason_is_the_newest_death() {
        let deaths = FieldArray::from(vec![death("delivery_limit"), death("expired")]);
        let headers = table(&[("x-death", AMQPValue::FieldArray(deaths))]);
        assert_eq!(reason(Some(&headers)), "delivery_limit");
    }

    #[test]
    fn no_reason_is_unknown() {
        assert_eq!(reason(None), "unknown");
        assert_eq!(reason(Some(&FieldTable::default())), "unknown");
    }
}
