//! The RabbitMQ implementation of [`crate::Queue`].
//!
//! Topology for a base name `q`, declared idempotently by
//! [`AmqpQueue::connect`]:
//!
//! - `q`: the work queue, a durable quorum queue with a delivery limit that
//!   dead-letters to `q.dlx`;
//! - `q.dlx` (fanout exchange) → `q.dead`: dead letters, read back through
//!   [`DeadLetters`](crate::DeadLetters);
//! - `q.delay.{ms}`: one TTL queue per delay bucket, declared on first use,
//!   that dead-letters its expired messages back into `q` and deletes itself
//!   when unused;
//! - `q.results-by-tenant` (direct exchange) → `q.results.{tenant}` (one
//!   queue per tenant, bound with the tenant id as routing key): answers
//!   to messages that named no reply queue, or one that no longer exists,
//!   kept apart per tenant so each tenant's broker user can be allowed to
//!   read its own queue only; declared on a tenant's first answer by
//!   [`Replies`](crate::Replies). Answers of no tenant go to the queue
//!   `q.results`, for the fleet alone.
//!
//! Publishes wait for publisher confirms and are `mandatory`, so a message
//! the broker did not store, or could not route, is an error rather than a
//! silent loss. Consumers ack manually with a bounded prefetch, spread over
//! channels of at most `spread::CHANNEL_PREFETCH` deliveries (the broker's
//! cost of an out-of-order ack grows with its channel's unacked count).
//!
//! The connection recovers by itself, however long the broker is away
//! (lapin's auto-recovery, with a back-off capped at a few seconds,
//! replays the topology, QoS and consumers); a channel the broker closes
//! while the connection stays up (a consumer past `consumer_timeout`) is
//! replaced by us. Publishes interrupted by either wait for the recovery
//! and are retried, for up to [`PUBLISH_PATIENCE`]; a publish is only ever
//! reported stored once the broker confirmed it. Deliveries received
//! before a recovery can no longer be settled: the broker redelivers them,
//! so consumers must be idempotent (the step protocol's fencing). See
//! `recovery.rs`.
//!
//! TLS: `amqps://` uses rustls with ring. If the process has not installed
//! a default rustls crypto provider, the connector installs ring itself,
//! so connecting never panics for lack of one; the binary still installs
//! ring at start-up so all its rustls clients agree.

mod consumer;
mod dead_letters;
mod recovery;
mod replies;
mod spread;
mod topology;
mod uri;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deepfleet_proto::TenantId;
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeleteOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Confirmation, Connect, Connection};

use crate::{Consumer, Queue, QueueError};
use recovery::{Backoff, Health};
pub use replies::UNREACHABLE_REPLY_TO_HEADER;
use topology::Names;

/// Whether `name` is one of the queues (or exchanges) an [`AmqpQueue`]
/// with base name `base` declares or may declare: the base itself, its
/// dead letters, results and delay queues.
pub fn derived_from(base: &str, name: &str) -> bool {
    Names::new(base).derives(name)
}

/// How long a publish keeps trying through a lost connection or channel
/// before it fails: long enough for a broker restart.
pub const PUBLISH_PATIENCE: Duration = Duration::from_secs(60);

/// How many times a publish the broker returned as unroutable is tried
/// (after declaring its delay or results queue again).
const RETURNED_ATTEMPTS: u32 = 2;

/// AMQP `delivery-mode` for messages written to disk.
const PERSISTENT: u8 = 2;

/// How to reach RabbitMQ and which queue to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmqpConfig {
    /// The broker, e.g. `amqp://guest:guest@127.0.0.1:5672/%2f`.
    pub url: String,
    /// The base name from which every queue and exchange name is derived,
    /// e.g. `deepfleet.steps`.
    pub queue: String,
    /// Failed deliveries (a requeue, or a consumer gone without settling)
    /// a message may have; the next failure makes the broker dead-letter it
    /// (reason `delivery_limit`) instead of redelivering it, so it is
    /// delivered at most `delivery_limit + 1` times. Fixed when the queue
    /// is first declared: redeclaring with another value fails.
    pub delivery_limit: u32,
    /// How long [`AmqpQueue::connect`] waits for the broker. Without it, a
    /// broker that is down would keep the first connection attempt
    /// retrying for the whole recovery back-off (minutes).
    pub connect_timeout: Duration,
}

