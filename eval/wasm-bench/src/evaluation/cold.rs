//! Experiment 1, cold start: i containers created at the same moment for i = 1 … N, each
//! timed from the request until it is ready (created and initialized) and until its first
//! result. Each level is repeated until it has about `samples` cold starts.

use std::{
    fmt::Write as _,
    sync::{Arc, Barrier},
    time::Instant,
};

use super::{
    Context,
    cells::CellRate,
    experiment::Experiment,
    markdown::{failed, median_ci, opt},
    runner::Run,
    sample::Sample,
    summary::Report,
};
use crate::{
    failures,
    platform::{Action, Container, Platform},
};

/// One cold start of `action`, timed from now until the container is ready and until its first
/// result; the container, when one was made, for the caller to remove.
pub fn start(
    platform: &dyn Platform,
    action: &Action,
    epoch: Instant,
) -> (Sample, Option<Box<dyn Container>>) {
    let start = Instant::now();
    let mut sample = Sample {
        platform: platform.name().to_owned(),
        scenario: "echo".into(),
        start_ns: start.duration_since(epoch).as_nanos() as u64,
        cold: true,
        action: action.name.clone(),
        ..Sample::default()
    };
    let container = match platform.create(action) {
        Ok(container) => container,
        Err(error) => {
            tracing::warn!(platform = platform.name(), %error, "cold start failed");
            sample.latency_ns = start.elapsed().as_nanos() as u64;
            return (sample, None);
        }
    };
    sample.ready_ns = Some(start.elapsed().as_nanos() as u64);
    sample.status = match container.run(&action.params(&serde_json::json!({}))) {
        Ok(result) => result.status,
        Err(error) => {
            tracing::warn!(platform = platform.name(), %error, "first run failed");
            0
        }
    };
    sample.latency_ns = start.elapsed().as_nanos() as u64;
    (sample, Some(container))
}

pub fn measure(platform: &dyn Platform, ctx: &Context) -> anyhow::Result<Vec<Sample>> {
    let mut samples = Vec::new();
    let mut next = 0u64;
    for &level in &ctx.sizes.cold_levels {
        let rounds = ctx.sizes.cold_samples.div_ceil(level).max(1);
        for round in 0..rounds {
            let barrier = Arc::new(Barrier::new(level));
            let started: Vec<(Sample, Option<Box<dyn Container>>)> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..level)
                    .map(|client| {
                        let barrier = Arc::clone(&barrier);
                        let action =
                            ctx.action(platform, &format!("cold{}", next + client as u64), "echo");
                        scope.spawn(move || {
                            barrier.wait();
                            let (mut sample, container) = start(platform, &action, ctx.epoch);
                            sample.level = level as u32;
                            sample.client = client as u32;
                            sample.seq = round as u64;
                            (sample, container)
                        })
                    })
                    .collect();
                failures::join_all(handles, "cold start")
            })?;
            next += level as u64;
            for (sample, container) in started {
                samples.push(sample);
                if let Some(container) = container
                    && let Err(error) = container.remove()
                {
                    failures::housekeeping("removing a container", &error);
                }
            }
        }
        tracing::info!(platform = platform.name(), level, "cold starts done");
    }
    Ok(samples)
}

/// Experiment 1 in the registry.
pub struct Cold;

impl Experiment for Cold {
    fn name(&self) -> &'static str {
        "cold"
    }

    fn description(&self) -> &'static str {
        "1: simultaneous cold starts of echo, time to ready and to the first result"
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        run.samples_per_platform("cold", platforms, |p, ctx| measure(&*p, ctx))
    }

    fn expects_activations(&self) -> bool {
        true
    }

    fn cells(&self, _ctx: &Context) -> Option<CellRate> {
        Some(CellRate::None)
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let cells = &report.cells;
        let mut md = String::new();
        if !cells.has("cold") {
            return md;
        }
        let (platforms, executors) = (report.platforms(), report.executors());
        let _ = writeln!(
            md,
            "## 1. Cold start (echo): p50 ready / p50 first result [its 95 % CI] / p99 first result, ms\n"
        );
        let _ = write!(md, "| i |");
        for p in platforms {
            let _ = write!(md, " {p} |");
        }
        for p in &executors {
            let _ = write!(md, " {p} vs docker (p50 first result) |");
        }
        let _ = writeln!(md);
        let _ = writeln!(
            md,
            "|---|{}",
            "---|".repeat(platforms.len() + executors.len())
        );
        for level in cells.levels("cold", "echo") {
            let _ = write!(md, "| {level} |");
            for p in platforms {
                match cells.find("cold", p, "echo", level) {
                    Some(c) => {
                        let _ = write!(
                            md,
                            " {} / {}{} / {}{} |",
                            opt(c.ready_p50_ms),
                            opt(c.p50_ms),
                            median_ci(c),
                            opt(c.p99_ms),
                            failed(c)
                        );
                    }
                    None => md.push_str(" – |"),
                }
            }
            let docker = cells
                .find("cold", "docker", "echo", level)
                .and_then(|c| c.p50_ms);
            for p in &executors {
                let own = cells.find("cold", p, "echo", level).and_then(|c| c.p50_ms);
                let text = match (own, docker) {
                    (Some(o), Some(d)) if d > 0.0 => format!("−{:.1} %", 100.0 * (1.0 - o / d)),
                    _ => "–".into(),
                };
                let _ = write!(md, " {text} |");
            }
            let _ = writeln!(md);
        }
        md
    }
}
