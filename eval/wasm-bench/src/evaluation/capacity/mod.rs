//! Experiment 12, capacity in a memory budget: the realistic workload (experiment 5) through a
//! pool with OpenWhisk's 1 GiB of user memory, at arrival rates a search picks, once per way of
//! sizing the pool's containers. `reservation`: every platform's containers reserve the
//! action's memory (256 MB), as OpenWhisk's invoker (with this project's patch) accounts for a
//! Wasm container exactly as for a Docker one: the same 4 slots for all. `measured`: every
//! platform's containers take its own measured memory per warm container of `hash` (an
//! executor's thousands of slots, Docker's tens), as an invoker that accounted for what each
//! container uses would size them.
//!
//! A rate passes when no activation failed and the p99 latency stayed within the target. The
//! search ([`rate_search`]) climbs the ladder `capacity_rates` (doubling past it up to
//! `capacity_rate_cap`) until a rate fails, then bisects between the highest passing and the
//! lowest failing rate until they are within `capacity_precision` of each other; the row keeps
//! every probe in order and the bracket. Samples are labelled `capacity-<sizing>`, their level
//! the rate in arrivals per minute (rates are multiples of 0.1/s).

mod table;

use std::{fmt, sync::Arc, time::Duration};

use serde::Serialize;

use super::{
    Context, EvaluateArgs,
    experiment::{AppliesTo, Experiment, JsonParts},
    memory,
    rate_search::{self, Bracket, Probe, SearchPlan},
    realistic::{self, Load},
    runner::Run,
    sample::Sample,
    summary::Report,
};
use crate::{invoker::PoolConfig, platform::Platform, stats};

/// The `--capacity-sizing` choice: which sizings run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SizingChoice {
    /// Every platform's container reserves the action's memory (256 MB), as OpenWhisk's
    /// invoker does: the same slots for all.
    Reservation,
    /// Every platform's container takes its measured memory per warm container of `hash`.
    Measured,
    /// Reservation, then measured, on each platform.
    Both,
}

impl SizingChoice {
    pub fn sizings(self) -> &'static [Sizing] {
        match self {
            SizingChoice::Reservation => &[Sizing::Reservation],
            SizingChoice::Measured => &[Sizing::Measured],
            SizingChoice::Both => &[Sizing::Reservation, Sizing::Measured],
        }
    }
}

/// How the pool accounts for one container of a platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sizing {
    Reservation,
    Measured,
}

impl Sizing {
    /// The samples' scenario.
    fn scenario(self) -> &'static str {
        match self {
            Sizing::Reservation => "capacity-reservation",
            Sizing::Measured => "capacity-measured",
        }
    }
}

impl fmt::Display for Sizing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sizing::Reservation => "reservation",
            Sizing::Measured => "measured",
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CapacityRow {
    pub platform: String,
    pub sizing: Sizing,
    /// Memory per container the pool accounts for, MB.
    pub container_mb: f64,
    /// Containers the 1 GiB budget holds.
    pub slots: usize,
    /// Every probe in the order it ran: (rate per second, p99 ms, failed activations).
    pub levels: Vec<(f64, Option<f64>, usize)>,
    /// The highest passing rate below every failing one; None when none passed.
    pub sustainable_rate: Option<f64>,
    /// The lowest failing rate; None when every rate passed up to the cap.
    pub first_failing_rate: Option<f64>,
}

/// Whether a probe passed: no failed activation and the p99 within `target_ms`.
pub fn passes(p99_ms: Option<f64>, failed: usize, target_ms: f64) -> bool {
    failed == 0 && p99_ms.is_some_and(|p| p <= target_ms)
}

