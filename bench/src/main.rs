//! `deepfleet-bench`: the measurements behind `BENCHMARKS.md`.
//!
//! `make bench` (scripts/bench.sh) builds this and the `deepfleet` binary
//! in release mode, prepares a venv with deepagents, saves the worker's
//! compression-check table, and runs this binary, which measures the six
//! items of issue #9, the retention and thread search of issue #15, and
//! the admission, priority and sharing item of issue #17, in
//! turn, draws the plots and writes the report. A
//! section that fails is reported as failed in the file and makes the
//! command exit non-zero; the others still run.

mod admission;
mod child;
mod claims;
mod cpu;
mod fleet;
mod floor;
mod growth;
mod machine;
mod overhead;
mod plot;
mod python;
mod rate_limits;
mod report;
mod results;
mod retention;
mod scenario;
mod search;
mod stats;
mod throughput;
mod tokens;
mod units;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::overhead::Passes;
use crate::python::Python;
use crate::report::Results;

/// Measures deepfleet against deepagents and the machine's limits, and
/// writes BENCHMARKS.md with its plots.
#[derive(Parser)]
struct Args {
    /// The release `deepfleet` binary (worker processes).
    #[arg(long, default_value = "target/release/deepfleet")]
    deepfleet: PathBuf,
    /// A Python with deepagents installed; without it the deepagents
    /// columns are left out with `--python-note` as the reason.
    #[arg(long)]
    python: Option<PathBuf>,
    /// Why there is no Python, for the report.
    #[arg(long, default_value = "no venv with deepagents was given")]
    python_note: String,
    /// The deepagents driver script.
    #[arg(long, default_value = "bench/deepagents_overhead.py")]
    python_script: PathBuf,
    /// The bare HTTP client of item 11's floor.
    #[arg(long, default_value = "target/release/loopback-client")]
    loopback_client: PathBuf,
    /// The saved output of the worker's compression-check bench.
    #[arg(long)]
    compression_check: Option<PathBuf>,
    /// Where the report goes.
    #[arg(long, default_value = "BENCHMARKS.md")]
    out: PathBuf,
    /// Where the plots go (linked from the report by this path).
    #[arg(long, default_value = "docs/bench")]
    plots: PathBuf,
    /// Scratch files.
    #[arg(long, default_value = "target/bench")]
    work_dir: PathBuf,
    /// Small sizes everywhere: checks the pipeline in a minute, numbers
    /// not for publishing.
    #[arg(long)]
    quick: bool,
    /// Runs one item alone and writes only its section: `rate-limits`
    /// (item 9, about four minutes) into `--out` alone, `admission`
    /// (item 10) and `cpu` (item 11) into `--out` in place of the one
    /// there. `concurrency` (item 4's deepfleet levels; with
    /// `--runs-in-flight`, those alone), `retention` (item 7) and `fleet`
    /// (items 2 and 3) print their figures and write nothing: for
    /// profiling.
    #[arg(long)]
    only: Option<String>,
    /// The levels of `--only concurrency`, in place of the bench's.
    #[arg(long, value_delimiter = ',')]
    runs_in_flight: Vec<usize>,
}

/// Sizes of every measurement.
struct Sizes {
    overhead: Passes,
    python_overhead: Passes,
    throughput_runs: usize,
    concurrency: Vec<usize>,
    python_concurrency: Vec<usize>,
    growth_steps: usize,
    retention_runs: usize,
    search: search::Plan,
    rate_limit_runs: usize,
    admission: admission::Plan,
    cpu: cpu::Plan,
    floor_calls: usize,
}

impl Sizes {
    fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                overhead: Passes { runs: 5, warmup: 1 },
                python_overhead: Passes { runs: 3, warmup: 1 },
                throughput_runs: 100,
                concurrency: vec![100, 1_000],
                python_concurrency: vec![50],
                growth_steps: 60,
                retention_runs: 100,
                search: search::Plan {
                    sizes: vec![1_000, 10_000],
                    searches: 50,
                },
                rate_limit_runs: 700,
                admission: admission::Plan {
                    first_tenth_runs: 300,
                    interactive_batch: 200,
                    interactive_tries: 5,
                    fair_runs: 100,
                    crowd_runs: 100,
                },
                cpu: cpu::Plan {
                    runs: 100,
                    in_flight: 50,
                },
                floor_calls: 1_000,
            }
        } else {
            Sizes {
                overhead: Passes {
                    runs: 60,
                    warmup: 5,
                },
                python_overhead: Passes {
                    runs: 30,
                    warmup: 5,
                },
                throughput_runs: 2_000,
                concurrency: vec![100, 1_000, 10_000, 50_000],
                python_concurrency: vec![100, 250, 500, 1_000],
                growth_steps: 500,
                retention_runs: 1_000,
                search: search::Plan {
                    sizes: vec![1_000, 100_000],
                    searches: 300,
                },
                rate_limit_runs: 2_000,
                admission: admission::Plan {
                    first_tenth_runs: 3_000,
                    interactive_batch: 2_000,
                    interactive_tries: 20,
                    fair_runs: 1_000,
                    crowd_runs: 500,
                },
                cpu: cpu::Plan {
                    runs: 1_000,
                    in_flight: 50,
                },
                floor_calls: 10_000,
            }
        }
    }
}

