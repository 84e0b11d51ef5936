//! The run budget: how many more runs a run may start below it, so that a
//! top-level run and all its subagents, at every depth, make at most
//! `limits.max_total_runs` runs together, however deep they nest and
//! however often the model delegates.
//!
//! No counter is shared: the budget travels down the tree and back up
//! with the runs. A top-level run starts with the limit less itself.
//! Each child a turn starts costs one, and is handed a share of what is
//! left (an equal part, one part staying with the parent for its later
//! turns); a child that ends hands back what it did not use with its
//! result. So the runs of a tree never exceed the limit, a redelivered
//! step spends exactly what its first delivery spent (the budget is
//! committed with the step), and the split is a function of the step's
//! data alone. A delegation the budget cannot pay for never starts: the
//! turn guard makes it a tool error the model reads.

use deepfleet_proto::{AgentSpec, ChildRun, RunRecord};

/// Runs `run` may still start below it.
pub fn left(run: &RunRecord, spec: &AgentSpec) -> u32 {
    run.run_budget
        .unwrap_or_else(|| spec.limits.total_runs().saturating_sub(1))
}

/// Spends `run`'s budget on the `children` one turn starts (the guard let
/// through no more than [`left`]): one each, and each child gets its share
/// of the rest.
pub fn spend(run: &mut RunRecord, spec: &AgentSpec, children: &mut [ChildRun]) {
    if children.is_empty() {
        return;
    }
    let n = u32::try_from(children.len()).unwrap_or(u32::MAX);
    let rest = left(run, spec).saturating_sub(n);
    let share = rest / n.saturating_add(1);
    for child in children.iter_mut() {
        child.run_budget = share;
    }
    run.run_budget = Some(rest - share * n);
}

/// Takes back what a finished child did not use.
pub fn refund(run: &mut RunRecord, spec: &AgentSpec, unused: u32) {
    run.run_budget = Some(left(run, spec).saturating_add(unused));
}

/// What the model reads for a delegation past the budget.
pub fn refusal(spec: &AgentSpec) -> String {
    format!(
        "Error: this task would exceed limits.max_total_runs ({} runs in all for one top-level \
         run, subagents at every depth included); no more subagents can start. Do this part \
         of the work yourself.",
        spec.limits.total_runs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use pretty_assertions::assert_eq;

    fn spec(total: u32) -> AgentSpec {
        let mut spec = AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap();
        spec.limits.max_total_runs = total;
        spec
    }

    fn children(n: usize) -> Vec<ChildRun> {
        (0..n)
            .map(|i| ChildRun {
                run_id: format!("c{i}"),
                thread_id: format!("t{i}"),
                tool_call_id: format!("call{i}"),
                subagent: "general-purpose".into(),
                description: "go".into(),
                traceparent: None,
                detached: false,
                run_budget: 0,
            })
            .collect()
    }

    #[test]
    fn a_top_level_run_starts_with_the_limit_less_itself() {
        let run = RunRecord::new("r", "t", "a", Utc::now());
        assert_eq!(left(&run, &spec(100)), 99);
        assert_eq!(left(&run, &spec(1)), 0);
    }

    #[test]
    fn children_cost_one_each_and_share_the_rest_with_the_parent() {
        let spec = spec(100);
        let mut run = RunRecord::new("r", "t", "a", Utc::now());
        let mut kids = children(3);
        spend(&mut run, &spec, &mut kids);
        // 99 - 3 = 96, a quarter each.
        assert!(kids.iter().all(|c| c.run_budget == 24));
        assert_eq!(run.run_budget, Some(24));
        refund(&mut run, &spec, 10);
        assert_eq!(left(&run, &spec), 34);
    }

    /// Whatever the tree's shape, the runs it makes fit the limit: a
    /// model that delegates as much as it is let, at every run.
    #[test]
    fn a_tree_that_always_delegates_stays_within_the_limit() {
        fn grow(budget: u32, fanout: u32, depth: u32) -> u32 {
            let spec = spec(10_000);
            let mut run = RunRecord {
                run_budget: Some(budget),
                ..RunRecord::new("r", "t", "a", Utc::now())
            };
            let mut made = 0;
            // Three turns of delegation, each as wide as allowed.
            for _ in 0..3 {
                let n = fanout.min(left(&run, &spec));
                if n == 0 || depth == 0 {
                    break;
                }
                let mut kids = children(n as usize);
                spend(&mut run, &spec, &mut kids);
                for kid in kids {
                    let below = grow(kid.run_budget, fanout, depth - 1);
                    made += 1 + below;
                    refund(&mut run, &spec, kid.run_budget - below);
                }
            }
            made
        }
        for (total, fanout) in [(100, 16), (12, 3), (1, 64), (10_000, 64)] {
            let made = 1 + grow(total - 1, fanout, 8);
            assert!(made <= total, "{made} runs under a limit of {total}");
            assert!(made > 1 || total == 1);
        }
    }

    #[test]
    fn the_cap_holds_for_a_spec_that_skipped_validation() {
        let run = RunRecord::new("r", "t", "a", Utc::now());
        assert_eq!(left(&run, &spec(u32::MAX)), 9_999);
    }
}
