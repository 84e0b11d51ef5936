//! Removing what `deepfleet` processes a test started declared on the
//! shared broker: a fleet's step queue with its interactive lane, and its
//! schedulers' submission queue, each with its dead letters, results and
//! delay buckets. Tests call it when they end, pass or fail.

use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::lanes::interactive_name;

/// Deletes every queue family under `base` on the broker at `amqp_url`;
/// a family never declared is no error.
pub async fn delete_queues(amqp_url: &str, base: &str) {
    let names = [
        base.to_owned(),
        interactive_name(base),
        format!("{base}.submissions"),
    ];
    for name in names {
        if let Ok(queue) = AmqpQueue::connect(AmqpConfig::new(amqp_url, name)).await {
            let _ = queue.delete_all().await;
            let _ = queue.close().await;
        }
    }
}
