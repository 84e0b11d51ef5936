//! Queue and exchange names, their arguments, and the delay buckets.
//!
//! Everything here is derived from the base name, so every process that
//! connects with the same [`super::AmqpConfig`] declares the same topology,
//! and a redeclaration is a no-op.

use std::time::Duration;

use deepfleet_proto::TenantId;
use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{Channel, ExchangeKind};

/// Delays are rounded up to one of these (milliseconds), so a base name has
/// at most this many delay queues however varied the retry delays are.
/// Longer delays are capped at the last bucket.
pub(super) const DELAY_BUCKETS_MS: [u64; 14] = [
    100, 250, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000,
    1_800_000, 3_600_000,
];

/// How long an unused delay queue outlives its TTL before RabbitMQ deletes
/// it. A delay queue is redeclared (which renews this lease) at least every
/// `DELAY_QUEUE_SLACK / 2` while it is used, so a message published into it
/// always expires (and moves on) before the queue itself can.
pub(super) const DELAY_QUEUE_SLACK: Duration = Duration::from_secs(600);

/// The bucket for `delay`: the smallest one at least as long, or the
/// largest; `None` for a zero delay (publish straight to the main queue).
pub(super) fn delay_bucket(delay: Duration) -> Option<u64> {
    if delay.is_zero() {
        return None;
    }
    let ms = delay.as_nanos().div_ceil(1_000_000);
    DELAY_BUCKETS_MS
        .iter()
        .copied()
        .find(|&bucket| u128::from(bucket) >= ms)
        .or(DELAY_BUCKETS_MS.last().copied())
}

/// The names derived from one base name.
#[derive(Debug, Clone)]
pub(super) struct Names {
    /// The main (work) queue; also the routing key on the default exchange.
    pub main: String,
    /// The dead-letter exchange (fanout).
    pub dlx: String,
    /// The queue bound to the dead-letter exchange.
    pub dead: String,
    /// The results queue no tenant reads: answers to messages without a
    /// (live) reply queue that belong to no tenant. Before answers were
    /// kept per tenant it was also the name of a fanout exchange every
    /// answer went through, which is no longer used.
    pub results: String,
    /// The direct exchange answers without a (live) reply queue go
    /// through, routed by tenant id to [`Names::tenant_results`]. Its name
    /// is not `{results}.` and a tenant id (those hold no `.`), so no
    /// permission pattern granted for one tenant's results queue also
    /// matches it.
    pub results_by_tenant: String,
}

impl Names {
    pub fn new(base: &str) -> Self {
        Self {
            main: base.to_owned(),
            dlx: format!("{base}.dlx"),
            dead: format!("{base}.dead"),
            results: format!("{base}.results"),
            results_by_tenant: format!("{base}.results-by-tenant"),
        }
    }

    /// The results queue of `tenant`, bound to
    /// [`Names::results_by_tenant`] with the tenant id as routing key.
    pub fn tenant_results(&self, tenant: &TenantId) -> String {
        format!("{}.{tenant}", self.results)
    }

    /// The delay queue for a bucket from [`DELAY_BUCKETS_MS`].
    pub fn delay(&self, bucket_ms: u64) -> String {
        format!("{}.delay.{bucket_ms}", self.main)
    }

    /// Whether `name` is one of the queues or exchanges derived from this
    /// base name (any delay queue's, whatever its bucket; any tenant's
    /// results queue, whatever the tenant).
    pub fn derives(&self, name: &str) -> bool {
        let delay = name
            .strip_prefix(self.main.as_str())
            .and_then(|rest| rest.strip_prefix(".delay."))
            .is_some_and(|ms| !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()));
        let tenant_results = name
            .strip_prefix(self.results.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|tenant| !tenant.is_empty());
        delay
            || tenant_results
            || [
                &self.main,
                &self.dlx,
                &self.dead,
                &self.results,
                &self.results_by_tenant,
            ]
            .iter()
            .any(|n| n.as_str() == name)
    }

    /// Every delay queue that can exist for this base name.
    pub fn all_delays(&self) -> impl Iterator<Item = String> + '_ {
        DELAY_BUCKETS_MS.iter().map(|&ms| self.delay(ms))
    }
}

fn text(value: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(value))
}

fn int(value: u64) -> AMQPValue {
    AMQPValue::LongLongInt(i64::try_from(value).unwrap_or(i64::MAX))
}