/// The model latency of the concurrency benchmark.
const SLOW_MODEL: Duration = Duration::from_secs(1);
/// deepagents stops climbing once a level takes this many times the
/// model-bound ideal: it is CPU-bound there.
const GIVE_UP: f64 = 4.0;

/// Item 9's requests per minute, as the issue states the claim.
const RATE_LIMIT_RPM: u64 = 600;

/// The retention of item 7's runs: short, so the bench waits little.
const RETENTION: Duration = Duration::from_secs(5);

/// A section's error, with its causes, as the report shows it.
fn failed(error: anyhow::Error) -> String {
    format!("{error:#}")
}

fn log(what: &str) {
    eprintln!("[bench] {what}");
}

async fn measure(args: &Args, sizes: &Sizes) -> Results {
    let python = args.python.as_ref().map(|interpreter| Python {
        interpreter: interpreter.clone(),
        script: args.python_script.clone(),
    });
    let bin = args.deepfleet.as_path();
    log("1. harness overhead, embedded");
    let (embedded, sample) = match overhead::embedded(sizes.overhead).await {
        Ok((intervals, sample)) => (Ok(intervals), sample),
        Err(e) => (Err(failed(e)), None),
    };
    let floor = match &sample {
        Some(body) => overhead::transport_floor(body, 400).await.map_err(failed),
        None => Err("no sample request (the embedded pass failed)".to_owned()),
    };
    log("11. CPU per model call");
    let cpu = cpu_item(args, sizes, python.as_ref(), sample.as_ref()).await;
    let mut deepagents = None;
    if let Some(python) = &python {
        log("1. harness overhead, deepagents");
        let measured = overhead::deepagents(python, sizes.python_overhead).await;
        deepagents = Some(measured.map_err(failed));
    }
    log("2. distributed step overhead");
    let distributed = overhead::distributed(bin, sizes.overhead)
        .await
        .map_err(failed);
    let fleet = fleet_items(args, sizes, python.as_ref(), sample.as_ref()).await;
    log("5. checkpoint growth");
    let growth = growth::bytes_per_step(&args.work_dir, sizes.growth_steps)
        .await
        .map_err(failed);
    log("6. token counting and compression check");
    let tokens = tokio::task::spawn_blocking(tokens::measure)
        .await
        .map_err(|e| format!("the token counting bench panicked: {e}"));
    let check = args.compression_check.as_ref().map(|path| {
        std::fs::read_to_string(path)
            .map(|text| tokens::parse_check_table(&text))
            .map_err(|e| format!("reading {}: {e}", path.display()))
    });
    log("7. retention");
    let retention = retention::memory_per_run(bin, sizes.retention_runs, RETENTION)
        .await
        .map_err(failed);
    log("8. thread search");
    let search = search::thread_search(&sizes.search).await.map_err(failed);
    log("9. rate limits");
    let rate_limits = rate_limits_item(bin, sizes).await;
    log("10. admission, priorities and sharing");
    let admission = admission::measure(&sizes.admission).await.map_err(failed);
    Results {
        cpu,
        rate_limits,
        admission,
        retention,
        embedded,
        floor,
        deepagents,
        distributed,
        throughput: fleet.throughput,
        throughput_floor: fleet.throughput_floor,
        concurrency: fleet.concurrency,
        concurrency_floor: fleet.concurrency_floor,
        python_concurrency: fleet.python_concurrency,
        growth,
        tokens,
        check,
        search,
        python_note: args.python_note.clone(),
        quick: args.quick,
        elapsed: Duration::ZERO,
    }
}

/// Items 3 and 4 with their floors.
struct FleetItems {
    throughput: report::Section<Vec<throughput::Throughput>>,
    throughput_floor: report::Section<floor::Loopback>,
    concurrency: report::Section<Vec<throughput::Concurrency>>,
    concurrency_floor: report::Section<Vec<floor::Loopback>>,
    python_concurrency: Option<report::Section<Vec<throughput::Concurrency>>>,
}

