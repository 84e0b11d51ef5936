//! BENCHMARKS.md: the measurements as tables, the claims of issues #9
//! and #20 as ratios against their targets, and the plots for items 4 to
//! 6.

use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

use deepfleet_testkit::growth::StepBytes;

use crate::floor::Loopback;
use crate::plot::{Chart, Series, draw};
use crate::python::PythonReport;
use crate::scenario::Intervals;
use crate::stats::{median, percentile, ratio};
use crate::throughput::{Concurrency, Throughput};
use crate::tokens::{CheckCost, TokenCost};

/// A measurement, or why it failed.
pub type Section<T> = Result<T, String>;

/// Everything measured.
pub struct Results {
    /// Item 1, deepfleet embedded.
    pub embedded: Section<Intervals>,
    /// Item 1: the scripted server and loopback HTTP alone, ms per call.
    pub floor: Section<Vec<f64>>,
    /// Item 1, deepagents (absent without a venv).
    pub deepagents: Option<Section<(Intervals, PythonReport)>>,
    /// Item 2.
    pub distributed: Section<Intervals>,
    /// Item 3.
    pub throughput: Section<Vec<Throughput>>,
    /// Item 3: the bare client's calls per second, same server and load.
    pub throughput_floor: Section<Loopback>,
    /// Item 4, deepfleet.
    pub concurrency: Section<Vec<Concurrency>>,
    /// Item 4: the bare client holding each level's calls in flight.
    pub concurrency_floor: Section<Vec<Loopback>>,
    /// Item 4, deepagents.
    pub python_concurrency: Option<Section<Vec<Concurrency>>>,
    /// Item 5: bytes written and read per step.
    pub growth: Section<Vec<StepBytes>>,
    /// Item 6: token counting.
    pub tokens: Section<Vec<TokenCost>>,
    /// Item 6: the compression-check bench's table.
    pub check: Option<Section<Vec<CheckCost>>>,
    /// Item 7: memory per finished run, before and after expiry.
    pub retention: Section<crate::retention::Memory>,
    /// Item 8: thread search as a tenant's threads grow.
    pub search: Section<Vec<crate::search::SearchTimes>>,
    /// Item 9: a batch under provider rate limits.
    pub rate_limits: Section<crate::rate_limits::Limited>,
    /// Item 10: batch admission, priorities and sharing.
    pub admission: Section<crate::admission::Numbers>,
    /// Item 11: CPU per model call.
    pub cpu: Section<crate::cpu::Measured>,
    /// Why deepagents is missing, when it is.
    pub python_note: String,
    /// A `--quick` pass.
    pub quick: bool,
    /// How long the whole bench took.
    pub elapsed: Duration,
}

impl Results {
    /// Item 5's bytes per step at its last step ÷ at step 10, written or
    /// read as `bytes` picks.
    pub fn growth_ratio(&self, bytes: fn(&StepBytes) -> u64) -> Option<f64> {
        let g = self.growth.as_ref().ok()?;
        let last = bytes(g.last()?) as f64;
        Some(last / bytes(g.get(10)?) as f64)
    }