/// Arguments of the main queue.
///
/// A quorum queue, so messages survive the loss of a minority of nodes and
/// the broker counts deliveries (the `x-delivery-count` header): once a
/// message has failed more than `delivery_limit` times (nack with requeue,
/// or a consumer gone without acking) it is dead-lettered instead of
/// redelivered forever. RabbitMQ 3.x has no limit unless one is set
/// (4.0 defaults every quorum queue to 20), so the argument is required.
///
/// Dead-lettering is at-least-once (new in 3.10): the broker keeps the
/// message until the dead-letter queue confirms it. That mode requires the
/// `reject-publish` overflow, which only matters with a length limit (none
/// is set). The default, at-most-once, can lose a dead letter when its
/// target is unavailable.
pub(super) fn main_queue_args(names: &Names, delivery_limit: u32) -> FieldTable {
    let mut args = FieldTable::default();
    args.insert("x-queue-type".into(), text("quorum"));
    args.insert("x-delivery-limit".into(), int(u64::from(delivery_limit)));
    args.insert("x-dead-letter-exchange".into(), text(&names.dlx));
    args.insert("x-dead-letter-strategy".into(), text("at-least-once"));
    args.insert("x-overflow".into(), text("reject-publish"));
    args
}

/// Arguments of a delay queue: a classic queue that nobody consumes; each
/// message waits out the queue's TTL and is then dead-lettered back to the
/// main queue through the default exchange.
///
/// One TTL per queue (rather than a per-message TTL) keeps it correct: a
/// classic queue only expires messages at its head. RabbitMQ has no native
/// delayed delivery without the `rabbitmq_delayed_message_exchange` plugin,
/// which is not used here. Dead-lettering out of a classic queue is
/// at-most-once, so a broker crash at that very moment can drop a retry.
pub(super) fn delay_queue_args(names: &Names, bucket_ms: u64) -> FieldTable {
    let expires = Duration::from_millis(bucket_ms) + DELAY_QUEUE_SLACK;
    let mut args = FieldTable::default();
    args.insert("x-message-ttl".into(), int(bucket_ms));
    args.insert(
        "x-expires".into(),
        int(u64::try_from(expires.as_millis()).unwrap_or(u64::MAX)),
    );
    args.insert("x-dead-letter-exchange".into(), text(""));
    args.insert("x-dead-letter-routing-key".into(), text(&names.main));
    args
}

/// Declares the dead-letter exchange and queue and the main queue (in that
/// order, so dead letters have somewhere to go from the start).
pub(super) async fn declare(
    channel: &Channel,
    names: &Names,
    delivery_limit: u32,
) -> lapin::Result<()> {
    declare_fanout(channel, &names.dlx, &names.dead).await?;
    channel
        .queue_declare(
            names.main.as_str().into(),
            QueueDeclareOptions::durable(),
            main_queue_args(names, delivery_limit),
        )
        .await?;
    Ok(())
}

