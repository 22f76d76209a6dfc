//! Experiment 11, /init inside the executor builds: the `big` action (a 300 KB module) as a
//! signed precompiled zip that no live container holds (decoded, verified and deserialized
//! anew), the same zip while a container of it lives (shared), portable Wasm from the
//! executor's on-disk cache, and portable Wasm compiled in a new executor with an empty cache.
//! Every /init comes on a new connection, as the invoker sends it; each container is destroyed
//! (untimed) before the next. Latency as the client saw it, and the executor's own mean from
//! its /init histogram.

use std::{fmt::Write as _, time::Instant};

use anyhow::bail;
use serde::Serialize;

use super::{
    Context,
    experiment::{AppliesTo, Experiment, JsonParts, Stage},
    markdown::opt3,
    runner::Run,
    sample::Sample,
    summary::Report,
};
use crate::{
    executor::{destroy_container, init_container},
    http::{Client, ConnMode},
    metrics::Phase,
    platform::{Platform, wasm::WasmPlatform},
    stats,
};

/// The module every /init carries.
pub const MODULE: &str = "big";

pub const SCENARIOS: [&str; 4] = [
    "precompiled_new",
    "precompiled_shared",
    "portable_cached",
    "portable_compile",
];

#[derive(Debug, Clone, Serialize)]
pub struct InitRow {
    pub platform: String,
    pub scenario: String,
    pub inits: usize,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Mean /init duration inside the executor (its `init_duration_seconds` histogram).
    pub executor_mean_ms: Option<f64>,
}

/// Runs every scenario on `platform` (started with [`MODULE`] prepared); `fresh` starts a new
/// executor of the same build with an empty cache for each compiling /init.
pub fn measure(
    platform: &WasmPlatform,
    fresh: &dyn Fn(usize) -> anyhow::Result<WasmPlatform>,
    ctx: &Context,
) -> anyhow::Result<(Vec<Sample>, Vec<InitRow>)> {
    let Some(precompiled) = platform.precompiled_init_body(MODULE) else {
        bail!("{MODULE} was not prepared on {}", platform.name());
    };
    let portable = platform.portable_init_body(MODULE)?;
    let count = ctx.sizes.inits;
    let mut samples = Vec::new();
    let mut rows = Vec::new();
    let mut measure = |scenario: &str, on: &WasmPlatform, body: &[u8], count: usize| {
        let (part, row) = inits(on, scenario, body, count, ctx)?;
        tracing::info!(
            platform = platform.name(),
            scenario,
            p50_ms = row.p50_ms,
            executor_mean_ms = row.executor_mean_ms,
            "/init measured"
        );
        samples.extend(part);
        rows.push(row);
        anyhow::Ok(())
    };
    measure(SCENARIOS[0], platform, precompiled, count)?;
    let mut admin = Client::new(platform.addr(), ConnMode::KeepAlive);
    init_container(platform.addr(), "init-holder", precompiled)?;
    measure(SCENARIOS[1], platform, precompiled, count)?;
    destroy_container(&mut admin, "init-holder")?;
    // The first portable /init compiles and fills the on-disk cache; the others read it.
    init_container(platform.addr(), "init-compile-first", &portable)?;
    destroy_container(&mut admin, "init-compile-first")?;
    measure(SCENARIOS[2], platform, &portable, count)?;
    let mut compiled = Vec::new();
    let mut executor_ms = Vec::new();
    for i in 0..ctx.sizes.compile_inits {
        let new = fresh(i)?;
        let (mut part, row) = inits(&new, SCENARIOS[3], &portable, 1, ctx)?;
        if let Some(mean) = row.executor_mean_ms {
            executor_ms.push(mean);
        }
        for sample in &mut part {
            sample.platform = platform.name().to_owned();
            sample.seq = i as u64;
        }
        compiled.extend(part);
    }
    let mut row = row_of(platform.name(), SCENARIOS[3], &compiled);
    row.executor_mean_ms = stats::mean_ci95(&executor_ms).map(|(mean, _)| mean);
    samples.extend(compiled);
    rows.push(row);
    Ok((samples, rows))
}