impl AmqpConfig {
    /// A configuration with a delivery limit of 10 and a 10 s connect
    /// timeout.
    pub fn new(url: impl Into<String>, queue: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            queue: queue.into(),
            delivery_limit: 10,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// A queue on RabbitMQ; clones share one connection.
#[derive(Clone)]
pub struct AmqpQueue {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AmqpQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmqpQueue")
            .field("queue", &self.shared.names.main)
            .finish_non_exhaustive()
    }
}

/// What the queue, its consumers and their deliveries share.
struct Shared {
    connection: Connection,
    /// The one channel for publishing, in confirm mode. lapin matches
    /// confirms to publishes itself, so concurrent publishers can share it.
    /// Nothing else runs on it: a channel-level error (a failed declare)
    /// would close it, and lapin only reopens channels when the whole
    /// connection recovers. One the broker closed anyway is replaced.
    publisher: Mutex<Publisher>,
    names: Names,
    /// The main queue's delivery limit, to tell a delivery how many more
    /// the broker allows.
    delivery_limit: u32,
    /// When this process last declared each delay queue (by bucket), to
    /// renew its `x-expires` lease often enough; see
    /// [`topology::DELAY_QUEUE_SLACK`].
    delays_declared: Mutex<HashMap<u64, Instant>>,
    /// The results queues this process declared, by tenant (`None`: the
    /// queue of answers of no tenant).
    results_declared: Mutex<HashSet<Option<TenantId>>>,
}

/// The publisher channel and how many times it was replaced, so that
/// concurrent publishers that saw it fail replace it once.
struct Publisher {
    channel: Channel,
    generation: u64,
}

/// Where a message goes.
#[derive(Debug, Clone, Copy)]
enum Route<'a> {
    Main,
    Delay(u64),
    DeadLetter,
    /// A reply queue, by name, through the default exchange.
    Reply(&'a str),
    /// The results queue of a tenant, or of no tenant.
    Results(Option<&'a TenantId>),
}

/// Why one publish attempt failed.
enum Failure {
    /// The channel or connection failed; recovery may fix it.
    Broker(lapin::Error),
    /// The broker returned the message as unroutable.
    Returned(String),
    /// The broker nacked the message.
    Refused(String),
}

impl From<lapin::Error> for Failure {
    fn from(err: lapin::Error) -> Self {
        Failure::Broker(err)
    }
}

/// Properties of every message: persistent.
fn persistent() -> BasicProperties {
    BasicProperties::default().with_delivery_mode(PERSISTENT)
}

fn connection_error(err: lapin::Error) -> QueueError {
    QueueError::Connection(err.to_string())
}

/// Opens (and closes) one TCP connection to the broker of `url`.
///
/// lapin retries a refused *first* connection with its recovery back-off
/// (minutes) on a thread of its own, which a timeout does not stop and
/// which panics once the runtime it sleeps on shuts down. A broker that
/// cannot be reached is therefore found out here, with one plain connect,
/// before lapin is asked; an established connection still recovers.
async fn reach(url: &str) -> Result<(), QueueError> {
    let authority = uri::parse(url)?.authority;
    tokio::net::TcpStream::connect((authority.host.as_str(), authority.port))
        .await
        .map(drop)
        .map_err(|e| QueueError::Connection(format!("cannot reach the broker: {e}")))
}

impl AmqpQueue {
    /// Connects to the broker and declares the topology (idempotent),
    /// giving up after [`AmqpConfig::connect_timeout`].
    pub async fn connect(config: AmqpConfig) -> Result<AmqpQueue, QueueError> {
        let deadline = tokio::time::Instant::now() + config.connect_timeout;
        let too_late = || {
            QueueError::Connection(format!(
                "no connection to the broker within {:?}",
                config.connect_timeout
            ))
        };
        tokio::time::timeout_at(deadline, reach(&config.url))
            .await
            .map_err(|_| too_late())??;
        let properties = recovery::connection_properties(&config.queue);
        let connection =
            tokio::time::timeout_at(deadline, uri::parse(&config.url)?.connect(properties))
                .await
                .map_err(|_| too_late())?
                .map_err(connection_error)?;
        let names = Names::new(&config.queue);
        let publisher = open_publisher(&connection, &names, config.delivery_limit)
            .await
            .map_err(connection_error)?;
        Ok(AmqpQueue {
            shared: Arc::new(Shared {
                connection,
                publisher: Mutex::new(Publisher {
                    channel: publisher,
                    generation: 0,
                }),
                names,
                delivery_limit: config.delivery_limit,
                delays_declared: Mutex::new(HashMap::new()),
                results_declared: Mutex::new(HashSet::new()),
            }),
        })
    }

    /// Deletes the main, dead-letter and delay queues, the results queues
    /// (of no tenant, of the default tenant, and of every tenant this
    /// process answered) and the exchanges (the results fanout of the
    /// layout before per-tenant results too), with whatever messages they
    /// hold. Results queues that other processes declared for other
    /// tenants are left: nothing here knows their names.
    ///
    /// For tests and tear-down only: other processes on the same base name
    /// lose their consumers, and their publishes fail as unroutable, until
    /// one of them connects again and so redeclares the topology.
    pub async fn delete_all(&self) -> Result<(), QueueError> {
        let names = &self.shared.names;
        let channel = self.shared.open_channel().await?;
        let mut tenants: HashSet<TenantId> = self
            .shared
            .results_declared()
            .iter()
            .flatten()
            .cloned()
            .collect();
        tenants.insert(TenantId::default());
        let queues = [
            names.main.clone(),
            names.dead.clone(),
            names.results.clone(),
        ]
        .into_iter()
        .chain(tenants.iter().map(|tenant| names.tenant_results(tenant)))
        .chain(names.all_delays());
        for queue in queues {
            // Deleting a queue that does not exist succeeds in RabbitMQ,
            // so delay buckets that were never used need no special case.
            channel
                .queue_delete(queue.into(), QueueDeleteOptions::default())
                .await
                .map_err(connection_error)?;
        }
        // Deleting an exchange that does not exist succeeds too.
        for exchange in [&names.dlx, &names.results_by_tenant, &names.results] {
            channel
                .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
                .await
                .map_err(connection_error)?;
        }
        self.shared.results_declared().clear();
        Ok(())
    }

    /// Declares the results queues of answers of no tenant and of the
    /// default tenant (every answer's, without API keys), with the
    /// exchange, now rather than on the first answer sent there, so
    /// consumers can subscribe before any arrives. Another tenant's
    /// results queue is declared on that tenant's first answer.
    pub async fn declare_results(&self) -> Result<(), QueueError> {
        for tenant in [None, Some(&TenantId::default())] {
            self.shared
                .ensure_results(tenant)
                .await
                .map_err(|failure| match failure {
                    Failure::Broker(err) => connection_error(err),
                    Failure::Returned(why) | Failure::Refused(why) => QueueError::NotConfirmed(why),
                })?;
        }
        Ok(())
    }

    /// The queue that [`Replies`](crate::Replies) answers on when there is
    /// no (live) reply queue and no tenant: the fleet's alone.
    pub fn results_name(&self) -> &str {
        &self.shared.names.results
    }

    /// The queue that [`Replies`](crate::Replies) answers `tenant`'s
    /// messages on when there is no (live) reply queue.
    pub fn tenant_results_name(&self, tenant: &TenantId) -> String {
        self.shared.names.tenant_results(tenant)
    }

    /// Closes the connection. Deliveries not yet settled go back to the
    /// queue, marked redelivered.
    pub async fn close(&self) -> Result<(), QueueError> {
        self.shared
            .connection
            .close(200, "closed by deepfleet".into())
            .await
            .map_err(connection_error)
    }
}

/// A channel in confirm mode with the topology declared on it, so lapin
/// replays the declarations when the connection recovers, should the
/// broker have lost them.
async fn open_publisher(
    connection: &Connection,
    names: &Names,
    delivery_limit: u32,
) -> lapin::Result<Channel> {
    let channel = connection.create_channel().await?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    topology::declare(&channel, names, delivery_limit).await?;
    Ok(channel)
}

impl Shared {
    /// The publisher channel now, and its generation.
    fn publisher(&self) -> (Channel, u64) {
        // Poisoned only by a panic elsewhere; the channel is still valid.
        let publisher = self.publisher.lock().unwrap_or_else(|e| e.into_inner());
        (publisher.channel.clone(), publisher.generation)
    }

    /// Replaces the publisher channel of `generation`, which the broker
    /// closed; does nothing if another publisher replaced it already.
    async fn replace_publisher(&self, generation: u64) -> lapin::Result<()> {
        let channel = open_publisher(&self.connection, &self.names, self.delivery_limit).await?;
        let mut publisher = self.publisher.lock().unwrap_or_else(|e| e.into_inner());
        if publisher.generation == generation {
            tracing::info!("the broker closed the publisher channel; opened another");
            publisher.channel = channel;
            publisher.generation += 1;
        }
        Ok(())
    }

    /// After a publish on the publisher of `generation` failed with
    /// `err`: waits for lapin to recover the connection, or replaces a
    /// channel the broker closed, or waits a little (the failure was
    /// elsewhere, e.g. on a declare). Fails when the connection is gone
    /// for good or `deadline` passed.
    async fn recover_publisher(
        &self,
        err: lapin::Error,
        generation: u64,
        deadline: tokio::time::Instant,
        backoff: &mut Backoff,
    ) -> Result<(), QueueError> {
        let (channel, _) = self.publisher();
        match recovery::health(&self.connection, &channel) {
            Health::Gone => return Err(connection_error(err)),
            Health::ChannelClosed => {
                if let Err(e) = self.replace_publisher(generation).await {
                    tracing::debug!(error = %e, "replacing the publisher channel failed");
                    tokio::time::timeout_at(deadline, backoff.wait()).await.ok();
                }
            }
            Health::Recovering => {
                // An error raised by the recovery carries its notifier;
                // others (a channel refused while reconnecting) do not.
                let waited =
                    tokio::time::timeout_at(deadline, channel.wait_for_recovery(err)).await;
                if !matches!(waited, Ok(Ok(()))) {
                    tokio::time::timeout_at(deadline, backoff.wait()).await.ok();
                }
            }
            Health::Open => {
                tokio::time::timeout_at(deadline, backoff.wait()).await.ok();
            }
        }
        Ok(())
    }

    fn delays_declared(&self) -> MutexGuard<'_, HashMap<u64, Instant>> {
        // A poisoned lock only means a panic elsewhere; the map is a cache
        // that is always safe to read or overwrite.
        self.delays_declared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn results_declared(&self) -> MutexGuard<'_, HashSet<Option<TenantId>>> {
        // As `delays_declared`: a cache, whatever panicked.
        self.results_declared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// A new channel, for consumers and for one-off operations that may
    /// fail at channel level (a passive declare of a missing queue) without
    /// harming the publisher. It closes when its last handle is dropped.
    async fn open_channel(&self) -> Result<Channel, QueueError> {
        self.connection
            .create_channel()
            .await
            .map_err(connection_error)
    }

    /// The main queue's counts (ready messages, consumers) as the broker
    /// reports them to a passive declare, which changes nothing.
    async fn inspect_main(&self) -> Result<lapin::Queue, QueueError> {
        let channel = self.open_channel().await?;
        channel
            .queue_declare(
                self.names.main.as_str().into(),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .map_err(connection_error)
    }

    /// Declares the delay queue for `bucket_ms` unless this process did so
    /// recently enough that it cannot have expired.
    async fn ensure_delay_queue(&self, bucket_ms: u64) -> Result<(), Failure> {
        let fresh = self
            .delays_declared()
            .get(&bucket_ms)
            .is_some_and(|at| at.elapsed() < topology::DELAY_QUEUE_SLACK / 2);
        if fresh {
            return Ok(());
        }
        let channel = self.connection.create_channel().await?;
        topology::declare_delay(&channel, &self.names, bucket_ms).await?;
        self.delays_declared().insert(bucket_ms, Instant::now());
        Ok(())
    }

    /// Declares the results queue of `tenant` (and its exchange) unless
    /// this process already did (a publish there that comes back
    /// unroutable makes it declare them again).
    async fn ensure_results(&self, tenant: Option<&TenantId>) -> Result<(), Failure> {
        let key = tenant.cloned();
        if self.results_declared().contains(&key) {
            return Ok(());
        }
        let channel = self.connection.create_channel().await?;
        topology::declare_results(&channel, &self.names, tenant).await?;
        self.results_declared().insert(key);
        Ok(())
    }

    /// Publishes with confirms, retrying through a connection recovery.
    async fn publish(
        &self,
        route: Route<'_>,
        payload: &[u8],
        headers: Option<FieldTable>,
    ) -> Result<(), QueueError> {
        let mut properties = persistent();
        if let Some(headers) = headers {
            properties = properties.with_headers(headers);
        }
        self.publish_with(route, payload, properties).await
    }

    /// [`Shared::publish`] with the caller's properties. Retries through
    /// a lost connection or publisher channel until [`PUBLISH_PATIENCE`]
    /// has passed.
    async fn publish_with(
        &self,
        route: Route<'_>,
        payload: &[u8],
        properties: BasicProperties,
    ) -> Result<(), QueueError> {
        let deadline = tokio::time::Instant::now() + PUBLISH_PATIENCE;
        let mut backoff = Backoff::new();
        let mut returned = 0;
        loop {
            let (channel, generation) = self.publisher();
            match self
                .try_publish(&channel, route, payload, properties.clone())
                .await
            {
                Ok(()) => return Ok(()),
                Err(Failure::Broker(err)) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(connection_error(err));
                    }
                    tracing::warn!(%err, "publish failed; retrying once the broker is back");
                    self.recover_publisher(err, generation, deadline, &mut backoff)
                        .await?;
                }
                Err(Failure::Returned(reply)) if returned + 1 < RETURNED_ATTEMPTS => {
                    returned += 1;
                    match route {
                        // The delay queue expired or was deleted since this
                        // process declared it: declare it again.
                        Route::Delay(bucket_ms) => {
                            self.delays_declared().remove(&bucket_ms);
                        }
                        Route::Results(tenant) => {
                            self.results_declared().remove(&tenant.cloned());
                        }
                        Route::Main | Route::DeadLetter | Route::Reply(_) => {
                            return Err(QueueError::NotConfirmed(reply));
                        }
                    }
                }
                Err(Failure::Returned(reply) | Failure::Refused(reply)) => {
                    return Err(QueueError::NotConfirmed(reply));
                }
            }
        }
    }

    async fn try_publish(
        &self,
        publisher: &Channel,
        route: Route<'_>,
        payload: &[u8],
        properties: BasicProperties,
    ) -> Result<(), Failure> {
        let (exchange, routing_key) = match route {
            Route::Main => (String::new(), self.names.main.clone()),
            Route::Delay(bucket_ms) => {
                self.ensure_delay_queue(bucket_ms).await?;
                (String::new(), self.names.delay(bucket_ms))
            }
            Route::DeadLetter => (self.names.dlx.clone(), self.names.main.clone()),
            Route::Reply(queue) => (String::new(), queue.to_owned()),
            Route::Results(tenant) => {
                self.ensure_results(tenant).await?;
                match tenant {
                    Some(tenant) => (self.names.results_by_tenant.clone(), tenant.to_string()),
                    None => (String::new(), self.names.results.clone()),
                }
            }
        };
        let confirmation = publisher
            .basic_publish(
                exchange.into(),
                routing_key.clone().into(),
                BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                },
                payload,
                properties,
            )
            .await?
            .await?;
        match confirmation {
            // A mandatory message nobody could route is acked *and*
            // returned; only a bare ack means it was stored.
            Confirmation::Ack(None) => Ok(()),
            Confirmation::Ack(Some(returned)) => Err(Failure::Returned(format!(
                "unroutable to {routing_key}: {} {}",
                returned.reply_code, returned.reply_text
            ))),
            Confirmation::Nack(_) => Err(Failure::Refused(format!(
                "the broker nacked a message for {routing_key}"
            ))),
            Confirmation::NotRequested => Err(Failure::Refused(
                "the publisher channel is not in confirm mode".into(),
            )),
        }
    }
}

#[async_trait]
impl Queue for AmqpQueue {
    async fn publish(&self, payload: Vec<u8>, delay: Option<Duration>) -> Result<(), QueueError> {
        let route = delay
            .and_then(topology::delay_bucket)
            .map_or(Route::Main, Route::Delay);
        self.shared.publish(route, &payload, None).await
    }

    async fn consume(&self, prefetch: u16) -> Result<Box<dyn Consumer>, QueueError> {
        spread::subscribe(&self.shared, prefetch).await
    }

    async fn depth(&self) -> Result<Option<u64>, QueueError> {
        let queue = self.shared.inspect_main().await?;
        Ok(Some(u64::from(queue.message_count())))
    }

    async fn consumers(&self) -> Result<Option<u32>, QueueError> {
        let queue = self.shared.inspect_main().await?;
        Ok(Some(queue.consumer_count()))
    }
}
