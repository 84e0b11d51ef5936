//! Everything one bench run measured, item by item, each a measurement
//! or why it failed; what the report and its claim tables read.

use std::time::Duration;

use deepfleet_testkit::growth::StepBytes;

use crate::floor::Loopback;
use crate::python::PythonReport;
use crate::scenario::Intervals;
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
    pub fn two_workers(&self) -> Option<&Throughput> {
        let measured = self.throughput.as_ref().ok()?;
        measured.iter().find(|t| t.workers == 2)
    }

    /// Item 4's level of 10,000 runs in flight (the first at or above it).
    pub fn ten_thousand_in_flight(&self) -> Option<&Concurrency> {
        let measured = self.concurrency.as_ref().ok()?;
        measured.iter().find(|c| c.runs >= 10_000)
    }

    /// Item 4's floor at the level [`Results::ten_thousand_in_flight`]
    /// reads.
    pub fn ten_thousand_floor(&self) -> Option<&Loopback> {
        let measured = self.concurrency_floor.as_ref().ok()?;
        measured.iter().find(|l| l.load.in_flight >= 10_000)
    }

    pub fn deepagents_ok(&self) -> Option<&(Intervals, PythonReport)> {
        self.deepagents.as_ref().and_then(|s| s.as_ref().ok())
    }
}
