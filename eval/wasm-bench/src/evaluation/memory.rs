//! Experiment 7, memory: what the host pays per warm container of `hash` built three ways
//! (release with LTO, release, debug). For the executor: its RSS growth per container, over
//! its idle RSS. For Docker: the container's own memory (its cgroup, as `docker stats` counts
//! it) plus its containerd shim, plus the engine's growth per container.

use std::{fmt::Write as _, time::Duration};

use serde::Serialize;

use super::{
    Context,
    experiment::{AppliesTo, Experiment, JsonParts, Stage},
    markdown::ratio,
    runner::Run,
    summary::Report,
};
use crate::{failures, platform::Platform};

/// The three builds of `hash` (files `hash.<variant>.wasm` and native `hash.<variant>`).
pub const VARIANTS: [&str; 3] = ["lto", "release", "debug"];

#[derive(Debug, Clone, Serialize)]
pub struct MemoryRow {
    pub platform: String,
    pub variant: String,
    pub containers: usize,
    /// The platform's own processes before any container (executor; dockerd + containerd).
    pub idle_mib: f64,
    /// Host memory per warm container, MiB.
    pub per_container_mib: f64,
    /// Warm containers that fit in 1 GiB at that rate.
    pub per_gib: f64,
}

const MIB: f64 = 1024.0 * 1024.0;

/// Creates `containers` warm containers of `hash.<variant>` (each run once) and measures.
pub fn measure(platform: &dyn Platform, ctx: &Context, variant: &str) -> anyhow::Result<MemoryRow> {
    measure_module(platform, ctx, &format!("hash.{variant}"), variant)
}

/// Creates `containers` warm containers of `module` (a build of `hash`, each run once) and
/// measures; `variant` labels the row.
pub fn measure_module(
    platform: &dyn Platform,
    ctx: &Context,
    module: &str,
    variant: &str,
) -> anyhow::Result<MemoryRow> {
    let settle = || std::thread::sleep(Duration::from_millis(300));
    settle();
    let idle = platform.own_memory().unwrap_or(0);
    let n = ctx.sizes.memory_containers;
    let mut containers = Vec::new();
    let mut result = Ok(());
    for k in 0..n {
        let action = ctx.action(platform, &format!("mem-{variant}-{k}"), module);
        match platform.create(&action).and_then(|c| {
            let run = c.run(&action.params(&serde_json::json!({"iterations": 1000})))?;
            anyhow::ensure!(run.ok(), "hash answered {}", run.status);
            Ok(c)
        }) {
            Ok(c) => containers.push(c),
            Err(error) => {
                result = Err(error);
                break;
            }
        }
    }
    settle();
    let after = platform.own_memory().unwrap_or(0);
    let own: u64 = containers.iter().filter_map(|c| c.memory()).sum();
    for c in containers {
        if let Err(error) = c.remove() {
            failures::housekeeping("removing a container", &error);
        }
    }
    result?;
    let per = (after.saturating_sub(idle) + own) as f64 / n.max(1) as f64 / MIB;
    tracing::info!(
        platform = platform.name(),
        variant,
        per_container_mib = per,
        "memory measured"
    );
    Ok(MemoryRow {
        platform: platform.name().to_owned(),
        variant: variant.to_owned(),
        containers: n,
        idle_mib: idle as f64 / MIB,
        per_container_mib: per,
        per_gib: if per > 0.0 {
            1024.0 / per
        } else {
            f64::INFINITY
        },
    })
}

/// Experiment 7 in the registry: after the shared platforms have stopped, on a new executor
/// per build of `hash` (and on Docker's engine, which stays up).
pub struct Memory;

impl Experiment for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn description(&self) -> &'static str {
        "7: host memory per warm container of hash built three ways (LTO, release, debug)"
    }

    fn applies_to(&self) -> AppliesTo {
        AppliesTo::NotNative
    }

    fn stage(&self) -> Stage {
        Stage::OwnProcesses
    }

    fn docker_modules(&self) -> Vec<String> {
        VARIANTS.map(|v| format!("hash.{v}")).to_vec()
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        for &name in platforms {
            run.step("memory", name);
            for variant in VARIANTS {
                let module = format!("hash.{variant}");
                let row = if name == "docker" {
                    measure(&*run.docker()?, run.ctx, variant)?
                } else {
                    let fresh = run.start_executor(name, name, &[module.as_str()], &[])?;
                    measure(&fresh, run.ctx, variant)?
                };
                run.results.push_row(row);
            }
        }
        Ok(())
    }

    fn record(&self, report: &Report<'_>, json: &mut JsonParts) -> anyhow::Result<()> {
        let rows = report.results.rows::<MemoryRow>();
        json.top
            .insert("memory".into(), serde_json::to_value(rows)?);
        Ok(())
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let memory = report.results.rows::<MemoryRow>();
        let mut md = String::new();
        if memory.is_empty() {
            return md;
        }
        let _ = writeln!(md, "\n## 7. Memory per warm container (hash)\n");
        let _ = writeln!(
            md,
            "| platform | build | idle MiB | MiB per warm container | warm containers per GiB | vs docker |\n|---|---|---|---|---|---|"
        );
        for row in memory {
            let docker = memory
                .iter()
                .find(|r| r.platform == "docker" && r.variant == row.variant)
                .map(|r| r.per_gib);
            let _ = writeln!(
                md,
                "| {} | {} | {:.1} | {:.2} | {:.0} | {} |",
                row.platform,
                row.variant,
                row.idle_mib,
                row.per_container_mib,
                row.per_gib,
                ratio(Some(row.per_gib), docker)
            );
        }
        md
    }
}