/// Items 3 and 4: deepfleet's fleet, deepagents' concurrency, and the
/// bare client under the same loads (item 3's steps at its workers'
/// concurrency; item 4's levels, three calls per slot, over HTTP/2 as
/// deepfleet's worker calls there).
async fn fleet_items(
    args: &Args,
    sizes: &Sizes,
    python: Option<&Python>,
    sample: Option<&serde_json::Value>,
) -> FleetItems {
    let bin = args.deepfleet.as_path();
    log("3. throughput");
    let throughput = throughput::throughput(bin, sizes.throughput_runs)
        .await
        .map_err(failed);
    let no_sample = || "no sample request (item 1 failed)".to_owned();
    let floor_of = |load| async move {
        let body = sample.ok_or_else(no_sample)?;
        floor::loopback(&args.loopback_client, &args.work_dir, body, load)
            .await
            .map_err(failed)
    };
    log("3. throughput, floor");
    let throughput_floor = floor_of(floor::Load {
        calls: sizes.throughput_runs * scenario::CALLS_PER_RUN,
        in_flight: usize::from(throughput::FLEET_CONCURRENCY),
        latency: Duration::ZERO,
        http: throughput::Http::One,
    })
    .await;
    log("4. concurrency, deepfleet");
    let concurrency = throughput::deepfleet_concurrency(bin, &sizes.concurrency, SLOW_MODEL)
        .await
        .map_err(failed);
    log("4. concurrency, floor");
    let concurrency_floor = async {
        let mut runs = Vec::new();
        for &in_flight in &sizes.concurrency {
            let load = floor::Load {
                calls: in_flight * scenario::QUICK_CALLS,
                in_flight,
                latency: SLOW_MODEL,
                http: throughput::Http::Two,
            };
            runs.push(floor_of(load).await?);
        }
        Ok(runs)
    }
    .await;
    let mut python_concurrency = None;
    if let Some(python) = python {
        log("4. concurrency, deepagents");
        let levels = &sizes.python_concurrency;
        let measured =
            throughput::deepagents_concurrency(python, levels, SLOW_MODEL, GIVE_UP).await;
        python_concurrency = Some(measured.map_err(failed));
    }
    FleetItems {
        throughput,
        throughput_floor,
        concurrency,
        concurrency_floor,
        python_concurrency,
    }
}

/// Item 11: deepfleet's, deepagents' and the bare client's CPU per call.
async fn cpu_item(
    args: &Args,
    sizes: &Sizes,
    python: Option<&Python>,
    sample: Option<&serde_json::Value>,
) -> report::Section<cpu::Measured> {
    let plan = sizes.cpu;
    let deepfleet = cpu::deepfleet(&args.deepfleet, &args.work_dir, plan)
        .await
        .map_err(failed);
    let deepagents = match python {
        Some(python) => cpu::deepagents(python, plan).await.map_err(failed),
        None => Err(format!("not measured: {}", args.python_note)),
    };
    let floor = match sample {
        Some(body) => cpu::floor(
            &args.loopback_client,
            &args.work_dir,
            body,
            sizes.floor_calls,
            plan.in_flight,
        )
        .await
        .map_err(failed),
        None => Err("no sample request (item 1 failed)".to_owned()),
    };
    Ok(cpu::Measured {
        plan,
        deepfleet,
        deepagents,
        floor,
    })
}

async fn rate_limits_item(
    bin: &std::path::Path,
    sizes: &Sizes,
) -> report::Section<rate_limits::Limited> {
    rate_limits::batch_under_limits(bin, sizes.rate_limit_runs, RATE_LIMIT_RPM)
        .await
        .map_err(failed)
}

/// The worker processes are started from `--deepfleet`; a missing binary
/// would otherwise surface as a bare "No such file" from each item.
fn deepfleet_binary(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.deepfleet.is_file(),
        "no deepfleet binary at {} (build it, or give its path with --deepfleet)",
        args.deepfleet.display()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    // The model clients speak HTTP through rustls; the process picks the
    // crypto provider, as the `deepfleet` binary does.
    let _ = rustls::crypto::ring::default_provider().install_default();
    std::fs::create_dir_all(&args.work_dir)?;
    std::fs::create_dir_all(&args.plots)?;
    let started = Instant::now();
    let sizes = Sizes::new(args.quick);
    if let Some(item) = &args.only {
        return run_alone(item, &args, &sizes).await;
    }
    deepfleet_binary(&args)?;
    let mut results = measure(&args, &sizes).await;
    results.elapsed = started.elapsed();
    let text = report::render(&results, &args.plots)?;
    std::fs::write(&args.out, text)?;
    log(&format!(
        "wrote {} in {:.0} s",
        args.out.display(),
        started.elapsed().as_secs_f64()
    ));
    Ok(if results.failures().is_empty() {
        ExitCode::SUCCESS
    } else {
        for failure in results.failures() {
            log(&format!("FAILED: {failure}"));
        }
        ExitCode::FAILURE
    })
}