pub fn measure(
    platform: Arc<dyn Platform>,
    ctx: &Context,
    sizing: Sizing,
) -> anyhow::Result<(Vec<Sample>, CapacityRow)> {
    let sizes = &ctx.sizes;
    let openwhisk = PoolConfig::openwhisk(Duration::from_secs_f64(sizes.realistic_idle_secs));
    let container_mb = match sizing {
        Sizing::Reservation => openwhisk.container_memory_mb,
        Sizing::Measured => {
            memory::measure_module(&*platform, ctx, "hash", "hash")?.per_container_mib * 1.048_576
        }
    };
    let config = PoolConfig {
        container_memory_mb: container_mb,
        ..openwhisk
    };
    let slots = config.slots();
    tracing::info!(
        platform = platform.name(),
        %sizing,
        container_mb,
        slots,
        "capacity: the pool"
    );
    let plan = SearchPlan {
        ladder: sizes.capacity_rates.clone(),
        cap: sizes.capacity_rate_cap,
        precision: sizes.capacity_precision,
    };
    let mut samples = Vec::new();
    let mut probes = Vec::new();
    let mut levels = Vec::new();
    while let Some(rate) = rate_search::next_rate(&plan, &probes) {
        let spec = Load {
            scenario: sizing.scenario(),
            level: rate_search::per_minute(rate),
            rate,
            duration: Duration::from_secs_f64(sizes.capacity_secs),
        };
        let part = realistic::drive(Arc::clone(&platform), ctx, config.clone(), &spec)?;
        let failed = part.iter().filter(|s| !s.ok()).count();
        let p99 = stats::Summary::of_ns(part.iter().filter(|s| s.ok()).map(|s| s.latency_ns))
            .map(|l| l.p99_us / 1e3);
        let passed = passes(p99, failed, sizes.capacity_p99_ms);
        tracing::info!(
            platform = platform.name(),
            %sizing,
            rate,
            p99_ms = p99,
            failed,
            passed,
            "capacity: rate done"
        );
        probes.push(Probe { rate, passed });
        levels.push((rate, p99, failed));
        samples.extend(part);
    }
    let bracket = Bracket::of(&probes);
    let row = CapacityRow {
        platform: platform.name().to_owned(),
        sizing,
        container_mb,
        slots,
        levels,
        sustainable_rate: bracket.sustained,
        first_failing_rate: bracket.first_failing,
    };
    Ok((samples, row))
}

/// Experiment 12 in the registry: once per sizing of `--capacity-sizing`.
pub struct Capacity;

impl Experiment for Capacity {
    fn name(&self) -> &'static str {
        "capacity"
    }

    fn description(&self) -> &'static str {
        "12: the sustainable arrival rate of the realistic workload in 1 GiB of user memory, searched"
    }

    fn applies_to(&self) -> AppliesTo {
        AppliesTo::NotNative
    }

    fn steps(&self, platforms: &[&str], _ctx: &Context, args: &EvaluateArgs) -> usize {
        args.capacity_sizing.sizings().len() * platforms.len()
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        for &name in platforms {
            for &sizing in run.args.capacity_sizing.sizings() {
                run.step("capacity", &format!("{name} sized by {sizing}"));
                let (samples, row) = measure(run.platform(name)?, run.ctx, sizing)?;
                run.results.add("capacity", samples);
                run.results.push_row(row);
            }
        }
        Ok(())
    }

    fn failures_measured(&self) -> bool {
        true
    }

    fn record(&self, report: &Report<'_>, json: &mut JsonParts) -> anyhow::Result<()> {
        json.summary.insert(
            "capacity_p99_ms".into(),
            serde_json::to_value(report.ctx.sizes.capacity_p99_ms)?,
        );
        json.top.insert(
            "capacity_sizing".into(),
            serde_json::to_value(report.args.capacity_sizing)?,
        );
        json.top.insert(
            "capacity".into(),
            serde_json::to_value(report.results.rows::<CapacityRow>())?,
        );
        Ok(())
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let rows = report.results.rows::<CapacityRow>();
        if rows.is_empty() {
            return String::new();
        }
        table::markdown(rows, report.ctx.sizes.capacity_p99_ms)
    }
}
