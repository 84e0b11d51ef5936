//! The webhook delivery loop: every scheduler instance sends the Run
//! resource of each ended run that asked for a webhook (`payload.rs`),
//! and tries again with backoff while the receiver fails (`deliver.rs`). It
//! renders runs through the runs service; what it shares with the intake
//! (the configuration, signing, destination checks) is
//! [`crate::webhooks`].

mod deliver;
mod payload;

pub use deliver::{PAGE, WebhookDeliverer};
