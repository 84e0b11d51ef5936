//! What the faulty batch came to: the figures it reports, and what must
//! hold of them.

use std::collections::HashMap;
use std::time::Duration;

use deepfleet_proto::ResultLine;
use deepfleet_queue::DeadLetter;
use pretty_assertions::assert_eq;

use crate::audit::Audit;
use crate::faults::Figures;

/// Runs each task makes: the parent and its two subagents.
const RUNS_PER_TASK: usize = 3;

pub struct Verdict {
    /// The fault-free reference's lines, in task order.
    pub expected: Vec<ResultLine>,
    /// The faulty batch's lines, in completion order.
    pub results: Vec<ResultLine>,
    pub audit: Audit,
    pub dead: Vec<DeadLetter>,
    /// Whether the broker logged closing a consumer past its timeout.
    pub timed_out: bool,
    pub figures: Figures,
    pub poll_errors: usize,
    pub took: Duration,
    pub reference_took: Duration,
    pub seed: u64,
}

impl Verdict {
    /// Tasks with more than one result line.
    fn repeated_lines(&self) -> usize {
        let mut lines: HashMap<&str, usize> = HashMap::new();
        for line in &self.results {
            *lines.entry(line.id.as_str()).or_default() += 1;
        }
        lines.values().filter(|&&n| n > 1).count()
    }

    /// One line per task, in task order (`t0`, `t1`, ...).
    fn lines_in_task_order(&self) -> Vec<ResultLine> {
        let mut got = self.results.clone();
        got.sort_by_key(|r| r.id[1..].parse::<usize>().unwrap_or(usize::MAX));
        got.dedup_by(|a, b| a.id == b.id);
        got
    }

    /// Reference lines the faulty batch did not reproduce.
    fn lost(&self) -> usize {
        let got = self.lines_in_task_order();
        self.expected
            .iter()
            .filter(|want| !got.contains(want))
            .count()
    }

    /// Things done twice: steps, tool results, runs, result lines.
    fn duplicated(&self) -> usize {
        let extra_runs = self
            .audit
            .runs
            .saturating_sub(RUNS_PER_TASK * self.expected.len());
        self.audit.duplicated.len() + self.repeated_lines() + extra_runs
    }

    pub fn figures_line(&self) -> String {
        let f = &self.figures;
        format!(
            "chaos figures: runs {} ({} with subagents, {} steps), kills {}, \
             RabbitMQ restarts {} (away {:.1?}, every worker consuming again {:.1?} later), \
             Redis restarts {} (away {:.1?}), \
             pauses {} ({:.1?}; the broker timed the frozen consumer out: {}), \
             workers gone by themselves {}, store errors the follower rode out {}, \
             lost {}, duplicated {}, dead letters {}, wall {:.1?} \
             (fault-free reference, embedded: {:.1?}), seed {}",
            self.expected.len(),
            self.audit.runs,
            self.audit.steps,
            f.kills,
            f.broker_restarts,
            f.broker_down,
            f.resubscribed_in,
            f.redis_restarts,
            f.redis_down,
            f.pauses,
            f.paused_for,
            self.timed_out,
            f.exits,
            self.poll_errors,
            self.lost(),
            self.duplicated(),
            self.dead.len(),
            self.took,
            self.reference_took,
            self.seed,
        )
    }

    /// Fails unless every run is complete and equal to the reference, and
    /// nothing was done twice, dead-lettered, or left to chance.
    pub fn assert_clean(&self) {
        assert_eq!(
            self.lines_in_task_order(),
            self.expected,
            "every result equals the fault-free run's"
        );
        assert_eq!(self.lost(), 0);
        assert_eq!(
            self.audit.duplicated,
            Vec::<String>::new(),
            "nothing done twice"
        );
        assert_eq!(
            self.audit.unfinished,
            Vec::<String>::new(),
            "every run ended well"
        );
        assert_eq!(
            self.audit.runs,
            RUNS_PER_TASK * self.expected.len(),
            "each run and its two subagents, once"
        );
        assert_eq!(self.repeated_lines(), 0, "one result line per task");
        let reasons: Vec<&str> = self.dead.iter().map(|d| d.reason.as_str()).collect();
        assert_eq!(reasons, Vec::<&str>::new(), "nothing dead-lettered");
        let f = &self.figures;
        assert_eq!(f.exits, 0, "no worker gave up by itself");
        assert_eq!(
            (f.broker_restarts, f.redis_restarts, f.pauses),
            (1, 1, 1),
            "every fault struck"
        );
        assert!(f.kills >= 3, "only {} kills", f.kills);
        assert!(
            self.timed_out,
            "the frozen worker outlived the consumer timeout"
        );
    }
}
