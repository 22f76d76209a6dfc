//! Experiments 2 and 3 (and the workloads of experiment 8): closed-loop throughput and latency
//! of one workload at rising concurrency, every client with its own warm containers. The
//! CPU-bound experiment interleaves the platforms level by level, so that a drift of the
//! machine's speed hits all of them alike.

use std::fmt::Write as _;

use serde::Serialize;

use super::{
    Context, EvaluateArgs, Results,
    cells::CellRate,
    experiment::{Experiment, JsonParts, Scope},
    load::{self, Plan},
    markdown::{failed, opt, rate_ci, ratio},
    runner::Run,
    summary::Report,
};
use crate::platform::Platform;

/// What the clients run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// `net`: an HTTP call to the delay server.
    Io,
    /// `hash`: ≈100 ms of hashing.
    Cpu,
    /// Either, at random per request.
    Mixed,
}

impl Workload {
    pub fn label(self) -> &'static str {
        match self {
            Workload::Io => "io",
            Workload::Cpu => "cpu",
            Workload::Mixed => "mixed",
        }
    }

    pub fn modules(self) -> &'static [&'static str] {
        match self {
            Workload::Io => &["net"],
            Workload::Cpu => &["hash"],
            Workload::Mixed => &["hash", "net"],
        }
    }
}

/// The CPU a closed-loop level cost, over the whole level (warm-up included).
#[derive(Debug, Clone, Serialize)]
pub struct LevelCpu {
    pub experiment: &'static str,
    pub platform: String,
    pub level: u32,
    /// Successful activations over the level, warm-up included.
    pub activations: usize,
    /// The platform's own processes' CPU per successful activation, µs (for an executor
    /// build its whole process: HTTP, instances, guests and their outbound calls); none
    /// where the platform has no processes of its own to count.
    pub platform_cpu_us: Option<f64>,
    /// Cores the platform's processes kept busy on average.
    pub platform_cores: Option<f64>,
    /// Cores the load generator (with the delay server, in this process) kept busy.
    pub loadgen_cores: f64,
    /// `CLOCK_MONOTONIC` seconds at the level's start and end (see
    /// [`crate::cpu::monotonic_s`]).
    pub monotonic_s: [f64; 2],
}

/// Runs `workload` at each concurrency in `levels` as `plan` says, into `results` under
/// `experiment`, with each level's [`LevelCpu`].
pub fn measure(
    platform: &dyn Platform,
    ctx: &Context,
    workload: Workload,
    levels: &[usize],
    (experiment, scenario): (&'static str, &str),
    plan: Plan,
    results: &mut Results,
) -> anyhow::Result<()> {
    let most = levels.iter().copied().max().unwrap_or(1);
    let actions: Vec<_> = workload
        .modules()
        .iter()
        .map(|m| ctx.action(platform, &format!("{scenario}-{m}"), m))
        .collect();
    tracing::info!(
        platform = platform.name(),
        scenario,
        containers = most * actions.len(),
        "creating containers"
    );
    let mut sets = load::create_sets(platform, most, &actions, 8)?;
    let mut result = Ok(());
    for &level in levels {
        let cpu_before = (crate::cpu::own_cpu_ns(), platform.own_cpu_ns());
        let (started, first) = (std::time::Instant::now(), crate::cpu::monotonic_s());
        match load::closed_loop(
            sets[..level].iter_mut().collect(),
            platform.name(),
            scenario,
            level as u32,
            plan,
            ctx.epoch,
            level as u64,
        ) {
            Ok(run) => {
                let ok = run.samples.iter().filter(|s| !s.warmup && s.ok()).count();
                let all_ok = run.samples.iter().filter(|s| s.ok()).count();
                // Cores each side kept busy over the level: the load generator (with the delay
                // server, in this process) and the platform's own processes.
                let seconds = started.elapsed().as_secs_f64();
                let used = |before: u64, after: u64| after.saturating_sub(before) as f64 / 1e9;
                let loadgen_cores = used(cpu_before.0, crate::cpu::own_cpu_ns()) / seconds;
                let platform_cpu_s = cpu_before
                    .1
                    .zip(platform.own_cpu_ns())
                    .map(|(before, after)| used(before, after));
                let cpu = LevelCpu {
                    experiment,
                    platform: platform.name().to_owned(),
                    level: level as u32,
                    activations: all_ok,
                    platform_cpu_us: platform_cpu_s
                        .filter(|_| all_ok > 0)
                        .map(|s| s * 1e6 / all_ok as f64),
                    platform_cores: platform_cpu_s.map(|s| s / seconds),
                    loadgen_cores,
                    monotonic_s: [first, crate::cpu::monotonic_s()],
                };
                tracing::info!(
                    platform = platform.name(),
                    scenario,
                    level,
                    ok,
                    loadgen_cores = format_args!("{loadgen_cores:.2}"),
                    platform_cores = cpu.platform_cores.map(|c| format!("{c:.2}")),
                    platform_cpu_us = cpu.platform_cpu_us.map(|us| format!("{us:.0}")),
                    "level done"
                );
                results.push_row(cpu);
                results.add_level(experiment, run);
            }
            Err(error) => {
                result = Err(error);
                break;
            }
        }
    }
    load::remove_sets(sets);
    result
}

/// Experiment 2 in the registry.
pub struct Io;

impl Experiment for Io {
    fn name(&self) -> &'static str {
        "io"
    }

    fn description(&self) -> &'static str {
        "2: I/O-bound closed-loop throughput, net calling a server that answers after 300 ms"
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        let sizes = &run.ctx.sizes;
        let plan = sizes.plan(sizes.warmup_secs, sizes.level_secs);
        for &name in platforms {
            run.step("io", name);
            let platform = run.platform(name)?;
            let label = ("io", "io");
            measure(
                &*platform,
                run.ctx,
                Workload::Io,
                &sizes.io_levels,
                label,
                plan,
                &mut run.results,
            )?;
        }
        Ok(())
    }

    fn expects_activations(&self) -> bool {
        true
    }

    fn cells(&self, _ctx: &Context) -> Option<CellRate> {
        Some(CellRate::Windows)
    }

    fn record(&self, report: &Report<'_>, json: &mut JsonParts) -> anyhow::Result<()> {
        record_level_cpu(report, json, "io")
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        table(report, "io", "2. I/O-bound (net, 300 ms server)", false)
    }
}

