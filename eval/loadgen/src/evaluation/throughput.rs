//! Experiments 2 and 3 (and the workloads of experiment 8): closed-loop throughput and latency
//! of one workload at rising concurrency, every client with its own warm containers.

use std::time::Duration;

use super::{Context, load, sample::Sample};
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

/// Runs `workload` at each concurrency in `levels` for `measured` after `warmup`.
pub fn run(
    platform: &dyn Platform,
    ctx: &Context,
    workload: Workload,
    levels: &[usize],
    scenario: &str,
    (warmup, measured): (Duration, Duration),
) -> anyhow::Result<Vec<Sample>> {
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
    let mut samples = Vec::new();
    let mut result = Ok(());
    for &level in levels {
        match load::closed_loop(
            &mut sets[..level],
            platform.name(),
            scenario,
            level as u32,
            warmup,
            measured,
            ctx.epoch,
            level as u64,
        ) {
            Ok(part) => {
                let ok = part.iter().filter(|s| !s.warmup && s.ok()).count();
                tracing::info!(
                    platform = platform.name(),
                    scenario,
                    level,
                    ok,
                    "level done"
                );
                samples.extend(part);
            }
            Err(error) => {
                result = Err(error);
                break;
            }
        }
    }
    load::remove_sets(sets);
    result.map(|()| samples)
}