/// `--only item`: measures one item alone.
async fn run_alone(item: &str, args: &Args, sizes: &Sizes) -> anyhow::Result<ExitCode> {
    match item {
        "rate-limits" => alone_rate_limits(args, sizes).await,
        "admission" => alone_admission(args, sizes).await,
        "cpu" => alone_cpu(args, sizes).await,
        "concurrency" => alone_concurrency(args, sizes).await,
        "retention" => alone_retention(args, sizes).await,
        "fleet" => alone_fleet(args, sizes).await,
        _ => anyhow::bail!(
            "no item {item:?} runs alone \
             (rate-limits, admission, cpu, concurrency, retention and fleet do)"
        ),
    }
}

/// The exit code of an item that measured `section`.
fn exit_code<T>(section: &report::Section<T>) -> ExitCode {
    if section.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Writes `section` into `--out` in place of item `item`'s.
fn write_section(args: &Args, item: u32, section: &str) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.out).unwrap_or_default();
    std::fs::write(&args.out, report::replace_section(&text, item, section))?;
    log(&format!("wrote item {item} into {}", args.out.display()));
    Ok(())
}

async fn alone_rate_limits(args: &Args, sizes: &Sizes) -> anyhow::Result<ExitCode> {
    deepfleet_binary(args)?;
    log("9. rate limits, alone");
    let section = rate_limits_item(&args.deepfleet, sizes).await;
    let mut rendered = String::new();
    rate_limits::render(&mut rendered, &section);
    write_section(args, 9, &rendered)?;
    Ok(exit_code(&section))
}

async fn alone_admission(args: &Args, sizes: &Sizes) -> anyhow::Result<ExitCode> {
    log("10. admission, priorities and sharing, alone");
    let measured = admission::measure(&sizes.admission).await.map_err(failed);
    let mut section = String::new();
    admission::render(&mut section, &measured);
    write_section(args, 10, &section)?;
    Ok(exit_code(&measured))
}

async fn alone_cpu(args: &Args, sizes: &Sizes) -> anyhow::Result<ExitCode> {
    deepfleet_binary(args)?;
    log("11. CPU per model call, alone");
    let python = args.python.as_ref().map(|interpreter| Python {
        interpreter: interpreter.clone(),
        script: args.python_script.clone(),
    });
    // The floor posts a mid-run request of the scenario: one run of item
    // 1 captures it.
    let (_, sample) = overhead::embedded(Passes { runs: 1, warmup: 0 }).await?;
    let measured = cpu_item(args, sizes, python.as_ref(), sample.as_ref()).await;
    let mut section = String::new();
    cpu::render(&mut section, &measured);
    write_section(args, 11, &section)?;
    eprintln!("{section}");
    Ok(ExitCode::SUCCESS)
}

async fn alone_fleet(args: &Args, sizes: &Sizes) -> anyhow::Result<ExitCode> {
    deepfleet_binary(args)?;
    log("2. distributed step overhead, alone");
    let intervals = overhead::distributed(&args.deepfleet, sizes.overhead).await?;
    let ms = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2} ms"));
    eprintln!(
        "distributed step overhead: p50 {}, p99 {} ({} steps)",
        ms(stats::median(&intervals.plain)),
        ms(stats::percentile(&intervals.plain, 99.0)),
        intervals.plain.len()
    );
    log("3. throughput, alone");
    for t in throughput::throughput(&args.deepfleet, sizes.throughput_runs).await? {
        eprintln!(
            "{} worker processes: {} steps in {:.2} s, {:.0} steps/s",
            t.workers,
            t.steps,
            t.wall_s,
            t.steps_per_s()
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn alone_concurrency(args: &Args, sizes: &Sizes) -> anyhow::Result<ExitCode> {
    deepfleet_binary(args)?;
    let levels = if args.runs_in_flight.is_empty() {
        &sizes.concurrency
    } else {
        &args.runs_in_flight
    };
    log("4. concurrency, deepfleet, alone");
    let measured = throughput::deepfleet_concurrency(&args.deepfleet, levels, SLOW_MODEL).await?;
    for level in &measured {
        eprintln!(
            "{} runs in flight: {} ok, {:.2} s, peak RSS {:.0} MiB",
            level.runs,
            level.ok,
            level.wall_s,
            level.peak_rss as f64 / (1024.0 * 1024.0)
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn alone_retention(args: &Args, sizes: &Sizes) -> anyhow::Result<ExitCode> {
    deepfleet_binary(args)?;
    log("7. retention, alone");
    let measured = retention::memory_per_run(&args.deepfleet, sizes.retention_runs, RETENTION)
        .await
        .map_err(failed);
    let mut section = String::new();
    retention::render(&mut section, &measured);
    eprintln!("{section}");
    Ok(exit_code(&measured))
}
