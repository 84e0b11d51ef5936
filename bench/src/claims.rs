//! The claim tables: each target of issues #9 and #20 beside what this
//! run measured, and whether it was met or by how much it was missed.

use std::fmt::Write;

use crate::floor::Loopback;
use crate::results::Results;
use crate::stats::{median, percentile, ratio};
use crate::units::{mib, ms};

/// A claim's verdict: met, or missed by how much.
fn verdict(met: Option<bool>, missed_by: impl FnOnce() -> String) -> String {
    match met {
        Some(true) => "met".to_owned(),
        Some(false) => format!("**missed** ({})", missed_by()),
        None => "not measured".to_owned(),
    }
}

/// The targets of issue #9, from items 1 to 6.
pub fn claims_of_issue_9(out: &mut String, r: &Results) {
    let ours = r.embedded.as_ref().ok().and_then(|i| median(&i.plain));
    let theirs = r.deepagents_ok().and_then(|(i, _)| median(&i.plain));
    let overhead_ratio = ratio(theirs, ours);
    let p50 = r.distributed.as_ref().ok().and_then(|i| median(&i.plain));
    let two = r.two_workers();
    let ten_k = r.ten_thousand_in_flight();
    let growth = r.growth_ratio(|b| b.written);
    let count = r
        .tokens
        .as_ref()
        .ok()
        .and_then(|t| Some(t.last()?.count_step / t.first()?.count_step));
    let _ = writeln!(out, "## The claims of issue #9\n");
    let _ = writeln!(
        out,
        "| claim | target | measured | verdict |\n|---|---|---|---|"
    );
    let _ = writeln!(
        out,
        "| harness overhead per step, deepagents ÷ deepfleet (medians) | ≥ 50× | {} | {} |",
        overhead_ratio.map_or("–".into(), |v| format!("{v:.0}×")),
        verdict(overhead_ratio.map(|v| v >= 50.0), || format!(
            "{:.0}× short of 50×",
            50.0 - overhead_ratio.unwrap_or_default()
        )),
    );
    let _ = writeln!(
        out,
        "| distributed step overhead, p50 | ≤ 2 ms | {} ms | {} |",
        ms(p50),
        verdict(p50.map(|v| v <= 2.0), || format!(
            "{:.2} ms over",
            p50.unwrap_or_default() - 2.0
        )),
    );
    let _ = writeln!(
        out,
        "| steps per second, 2 workers, zero model latency | ≥ 2,000 | {} | {} |",
        two.map_or("–".into(), |t| format!("{:.0}", t.steps_per_s())),
        verdict(two.map(|t| t.steps_per_s() >= 2_000.0), || format!(
            "{:.0}% of the target",
            two.map_or(0.0, |t| t.steps_per_s() / 20.0)
        )),
    );
    let _ = writeln!(
        out,
        "| peak RSS of one worker with 10,000 runs in flight | < 1 GB | {} | {} |",
        ten_k.map_or("–".into(), |c| format!("{:.0} MiB", mib(c.peak_rss))),
        verdict(ten_k.map(|c| c.peak_rss < 1_000_000_000), || "over 1 GB"
            .into()),
    );
    let _ = writeln!(
        out,
        "| bytes written per step, last step ÷ step 10 | flat (≈ 1.00) | {} | {} |",
        growth.map_or("–".into(), |v| format!("{v:.3}")),
        verdict(growth.map(|v| (0.97..=1.03).contains(&v)), || "grows"
            .into()),
    );
    let _ = writeln!(
        out,
        "| token counting per step, 1,000 messages ÷ 10 messages | flat (≈ 1.0) | {} | {} |\n",
        count.map_or("–".into(), |v| format!("{v:.2}")),
        verdict(count.map(|v| v < 1.5), || "grows".into()),
    );
}