    /// The sections that failed, as `item: error`.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut note = |name: &str, error: Option<&String>| {
            if let Some(e) = error {
                out.push(format!("{name}: {e}"));
            }
        };
        note("1. embedded", self.embedded.as_ref().err());
        note(
            "1. deepagents",
            self.deepagents.as_ref().and_then(|s| s.as_ref().err()),
        );
        note("2. distributed", self.distributed.as_ref().err());
        note("3. throughput", self.throughput.as_ref().err());
        note("3. throughput, floor", self.throughput_floor.as_ref().err());
        note("4. concurrency", self.concurrency.as_ref().err());
        note(
            "4. concurrency, floor",
            self.concurrency_floor.as_ref().err(),
        );
        note(
            "4. deepagents",
            self.python_concurrency
                .as_ref()
                .and_then(|s| s.as_ref().err()),
        );
        note("5. growth", self.growth.as_ref().err());
        note("6. tokens", self.tokens.as_ref().err());
        note("9. rate limits", self.rate_limits.as_ref().err());
        note(
            "6. compression check",
            self.check.as_ref().and_then(|s| s.as_ref().err()),
        );
        note("7. retention", self.retention.as_ref().err());
        note("8. thread search", self.search.as_ref().err());
        note("10. admission", self.admission.as_ref().err());
        if let Ok(cpu) = &self.cpu {
            note("11. CPU, deepfleet", cpu.deepfleet.as_ref().err());
            note("11. CPU, floor", cpu.floor.as_ref().err());
        }
        out
    }

    /// Item 3 with two worker processes, as both claim tables read it.
    fn two_workers(&self) -> Option<&Throughput> {
        let measured = self.throughput.as_ref().ok()?;
        measured.iter().find(|t| t.workers == 2)
    }

    /// Item 4's level of 10,000 runs in flight (the first at or above it).
    fn ten_thousand_in_flight(&self) -> Option<&Concurrency> {
        let measured = self.concurrency.as_ref().ok()?;
        measured.iter().find(|c| c.runs >= 10_000)
    }

    /// Item 4's floor at the level [`Results::ten_thousand_in_flight`]
    /// reads.
    fn ten_thousand_floor(&self) -> Option<&Loopback> {
        let measured = self.concurrency_floor.as_ref().ok()?;
        measured.iter().find(|l| l.load.in_flight >= 10_000)
    }

    fn deepagents_ok(&self) -> Option<&(Intervals, PythonReport)> {
        self.deepagents.as_ref().and_then(|s| s.as_ref().ok())
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A claim's verdict: met, or missed by how much.
fn verdict(met: Option<bool>, missed_by: impl FnOnce() -> String) -> String {
    match met {
        Some(true) => "met".to_owned(),
        Some(false) => format!("**missed** ({})", missed_by()),
        None => "not measured".to_owned(),
    }
}

/// Renders the report, drawing the plots into `plots`.
pub fn render(r: &Results, plots: &Path) -> anyhow::Result<String> {
    let mut out = String::new();
    header(&mut out, r);
    summary(&mut out, r);
    claims_of_issue_20(&mut out, r);
    overhead(&mut out, r);
    fleet(&mut out, r);
    concurrency(&mut out, r, plots)?;
    growth(&mut out, r, plots)?;
    tokens(&mut out, r, plots)?;
    crate::retention::render(&mut out, &r.retention);
    crate::search::render(&mut out, &r.search);
    crate::rate_limits::render(&mut out, &r.rate_limits);
    crate::admission::render(&mut out, &r.admission);
    crate::cpu::render(&mut out, &r.cpu);
    out.push_str(include_str!("../method.md"));
    out.push_str(include_str!("../analysis.md"));
    Ok(out)
}

/// Puts item `item`'s section into the report `text` in place of the one
/// under the same number, else before the method notes: an item measured
/// alone rewrites its own section and keeps the rest as last measured.
pub fn replace_section(text: &str, item: u32, section: &str) -> String {
    let heading = format!("## {item}. ");
    if let Some(start) = text.find(&heading) {
        let body = start + heading.len();
        let end = text[body..]
            .find("\n## ")
            .map_or(text.len(), |i| body + i + 1);
        return format!("{}{section}{}", &text[..start], &text[end..]);
    }
    match text.find("## How it is measured") {
        Some(at) => format!("{}{section}{}", &text[..at], &text[at..]),
        None => format!("{text}\n{section}"),
    }
}

fn header(out: &mut String, r: &Results) {
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Generated by `make bench` on {} in {:.0} s{}. **Ratios, not absolute times, are the claims**: \
         every system here shares one 2-core machine with RabbitMQ, Redis and the scripted model server, \
         so absolute numbers move with the machine; ratios measured side by side do not.\n",
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        r.elapsed.as_secs_f64(),
        if r.quick {
            " (`--quick`: small sizes, not for publishing)"
        } else {
            ""
        },
    );
    let _ = writeln!(out, "| machine | |\n|---|---|");
    for (label, value) in crate::machine::facts() {
        let _ = writeln!(out, "| {label} | {value} |");
    }
    match r.deepagents_ok() {
        Some((_, report)) => {
            let versions: Vec<String> = report
                .versions
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let _ = writeln!(
                out,
                "| Python | {} ({}) |",
                report.python,
                versions.join(", ")
            );
        }
        None => {
            let _ = writeln!(
                out,
                "| Python | deepagents not measured: {} |",
                r.python_note
            );
        }
    }
    out.push('\n');
}

