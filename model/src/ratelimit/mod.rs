//! The fleet-wide rate limiter: requests and tokens per minute, per
//! provider account and model, shared by every step that calls it.
//!
//! [`RateLimiter`] is the capability (where the buckets live: in process
//! for an embedded fleet, [`InProcessLimiter`]; a Redis script shared by
//! every worker process, in `deepfleet-store`); [`RateGate`] is what the
//! transport holds: the configured [`RateLimits`], the limiter, and what
//! it reports to ([`LimiterObserver`]). Every attempt of every provider
//! asks the gate before it is sent (`HttpClient::attempt`), so retries
//! count too.
//!
//! A limiter keeps one token bucket per dimension ([`Dimension`]), each
//! refilled continuously at its per-minute limit and holding at most one
//! minute's worth, the way providers meter. An acquisition always takes
//! its cost, and the bucket may go below zero: the deficit is the queue
//! of calls already promised a later slot, so each caller learns *when*
//! it may go ([`Acquired`]), not merely "not now". A caller that would
//! wait longer than it may hold its worker names a claim: its slot is
//! kept under that name, and the caller (republished for later) finds it
//! again instead of queueing anew.
//!
//! What providers say corrects the view: the limits and remaining counts
//! of their rate-limit headers ([`headers`]), and a 429, which blocks the
//! account and model until its `Retry-After` for every caller.
//!
//! A key nothing meters costs the store nothing for a second after the
//! limiter says so ([`Acquired::Unmetered`], `unmetered.rs`).

mod bucket;
mod gate;
pub mod headers;
mod memory;
mod output;
mod table;
mod unmetered;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use bucket::Buckets;
pub use gate::{RateGate, account_of};
pub use memory::InProcessLimiter;
pub use table::{RateLimits, RateLimitsConfig};

/// What a limiter meters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dimension {
    /// Calls.
    Requests,
    /// Input and output tokens together (OpenAI's tokens per minute).
    Tokens,
    /// Input tokens (Anthropic's input tokens per minute).
    InputTokens,
    /// Output tokens (Anthropic's output tokens per minute).
    OutputTokens,
}

impl Dimension {
    /// Every dimension, in the order the arrays of this module use.
    pub const ALL: [Dimension; 4] = [
        Dimension::Requests,
        Dimension::Tokens,
        Dimension::InputTokens,
        Dimension::OutputTokens,
    ];

    /// The label metrics use.
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Requests => "requests",
            Dimension::Tokens => "tokens",
            Dimension::InputTokens => "input_tokens",
            Dimension::OutputTokens => "output_tokens",
        }
    }

    /// This dimension's index in the arrays of this module.
    pub fn index(self) -> usize {
        match self {
            Dimension::Requests => 0,
            Dimension::Tokens => 1,
            Dimension::InputTokens => 2,
            Dimension::OutputTokens => 3,
        }
    }
}

/// Per-minute limits of one account and model, in [`Dimension::ALL`]
/// order; `None` = not limited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Calls per minute.
    pub requests_per_minute: Option<u64>,
    /// Input plus output tokens per minute.
    pub tokens_per_minute: Option<u64>,
    /// Input tokens per minute.
    pub input_tokens_per_minute: Option<u64>,
    /// Output tokens per minute.
    pub output_tokens_per_minute: Option<u64>,
}

impl Limits {
    /// The limits as an array in [`Dimension::ALL`] order.
    pub fn as_array(&self) -> [Option<u64>; 4] {
        [
            self.requests_per_minute,
            self.tokens_per_minute,
            self.input_tokens_per_minute,
            self.output_tokens_per_minute,
        ]
    }

    /// Whether nothing is limited.
    pub fn is_empty(&self) -> bool {
        self.as_array().iter().all(Option::is_none)
    }

    /// Each field of `over` where set, else this one's.
    pub fn overlaid(self, over: &Limits) -> Limits {
        Limits {
            requests_per_minute: over.requests_per_minute.or(self.requests_per_minute),
            tokens_per_minute: over.tokens_per_minute.or(self.tokens_per_minute),
            input_tokens_per_minute: over
                .input_tokens_per_minute
                .or(self.input_tokens_per_minute),
            output_tokens_per_minute: over
                .output_tokens_per_minute
                .or(self.output_tokens_per_minute),
        }
    }
}

