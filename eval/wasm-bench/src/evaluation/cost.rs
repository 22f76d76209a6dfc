//! Experiment 9, platform cost: the CPU time the host spends per warm activation of a trivial
//! action (`hash` with one iteration), everything the platform runs counted: for the executor
//! its whole process (HTTP, instantiation, the guest); for Docker the container's cgroup (the
//! action proxy and the action process it starts) plus its containerd shim and the engine; for
//! the native binary its process. Sequential activations from one client, after a warm-up;
//! for the executor builds also their own mean /run duration (the warm path inside them).

use std::{
    fmt::Write as _,
    time::{Duration, Instant},
};

use serde::Serialize;
use serde_json::json;

use super::{
    Context,
    experiment::{Experiment, JsonParts},
    markdown::ratio,
    runner::Run,
    summary::Report,
};
use crate::{failures, metrics::Phase, platform::Platform};

#[derive(Debug, Clone, Serialize)]
pub struct CostRow {
    pub platform: String,
    pub activations: usize,
    /// Host CPU per activation, µs.
    pub cpu_us: f64,
    /// Wall time per activation as the client saw it, µs.
    pub wall_us: f64,
    /// Mean /run duration inside the executor, µs (executor builds: its run histogram).
    pub executor_us: Option<f64>,
}

/// Activations before the measured ones.
const WARM_UP: usize = 20;

pub fn measure(platform: &dyn Platform, ctx: &Context) -> anyhow::Result<CostRow> {
    let action = ctx.action(platform, "cost-hash", "hash");
    let params = action.params(&json!({"iterations": 1}));
    let container = platform.create(&action)?;
    let n = ctx.sizes.cost_activations;
    let result = (|| {
        for _ in 0..WARM_UP {
            anyhow::ensure!(container.run(&params)?.ok(), "the warm-up failed");
        }
        std::thread::sleep(Duration::from_millis(200));
        let cpu = |c: &dyn crate::platform::Container| {
            platform.own_cpu_ns().unwrap_or(0) + c.cpu_ns().unwrap_or(0)
        };
        let before = cpu(&*container);
        let runs_before = platform.executor_histogram(Phase::Run);
        let started = Instant::now();
        for _ in 0..n {
            let run = container.run(&params)?;
            anyhow::ensure!(run.ok(), "an activation answered {}", run.status);
        }
        let wall = started.elapsed();
        let used = cpu(&*container).saturating_sub(before);
        let executor_us = match (runs_before, platform.executor_histogram(Phase::Run)) {
            (Some(before), Some(after)) => after.mean_us_since(&before),
            _ => None,
        };
        Ok(CostRow {
            platform: platform.name().to_owned(),
            activations: n,
            cpu_us: used as f64 / n.max(1) as f64 / 1000.0,
            wall_us: wall.as_secs_f64() * 1e6 / n.max(1) as f64,
            executor_us,
        })
    })();
    if let Err(error) = container.remove() {
        failures::housekeeping("removing a container", &error);
    }
    let row = result?;
    tracing::info!(platform = %row.platform, cpu_us = row.cpu_us, wall_us = row.wall_us, "platform cost measured");
    Ok(row)
}

/// Experiment 9 in the registry.
pub struct Cost;

impl Experiment for Cost {
    fn name(&self) -> &'static str {
        "cost"
    }

    fn description(&self) -> &'static str {
        "9: host CPU per warm activation of a trivial action, everything the platform runs counted"
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        for &name in platforms {
            run.step("cost", name);
            let row = measure(&*run.platform(name)?, run.ctx)?;
            run.results.push_row(row);
        }
        Ok(())
    }

    fn record(&self, report: &Report<'_>, json: &mut JsonParts) -> anyhow::Result<()> {
        let rows = report.results.rows::<CostRow>();
        json.top.insert("cost".into(), serde_json::to_value(rows)?);
        Ok(())
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let cost = report.results.rows::<CostRow>();
        let mut md = String::new();
        if cost.is_empty() {
            return md;
        }
        let _ = writeln!(
            md,
            "\n## 9. Platform cost: host CPU per warm activation (hash, 1 iteration, one client)\n"
        );
        let _ = writeln!(
            md,
            "| platform | activations | CPU µs per activation | wall µs per activation | µs inside the executor | CPU vs docker |\n|---|---|---|---|---|---|"
        );
        let docker = cost
            .iter()
            .find(|r| r.platform == "docker")
            .map(|r| r.cpu_us);
        for row in cost {
            let _ = writeln!(
                md,
                "| {} | {} | {:.0} | {:.0} | {} | {} |",
                row.platform,
                row.activations,
                row.cpu_us,
                row.wall_us,
                row.executor_us
                    .map_or("–".to_owned(), |us| format!("{us:.0}")),
                ratio(Some(row.cpu_us), docker)
            );
        }
        md
    }
}
