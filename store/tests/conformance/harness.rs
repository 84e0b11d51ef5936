//! Where the scenarios run: the embedded store, Redis on 127.0.0.1:6379,
//! and the three-node cluster of `cluster.rs`, each Redis store under a
//! key prefix of its own that is deleted afterwards, pass or fail; and
//! what a sealed Redis keyspace is checked with afterwards ([`dump`],
//! [`assert_no_clear_content`]), which `sealed.rs` uses too.

use std::future::Future;
use std::panic::resume_unwind;
use std::pin::Pin;
use std::sync::Arc;

use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::{Keyring, Store};
use pretty_assertions::assert_eq;

use crate::cluster;

pub const REDIS_URL: &str = "redis://127.0.0.1:6379";
pub const START_REDIS: &str = "Start one with: redis-server --bind 127.0.0.1 --port 6379 \
     --save '' --appendonly no --daemonize yes";

/// A scenario, run once per store.
pub type Scenario = fn(Arc<dyn Store>) -> Pin<Box<dyn Future<Output = ()> + Send>>;

pub async fn on_embedded(scenario: Scenario) {
    scenario(Arc::new(EmbeddedStore::new())).await;
}

/// An embedded store persisted to a state file sealed under a fresh key;
/// the file is checked to hold no clear JSON afterwards.
pub async fn on_embedded_sealed(scenario: Scenario) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    let keyring = Arc::new(Keyring::generate("k1").unwrap());
    let store = Arc::new(EmbeddedStore::open_with(&path, Some(keyring.clone())).unwrap());
    scenario(store.clone()).await;
    store.flush().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(keyring.is_current(&text), "the state file is not sealed");
    drop(store);
    let reopened = EmbeddedStore::open_with(&path, Some(keyring));
    assert!(reopened.is_ok(), "the sealed state file does not reopen");
}

/// Single Redis with a keyring; afterwards no value under the prefix is
/// clear JSON content.
pub async fn on_sealed(scenario: Scenario) {
    if let Some((store, prefix)) = connect(REDIS_URL, START_REDIS).await {
        let keyring = Arc::new(Keyring::generate("k1").unwrap());
        let store = Arc::new(Arc::into_inner(store).unwrap().with_keyring(keyring));
        with_cleanup(store, |s| async move {
            scenario(s).await;
            assert_no_clear_content(&prefix).await;
        })
        .await;
    }
}

pub async fn on_single(scenario: Scenario) {
    if let Some((store, _)) = connect(REDIS_URL, START_REDIS).await {
        with_cleanup(store, |s| scenario(s)).await;
    }
}

pub async fn on_cluster(scenario: Scenario) {
    if let Some(store) = cluster_store().await {
        with_cleanup(store, |s| scenario(s)).await;
    }
}

/// A store under a fresh prefix, with the prefix; `None` (after a note)
/// when the server is unreachable outside CI.
pub async fn connect(url: &str, how: &str) -> Option<(Arc<RedisStore>, String)> {
    let prefix = format!("dftest-{}", uuid::Uuid::new_v4().simple());
    match RedisStore::connect(url, &prefix).await {
        Ok(store) => Some((Arc::new(store), prefix)),
        Err(e) => {
            unavailable(&format!("Redis at {url} is unreachable ({e})"), how);
            None
        }
    }
}

pub async fn cluster_store() -> Option<Arc<RedisStore>> {
    let how = "Install redis-server and redis-cli (apt-get install redis-server); \
               the test starts its own cluster.";
    match cluster::shared() {
        Ok(cluster) => connect(&cluster.url(), how).await.map(|(s, _)| s),
        Err(e) => {
            unavailable(&format!("no local Redis Cluster: {e}"), how);
            None
        }
    }
}

fn unavailable(what: &str, how: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{what}. Redis is required under CI=true. {how}");
    }
    eprintln!("note: {what}; skipping this test. {how}");
}

/// Runs `body`, then deletes the store's keys even if it panicked.
pub async fn with_cleanup<F, Fut>(store: Arc<RedisStore>, body: F)
where
    F: FnOnce(Arc<RedisStore>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let outcome = tokio::spawn(body(store.clone())).await;
    store.delete_prefix().await.unwrap();
    assert_eq!(store.delete_prefix().await.unwrap(), 0, "keys left behind");
    if let Err(e) = outcome {
        resume_unwind(e.into_panic());
    }
}

/// Every value under `prefix`, whatever the key's type, with its key.
pub async fn dump(prefix: &str) -> Vec<(String, String)> {
    let client = redis::Client::open(REDIS_URL).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut out = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let query = match kind.as_str() {
            "string" => redis::cmd("GET").arg(&key).clone(),
            "hash" => redis::cmd("HVALS").arg(&key).clone(),
            "list" => redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).clone(),
            "set" => redis::cmd("SMEMBERS").arg(&key).clone(),
            "zset" => redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).clone(),
            "stream" => {
                let entries: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                for (_, fields) in entries {
                    out.extend(
                        fields
                            .into_iter()
                            .skip(1)
                            .step_by(2)
                            .map(|v| (key.clone(), v)),
                    );
                }
                continue;
            }
            other => panic!("unexpected key type {other} at {key}"),
        };
        let values: Vec<String> = match kind.as_str() {
            "string" => vec![query.query_async(&mut conn).await.unwrap()],
            _ => query.query_async(&mut conn).await.unwrap(),
        };
        out.extend(values.into_iter().map(|v| (key.clone(), v)));
    }
    out
}

/// No value under `prefix` is a JSON object or list in clear: everything
/// with content is sealed, what is left are ids, names and counters.
pub async fn assert_no_clear_content(prefix: &str) {
    for (key, value) in dump(prefix).await {
        assert!(
            !value.starts_with(['{', '[']),
            "clear content at {key}: {value}"
        );
    }
}
