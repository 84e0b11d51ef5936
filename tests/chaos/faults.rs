//! The faults a batch runs through: SIGKILLed workers (restarted, as
//! Kubernetes restarts a pod), one RabbitMQ restart, one Redis restart,
//! and one worker frozen (SIGSTOP) past the broker's consumer timeout.

use std::time::Duration;

use deepfleet_testkit::fleet::Fleet;
use deepfleet_testkit::servers::{PrivateRabbit, PrivateRedis};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

/// Share of the batch's runs done when each one-off fault strikes: each
/// lands while plenty of work is in flight.
const BROKER_RESTART_AT: f64 = 0.15;
const REDIS_RESTART_AT: f64 = 0.35;
const PAUSE_AT: f64 = 0.55;

/// How long past the consumer timeout the frozen worker stays frozen: the
/// broker checks its consumers every second.
const PAUSE_MARGIN: Duration = Duration::from_secs(5);

/// What happened, for the report.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    pub kills: usize,
    pub broker_restarts: usize,
    pub broker_down: Duration,
    /// From the broker's return until every worker consumed again.
    pub resubscribed_in: Duration,
    pub redis_restarts: usize,
    pub redis_down: Duration,
    pub pauses: usize,
    pub paused_for: Duration,
    /// Worker processes that exited by themselves (they should not: a
    /// worker rides out a lost broker or store).
    pub exits: usize,
}

/// How long this process's broker connection may take to come back.
const RECONNECT_LIMIT: Duration = Duration::from_secs(60);