/// Whose capacity a call uses: a provider account (the hash of its key,
/// or the base URL when it has none) and a model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LimitKey {
    /// The provider's name in the configuration (`openai`, `anthropic`).
    pub provider: String,
    /// A short hash of the API key (never the key), or the base URL.
    pub account: String,
    /// The model as the provider knows it.
    pub model: String,
}

impl fmt::Display for LimitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.provider, self.account, self.model)
    }
}

/// What one call takes from each dimension, in [`Dimension::ALL`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost(pub [u64; 4]);

impl Cost {
    /// One request of `input` and `output` tokens.
    pub fn call(input: u64, output: u64) -> Cost {
        Cost([1, input.saturating_add(output), input, output])
    }

    /// Only the token dimensions of this cost: what a correction moves.
    pub fn tokens(input: u64, output: u64) -> Cost {
        Cost([0, input.saturating_add(output), input, output])
    }

    /// Whether the call took nothing: it was let through unmetered.
    pub fn is_none(&self) -> bool {
        *self == Cost::default()
    }
}

/// When an acquiring caller may send its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// After this wait (zero: now), within what the caller may wait.
    Go(Duration),
    /// Not within what the caller may wait: its slot is kept under its
    /// claim and comes this far in the future.
    Later(Duration),
    /// Nothing meters the key (no limit configured or learned, no 429's
    /// block): the call goes now and took nothing.
    Unmetered,
}

/// What a provider's answer said of the account's capacity, in
/// [`Dimension::ALL`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observed {
    /// The limit per minute the provider applies.
    pub limit: [Option<u64>; 4],
    /// What is left now.
    pub remaining: [Option<u64>; 4],
    /// When the bucket is full again.
    pub reset: [Option<Duration>; 4],
    /// The answer was a 429: no call before this wait.
    pub blocked_for: Option<Duration>,
}

impl Observed {
    /// Whether the answer said nothing about capacity.
    pub fn is_empty(&self) -> bool {
        *self == Observed::default()
    }
}

/// A limiter's failure: its store could not be reached. The gate lets
/// the call through then (the provider's own 429s still protect it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rate limiter: {0}")]
pub struct LimiterError(pub String);

/// Where the buckets of every account and model live.
///
/// Implementations must apply each operation atomically across every
/// process that shares them, and take the time from one clock (the
/// store's), so workers on different hosts agree on the refill.
#[async_trait]
pub trait RateLimiter: Send + Sync + fmt::Debug {
    /// Takes `cost` from `key`'s buckets under `limits` and says when the
    /// call may go. A wait above `max_wait` is [`Acquired::Later`] and
    /// kept under `claim` when one is given (without a claim the caller
    /// gets [`Acquired::Go`] with the whole wait); a later acquisition
    /// under the same claim returns that slot instead of taking again.
    /// A key nothing meters answers [`Acquired::Unmetered`] and keeps no
    /// state.
    async fn acquire(
        &self,
        key: &LimitKey,
        limits: &Limits,
        cost: Cost,
        claim: Option<&str>,
        max_wait: Duration,
    ) -> Result<Acquired, LimiterError>;

    /// Gives back what an estimate took beyond the actual cost (or takes
    /// the shortfall): `taken` was acquired, `used` is what the provider
    /// reported.
    async fn record(
        &self,
        key: &LimitKey,
        limits: &Limits,
        taken: Cost,
        used: Cost,
    ) -> Result<(), LimiterError>;

    /// Applies what a provider's answer said: its limits, a remaining
    /// count lower than the limiter's own, a 429's block. Returns the
    /// buckets' levels afterwards (for the metrics).
    async fn observe(
        &self,
        key: &LimitKey,
        limits: &Limits,
        observed: &Observed,
    ) -> Result<[Option<f64>; 4], LimiterError>;
}

/// What the gate reports: waits, throttled calls and the limiter's view.
/// The worker feeds its metrics from it; methods default to nothing.
pub trait LimiterObserver: Send + Sync {
    /// A call waited `wait` for capacity before it was sent.
    fn waited(&self, key: &LimitKey, wait: Duration) {
        let _ = (key, wait);
    }

    /// The provider answered a call with a 429.
    fn throttled(&self, key: &LimitKey) {
        let _ = key;
    }

    /// The limiter's view of `key` after an answer: what is left in each
    /// dimension it meters, in [`Dimension::ALL`] order.
    fn levels(&self, key: &LimitKey, levels: [Option<f64>; 4]) {
        let _ = (key, levels);
    }
}
