//! Experiment 9, platform cost: the CPU time the host spends per warm activation of a trivial
//! action (`hash` with one iteration), everything the platform runs counted: for the executor
//! its whole process (HTTP, instantiation, the guest); for Docker the container's cgroup (the
//! action proxy and the action process it starts) plus its containerd shim and the engine; for
//! the native binary its process. Sequential activations from one client, after a warm-up;
//! for the executor builds also their own mean /run duration (the warm path inside them). Each
//! container is measured twice: on a new connection per activation, as OpenWhisk's invoker calls
//! a Docker action container, and on one connection kept alive, as the patch calls the executor.

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
use crate::{
    failures,
    http::{Client, ConnMode},
    metrics::Phase,
    platform::{Container, Platform, RunResult},
};

/// How the client reaches the container for each activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Connection {
    /// A new connection per activation: how OpenWhisk's invoker calls a Docker action
    /// container (its `ApacheBlockingContainerClient` reuses no connection).
    New,
    /// One connection kept alive: how the patch's `WasmContainerFactory` calls the executor
    /// (a pool of keep-alive connections shared by its containers).
    KeptAlive,
}

impl Connection {
    fn label(self) -> &'static str {
        match self {
            Connection::New => "new",
            Connection::KeptAlive => "kept alive",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CostRow {
    pub platform: String,
    /// How the activations reached the container; `None` for a platform spoken to without
    /// HTTP (the native binary, one process per activation).
    pub connection: Option<Connection>,
    pub activations: usize,
    /// Host CPU per activation, µs.
    pub cpu_us: f64,
    /// Wall time per activation as the client saw it, µs.
    pub wall_us: f64,
    /// Mean /run duration inside the executor, µs (executor builds: its run histogram).
    pub executor_us: Option<f64>,
    /// `CLOCK_MONOTONIC` seconds at the first measured activation and after the last (see
    /// [`crate::cpu::monotonic_s`]).
    pub monotonic_s: [f64; 2],
}

/// Activations before the measured ones.
const WARM_UP: usize = 20;

/// One row per way the platform's containers can be reached: for a container behind HTTP a
/// new connection per activation and one kept alive, measured one after the other on the
/// same container; for the native binary its processes.
pub fn measure(platform: &dyn Platform, ctx: &Context) -> anyhow::Result<Vec<CostRow>> {
    let action = ctx.action(platform, "cost-hash", "hash");
    let params = action.params(&json!({"iterations": 1}));
    let container = platform.create(&action)?;
    let result = (|| {
        let Some(endpoint) = container.endpoint() else {
            let row = measure_one(platform, &*container, ctx, None, &mut || {
                container.run(&params)
            })?;
            return Ok(vec![row]);
        };
        [Connection::New, Connection::KeptAlive]
            .into_iter()
            .map(|connection| {
                let mode = match connection {
                    Connection::New => ConnMode::New,
                    Connection::KeptAlive => ConnMode::KeepAlive,
                };
                let mut client = Client::new(endpoint.addr, mode);
                measure_one(platform, &*container, ctx, Some(connection), &mut || {
                    endpoint.run_with(&mut client, &params)
                })
            })
            .collect()
    })();
    if let Err(error) = container.remove() {
        failures::housekeeping("removing a container", &error);
    }
    result
}

/// `ctx.sizes.cost_activations` sequential calls of `activate` after a warm-up, with the CPU
/// the platform and the container used meanwhile.
fn measure_one(
    platform: &dyn Platform,
    container: &dyn Container,
    ctx: &Context,
    connection: Option<Connection>,
    activate: &mut dyn FnMut() -> anyhow::Result<RunResult>,
) -> anyhow::Result<CostRow> {
    let n = ctx.sizes.cost_activations;
    for _ in 0..WARM_UP {
        anyhow::ensure!(activate()?.ok(), "the warm-up failed");
    }
    std::thread::sleep(Duration::from_millis(200));
    let cpu = || platform.own_cpu_ns().unwrap_or(0) + container.cpu_ns().unwrap_or(0);
    let before = cpu();
    let runs_before = platform.executor_histogram(Phase::Run);
    let (started, first) = (Instant::now(), crate::cpu::monotonic_s());
    for _ in 0..n {
        let run = activate()?;
        anyhow::ensure!(run.ok(), "an activation answered {}", run.status);
    }
    let (wall, last) = (started.elapsed(), crate::cpu::monotonic_s());
    let used = cpu().saturating_sub(before);
    let executor_us = match (runs_before, platform.executor_histogram(Phase::Run)) {
        (Some(before), Some(after)) => after.mean_us_since(&before),
        _ => None,
    };
    let row = CostRow {
        platform: platform.name().to_owned(),
        connection,
        activations: n,
        cpu_us: used as f64 / n.max(1) as f64 / 1000.0,
        wall_us: wall.as_secs_f64() * 1e6 / n.max(1) as f64,
        executor_us,
        monotonic_s: [first, last],
    };
    tracing::info!(platform = %row.platform, connection = ?row.connection, cpu_us = row.cpu_us, wall_us = row.wall_us, "platform cost measured");
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
            for row in measure(&*run.platform(name)?, run.ctx)? {
                run.results.push_row(row);
            }
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
            "A new connection per activation is how OpenWhisk's invoker calls a Docker action container; \
             one kept alive is how the patch's WasmContainerFactory calls the executor.\n"
        );
        let _ = writeln!(
            md,
            "| platform | connection | activations | CPU µs per activation | wall µs per activation | µs inside the executor | CPU vs docker, same connection | CPU vs docker, new connection |\n|---|---|---|---|---|---|---|---|"
        );
        let docker = |connection: Option<Connection>| {
            cost.iter()
                .find(|r| r.platform == "docker" && r.connection == connection)
                .map(|r| r.cpu_us)
        };
        for row in cost {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.0} | {:.0} | {} | {} | {} |",
                row.platform,
                row.connection.map_or("–", Connection::label),
                row.activations,
                row.cpu_us,
                row.wall_us,
                row.executor_us
                    .map_or("–".to_owned(), |us| format!("{us:.0}")),
                ratio(Some(row.cpu_us), docker(row.connection)),
                ratio(Some(row.cpu_us), docker(Some(Connection::New)))
            );
        }
        md
    }
}
