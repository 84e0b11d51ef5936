//! The `Queue` contract, run against every backend.
//!
//! Each scenario is a generic async fn; `contract!` runs it once on
//! `MemoryQueue` and once on `AmqpQueue` (a fresh, uniquely named queue on
//! the RabbitMQ at `AMQP_URL`, default `amqp://127.0.0.1:5672`, deleted
//! afterwards). Without a reachable RabbitMQ the AMQP cases are skipped,
//! unless `CI=true`, where they fail.

// clippy's allow-unwrap-in-tests covers #[test] fns only, not the
// scenarios and helpers they call.

use std::net::{TcpStream, ToSocketAddrs};
use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use deepfleet_proto::TenantId;
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::{
    Consumer, DeadLetter, DeadLetters, Delivery, Queue, QueueError, Replies, ReplyAddress,
};
use futures::FutureExt;
use pretty_assertions::assert_eq;

/// Long enough for a broker round trip on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(10);
/// How long to watch for something that must not arrive.
const QUIET: Duration = Duration::from_millis(500);

fn amqp_url() -> String {
    std::env::var("AMQP_URL").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// A configuration for a queue no other test uses.
fn fresh_config(delivery_limit: u32) -> AmqpConfig {
    AmqpConfig {
        delivery_limit,
        connect_timeout: Duration::from_secs(5),
        ..AmqpConfig::new(
            amqp_url(),
            format!("deepfleet.test.{}", uuid::Uuid::new_v4()),
        )
    }
}

/// Whether anything listens at the broker's address. Probed once, so that
/// without RabbitMQ every AMQP test is skipped at once rather than after
/// the connect timeout.
fn broker_reachable() -> bool {
    static REACHABLE: OnceLock<bool> = OnceLock::new();
    *REACHABLE.get_or_init(|| {
        let Ok(uri) = amqp_url().parse::<lapin::uri::AMQPUri>() else {
            return false;
        };
        (uri.authority.host.as_str(), uri.authority.port)
            .to_socket_addrs()
            .into_iter()
            .flatten()
            .any(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok())
    })
}

/// Connects, or returns `None` (after a note) when RabbitMQ is not
/// reachable outside CI.
async fn connect(config: AmqpConfig) -> Option<AmqpQueue> {
    if broker_reachable() {
        return Some(AmqpQueue::connect(config).await.unwrap());
    }
    let advice = format!(
        "RabbitMQ is unreachable at {}; start it with `rabbitmq-server -detached`",
        amqp_url()
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{advice} (required under CI=true)"
    );
    eprintln!("skipping: {advice}");
    None
}

/// Runs `scenario` on a fresh AMQP queue (and the configuration that
/// reaches it), then deletes the queue, even if the scenario panicked.
async fn on_amqp<F, Fut>(delivery_limit: u32, scenario: F)
where
    F: FnOnce(AmqpQueue, AmqpConfig) -> Fut,
    Fut: Future<Output = ()>,
{
    let config = fresh_config(delivery_limit);
    let Some(queue) = connect(config.clone()).await else {
        return;
    };
    let outcome = AssertUnwindSafe(scenario(queue.clone(), config))
        .catch_unwind()
        .await;
    queue.delete_all().await.unwrap();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

macro_rules! contract {
    ($($scenario:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::$scenario(deepfleet_queue::memory::MemoryQueue::new()).await;
                }
            )*
        }
        mod amqp {
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::on_amqp(10, |q, _| super::$scenario(q)).await;
                }
            )*
        }
    };
}

contract!(
    publish_consume_ack,
    dropped_delivery_is_redelivered,
    requeued_delivery_is_redelivered,
    prefetch_bounds_unsettled_deliveries,
    delayed_publish_arrives_after_the_delay,
    dead_letter_keeps_the_reason,
    depth_counts_ready_messages,
    consumers_are_counted_while_open,
);

