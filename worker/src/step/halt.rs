//! Why a run stops before its next step, whatever the step would do: a
//! cancel request, its deadline, or a budget it spends from that is
//! spent. Checked from stored state when a step message arrives, so every
//! worker stops a run at the same point, and a redelivery stops it again.

use chrono::{DateTime, Utc};
use deepfleet_proto::{ErrorCode, RunError, RunRecord, RunStatus};
use deepfleet_store::{Spend, StoreError};

use crate::step::spend;

/// Why a run stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Halt {
    /// Someone asked for it (or its parent ended).
    Cancelled,
    /// It passed its deadline.
    Timeout,
    /// This account spent its budget.
    BudgetExceeded {
        /// The account.
        account: String,
    },
}

impl Halt {
    /// What `run` ends with when this stops it. A subagent past its
    /// deadline was handed its parent's: it ends `cancelled`, as its
    /// parent's end would cancel it, and the parent ends `timeout`.
    pub fn ending(&self, run: &RunRecord) -> (RunStatus, RunError) {
        let error = |code, message: String| RunError { code, message };
        match self {
            Halt::Cancelled => (
                RunStatus::Cancelled,
                error(ErrorCode::Cancelled, "the run was cancelled".to_owned()),
            ),
            Halt::Timeout if run.parent.is_some() => (
                RunStatus::Cancelled,
                error(
                    ErrorCode::Cancelled,
                    "the run it works for passed its deadline".to_owned(),
                ),
            ),
            Halt::Timeout => (
                RunStatus::Timeout,
                error(
                    ErrorCode::Timeout,
                    match run.timeout_secs {
                        Some(secs) => {
                            format!("the run passed its deadline ({secs} s from its first step)")
                        }
                        None => "the run passed its deadline".to_owned(),
                    },
                ),
            ),
            Halt::BudgetExceeded { account } => (
                RunStatus::Error,
                error(
                    ErrorCode::BudgetExceeded,
                    format!("the budget of {account} is spent"),
                ),
            ),
        }
    }
}

/// Whether `run` must stop at `now`, and why: a cancel request first,
/// then its deadline, then its budgets (which cost a read per account,
/// for runs that have any).
pub async fn check(
    store: &dyn Spend,
    run: &RunRecord,
    cancel_requested: bool,
    now: DateTime<Utc>,
) -> Result<Option<Halt>, StoreError> {
    if cancel_requested {
        return Ok(Some(Halt::Cancelled));
    }
    if run.past_deadline(now) {
        return Ok(Some(Halt::Timeout));
    }
    Ok(spend::exhausted(store, run)
        .await?
        .map(|budget| Halt::BudgetExceeded {
            account: budget.account.clone(),
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{Budget, ParentLink};
    use deepfleet_store::embedded::EmbeddedStore;
    use pretty_assertions::assert_eq;

    #[tokio::test]
    async fn cancel_comes_before_the_deadline_before_the_budget() {
        let store = EmbeddedStore::new();
        let now = Utc::now();
        let past = now - chrono::TimeDelta::seconds(1);
        let run = RunRecord {
            deadline: Some(past),
            budgets: vec![Budget::batch("b", 0)],
            ..RunRecord::new("r", "t", "a", now)
        };
        assert_eq!(
            check(&store, &run, true, now).await.unwrap(),
            Some(Halt::Cancelled)
        );
        assert_eq!(
            check(&store, &run, false, now).await.unwrap(),
            Some(Halt::Timeout)
        );
        let in_time = RunRecord {
            deadline: Some(now + chrono::TimeDelta::seconds(60)),
            ..run.clone()
        };
        assert_eq!(
            check(&store, &in_time, false, now).await.unwrap(),
            Some(Halt::BudgetExceeded {
                account: "batch:b".into()
            })
        );
        let free = RunRecord {
            budgets: Vec::new(),
            ..in_time
        };
        assert_eq!(check(&store, &free, false, now).await.unwrap(), None);
    }

    #[test]
    fn a_subagent_past_its_parents_deadline_is_cancelled() {
        let now = Utc::now();
        let top = RunRecord {
            timeout_secs: Some(30),
            ..RunRecord::new("r", "t", "a", now)
        };
        let (status, error) = Halt::Timeout.ending(&top);
        assert_eq!(status, RunStatus::Timeout);
        assert_eq!(error.code, ErrorCode::Timeout);
        assert!(error.message.contains("30 s"), "{}", error.message);
        let child = RunRecord {
            parent: Some(ParentLink {
                run_id: "r".into(),
                thread_id: "t".into(),
                tool_call_id: "c".into(),
            }),
            ..RunRecord::new("c", "tc", "a", now)
        };
        assert_eq!(Halt::Timeout.ending(&child).0, RunStatus::Cancelled);
        let (status, error) = Halt::BudgetExceeded {
            account: "batch:b".into(),
        }
        .ending(&top);
        assert_eq!(
            (status, error.code),
            (RunStatus::Error, ErrorCode::BudgetExceeded)
        );
    }
}
