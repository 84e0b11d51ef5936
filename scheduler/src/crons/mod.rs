//! Crons: schedules that create runs, owned by the fleet rather than by
//! one scheduler.
//!
//! A cron is a record ([`crate::repo::crons`]) plus its entry in one due
//! index, scored by the next fire time. Every scheduler runs a
//! [`CronLoop`] that reads the earliest entries; for each one due it
//! moves the entry to a lease with a compare-and-set on its score
//! ([`RecordIndex::index_move_at`](deepfleet_store::RecordIndex::index_move_at)).
//! Of the schedulers that saw the same due entry exactly one moves it,
//! and only that one creates the run, then moves the entry on to the
//! next fire time; so a fire happens once however many schedulers run,
//! and one cron's runs are made one at a time. The state is all in the
//! store, so a restarted scheduler (or another one) carries on.
//!
//! **Missed fires.** A fire time passed while no scheduler ran is fired
//! once, late; the times after it that also passed more than a few
//! seconds before are skipped, and the schedule resumes from the present
//! (as the Agent Server does). Times a busy scheduler claims a little
//! late are each fired.
//!
//! **At most once.** The claim comes before the run is created: a
//! scheduler that dies between the two loses that one fire (its lease
//! runs out and the cron is rescheduled), rather than a second scheduler
//! firing it again.

pub(crate) mod fire;
pub mod schedule;

pub use fire::{CronLoop, fire_metadata, following};
pub use schedule::{Schedule, ScheduleError};