async fn next(consumer: &mut Box<dyn Consumer>) -> Box<dyn Delivery> {
    tokio::time::timeout(PATIENCE, consumer.next())
        .await
        .expect("no delivery in time")
        .expect("consumer closed")
        .expect("consumer failed")
}

async fn nothing_within(consumer: &mut Box<dyn Consumer>, quiet: Duration) {
    if let Ok(got) = tokio::time::timeout(quiet, consumer.next()).await {
        let payload = got.map(|d| d.map(|d| d.payload().to_vec()));
        panic!("expected no delivery, got {payload:?}");
    }
}

async fn publish_consume_ack<Q: Queue>(q: Q) {
    q.publish(b"one".to_vec(), None).await.unwrap();
    let mut consumer = q.consume(1).await.unwrap();
    let delivery = next(&mut consumer).await;
    assert_eq!(
        (delivery.payload(), delivery.redelivered()),
        (&b"one"[..], false)
    );
    delivery.ack().await.unwrap();
    nothing_within(&mut consumer, QUIET).await;
    assert_eq!(q.depth().await.unwrap(), Some(0));
}

async fn dropped_delivery_is_redelivered<Q: Queue>(q: Q) {
    q.publish(b"dropped".to_vec(), None).await.unwrap();
    let mut consumer = q.consume(1).await.unwrap();
    drop(next(&mut consumer).await);
    let again = next(&mut consumer).await;
    assert_eq!(
        (again.payload(), again.redelivered()),
        (&b"dropped"[..], true)
    );
    again.ack().await.unwrap();
}

async fn requeued_delivery_is_redelivered<Q: Queue>(q: Q) {
    q.publish(b"requeued".to_vec(), None).await.unwrap();
    let mut consumer = q.consume(1).await.unwrap();
    next(&mut consumer).await.requeue().await.unwrap();
    let again = next(&mut consumer).await;
    assert_eq!(
        (again.payload(), again.redelivered()),
        (&b"requeued"[..], true)
    );
    again.ack().await.unwrap();
}

async fn prefetch_bounds_unsettled_deliveries<Q: Queue>(q: Q) {
    for i in 0..3u8 {
        q.publish(vec![i], None).await.unwrap();
    }
    let mut consumer = q.consume(2).await.unwrap();
    let first = next(&mut consumer).await;
    let second = next(&mut consumer).await;
    nothing_within(&mut consumer, QUIET).await;
    first.ack().await.unwrap();
    let third = next(&mut consumer).await;
    assert_eq!(
        [second.payload(), third.payload()],
        [&[1u8][..], &[2u8][..]]
    );
    second.ack().await.unwrap();
    third.ack().await.unwrap();
}

async fn delayed_publish_arrives_after_the_delay<Q: Queue>(q: Q) {
    let delay = Duration::from_secs(1);
    let mut consumer = q.consume(1).await.unwrap();
    let start = Instant::now();
    q.publish(b"later".to_vec(), Some(delay)).await.unwrap();
    nothing_within(&mut consumer, delay / 2).await;
    let delivery = next(&mut consumer).await;
    assert!(
        start.elapsed() >= delay,
        "arrived after {:?}",
        start.elapsed()
    );
    assert_eq!(delivery.payload(), b"later");
    delivery.ack().await.unwrap();
}

async fn dead_letter_keeps_the_reason<Q: Queue + DeadLetters>(q: Q) {
    q.publish(b"poison".to_vec(), None).await.unwrap();
    let mut consumer = q.consume(1).await.unwrap();
    next(&mut consumer)
        .await
        .dead_letter("bad input: no run id")
        .await
        .unwrap();
    nothing_within(&mut consumer, QUIET).await;
    let dead = q.drain_dead_letters(10).await.unwrap();
    assert_eq!(
        dead,
        vec![DeadLetter {
            payload: b"poison".to_vec(),
            reason: "bad input: no run id".into(),
        }]
    );
    assert_eq!(q.drain_dead_letters(10).await.unwrap(), vec![]);
}

