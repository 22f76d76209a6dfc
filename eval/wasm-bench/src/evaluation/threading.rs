//! Experiment 8, the threading model: each executor build restarted with every
//! `--guest-execution` mode it has (guests on their requests' tasks, on the blocking pool, or
//! blocking the async workers), CPU-bound, I/O-bound and mixed closed-loop load at rising
//! concurrency. Samples are labelled `<runtime>-<mode>`.

use std::fmt::Write as _;

use super::{
    Context, EvaluateArgs,
    cells::CellRate,
    experiment::{AppliesTo, Experiment, Stage},
    markdown::{opt, ratio},
    runner::Run,
    summary::Report,
    throughput::{self, Workload},
};

/// The `--guest-execution` modes the threading experiment compares on `runtime`: async
/// execution (guests on their requests' tasks) exists in the wasmtime build only.
fn modes(runtime: &str) -> &'static [&'static str] {
    if runtime == "wasmtime" {
        &["async", "pool", "blocking-worker"]
    } else {
        &["pool", "blocking-worker"]
    }
}

/// Experiment 8 in the registry: after the shared platforms have stopped, a new executor per
/// mode.
pub struct Threading;

impl Experiment for Threading {
    fn name(&self) -> &'static str {
        "threading"
    }

    fn description(&self) -> &'static str {
        "8: the executors' threading models (async, pool, blocking worker) under CPU, I/O and mixed load"
    }

    fn applies_to(&self) -> AppliesTo {
        AppliesTo::Executors
    }

    fn stage(&self) -> Stage {
        Stage::OwnProcesses
    }

    fn steps(&self, platforms: &[&str], _ctx: &Context, _args: &EvaluateArgs) -> usize {
        platforms.iter().map(|p| modes(p).len()).sum()
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        let sizes = &run.ctx.sizes;
        let plan = sizes.plan(sizes.warmup_secs, sizes.threading_secs);
        for &name in platforms {
            for &mode in modes(name) {
                let label = format!("{name}-{mode}");
                run.step("threading", &label);
                let platform = run.start_executor(
                    &label,
                    name,
                    &["hash", "net"],
                    &["--guest-execution", mode],
                )?;
                for workload in [Workload::Cpu, Workload::Io, Workload::Mixed] {
                    let levels = &sizes.threading_levels;
                    let label = ("threading", workload.label());
                    throughput::measure(
                        &platform,
                        run.ctx,
                        workload,
                        levels,
                        label,
                        plan,
                        &mut run.results,
                    )?;
                }
            }
        }
        Ok(())
    }

    fn cells(&self, _ctx: &Context) -> Option<CellRate> {
        Some(CellRate::Windows)
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let cells = &report.cells;
        let mut md = String::new();
        if !cells.has("threading") {
            return md;
        }
        let _ = writeln!(
            md,
            "\n## 8. Threading model: activations/s with guests on their requests' tasks (async, wasmtime only), on the blocking pool, and blocking the async workers\n"
        );
        let _ = writeln!(
            md,
            "| runtime | workload | clients | async | pool | blocking worker | async / pool | pool / blocking worker |\n|---|---|---|---|---|---|---|---|"
        );
        for runtime in report.executors() {
            for workload in ["cpu", "io", "mixed"] {
                for level in cells.levels("threading", workload) {
                    let rate = |mode: &str| {
                        cells
                            .find("threading", &format!("{runtime}-{mode}"), workload, level)
                            .and_then(|c| c.rate)
                    };
                    let _ = writeln!(
                        md,
                        "| {runtime} | {workload} | {level} | {} | {} | {} | {} | {} |",
                        opt(rate("async")),
                        opt(rate("pool")),
                        opt(rate("blocking-worker")),
                        ratio(rate("async"), rate("pool")),
                        ratio(rate("pool"), rate("blocking-worker"))
                    );
                }
            }
        }
        md
    }
}