/// The targets of issue #20, from items 2, 3, 4 and 11.
pub fn claims_of_issue_20(out: &mut String, r: &Results) {
    let cpu = r.cpu.as_ref().ok();
    let per_call = cpu.and_then(|c| c.deepfleet.as_ref().ok().map(|m| m.ms_per_call()));
    let floor = cpu.and_then(|c| c.floor.as_ref().ok().map(|m| m.ms_per_call()));
    let cpu_ratio = cpu.and_then(crate::cpu::Measured::ratio);
    let distributed = r.distributed.as_ref().ok();
    let p50 = distributed.and_then(|i| median(&i.plain));
    let p99 = distributed.and_then(|i| percentile(&i.plain, 99.0));
    let two = r.two_workers();
    let ten_k = r.ten_thousand_in_flight();
    let http_floor = r.floor.as_ref().ok().and_then(|f| median(f));
    let steps_floor = r.throughput_floor.as_ref().ok().map(Loopback::calls_per_s);
    let rss_floor = r.ten_thousand_floor().map(|l| mib(l.peak_rss));
    let _ = writeln!(out, "## The claims of issue #20\n");
    let _ = writeln!(
        out,
        "| claim | target | measured | verdict |\n|---|---|---|---|"
    );
    let _ = writeln!(
        out,
        "| CPU per model call, embedded, 1,000 runs, 50 in flight (item 11) | ≤ 0.2 ms (floor: {} ms) | {} ms | {} |",
        floor.map_or("–".into(), |v| format!("{v:.3}")),
        per_call.map_or("–".into(), |v| format!("{v:.3}")),
        verdict(per_call.map(|v| v <= 0.2), || format!(
            "{:.2}× the target",
            per_call.unwrap_or_default() / 0.2
        )),
    );
    let _ = writeln!(
        out,
        "| CPU per call, deepagents ÷ deepfleet (item 11) | ≥ 80× | {} | {} |",
        cpu_ratio.map_or("–".into(), |v| format!("{v:.0}×")),
        verdict(cpu_ratio.map(|v| v >= 80.0), || format!(
            "{:.0}× short",
            80.0 - cpu_ratio.unwrap_or_default()
        )),
    );
    let _ = writeln!(
        out,
        "| peak RSS of one worker, 10,000 runs in flight (item 4) | ≤ 500 MiB (floor: {} MiB) | {} | {} |",
        rss_floor.map_or("–".into(), |v| format!("{v:.0}")),
        ten_k.map_or("–".into(), |c| format!("{:.0} MiB", mib(c.peak_rss))),
        verdict(ten_k.map(|c| mib(c.peak_rss) <= 500.0), || format!(
            "{:.1}× the target",
            ten_k.map_or(0.0, |c| mib(c.peak_rss) / 500.0)
        )),
    );
    let _ = writeln!(
        out,
        "| distributed step overhead p50 / p99 (item 2) | ≤ 1.3 / ≤ 5 ms (floor: {} ms) | {} / {} ms | {} |",
        ms(http_floor),
        ms(p50),
        ms(p99),
        verdict(p50.zip(p99).map(|(a, b)| a <= 1.3 && b <= 5.0), || "over"
            .into()),
    );
    let _ = writeln!(
        out,
        "| steps per second, 2 workers, latency 0 (item 3) | ≥ 4,000 (floor: {}) | {} | {} |",
        steps_floor.map_or("–".into(), |v| format!("{v:.0}")),
        two.map_or("–".into(), |t| format!("{:.0}", t.steps_per_s())),
        verdict(two.map(|t| t.steps_per_s() >= 4_000.0), || format!(
            "{:.0}% of the target",
            two.map_or(0.0, |t| t.steps_per_s() / 40.0)
        )),
    );
    let read = r.growth_ratio(|b| b.read);
    let steps = r.growth.as_ref().map_or(0, |g| g.len().saturating_sub(1));
    let _ = writeln!(
        out,
        "| bytes read from Redis per step, step {steps} ÷ step 10 (item 5) | flat (within 10 %) | {} | {} |\n",
        read.map_or("–".into(), |v| format!("{v:.3}")),
        verdict(read.map(|v| (0.9..=1.1).contains(&v)), || "grows".into()),
    );
}
