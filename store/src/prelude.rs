//! Every capability trait in one import: `use deepfleet_store::prelude::*`
//! makes all store methods callable on a concrete store
//! ([`crate::embedded::EmbeddedStore`], [`crate::redis::RedisStore`]).
//! `dyn Store` and `S: Store` need no import for that: a trait object's
//! and a bound's supertrait methods are always in scope.
//!
//! ```
//! use deepfleet_store::embedded::EmbeddedStore;
//! use deepfleet_store::prelude::*;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let store = EmbeddedStore::new();
//! store.push_batch_done("b1", "r1").await.unwrap();
//! assert_eq!(store.pop_batch_done("b1", 10).await.unwrap(), ["r1"]);
//! assert!(store.get_spec("nobody").await.unwrap().is_none());
//! # });
//! ```

pub use crate::Store;
pub use crate::admission::Admission;
pub use crate::batches::Batches;
pub use crate::checkpoints::Checkpoints;
pub use crate::fan_in::FanIn;
pub use crate::history::History;
pub use crate::items::Items;
pub use crate::record_index::RecordIndex;
pub use crate::records::Records;
pub use crate::retention::Retention;
pub use crate::run_streams::RunStreams;
pub use crate::runs::Runs;
pub use crate::slots::Slots;
pub use crate::specs::Specs;
pub use crate::spend::Spend;