/// `count` timed /inits of `body` into new containers of `on`, each destroyed afterwards.
fn inits(
    on: &WasmPlatform,
    scenario: &str,
    body: &[u8],
    count: usize,
    ctx: &Context,
) -> anyhow::Result<(Vec<Sample>, InitRow)> {
    let before = on.executor_histogram(Phase::Init);
    let mut admin = Client::new(on.addr(), ConnMode::KeepAlive);
    let mut samples = Vec::with_capacity(count);
    for seq in 0..count {
        let id = format!("init-{scenario}-{seq}");
        let start = Instant::now();
        let response = Client::new(on.addr(), ConnMode::New).post(&format!("/{id}/init"), body)?;
        let latency_ns = start.elapsed().as_nanos() as u64;
        if response.status != 200 {
            bail!(
                "/init of {id} answered {}: {}",
                response.status,
                response.text()
            );
        }
        samples.push(Sample {
            platform: on.name().to_owned(),
            scenario: scenario.to_owned(),
            level: 1,
            seq: seq as u64,
            start_ns: start.duration_since(ctx.epoch).as_nanos() as u64,
            latency_ns,
            ready_ns: Some(latency_ns),
            status: response.status,
            cold: true,
            action: MODULE.to_owned(),
            ..Sample::default()
        });
        destroy_container(&mut admin, &id)?;
    }
    let after = on.executor_histogram(Phase::Init);
    let mut row = row_of(on.name(), scenario, &samples);
    row.executor_mean_ms = match (before, after) {
        (Some(before), Some(after)) => after.mean_us_since(&before).map(|us| us / 1e3),
        _ => None,
    };
    Ok((samples, row))
}

fn row_of(platform: &str, scenario: &str, samples: &[Sample]) -> InitRow {
    let latency = stats::Summary::of_ns(samples.iter().map(|s| s.latency_ns));
    InitRow {
        platform: platform.to_owned(),
        scenario: scenario.to_owned(),
        inits: samples.len(),
        p50_ms: latency.as_ref().map(|l| l.p50_us / 1e3),
        p99_ms: latency.as_ref().map(|l| l.p99_us / 1e3),
        executor_mean_ms: None,
    }
}

/// Experiment 11 in the registry: after the shared platforms have stopped, on an executor of
/// its own (and a new one per compiling /init).
pub struct Init;

impl Experiment for Init {
    fn name(&self) -> &'static str {
        "init"
    }

    fn description(&self) -> &'static str {
        "11: /init of a 300 KB module, precompiled (new and shared) and portable (cached and compiled)"
    }

    fn applies_to(&self) -> AppliesTo {
        AppliesTo::Executors
    }

    fn stage(&self) -> Stage {
        Stage::OwnProcesses
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        for &name in platforms {
            run.step("init", name);
            let platform = run.start_executor(name, name, &[MODULE], &[])?;
            let fresh =
                |i: usize| run.start_executor(&format!("{name}-compile{i}"), name, &[], &[]);
            let (samples, rows) = measure(&platform, &fresh, run.ctx)?;
            run.results.add("init", samples);
            for row in rows {
                run.results.push_row(row);
            }
        }
        Ok(())
    }

    fn record(&self, report: &Report<'_>, json: &mut JsonParts) -> anyhow::Result<()> {
        let rows = report.results.rows::<InitRow>();
        json.top.insert("init".into(), serde_json::to_value(rows)?);
        Ok(())
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let rows = report.results.rows::<InitRow>();
        let mut md = String::new();
        if rows.is_empty() {
            return md;
        }
        let _ = writeln!(
            md,
            "\n## 11. /init of `{MODULE}` (executor builds): p50 / p99 as the client saw it, mean inside the executor, ms\n"
        );
        let _ = write!(md, "| build |");
        for scenario in SCENARIOS {
            let _ = write!(md, " {} |", scenario.replace('_', " "));
        }
        let _ = writeln!(md, "\n|---|{}", "---|".repeat(SCENARIOS.len()));
        for p in report.executors() {
            let _ = write!(md, "| {p} |");
            for scenario in SCENARIOS {
                match rows
                    .iter()
                    .find(|r| &r.platform == p && r.scenario == scenario)
                {
                    Some(r) => {
                        let _ = write!(
                            md,
                            " {} / {} / {} ({}) |",
                            opt3(r.p50_ms),
                            opt3(r.p99_ms),
                            opt3(r.executor_mean_ms),
                            r.inits
                        );
                    }
                    None => md.push_str(" – |"),
                }
            }
            let _ = writeln!(md);
        }
        md
    }
}