/// Experiment 3 in the registry: the platforms interleaved level by level.
pub struct Cpu;

impl Experiment for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn description(&self) -> &'static str {
        "3: CPU-bound closed-loop throughput (hash), the platforms interleaved level by level"
    }

    fn scope(&self) -> Scope {
        Scope::AcrossPlatforms
    }

    fn steps(&self, platforms: &[&str], ctx: &Context, _args: &EvaluateArgs) -> usize {
        ctx.sizes.cpu_levels.len() * platforms.len()
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        let sizes = &run.ctx.sizes;
        let plan = sizes.plan(sizes.warmup_secs, sizes.level_secs);
        for &level in &sizes.cpu_levels {
            for &name in platforms {
                run.step("cpu", &format!("{name} at {level} clients"));
                let platform = run.platform(name)?;
                let label = ("cpu", "cpu");
                measure(
                    &*platform,
                    run.ctx,
                    Workload::Cpu,
                    &[level],
                    label,
                    plan,
                    &mut run.results,
                )?;
            }
        }
        Ok(())
    }

    fn expects_activations(&self) -> bool {
        true
    }

    fn cells(&self, _ctx: &Context) -> Option<CellRate> {
        Some(CellRate::Windows)
    }

    fn record(&self, report: &Report<'_>, json: &mut JsonParts) -> anyhow::Result<()> {
        record_level_cpu(report, json, "cpu")
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        table(report, "cpu", "3. CPU-bound (hash)", true)
    }
}

/// `<experiment>_cpu` in summary.json: the [`LevelCpu`] of each of its levels.
fn record_level_cpu(
    report: &Report<'_>,
    json: &mut JsonParts,
    experiment: &str,
) -> anyhow::Result<()> {
    let rows: Vec<&LevelCpu> = report
        .results
        .rows::<LevelCpu>()
        .iter()
        .filter(|row| row.experiment == experiment)
        .collect();
    json.top
        .insert(format!("{experiment}_cpu"), serde_json::to_value(rows)?);
    Ok(())
}

/// The section of closed-loop `experiment` (its scenario is its name): rates and latencies by
/// clients and platform, each executor build's rate over Docker's (and over native's).
fn table(report: &Report<'_>, experiment: &str, title: &str, versus_native: bool) -> String {
    let cells = &report.cells;
    let mut md = String::new();
    if !cells.has(experiment) {
        return md;
    }
    let (platforms, executors) = (report.platforms(), report.executors());
    let _ = writeln!(
        md,
        "\n## {title}: activations/s ± 95 % CI over {} windows (p50 / p99 latency ms)\n",
        cells.windows(experiment)
    );
    let _ = write!(md, "| clients |");
    for p in platforms {
        let _ = write!(md, " {p} |");
    }
    for p in &executors {
        let _ = write!(md, " {p} / docker |");
        if versus_native {
            let _ = write!(md, " {p} / native |");
        }
    }
    let _ = writeln!(md);
    let columns = platforms.len() + executors.len() * if versus_native { 2 } else { 1 };
    let _ = writeln!(md, "|---|{}", "---|".repeat(columns));
    for level in cells.levels(experiment, experiment) {
        let _ = write!(md, "| {level} |");
        let rate = |p: &str| {
            cells
                .find(experiment, p, experiment, level)
                .and_then(|c| c.rate)
        };
        for p in platforms {
            match cells.find(experiment, p, experiment, level) {
                Some(c) => {
                    let _ = write!(
                        md,
                        " {} ({} / {}){} |",
                        rate_ci(c),
                        opt(c.p50_ms),
                        opt(c.p99_ms),
                        failed(c)
                    );
                }
                None => md.push_str(" – |"),
            }
        }
        for p in &executors {
            let _ = write!(md, " {} |", ratio(rate(p), rate("docker")));
            if versus_native {
                let _ = write!(md, " {} |", ratio(rate(p), rate("native")));
            }
        }
        let _ = writeln!(md);
    }
    md
}
