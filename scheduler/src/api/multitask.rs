//! Multitask strategies ("double texting"): what a new run on a thread
//! does when the thread already has a run in flight.

use super::error::ApiError;

/// A run request's `multitask_strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Refuse with 409 while the thread is busy.
    Reject,
    /// Wait for the runs ahead (the server default).
    Enqueue,
    /// Cancel the runs ahead, keeping their work, then run.
    Interrupt,
    /// Cancel the runs ahead and drop them from the thread's run list.
    Rollback,
}

impl Strategy {
    /// Parses the request field; absent means `enqueue`.
    pub fn parse(value: Option<&str>) -> Result<Strategy, ApiError> {
        match value {
            None | Some("enqueue") => Ok(Strategy::Enqueue),
            Some("reject") => Ok(Strategy::Reject),
            Some("interrupt") => Ok(Strategy::Interrupt),
            Some("rollback") => Ok(Strategy::Rollback),
            Some(other) => Err(ApiError::unprocessable(format!(
                "multitask_strategy must be one of reject, enqueue, interrupt, rollback; got '{other}'"
            ))),
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Reject => "reject",
            Strategy::Enqueue => "enqueue",
            Strategy::Interrupt => "interrupt",
            Strategy::Rollback => "rollback",
        }
    }
}

/// What to do with a new run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Start it now.
    Start,
    /// Queue it behind the runs ahead.
    Queue,
    /// Cancel the runs ahead (dropping them when `rollback`), and queue
    /// it: it starts once the cancelled run has stopped at its step
    /// boundary.
    Supersede {
        /// Drop the cancelled runs from the thread's list.
        rollback: bool,
    },
}

/// Decides for a thread with `ahead` runs in flight or queued.
pub fn admit(strategy: Strategy, ahead: usize) -> Result<Admission, ApiError> {
    if ahead == 0 {
        return Ok(Admission::Start);
    }
    match strategy {
        Strategy::Reject => Err(ApiError::conflict(
            "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.",
        )),
        Strategy::Enqueue => Ok(Admission::Queue),
        Strategy::Interrupt => Ok(Admission::Supersede { rollback: false }),
        Strategy::Rollback => Ok(Admission::Supersede { rollback: true }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn an_idle_thread_starts_whatever_the_strategy() {
        for s in [
            Strategy::Reject,
            Strategy::Enqueue,
            Strategy::Interrupt,
            Strategy::Rollback,
        ] {
            assert_eq!(admit(s, 0).unwrap(), Admission::Start);
        }
    }

    #[test]
    fn a_busy_thread_follows_the_strategy() {
        let err = admit(Strategy::Reject, 1).unwrap_err();
        assert_eq!(err.status, StatusCode::CONFLICT);
        assert!(err.detail.starts_with("Thread is already running a task."));
        assert_eq!(admit(Strategy::Enqueue, 2).unwrap(), Admission::Queue);
        assert_eq!(
            admit(Strategy::Interrupt, 1).unwrap(),
            Admission::Supersede { rollback: false }
        );
        assert_eq!(
            admit(Strategy::Rollback, 1).unwrap(),
            Admission::Supersede { rollback: true }
        );
    }

    #[test]
    fn strategies_parse_with_enqueue_default() {
        assert_eq!(Strategy::parse(None).unwrap(), Strategy::Enqueue);
        assert_eq!(
            Strategy::parse(Some("rollback")).unwrap().as_str(),
            "rollback"
        );
        assert_eq!(
            Strategy::parse(Some("later")).unwrap_err().status,
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