async fn depth_counts_ready_messages<Q: Queue>(q: Q) {
    assert_eq!(q.depth().await.unwrap(), Some(0));
    for i in 0..3u8 {
        q.publish(vec![i], None).await.unwrap();
    }
    assert_eq!(q.depth().await.unwrap(), Some(3));
    let mut consumer = q.consume(1).await.unwrap();
    let delivery = next(&mut consumer).await;
    // An unacked delivery is not ready.
    assert_eq!(q.depth().await.unwrap(), Some(2));
    delivery.ack().await.unwrap();
}

async fn consumers_are_counted_while_open<Q: Queue>(q: Q) {
    assert_eq!(q.consumers().await.unwrap(), Some(0));
    let first = q.consume(1).await.unwrap();
    let second = q.consume(1).await.unwrap();
    assert_eq!(q.consumers().await.unwrap(), Some(2));
    drop(first);
    drop(second);
    // The broker learns of a closed channel a moment later.
    let deadline = Instant::now() + PATIENCE;
    while q.consumers().await.unwrap() != Some(0) {
        assert!(Instant::now() < deadline, "consumers still counted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A consumer whose connection drops before it acks: the broker hands the
/// message to the next consumer, marked redelivered.
#[tokio::test]
async fn amqp_connection_drop_redelivers_to_a_new_consumer() {
    on_amqp(10, |q, config| async move {
        let doomed_queue = AmqpQueue::connect(config).await.unwrap();
        q.publish(b"in flight".to_vec(), None).await.unwrap();
        let mut doomed = doomed_queue.consume(1).await.unwrap();
        let unacked = next(&mut doomed).await;
        assert!(!unacked.redelivered());
        // The survivor's prefetch is free, so nothing but the drop stands
        // between it and the message.
        let mut survivor = q.consume(1).await.unwrap();
        nothing_within(&mut survivor, QUIET).await;
        doomed_queue.close().await.unwrap();
        let again = next(&mut survivor).await;
        assert_eq!(
            (again.payload(), again.redelivered()),
            (&b"in flight"[..], true)
        );
        again.ack().await.unwrap();
        // The old delivery cannot be settled any more.
        assert!(unacked.ack().await.is_err());
    })
    .await;
}

/// With a delivery limit of 2 the third failed delivery makes the broker
/// dead-letter the message itself, and the reason says so; each delivery
/// says how many more the broker allows.
#[tokio::test]
async fn amqp_delivery_limit_dead_letters() {
    on_amqp(2, |q, _| async move {
        q.publish(b"flaky".to_vec(), None).await.unwrap();
        let mut consumer = q.consume(1).await.unwrap();
        for left in [2, 1, 0] {
            let delivery = next(&mut consumer).await;
            assert_eq!(delivery.deliveries_left(), Some(left));
            delivery.requeue().await.unwrap();
        }
        nothing_within(&mut consumer, QUIET).await;
        let dead = drain_until_some(&q).await;
        assert_eq!(
            dead,
            vec![DeadLetter {
                payload: b"flaky".to_vec(),
                reason: "delivery_limit".into(),
            }]
        );
    })
    .await;
}

/// A prefetch past what one channel holds is spread over several: every
/// delivery of the prefetch arrives unsettled, no more, and acks in any
/// order let the next one in.
#[tokio::test]
async fn amqp_a_large_prefetch_is_spread_over_channels() {
    on_amqp(10, |q, _| async move {
        const PREFETCH: u16 = 1_200;
        let publishes = (0..=PREFETCH).map(|i| q.publish(i.to_be_bytes().to_vec(), None));
        for published in futures::future::join_all(publishes).await {
            published.unwrap();
        }
        let mut consumer = q.consume(PREFETCH).await.unwrap();
        let mut held = Vec::new();
        for _ in 0..PREFETCH {
            held.push(next(&mut consumer).await);
        }
        nothing_within(&mut consumer, QUIET).await;
        assert!(
            q.consumers().await.unwrap() > Some(1),
            "one channel would hold all"
        );
        let mut seen: Vec<Vec<u8>> = held.iter().map(|d| d.payload().to_vec()).collect();
        while let Some(delivery) = held.pop() {
            delivery.ack().await.unwrap();
        }
        let last = next(&mut consumer).await;
        seen.push(last.payload().to_vec());
        last.ack().await.unwrap();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), usize::from(PREFETCH) + 1);
    })
    .await;
}

/// The broker closes the connection under a consumer holding a delivery:
/// lapin recovers it, a publish made meanwhile waits for the recovery and
/// succeeds, the old delivery can no longer be settled (`Settle`), and the
/// recovered consumer gets the message again.
///
/// Needs `rabbitmqctl` (run as root, as in CI); skipped without it.
#[tokio::test]
async fn amqp_recovers_from_a_forced_close() {
    on_amqp(10, |q, config| async move {
        q.publish(b"before".to_vec(), None).await.unwrap();
        let mut consumer = q.consume(1).await.unwrap();
        let stale = next(&mut consumer).await;
        if !force_close(&config.queue) {
            eprintln!("skipping: `rabbitmqctl close_connection` is not available here");
            return;
        }
        q.publish(b"after".to_vec(), None).await.unwrap();
        let err = stale.ack().await.unwrap_err();
        assert!(matches!(err, QueueError::Settle(_)), "{err:?}");
        let again = next(&mut consumer).await;
        assert_eq!(
            (again.payload(), again.redelivered()),
            (&b"before"[..], true)
        );
        again.ack().await.unwrap();
        let after = next(&mut consumer).await;
        assert_eq!(
            (after.payload(), after.redelivered()),
            (&b"after"[..], false)
        );
        after.ack().await.unwrap();
    })
    .await;
}

/// A request published with `reply_to` and `correlation_id` (as another
/// service's AMQP client would) shows both on its delivery, and the reply
/// reaches that queue carrying the same correlation id.
#[tokio::test]
async fn amqp_reply_reaches_the_reply_queue() {
    on_amqp(10, |q, config| async move {
        let client = RawClient::connect(&config).await;
        let reply_queue = client.exclusive_queue().await;
        client
            .publish_request(&config.queue, b"request", &reply_queue, "corr-1")
            .await;
        let mut consumer = q.consume(1).await.unwrap();
        let request = next(&mut consumer).await;
        let address = request.reply_address();
        assert_eq!(
            address,
            ReplyAddress {
                reply_to: Some(reply_queue.clone()),
                correlation_id: Some("corr-1".into()),
                tenant: None,
            }
        );
        q.reply(&address, b"answer".to_vec()).await.unwrap();
        request.ack().await.unwrap();
        let (payload, properties) = client.get_within(&reply_queue).await;
        assert_eq!(
            (payload.as_slice(), properties.correlation_id().clone()),
            (&b"answer"[..], Some("corr-1".into()))
        );
    })
    .await;
}

/// Without a reply queue, or when it is gone, the reply is kept on the
/// results queue of its tenant, which no other tenant's answer reaches; a
/// lost reply queue is named in a header. An answer of no tenant goes to
/// the fleet's own results queue. The fanout exchange of the layout before
/// (named like that queue) is in nobody's way.
#[tokio::test]
async fn amqp_reply_without_a_live_queue_goes_to_its_tenants_results() {
    on_amqp(10, |q, config| async move {
        let client = RawClient::connect(&config).await;
        client.legacy_results_fanout(q.results_name()).await;
        let (a, b) = (TenantId::new("a").unwrap(), TenantId::new("b").unwrap());
        let for_a = ReplyAddress {
            tenant: Some(a.clone()),
            ..ReplyAddress::default()
        };
        q.reply(&for_a, b"nobody asked".to_vec()).await.unwrap();
        let gone = ReplyAddress {
            reply_to: Some(format!("{}.gone", config.queue)),
            correlation_id: Some("corr-2".into()),
            tenant: Some(a.clone()),
        };
        q.reply(&gone, b"too late".to_vec()).await.unwrap();
        let for_b = ReplyAddress {
            tenant: Some(b.clone()),
            ..ReplyAddress::default()
        };
        q.reply(&for_b, b"for b".to_vec()).await.unwrap();
        q.reply(&ReplyAddress::default(), b"whose?".to_vec())
            .await
            .unwrap();
        let (a_results, b_results) = (q.tenant_results_name(&a), q.tenant_results_name(&b));
        let (first, _) = client.get_within(&a_results).await;
        let (second, properties) = client.get_within(&a_results).await;
        let (only_b, _) = client.get_within(&b_results).await;
        let (unowned, _) = client.get_within(q.results_name()).await;
        let left = [
            client.depth(&a_results).await,
            client.depth(&b_results).await,
            client.depth(q.results_name()).await,
        ];
        let header = properties
            .headers()
            .as_ref()
            .and_then(|h| {
                h.inner()
                    .get(deepfleet_queue::amqp::UNREACHABLE_REPLY_TO_HEADER)
                    .cloned()
            })
            .and_then(|v| v.as_long_string().map(|s| s.to_string()));
        assert_eq!(
            (
                first.as_slice(),
                second.as_slice(),
                header,
                properties.correlation_id().clone()
            ),
            (
                &b"nobody asked"[..],
                &b"too late"[..],
                gone.reply_to.clone(),
                Some("corr-2".into())
            )
        );
        assert_eq!(
            (only_b.as_slice(), unowned.as_slice(), left),
            (&b"for b"[..], &b"whose?"[..], [0, 0, 0]),
            "b's queue holds b's answer only, the fleet's the one of no tenant"
        );
    })
    .await;
}

/// An amended dead letter keeps the body it was given, the headers it was
/// given beside the reason, and not the sender's key.
#[tokio::test]
async fn amqp_an_amended_dead_letter_keeps_the_new_body_and_headers() {
    on_amqp(10, |q, config| async move {
        let client = RawClient::connect(&config).await;
        client
            .publish_with_key(&config.queue, br#"{"context": "s3cret"}"#, "key-1")
            .await;
        let mut consumer = q.consume(1).await.unwrap();
        let delivery = next(&mut consumer).await;
        delivery
            .dead_letter_amended("refused", b"{}".to_vec(), &[("x-note", "removed")])
            .await
            .unwrap();
        let (payload, properties) = client.get_within(&format!("{}.dead", config.queue)).await;
        let header = |name: &str| {
            properties
                .headers()
                .as_ref()
                .and_then(|h| h.inner().get(name).cloned())
                .and_then(|v| v.as_long_string().map(|s| s.to_string()))
        };
        assert_eq!(
            (
                payload.as_slice(),
                header("x-note"),
                header("x-deepfleet-reason"),
                header("x-api-key")
            ),
            (
                &b"{}"[..],
                Some("removed".into()),
                Some("refused".into()),
                None
            )
        );
    })
    .await;
}

/// A plain lapin client standing in for another service.
struct RawClient {
    channel: lapin::Channel,
    _connection: lapin::Connection,
}

impl RawClient {
    async fn connect(config: &AmqpConfig) -> RawClient {
        let connection =
            lapin::Connection::connect(&config.url, lapin::ConnectionProperties::default())
                .await
                .unwrap();
        let channel = connection.create_channel().await.unwrap();
        RawClient {
            channel,
            _connection: connection,
        }
    }

    /// A server-named, exclusive queue, as RPC clients use for replies.
    async fn exclusive_queue(&self) -> String {
        let options = lapin::options::QueueDeclareOptions {
            exclusive: true,
            ..Default::default()
        };
        self.channel
            .queue_declare("".into(), options, Default::default())
            .await
            .unwrap()
            .name()
            .to_string()
    }

    async fn publish_request(&self, queue: &str, payload: &[u8], reply_to: &str, id: &str) {
        let properties = lapin::BasicProperties::default()
            .with_reply_to(reply_to.into())
            .with_correlation_id(id.into());
        self.channel
            .basic_publish(
                "".into(),
                queue.into(),
                Default::default(),
                payload,
                properties,
            )
            .await
            .unwrap();
    }

    /// Publishes `payload` to `queue` with the API key header set.
    async fn publish_with_key(&self, queue: &str, payload: &[u8], key: &str) {
        let mut headers = lapin::types::FieldTable::default();
        headers.insert(
            "x-api-key".into(),
            lapin::types::AMQPValue::LongString(key.into()),
        );
        let properties = lapin::BasicProperties::default().with_headers(headers);
        self.channel
            .basic_publish(
                "".into(),
                queue.into(),
                Default::default(),
                payload,
                properties,
            )
            .await
            .unwrap()
            .await
            .unwrap();
    }

    /// Declares what the layout before per-tenant results declared: a
    /// fanout exchange named like the results queue, the queue bound to
    /// it (`AmqpQueue::delete_all` deletes both).
    async fn legacy_results_fanout(&self, name: &str) {
        let durable = lapin::options::ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        };
        self.channel
            .exchange_declare(
                name.into(),
                lapin::ExchangeKind::Fanout,
                durable,
                Default::default(),
            )
            .await
            .unwrap();
        let mut args = lapin::types::FieldTable::default();
        args.insert(
            "x-queue-type".into(),
            lapin::types::AMQPValue::LongString("quorum".into()),
        );
        self.channel
            .queue_declare(
                name.into(),
                lapin::options::QueueDeclareOptions::durable(),
                args,
            )
            .await
            .unwrap();
        self.channel
            .queue_bind(
                name.into(),
                name.into(),
                "".into(),
                Default::default(),
                Default::default(),
            )
            .await
            .unwrap();
    }

    /// How many messages wait on `queue`.
    async fn depth(&self, queue: &str) -> u32 {
        let passive = lapin::options::QueueDeclareOptions {
            passive: true,
            ..Default::default()
        };
        self.channel
            .queue_declare(queue.into(), passive, Default::default())
            .await
            .unwrap()
            .message_count()
    }

    /// The next message of `queue`, polled until [`PATIENCE`] runs out.
    async fn get_within(&self, queue: &str) -> (Vec<u8>, lapin::BasicProperties) {
        let start = Instant::now();
        loop {
            let options = lapin::options::BasicGetOptions { no_ack: true };
            if let Some(got) = self.channel.basic_get(queue.into(), options).await.unwrap() {
                return (got.delivery.data, got.delivery.properties);
            }
            assert!(start.elapsed() < PATIENCE, "nothing arrived on {queue}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Has the broker close the connection named after `queue` (the
/// connection name `AmqpQueue` sets); false if `rabbitmqctl` is unusable.
fn force_close(queue: &str) -> bool {
    let rabbitmqctl = |args: &[&str]| {
        std::process::Command::new("rabbitmqctl")
            .arg("-q")
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
    };
    let Some(listing) = rabbitmqctl(&["list_connections", "pid", "client_properties"]) else {
        return false;
    };
    let listing = String::from_utf8_lossy(&listing.stdout);
    let Some(pid) = listing
        .lines()
        .find(|line| line.contains(queue))
        .and_then(|line| line.split('\t').next())
    else {
        return false;
    };
    rabbitmqctl(&["close_connection", pid, "forced by the contract tests"]).is_some()
}

/// Broker dead-lettering is asynchronous: poll until something arrives.
async fn drain_until_some(q: &AmqpQueue) -> Vec<DeadLetter> {
    let start = Instant::now();
    loop {
        let dead = q.drain_dead_letters(10).await.unwrap();
        if !dead.is_empty() || start.elapsed() > PATIENCE {
            return dead;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