/// Declares where answers without a (live) reply queue are kept until
/// someone reads them: for `tenant`, the direct exchange
/// [`Names::results_by_tenant`] and the tenant's durable queue bound to it
/// under its id; for no tenant, the queue [`Names::results`], which
/// answers reach through the default exchange. An operator wanting a copy
/// of a tenant's answers binds another queue to the exchange with the
/// tenant id as routing key.
pub(super) async fn declare_results(
    channel: &Channel,
    names: &Names,
    tenant: Option<&TenantId>,
) -> lapin::Result<()> {
    let Some(tenant) = tenant else {
        return declare_quorum(channel, &names.results).await;
    };
    channel
        .exchange_declare(
            names.results_by_tenant.as_str().into(),
            ExchangeKind::Direct,
            ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await?;
    let queue = names.tenant_results(tenant);
    declare_quorum(channel, &queue).await?;
    channel
        .queue_bind(
            queue.into(),
            names.results_by_tenant.as_str().into(),
            tenant.as_str().into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
}

/// A durable fanout `exchange` with a durable quorum `queue` bound to it.
async fn declare_fanout(channel: &Channel, exchange: &str, queue: &str) -> lapin::Result<()> {
    channel
        .exchange_declare(
            exchange.into(),
            ExchangeKind::Fanout,
            ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await?;
    declare_quorum(channel, queue).await?;
    channel
        .queue_bind(
            queue.into(),
            exchange.into(),
            "".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
}

/// A durable quorum `queue`.
async fn declare_quorum(channel: &Channel, queue: &str) -> lapin::Result<()> {
    let mut args = FieldTable::default();
    args.insert("x-queue-type".into(), text("quorum"));
    channel
        .queue_declare(queue.into(), QueueDeclareOptions::durable(), args)
        .await
        .map(drop)
}

/// Declares (or renews the lease of) the delay queue for `bucket_ms`.
pub(super) async fn declare_delay(
    channel: &Channel,
    names: &Names,
    bucket_ms: u64,
) -> lapin::Result<()> {
    channel
        .queue_declare(
            names.delay(bucket_ms).into(),
            QueueDeclareOptions::durable(),
            delay_queue_args(names, bucket_ms),
        )
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn zero_delay_has_no_bucket() {
        assert_eq!(delay_bucket(Duration::ZERO), None);
    }

    #[test]
    fn delays_round_up_to_a_bucket() {
        let cases = [
            (Duration::from_nanos(1), 100),
            (Duration::from_millis(100), 100),
            (Duration::from_micros(100_001), 250),
            (Duration::from_millis(999), 1_000),
            (Duration::from_secs(1), 1_000),
            (Duration::from_millis(1_001), 2_000),
            (Duration::from_secs(7), 10_000),
            (Duration::from_secs(45), 60_000),
            (Duration::from_secs(3_600), 3_600_000),
        ];
        let got: Vec<_> = cases
            .iter()
            .map(|&(delay, _)| (delay, delay_bucket(delay)))
            .collect();
        let want: Vec<_> = cases
            .iter()
            .map(|&(delay, bucket)| (delay, Some(bucket)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn long_delays_are_capped_at_the_largest_bucket() {
        assert_eq!(delay_bucket(Duration::from_secs(86_400)), Some(3_600_000));
        assert_eq!(delay_bucket(Duration::MAX), Some(3_600_000));
    }

    #[test]
    fn buckets_are_strictly_increasing() {
        assert!(DELAY_BUCKETS_MS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn names_derive_from_the_base() {
        let names = Names::new("deepfleet.steps");
        assert_eq!(
            (
                names.main.as_str(),
                names.dlx.as_str(),
                names.dead.as_str(),
                names.delay(250)
            ),
            (
                "deepfleet.steps",
                "deepfleet.steps.dlx",
                "deepfleet.steps.dead",
                "deepfleet.steps.delay.250".to_owned()
            )
        );
        assert_eq!(names.results, "deepfleet.steps.results");
        assert_eq!(
            (
                names.results_by_tenant.as_str(),
                names.tenant_results(&TenantId::new("acme").unwrap())
            ),
            (
                "deepfleet.steps.results-by-tenant",
                "deepfleet.steps.results.acme".to_owned()
            )
        );
        // Tenant ids hold no `.`, so no tenant's queue is named like the
        // exchange (a pattern granting one would grant the other).
        assert!(
            !names
                .results_by_tenant
                .starts_with("deepfleet.steps.results.")
        );
        for derived in [
            "deepfleet.steps",
            "deepfleet.steps.dlx",
            "deepfleet.steps.dead",
            "deepfleet.steps.results",
            "deepfleet.steps.results-by-tenant",
            "deepfleet.steps.results.acme",
            "deepfleet.steps.results.default",
            "deepfleet.steps.delay.250",
        ] {
            assert!(names.derives(derived), "{derived}");
        }
        for other in [
            "deepfleet.steps.delay.",
            "deepfleet.steps.delay.x",
            "deepfleet.steps.replies",
            "deepfleet.steps.results.",
            "deepfleet.steps.resultsx",
            "deepfleet.step",
        ] {
            assert!(!names.derives(other), "{other}");
        }
        assert_eq!(names.all_delays().count(), DELAY_BUCKETS_MS.len());
    }

    #[test]
    fn delay_queue_returns_messages_to_the_main_queue() {
        let args = delay_queue_args(&Names::new("q"), 1_000);
        let get = |key: &str| args.inner().get(key).cloned();
        assert_eq!(get("x-message-ttl"), Some(AMQPValue::LongLongInt(1_000)));
        assert_eq!(get("x-expires"), Some(AMQPValue::LongLongInt(601_000)));
        assert_eq!(get("x-dead-letter-exchange"), Some(text("")));
        assert_eq!(get("x-dead-letter-routing-key"), Some(text("q")));
    }
}
