//! Riding out a lost broker: how the connection reconnects, how a failed
//! channel is told apart from a connection being recovered, and the
//! back-off of our own retries.
//!
//! Two kinds of loss, recovered by different hands:
//!
//! - **The connection** (the broker restarted, the network dropped):
//!   lapin's auto-recovery reconnects with [`connection_properties`]'s
//!   back-off and reopens every channel it knows, with its QoS, confirm
//!   mode, declarations and consumers. Channels read as
//!   [`Health::Recovering`] meanwhile.
//! - **One channel** the broker closed while the connection stayed up (a
//!   consumer past the broker's `consumer_timeout`, a publish to an
//!   exchange that was deleted): lapin leaves it closed for good, so we
//!   open a new one ([`Health::ChannelClosed`]).
//!
//! Only a connection that is closed or failed for good ([`Health::Gone`])
//! ends the retries.

use std::time::Duration;

use lapin::{Channel, Connection, ConnectionProperties};

/// First wait between reconnection attempts.
const RECONNECT_MIN: Duration = Duration::from_millis(100);
/// Longest wait between reconnection attempts (jitter adds up to as much
/// again): a broker back from a restart is found within seconds, and a
/// large fleet does not hammer one that is still down.
pub(super) const RECONNECT_MAX: Duration = Duration::from_secs(2);

/// Connection properties named for `queue`, recovering by themselves.
///
/// Reconnection never gives up: a broker away for an hour is reconnected
/// when it returns, while the process reports itself not ready. Giving up
/// would leave a process that can never work again but looks alive.
pub(super) fn connection_properties(queue: &str) -> ConnectionProperties {
    ConnectionProperties::default()
        .with_connection_name(format!("deepfleet {queue}").into())
        .enable_auto_recover()
        .configure_backoff(|backoff| {
            backoff
                .with_min_delay(RECONNECT_MIN)
                .with_max_delay(RECONNECT_MAX)
                .with_factor(2.0)
                .with_jitter()
                .without_max_times()
        })
}

/// Whether `connection` is being (re)established: neither usable nor gone
/// for good.
pub(super) fn reconnecting(connection: &Connection) -> bool {
    let conn = connection.status();
    !(conn.connected() || conn.closed() || conn.errored() || conn.closing())
}

/// Whether `connection` is up (whatever its channels are doing).
pub(super) fn connected(connection: &Connection) -> bool {
    connection.status().connected()
}

/// The state of a channel and its connection, as far as retrying goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Health {
    /// Open and usable.
    Open,
    /// The connection is being recovered (lapin reopens the channel), or
    /// the channel is closing: wait.
    Recovering,
    /// The broker closed the channel, the connection is fine: open
    /// another.
    ChannelClosed,
    /// The connection is closed or failed for good.
    Gone,
}

/// How `channel` (on `connection`) stands.
pub(super) fn health(connection: &Connection, channel: &Channel) -> Health {
    let conn = connection.status();
    if conn.closed() || conn.errored() || conn.closing() {
        return Health::Gone;
    }
    let status = channel.status();
    // A channel still closing is waited for: opening another before it is
    // gone may reuse its number while lapin still fails what was its.
    if !conn.connected() || status.reconnecting() || status.initializing() || status.closing() {
        return Health::Recovering;
    }
    if status.connected() {
        Health::Open
    } else {
        Health::ChannelClosed
    }
}

/// Doubling waits between our own retries, from 100 ms up to
/// [`RECONNECT_MAX`].
#[derive(Debug)]
pub(super) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(super) fn new() -> Self {
        Backoff {
            next: RECONNECT_MIN,
        }
    }

    /// Sleeps for the current wait, and doubles the next.
    pub(super) async fn wait(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(RECONNECT_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_up_to_the_cap() {
        let mut backoff = Backoff::new();
        let mut waits = Vec::new();
        for _ in 0..8 {
            let started = tokio::time::Instant::now();
            backoff.wait().await;
            waits.push(started.elapsed().as_millis());
        }
        assert_eq!(waits, [100, 200, 400, 800, 1600, 2000, 2000, 2000]);
    }
}