fn summary(out: &mut String, r: &Results) {
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
fn claims_of_issue_20(out: &mut String, r: &Results) {
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

fn intervals_row(out: &mut String, name: &str, i: &Section<Intervals>) {
    match i {
        Ok(i) => {
            let _ = writeln!(
                out,
                "| {name} | {} | {} | {} | {} | {} | {} |",
                i.complete_runs,
                i.plain.len(),
                ms(median(&i.plain)),
                ms(percentile(&i.plain, 90.0)),
                ms(percentile(&i.plain, 99.0)),
                ms(median(&i.task)),
            );
        }
        Err(e) => {
            let _ = writeln!(out, "| {name} | failed: {e} | | | | | |");
        }
    }
}

fn overhead(out: &mut String, r: &Results) {
    let _ = writeln!(out, "## 1–2. Framework time per step (model latency 0)\n");
    let _ = writeln!(
        out,
        "Milliseconds between consecutive model calls of a run's main agent, taken at the scripted server. \
         *plain* steps call one tool (write, read, edit, ls, glob, grep); the *task* step runs a whole \
         2-call subagent.\n"
    );
    let _ = writeln!(
        out,
        "| system | runs | plain steps | plain p50 | plain p90 | plain p99 | task step p50 |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    intervals_row(out, "deepfleet, embedded", &r.embedded);
    match &r.deepagents {
        Some(Ok((i, _))) => intervals_row(
            out,
            "deepagents 0.7 (Python)",
            &Ok(Intervals {
                plain: i.plain.clone(),
                task: i.task.clone(),
                complete_runs: i.complete_runs,
            }),
        ),
        Some(Err(e)) => intervals_row(out, "deepagents 0.7 (Python)", &Err(e.clone())),
        None => {
            let _ = writeln!(
                out,
                "| deepagents 0.7 (Python) | not measured: {} | | | | | |",
                r.python_note
            );
        }
    }
    intervals_row(
        out,
        "deepfleet, distributed (2 workers, RabbitMQ + Redis)",
        &r.distributed,
    );
    let floor = r.floor.as_ref().ok().and_then(|f| median(f));
    match &r.floor {
        Ok(f) => {
            let _ = writeln!(
                out,
                "| floor: scripted server + loopback HTTP, no harness | – | {} | {} | {} | {} | – |",
                f.len(),
                ms(median(f)),
                ms(percentile(f, 90.0)),
                ms(percentile(f, 99.0)),
            );
        }
        Err(e) => {
            let _ = writeln!(out, "| floor | failed: {e} | | | | | |");
        }
    }
    let ours = r.embedded.as_ref().ok();
    if let (Some(ours), Some((theirs, _))) = (ours, r.deepagents_ok()) {
        let (a, b) = (median(&theirs.plain), median(&ours.plain));
        let net = |v: Option<f64>| v.zip(floor).map(|(v, f)| v - f);
        let _ = writeln!(
            out,
            "\nRatio deepagents ÷ deepfleet embedded: plain steps **{:.0}×**, task steps **{:.0}×** \
             (medians). Both intervals contain the floor (the same server answering the same kind of \
             request); net of its median, plain steps are **{:.0}×** apart.",
            ratio(a, b).unwrap_or_default(),
            ratio(median(&theirs.task), median(&ours.task)).unwrap_or_default(),
            ratio(net(a), net(b)).unwrap_or_default(),
        );
    }
    out.push('\n');
}

fn fleet(out: &mut String, r: &Results) {
    let _ = writeln!(
        out,
        "## 3. Throughput (model latency 0, RabbitMQ + Redis)\n"
    );
    match &r.throughput {
        Ok(rows) => {
            let _ = writeln!(
                out,
                "| worker processes | runs | steps | wall (s) | runs/s | steps/s |\n|---:|---:|---:|---:|---:|---:|"
            );
            for t in rows {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {:.2} | {:.0} | {:.0} |",
                    t.workers,
                    t.runs,
                    t.steps,
                    t.wall_s,
                    t.runs_per_s(),
                    t.steps_per_s()
                );
            }
            match &r.throughput_floor {
                Ok(floor) => {
                    let _ = writeln!(
                        out,
                        "| floor: a bare HTTP client, {} calls at once, no harness | – | {} | {:.2} | – | {:.0} |",
                        floor.load.in_flight,
                        floor.load.calls,
                        floor.wall_s,
                        floor.calls_per_s()
                    );
                }
                Err(e) => {
                    let _ = writeln!(out, "| floor | failed: {e} | | | | |");
                }
            }
            if let [one, two] = rows.as_slice() {
                let _ = writeln!(
                    out,
                    "\nTwo workers ÷ one: **{:.2}×**. The floor is the same scripted server (in the \
                     bench's process, as for the workers) answering a bare client's calls, as many \
                     as the runs' steps, as many at once as a worker takes: the most steps per \
                     second this server and machine allow any harness.",
                    two.steps_per_s() / one.steps_per_s()
                );
            }
        }
        Err(e) => {
            let _ = writeln!(out, "Failed: {e}");
        }
    }
    out.push('\n');
}

fn concurrency_points(c: &[Concurrency], f: impl Fn(&Concurrency) -> f64) -> Vec<(f64, f64)> {
    c.iter().map(|c| (c.runs as f64, f(c))).collect()
}

/// Item 4's floor as rows of the table: each level's calls in flight.
fn floor_rows(r: &Results) -> Section<Vec<Concurrency>> {
    let runs = r.concurrency_floor.as_ref().map_err(Clone::clone)?;
    Ok(runs
        .iter()
        .map(|run| Concurrency {
            runs: run.load.in_flight,
            wall_s: run.wall_s,
            peak_rss: run.peak_rss,
            ok: run.load.in_flight,
            errors: Vec::new(),
        })
        .collect())
}

fn concurrency(out: &mut String, r: &Results, plots: &Path) -> anyhow::Result<()> {
    let _ = writeln!(
        out,
        "## 4. Concurrency (model latency 1 s, short runs of 3 model calls)\n"
    );
    let _ = writeln!(
        out,
        "| system | runs in flight | ok | wall (s) | peak RSS (MiB) | RSS per run (KiB) |\n|---|---:|---:|---:|---:|---:|"
    );
    let floor = floor_rows(r);
    let mut systems: Vec<(&str, &Section<Vec<Concurrency>>)> =
        vec![("deepfleet, one worker process", &r.concurrency)];
    if let Some(p) = &r.python_concurrency {
        systems.push(("deepagents 0.7, asyncio", p));
    }
    systems.push(("floor: a bare HTTP/2 client, no harness", &floor));
    let mut rss = Vec::new();
    let mut wall = Vec::new();
    for (name, section) in &systems {
        match section {
            Ok(points) => {
                for c in points {
                    let ok = if c.errors.is_empty() {
                        c.ok.to_string()
                    } else {
                        format!("{} (failed: {})", c.ok, c.errors.join(", "))
                    };
                    let _ = writeln!(
                        out,
                        "| {name} | {} | {ok} | {:.2} | {:.0} | {:.1} |",
                        c.runs,
                        c.wall_s,
                        mib(c.peak_rss),
                        c.peak_rss as f64 / 1024.0 / c.runs as f64
                    );
                }
                rss.push(Series {
                    name: (*name).to_owned(),
                    points: concurrency_points(points, |c| mib(c.peak_rss)),
                });
                wall.push(Series {
                    name: (*name).to_owned(),
                    points: concurrency_points(points, |c| c.wall_s),
                });
            }
            Err(e) => {
                let _ = writeln!(out, "| {name} | failed: {e} | | | | |");
            }
        }
    }
    if r.python_concurrency.is_none() {
        let _ = writeln!(
            out,
            "| deepagents 0.7, asyncio | not measured: {} | | | | |",
            r.python_note
        );
    }
    let _ = writeln!(
        out,
        "\nA run needs at least 3 s (3 calls × 1 s). deepagents climbs the levels until one takes more \
         than 4× that (CPU-bound: more runs only queue) or a run fails; its largest level that stayed \
         within 4× is the concurrency it sustains. deepfleet's worker speaks HTTP/2 to the scripted \
         server (`http2_prior_knowledge`: its calls share one connection, as calls to an `https` \
         provider that offers HTTP/2 do). The floor holds as many calls in flight, three after each \
         other per slot, with a bare HTTP/2 client on the same server: what the calls themselves \
         cost.\n"
    );
    concurrency_plots(out, &rss, &wall, plots)
}

/// Item 4's plots: peak RSS and wall time against runs in flight.
fn concurrency_plots(
    out: &mut String,
    rss: &[Series],
    wall: &[Series],
    plots: &Path,
) -> anyhow::Result<()> {
    let rss_png = plots.join("concurrency_rss.png");
    let wall_png = plots.join("concurrency_wall.png");
    draw(
        &rss_png,
        &Chart {
            title: "Peak RSS vs runs in flight (1 s model latency)",
            x_label: "runs in flight",
            y_label: "peak RSS (MiB)",
            x_log: true,
            y_log: false,
        },
        rss,
    )?;
    draw(
        &wall_png,
        &Chart {
            title: "Wall time vs runs in flight (ideal: 3 s)",
            x_label: "runs in flight",
            y_label: "wall time (s)",
            x_log: true,
            y_log: true,
        },
        wall,
    )?;
    let _ = writeln!(
        out,
        "![peak RSS]({})\n\n![wall time]({})\n",
        rss_png.display(),
        wall_png.display()
    );
    Ok(())
}

fn growth(out: &mut String, r: &Results, plots: &Path) -> anyhow::Result<()> {
    let _ = writeln!(
        out,
        "## 5. Checkpoint growth (bytes written to and read from Redis per step)\n"
    );
    match &r.growth {
        Ok(per_step) => {
            let _ = writeln!(
                out,
                "| step | bytes written | bytes read |\n|---:|---:|---:|"
            );
            for step in [1, 10, 50, 100, 200, 300, 400, 500] {
                if let Some(b) = per_step.get(step) {
                    let _ = writeln!(out, "| {step} | {} | {} |", b.written, b.read);
                }
            }
            let written: u64 = per_step.iter().map(|b| b.written).sum();
            let read: u64 = per_step.iter().map(|b| b.read).sum();
            let _ = writeln!(
                out,
                "\n{} steps wrote {written} bytes and read {read} in all.\n",
                per_step.len()
            );
            let png = plots.join("checkpoint_growth.png");
            let series = |name: &str, bytes: fn(&StepBytes) -> u64| Series {
                name: name.into(),
                points: per_step
                    .iter()
                    .enumerate()
                    .skip(1)
                    .map(|(i, b)| (i as f64, bytes(b) as f64))
                    .collect(),
            };
            draw(
                &png,
                &Chart {
                    title: "Bytes written to and read from Redis per step",
                    x_label: "step",
                    y_label: "bytes",
                    x_log: false,
                    y_log: false,
                },
                &[
                    series("written (append-only log)", |b| b.written),
                    series("read (held threads, tail reads)", |b| b.read),
                ],
            )?;
            let _ = writeln!(out, "![bytes per step]({})\n", png.display());
        }
        Err(e) => {
            let _ = writeln!(out, "Failed: {e}\n");
        }
    }
    Ok(())
}

fn tokens(out: &mut String, r: &Results, plots: &Path) -> anyhow::Result<()> {
    let _ = writeln!(out, "## 6. Token counting and compression check per step\n");
    let mut series = Vec::new();
    match &r.tokens {
        Ok(rows) => {
            let _ = writeln!(
                out,
                "| messages | count the step's messages (ns) | recount the whole conversation (ns) |\n|---:|---:|---:|"
            );
            for t in rows {
                let _ = writeln!(
                    out,
                    "| {} | {:.0} | {:.0} |",
                    t.messages, t.count_step, t.recount_all
                );
            }
            series.push(Series {
                name: "token counting per step (deepfleet)".into(),
                points: rows
                    .iter()
                    .map(|t| (t.messages as f64, t.count_step))
                    .collect(),
            });
            series.push(Series {
                name: "recounting the whole conversation".into(),
                points: rows
                    .iter()
                    .map(|t| (t.messages as f64, t.recount_all))
                    .collect(),
            });
        }
        Err(e) => {
            let _ = writeln!(out, "Token counting failed: {e}");
        }
    }
    match &r.check {
        Some(Ok(rows)) if !rows.is_empty() => {
            let _ = writeln!(
                out,
                "\nFrom `cargo bench -p deepfleet-worker --bench compression_check`:\n\n| messages | compression check (ns) | with a summary in force (ns) |\n|---:|---:|---:|"
            );
            for c in rows {
                let _ = writeln!(
                    out,
                    "| {} | {:.1} | {:.1} |",
                    c.messages, c.decision, c.decision_summarized
                );
            }
            series.push(Series {
                name: "compression check per step (deepfleet)".into(),
                points: rows
                    .iter()
                    .map(|c| (c.messages as f64, c.decision))
                    .collect(),
            });
        }
        Some(Ok(_)) => {
            let _ = writeln!(out, "\nThe compression-check bench printed no table rows.");
        }
        Some(Err(e)) => {
            let _ = writeln!(out, "\nCompression check not measured: {e}");
        }
        None => {
            let _ = writeln!(
                out,
                "\nCompression check not measured: no `--compression-check` table was given."
            );
        }
    }
    let png = plots.join("token_cost.png");
    draw(
        &png,
        &Chart {
            title: "Per-step cost vs conversation length",
            x_label: "messages in the conversation",
            y_label: "ns per step",
            x_log: true,
            y_log: true,
        },
        &series,
    )?;
    let _ = writeln!(out, "\n![token cost]({})\n", png.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::replace_section;

    const REPORT: &str = "# Bench\n\n## 9. Limits\n\nold nine\n\n## 10. Admission\n\nold ten\n\n## How it is measured\n\nnotes\n";

    #[test]
    fn an_item_replaces_only_its_own_section() {
        let nine = replace_section(REPORT, 9, "## 9. Limits\n\nnew nine\n\n");
        assert_eq!(
            nine,
            "# Bench\n\n## 9. Limits\n\nnew nine\n\n## 10. Admission\n\nold ten\n\n## How it is measured\n\nnotes\n"
        );
        let ten = replace_section(REPORT, 10, "## 10. Admission\n\nnew ten\n\n");
        assert!(ten.contains("old nine") && ten.contains("new ten") && !ten.contains("old ten"));
        assert!(ten.ends_with("## How it is measured\n\nnotes\n"));
    }

    #[test]
    fn a_missing_section_goes_before_the_method_notes_or_at_the_end() {
        let text = "# Bench\n\n## How it is measured\n\nnotes\n";
        assert_eq!(
            replace_section(text, 9, "## 9. Limits\n\n"),
            "# Bench\n\n## 9. Limits\n\n## How it is measured\n\nnotes\n"
        );
        assert_eq!(replace_section("", 9, "## 9. L\n"), "\n## 9. L\n");
    }
}
