//! The scheduler: takes runs in, follows them to the end.
//!
//! [`Intake`] validates a request, writes the run record and publishes its
//! first step; [`BatchFollower`] turns finished runs into result lines.
//! Both work the same over the embedded and the distributed backends.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod batch;
mod error;
mod intake;

pub use batch::{BatchFollower, result_line};
pub use error::SchedulerError;
pub use intake::{Intake, validate_task};
