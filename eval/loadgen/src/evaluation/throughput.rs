//! Experiments 2 and 3 (and the workloads of experiment 8): closed-loop throughput and latency
//! of one workload at rising concurrency, every client with its own warm containers.

use super::{
    Context, Results,
    load::{self, Plan},
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

/// Runs `workload` at each concurrency in `levels` as `plan` says, into `results` under
/// `experiment`.
pub fn run(
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
        let started = std::time::Instant::now();
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
                // Cores each side kept busy over the level: the load generator (with the delay
                // server, in this process) and the platform's own processes.
                let seconds = started.elapsed().as_secs_f64();
                let cores =
                    |before: u64, after: u64| after.saturating_sub(before) as f64 / 1e9 / seconds;
                let loadgen_cores = cores(cpu_before.0, crate::cpu::own_cpu_ns());
                let platform_cores = cpu_before
                    .1
                    .zip(platform.own_cpu_ns())
                    .map(|(before, after)| cores(before, after));
                tracing::info!(
                    platform = platform.name(),
                    scenario,
                    level,
                    ok,
                    loadgen_cores = format_args!("{loadgen_cores:.2}"),
                    platform_cores = platform_cores.map(|c| format!("{c:.2}")),
                    "level done"
                );
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
