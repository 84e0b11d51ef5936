//! The rate limiter's buckets in Redis (`rate_limit.lua`): the same
//! arithmetic as the in-process limiter, shared by every connection.

use std::time::Duration;

use deepfleet_model::ratelimit::{
    Acquired, Cost, InProcessLimiter, LimitKey, Limits, Observed, RateLimiter,
};
use deepfleet_store::redis::RedisStore;
use pretty_assertions::assert_eq;

use crate::harness::{REDIS_URL, START_REDIS, connect, with_cleanup};

fn key(model: &str) -> LimitKey {
    LimitKey {
        provider: "openai".into(),
        account: "0123456789abcdef".into(),
        model: model.into(),
    }
}

const RPM_60: Limits = Limits {
    requests_per_minute: Some(60),
    tokens_per_minute: Some(6_000),
    input_tokens_per_minute: None,
    output_tokens_per_minute: None,
};

/// Runs the same sequence on `limiter` and returns what it answered,
/// waits rounded to 100 ms (the server's clock moves between calls).
async fn sequence(limiter: &dyn RateLimiter) -> Vec<String> {
    let max = Duration::from_secs(2);
    let mut seen = Vec::new();
    let show = |seen: &mut Vec<String>, got: Acquired| {
        seen.push(match got {
            Acquired::Go(w) => format!("go {}", w.as_millis().div_ceil(100) * 100),
            Acquired::Later(w) => format!("later {}", w.as_millis().div_ceil(100) * 100),
            Acquired::Unmetered => "unmetered".to_owned(),
        });
    };
    for _ in 0..58 {
        limiter
            .acquire(&key("m"), &RPM_60, Cost::call(10, 10), None, max)
            .await
            .unwrap();
    }
    // 59 of 60 are held (a second of headroom): the 59th empties
    // requests, the 60th waits a second, in place.
    show(
        &mut seen,
        limiter
            .acquire(&key("m"), &RPM_60, Cost::call(10, 10), None, max)
            .await
            .unwrap(),
    );
    show(
        &mut seen,
        limiter
            .acquire(&key("m"), &RPM_60, Cost::call(10, 10), None, max)
            .await
            .unwrap(),
    );
    // Tokens: 4,700 of 5,900 left; 6,000 (capped at the limit) waits for
    // the rest.
    show(
        &mut seen,
        limiter
            .acquire(&key("m"), &RPM_60, Cost::call(9_000, 0), Some("t1:3"), max)
            .await
            .unwrap(),
    );
    show(
        &mut seen,
        limiter
            .acquire(
                &key("m"),
                &RPM_60,
                Cost::call(1, 0),
                Some("t1:3"),
                Duration::ZERO,
            )
            .await
            .unwrap(),
    );
    seen.extend(blocks_and_headers(limiter).await);

    seen
}

/// The second half of [`sequence`]: what providers' answers do.
async fn blocks_and_headers(limiter: &dyn RateLimiter) -> Vec<String> {
    let max = Duration::from_secs(2);
    let mut seen = Vec::new();
    let show = |seen: &mut Vec<String>, got: Acquired| {
        seen.push(match got {
            Acquired::Go(w) => format!("go {}", w.as_millis().div_ceil(100) * 100),
            Acquired::Later(w) => format!("later {}", w.as_millis().div_ceil(100) * 100),
            Acquired::Unmetered => "unmetered".to_owned(),
        });
    };
    // A 429 blocks another model for 30 s, claims included.
    let blocked = Observed {
        blocked_for: Some(Duration::from_secs(30)),
        ..Observed::default()
    };
    limiter
        .observe(&key("n"), &Limits::default(), &blocked)
        .await
        .unwrap();
    show(
        &mut seen,
        limiter
            .acquire(
                &key("n"),
                &Limits::default(),
                Cost::call(1, 1),
                Some("t2:1"),
                max,
            )
            .await
            .unwrap(),
    );
    show(
        &mut seen,
        limiter
            .acquire(
                &key("n"),
                &Limits::default(),
                Cost::call(1, 1),
                Some("t2:1"),
                Duration::from_secs(60),
            )
            .await
            .unwrap(),
    );
    // Nothing meters a model without limits: nothing is taken.
    show(
        &mut seen,
        limiter
            .acquire(
                &key("free"),
                &Limits::default(),
                Cost::call(1, 1),
                None,
                max,
            )
            .await
            .unwrap(),
    );
    // Headers teach a limit and a lower remaining count.
    let taught = Observed {
        limit: [Some(120), None, None, None],
        remaining: [Some(0), None, None, None],
        ..Observed::default()
    };
    let levels = limiter
        .observe(&key("o"), &Limits::default(), &taught)
        .await
        .unwrap();
    seen.push(format!("levels {:?}", levels.map(|l| l.map(|l| l.round()))));
    show(
        &mut seen,
        limiter
            .acquire(&key("o"), &Limits::default(), Cost::call(1, 1), None, max)
            .await
            .unwrap(),
    );
    // A correction gives back what the estimate took beyond the usage.
    limiter
        .record(
            &key("m"),
            &RPM_60,
            Cost::tokens(9_000, 0),
            Cost::tokens(0, 0),
        )
        .await
        .unwrap();
    seen
}

#[tokio::test]
async fn redis_buckets_answer_as_the_in_process_ones_do() {
    let Some((store, _)) = connect(REDIS_URL, START_REDIS).await else {
        return;
    };
    with_cleanup(store, |store: std::sync::Arc<RedisStore>| async move {
        let in_process = sequence(&InProcessLimiter::new()).await;
        let redis = sequence(&store.rate_limiter()).await;
        assert_eq!(redis, in_process);
        assert_eq!(
            in_process,
            [
                "go 0",
                "go 1000",
                "later 13000",
                "later 13000",
                "later 30000",
                "go 30000",
                "unmetered",
                "levels [Some(0.0), None, None, None]",
                "go 500",
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn two_connections_share_one_bucket() {
    let Some((store, prefix)) = connect(REDIS_URL, START_REDIS).await else {
        return;
    };
    with_cleanup(store, |store: std::sync::Arc<RedisStore>| async move {
        let other = RedisStore::connect(REDIS_URL, &prefix)
            .await
            .unwrap()
            .rate_limiter();
        let limiter = store.rate_limiter();
        let max = Duration::from_secs(60);
        let mut waits = Vec::new();
        for i in 0..70 {
            let on: &dyn RateLimiter = if i % 2 == 0 { &limiter } else { &other };
            match on
                .acquire(&key("shared"), &RPM_60, Cost::call(0, 0), None, max)
                .await
                .unwrap()
            {
                Acquired::Go(wait) => waits.push(wait),
                other => panic!("no claim and a limit: {other:?}"),
            }
        }
        // 59 at once (a second of headroom), then one a second whichever connection asks.
        assert!(waits[..59].iter().all(|w| w.is_zero()), "{waits:?}");
        assert!(waits[69] > Duration::from_millis(9_500), "{waits:?}");
    })
    .await;
}