/// Waits until the broker answers through the fleet's own connection.
pub async fn answers(fleet: &Fleet) -> anyhow::Result<()> {
    let deadline = Instant::now() + RECONNECT_LIMIT;
    while fleet.queue.depth().await.is_err() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the broker did not answer within {RECONNECT_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Waits until every worker consumes again after the broker came back;
/// how long that took. A worker that exits meanwhile is replaced, as
/// Kubernetes would, and counted in `exits`.
async fn all_consume(fleet: &mut Fleet, exits: &mut usize) -> anyhow::Result<Duration> {
    let started = Instant::now();
    answers(fleet).await?;
    let workers = fleet.worker_pids().len();
    while !fleet.consumers_at_least(workers).await {
        *exits += fleet.replace_exited_workers()?;
        if started.elapsed() >= RECONNECT_LIMIT {
            let seen = fleet.queue.consumers().await;
            anyhow::bail!(
                "not every worker consumed again within {RECONNECT_LIMIT:?} of the broker's restart: \
                 {seen:?} consumers of {workers} workers, {exits} worker exits"
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(started.elapsed())
}

/// The faults that strike once each.
#[derive(Debug, Clone, Copy)]
enum OneOff {
    BrokerRestart,
    RedisRestart,
    Pause,
}

/// Drives the faults from the batch's progress.
pub struct Faults<'a> {
    rabbit: &'a mut PrivateRabbit,
    redis: &'a mut PrivateRedis,
    rng: StdRng,
    kill_every: Duration,
    next_kill: Instant,
    pause: Duration,
    /// The frozen worker and when it was frozen.
    paused: Option<(usize, Instant)>,
    pub figures: Figures,
}

impl<'a> Faults<'a> {
    /// Faults on `rabbit` and `redis`, random from `seed`, a kill every
    /// `kill_every` on average, a worker frozen for `consumer_timeout` and
    /// a margin.
    pub fn new(
        rabbit: &'a mut PrivateRabbit,
        redis: &'a mut PrivateRedis,
        seed: u64,
        kill_every: Duration,
        consumer_timeout: Duration,
    ) -> Self {
        Faults {
            rabbit,
            redis,
            rng: StdRng::seed_from_u64(seed),
            kill_every,
            next_kill: Instant::now() + kill_every,
            pause: consumer_timeout + PAUSE_MARGIN,
            paused: None,
            figures: Figures::default(),
        }
    }

    /// Does whatever is due with `done` of `total` runs finished.
    pub async fn tick(
        &mut self,
        fleet: &mut Fleet,
        done: usize,
        total: usize,
    ) -> anyhow::Result<()> {
        self.figures.exits += fleet.replace_exited_workers()?;
        self.end_pause_if_due(fleet).await?;
        let progress = done as f64 / total.max(1) as f64;
        if let Some(fault) = self.due(progress) {
            // The servers restart, and a worker freezes, under a fleet that
            // is up: a worker still starting when its broker or store goes
            // away exits, by design, to be restarted; that is not what
            // this tests. Kills wait meanwhile, or on a loaded machine they
            // could keep the fleet from ever being whole, and the fault
            // would strike late or (a freeze with nothing left to hold)
            // not at all.
            if fleet.consumers_at_least(fleet.worker_pids().len()).await {
                self.strike(fault, fleet, done, total).await?;
            }
            return Ok(());
        }
        if Instant::now() >= self.next_kill {
            self.kill_one(fleet).await?;
        }
        Ok(())
    }

    /// The one-off fault due at `progress`, if any: each once, in order.
    fn due(&self, progress: f64) -> Option<OneOff> {
        let f = &self.figures;
        if f.broker_restarts == 0 {
            (progress >= BROKER_RESTART_AT).then_some(OneOff::BrokerRestart)
        } else if f.redis_restarts == 0 {
            (progress >= REDIS_RESTART_AT).then_some(OneOff::RedisRestart)
        } else if f.pauses == 0 {
            (progress >= PAUSE_AT).then_some(OneOff::Pause)
        } else {
            None
        }
    }

    async fn strike(
        &mut self,
        fault: OneOff,
        fleet: &mut Fleet,
        done: usize,
        total: usize,
    ) -> anyhow::Result<()> {
        match fault {
            OneOff::BrokerRestart => {
                eprintln!("chaos: restarting RabbitMQ at {done}/{total}");
                self.figures.broker_down = self.rabbit.restart().await?;
                self.figures.broker_restarts += 1;
                // Every worker subscribes again by itself (and this
                // process's own connection, which reads the consumer
                // counts, recovers too).
                self.figures.resubscribed_in = all_consume(fleet, &mut self.figures.exits).await?;
            }
            OneOff::RedisRestart => {
                eprintln!("chaos: restarting Redis at {done}/{total}");
                self.figures.redis_down = self.redis.restart().await?;
                self.figures.redis_restarts += 1;
            }
            OneOff::Pause => {
                let i = self.rng.random_range(0..fleet.worker_pids().len());
                eprintln!("chaos: freezing worker {i} at {done}/{total}");
                fleet.signal_worker(i, "STOP").await?;
                self.paused = Some((i, Instant::now()));
                self.figures.pauses += 1;
            }
        }
        Ok(())
    }

    /// Lets a frozen worker go on, however long it was frozen (the batch
    /// may end while it is).
    pub async fn finish(&mut self, fleet: &mut Fleet) -> anyhow::Result<()> {
        if let Some((i, since)) = self.paused.take() {
            fleet.signal_worker(i, "CONT").await?;
            self.figures.paused_for = since.elapsed();
        }
        Ok(())
    }

    async fn end_pause_if_due(&mut self, fleet: &mut Fleet) -> anyhow::Result<()> {
        if let Some((i, since)) = self.paused
            && since.elapsed() >= self.pause
        {
            eprintln!("chaos: thawing worker {i} after {:?}", since.elapsed());
            fleet.signal_worker(i, "CONT").await?;
            self.figures.paused_for = since.elapsed();
            self.paused = None;
        }
        Ok(())
    }

    /// SIGKILLs a random worker that is not frozen (a replacement starts
    /// at once), and picks when the next one dies: between half and one
    /// and a half times the mean interval.
    ///
    /// A kill waits until the workers consume (the frozen one may have lost
    /// its consumer to the timeout): on a loaded machine a worker may take
    /// longer to start than the interval, and kills landing only on
    /// workers still starting would stop the batch rather than test it.
    async fn kill_one(&mut self, fleet: &mut Fleet) -> anyhow::Result<()> {
        let workers = fleet.worker_pids().len();
        let frozen = self.paused.map(|(i, _)| i);
        if !fleet
            .consumers_at_least(workers - usize::from(frozen.is_some()))
            .await
        {
            return Ok(());
        }
        let candidates: Vec<usize> = (0..workers).filter(|&i| Some(i) != frozen).collect();
        if !candidates.is_empty() {
            let i = candidates[self.rng.random_range(0..candidates.len())];
            fleet.kill_worker(i).await?;
            self.figures.kills += 1;
        }
        let factor = self.rng.random_range(0.5..1.5);
        self.next_kill = Instant::now() + self.kill_every.mul_f64(factor);
        Ok(())
    }
}
