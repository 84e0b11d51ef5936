//! One set of scenarios per store capability, each run on every back end:
//! the embedded store, Redis on 127.0.0.1:6379, and a three-node Redis
//! Cluster the tests start themselves. Then what only Redis can show
//! (`redis_only.rs`): write volume per step, corrupt values, tear-down.
//!
//! Each scenario also runs with encryption at rest on: on an embedded
//! store persisted to a sealed state file, and on single Redis with a
//! keyring, after which no value under the prefix may be a JSON object
//! or list in clear.
//!
//! A capability's file holds its scenarios and ends with
//! `conformance!(scenario, ...)`, which makes a `#[tokio::test]` of each
//! for every back end (`<capability>::{embedded, embedded_sealed,
//! redis_single, redis_sealed, redis_cluster}::<scenario>`). A scenario that needs only its capability
//! takes that trait (`Arc<dyn Specs>`); one that needs others takes
//! `Arc<dyn Store>`.
//!
//! Each Redis test uses a key prefix of its own and deletes its keys at the
//! end, pass or fail, since the server is shared. A server that is missing
//! skips the Redis tests with a note, and fails them under `CI=true`.
// Helpers shared by the tests are not `#[test]` functions, which clippy's
// `allow-unwrap-in-tests` does not cover.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// A test per scenario and back end, in modules `embedded`,
/// `redis_single` and `redis_cluster` of the invoking capability module.
macro_rules! conformance {
    ($($scenario:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test]
                async fn $scenario() {
                    crate::harness::on_embedded(|s| Box::pin(super::$scenario(s))).await;
                }
            )*
        }
        mod embedded_sealed {
            $(
                #[tokio::test]
                async fn $scenario() {
                    crate::harness::on_embedded_sealed(|s| Box::pin(super::$scenario(s))).await;
                }
            )*
        }
        mod redis_single {
            $(
                #[tokio::test]
                async fn $scenario() {
                    crate::harness::on_single(|s| Box::pin(super::$scenario(s))).await;
                }
            )*
        }
        mod redis_sealed {
            $(
                #[tokio::test]
                async fn $scenario() {
                    crate::harness::on_sealed(|s| Box::pin(super::$scenario(s))).await;
                }
            )*
        }
        mod redis_cluster {
            $(
                #[tokio::test]
                async fn $scenario() {
                    crate::harness::on_cluster(|s| Box::pin(super::$scenario(s))).await;
                }
            )*
        }
    };
}

#[path = "conformance/cluster.rs"]
mod cluster;
#[path = "conformance/harness.rs"]
mod harness;
#[path = "conformance/rate_limit.rs"]
mod rate_limit;
#[path = "conformance/redis_only.rs"]
mod redis_only;
#[path = "conformance/sealed.rs"]
mod sealed;
#[path = "conformance/support.rs"]
mod support;

#[path = "conformance/admission.rs"]
mod admission;
#[path = "conformance/batches.rs"]
mod batches;
#[path = "conformance/checkpoints.rs"]
mod checkpoints;
#[path = "conformance/fan_in.rs"]
mod fan_in;
#[path = "conformance/history.rs"]
mod history;
#[path = "conformance/items.rs"]
mod items;
#[path = "conformance/record_index.rs"]
mod record_index;
#[path = "conformance/records.rs"]
mod records;
#[path = "conformance/retention.rs"]
mod retention;
#[path = "conformance/run_streams.rs"]
mod run_streams;
#[path = "conformance/runs.rs"]
mod runs;
#[path = "conformance/slots.rs"]
mod slots;
#[path = "conformance/specs.rs"]
mod specs;
#[path = "conformance/spend.rs"]
mod spend;
