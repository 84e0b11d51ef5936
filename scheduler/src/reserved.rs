//! The fleet's own queues, which a submission's `reply_to` must not name.
//!
//! An answer is published to the default exchange with `reply_to` as its
//! routing key, so a `reply_to` naming the step queue would hand workers
//! an answer as if it were a step, and one naming the submission queue
//! would feed the answer back in as a submission. Every queue the fleet
//! declares is derived from a base name (the step queue's, the
//! submission queue's), so those bases are what is reserved.

use deepfleet_queue::amqp::derived_from;

/// The base names of the fleet's queues.
#[derive(Debug, Clone, Default)]
pub struct ReservedQueues {
    bases: Vec<String>,
}

impl ReservedQueues {
    /// Reserves every queue derived from each of `bases` (the base itself,
    /// its dead letters, delays and results).
    pub fn new(bases: impl IntoIterator<Item = impl Into<String>>) -> Self {
        ReservedQueues {
            bases: bases.into_iter().map(Into::into).collect(),
        }
    }

    /// Why an answer may not go to `reply_to`, if it names one of the
    /// fleet's queues.
    pub fn check(&self, reply_to: Option<&str>) -> Result<(), String> {
        let Some(queue) = reply_to.filter(|q| !q.is_empty()) else {
            return Ok(());
        };
        match self.bases.iter().find(|base| derived_from(base, queue)) {
            Some(base) => Err(format!(
                "reply_to `{queue}` names an internal queue of the fleet (one of `{base}`'s); \
                 name a queue of your own, or none to be answered on the results queue"
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fleets_queues_are_reserved_and_others_are_not() {
        let reserved = ReservedQueues::new(["deepfleet.steps", "deepfleet.steps.submissions"]);
        for queue in [
            "deepfleet.steps",
            "deepfleet.steps.dead",
            "deepfleet.steps.dlx",
            "deepfleet.steps.delay.1000",
            "deepfleet.steps.submissions",
            "deepfleet.steps.submissions.dead",
            "deepfleet.steps.submissions.results",
        ] {
            let err = reserved.check(Some(queue)).unwrap_err();
            assert!(err.contains(&format!("`{queue}`")), "{err}");
        }
        for queue in [
            "amq.gen-Xa2",
            "billing.replies",
            "deepfleet.steps.replies",
            "deepfleet.steps.delay.soon",
            "deepfleet.stepsx",
        ] {
            assert_eq!(reserved.check(Some(queue)), Ok(()), "{queue}");
        }
        assert_eq!(reserved.check(None), Ok(()));
        assert_eq!(reserved.check(Some("")), Ok(()));
    }
}
