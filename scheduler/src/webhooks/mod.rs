//! Run-completion webhooks (see `docs/webhooks.md`).
//!
//! A run created with a `webhook` (over HTTP or the submission queue) is
//! accepted only with an `http`/`https` URL and a signing secret for its
//! tenant, to a public address unless private ones are allowed
//! ([`WebhookConfig::check`], [`destination`]); a delivery record is written with
//! it ([`crate::repo::webhooks`]). The delivery loop of every scheduler
//! instance ([`crate::webhook_delivery`]) sends the run's Run resource
//! when the run ends, signed as Standard Webhooks does ([`sign`]), and
//! tries again with backoff ([`backoff`]) while the receiver fails,
//! recording each attempt. This module is what that loop and the intake
//! share; it knows nothing of runs.

pub mod backoff;
pub mod config;
pub mod destination;
pub mod error;
pub mod send;
pub mod sign;
mod target;

pub use config::WebhookConfig;
pub use error::WebhookError;
pub use sign::Secret;
