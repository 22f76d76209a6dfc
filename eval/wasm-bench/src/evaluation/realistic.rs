//! Experiment 5, the Azure-derived workload: open-loop Poisson arrivals; 90 % go to two hot
//! actions, 10 % to one of 60 rare ones; half of the actions are CPU-bound (`hash`), half
//! I/O-bound (`net`); an OpenWhisk-like pool (1024 MB of user memory, 256 MB containers,
//! idle eviction) in front of the platform, once per concurrency limit of the actions (the
//! activations one container runs at once: the samples' level). Latency counts from the
//! scheduled arrival, so a slow platform cannot slow the load down; the generator is async
//! (one thread drives every request in flight), so a backlog of thousands costs it no threads.

use std::{
    fmt::Write as _,
    sync::Arc,
    time::{Duration, Instant},
};

use rand::{Rng, SeedableRng, rngs::StdRng};

use super::{
    Context, EvaluateArgs, cells::CellRate, experiment::Experiment, load, markdown::opt,
    runner::Run, sample::Sample, summary::Report,
};
use crate::{
    failures,
    invoker::{Invoker, PoolConfig},
    platform::{Action, Platform},
};

/// Hot actions, rare actions and the share of requests to the hot ones.
const HOT: usize = 2;
const RARE: usize = 60;
const HOT_SHARE: f64 = 0.9;

/// The 62 actions: `hot0` (hash), `hot1` (net), `rare0..59` (even: hash, odd: net).
pub fn actions(platform: &dyn Platform, ctx: &Context) -> (Vec<Action>, Vec<Action>) {
    let kind = |k: usize| if k.is_multiple_of(2) { "hash" } else { "net" };
    let hot = (0..HOT)
        .map(|k| ctx.action(platform, &format!("hot{k}"), kind(k)))
        .collect();
    let rare = (0..RARE)
        .map(|k| ctx.action(platform, &format!("rare{k}"), kind(k)))
        .collect();
    (hot, rare)
}

/// The workload through OpenWhisk's default pool with the actions' concurrency `limit` (the
/// samples' level).
pub fn measure(
    platform: Arc<dyn Platform>,
    ctx: &Context,
    limit: usize,
) -> anyhow::Result<Vec<Sample>> {
    let sizes = &ctx.sizes;
    let config = PoolConfig {
        concurrency: limit,
        ..PoolConfig::openwhisk(Duration::from_secs_f64(sizes.realistic_idle_secs))
    };
    let spec = Load {
        scenario: "realistic",
        level: limit as u32,
        rate: sizes.realistic_rate,
        duration: Duration::from_secs_f64(sizes.realistic_secs),
    };
    drive(platform, ctx, config, &spec)
}

/// One run of the workload.
pub struct Load {
    pub scenario: &'static str,
    /// The samples' level.
    pub level: u32,
    /// Mean arrivals per second.
    pub rate: f64,
    pub duration: Duration,
}

/// Drives `spec` through a pool configured as `config` in front of `platform`.
pub fn drive(
    platform: Arc<dyn Platform>,
    ctx: &Context,
    config: PoolConfig,
    spec: &Load,
) -> anyhow::Result<Vec<Sample>> {
    let (hot, rare) = actions(&*platform, ctx);
    let name = platform.name().to_owned();
    let invoker = Invoker::start(Arc::clone(&platform), config);
    let mut rng = StdRng::seed_from_u64(42);
    let duration = spec.duration;
    // Arrival times and targets, drawn up front so every platform gets the same sequence.
    let mut arrivals = Vec::new();
    let mut at = 0.0f64;
    loop {
        at += -(1.0 - rng.r#gen::<f64>()).ln() / spec.rate;
        if at >= duration.as_secs_f64() {
            break;
        }
        let action = if rng.r#gen::<f64>() < HOT_SHARE {
            hot[rng.gen_range(0..HOT)].clone()
        } else {
            rare[rng.gen_range(0..RARE)].clone()
        };
        arrivals.push((Duration::from_secs_f64(at), action));
    }
    tracing::info!(platform = %name, requests = arrivals.len(), scenario = spec.scenario, "realistic workload");
    let runtime = crate::runtime::build("loadgen")?;
    let (scenario, level, epoch) = (spec.scenario, spec.level, ctx.epoch);
    let begun = Instant::now();
    // One thread sends every request at its time; each waits for its answer as a task.
    let samples = runtime.block_on(async {
        let mut requests = tokio::task::JoinSet::new();
        for (seq, (offset, action)) in arrivals.into_iter().enumerate() {
            let arrival = begun + offset;
            tokio::time::sleep_until(arrival.into()).await;
            let invoker = Arc::clone(&invoker);
            requests.spawn(async move {
                Sample {
                    scenario: scenario.into(),
                    level,
                    seq: seq as u64,
                    ..load::pooled_run(&invoker, &action, arrival, epoch).await
                }
            });
        }
        failures::join_tasks(requests, "request").await
    });
    invoker.shutdown();
    samples
}

/// Experiment 5 in the registry: once per concurrency limit.
pub struct Realistic;

impl Experiment for Realistic {
    fn name(&self) -> &'static str {
        "realistic"
    }

    fn description(&self) -> &'static str {
        "5: Azure-derived open-loop load through an OpenWhisk-like pool, per concurrency limit"
    }

    fn steps(&self, platforms: &[&str], ctx: &Context, _args: &EvaluateArgs) -> usize {
        ctx.sizes.realistic_limits.len() * platforms.len()
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        for &name in platforms {
            for &limit in &run.ctx.sizes.realistic_limits {
                run.step("realistic", &format!("{name} at concurrency limit {limit}"));
                let samples = measure(run.platform(name)?, run.ctx, limit)?;
                run.results.add("realistic", samples);
            }
        }
        Ok(())
    }

    fn expects_activations(&self) -> bool {
        true
    }

    fn cells(&self, ctx: &Context) -> Option<CellRate> {
        Some(CellRate::Span(ctx.sizes.realistic_secs))
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let mut md = String::new();
        if !report.cells.has("realistic") {
            return md;
        }
        let _ = writeln!(
            md,
            "\n## 5. Realistic (Azure-derived, OpenWhisk-like pool)\n"
        );
        let _ = writeln!(
            md,
            "| platform | concurrency limit | requests | failed | cold starts | cold share | p50 ms | p90 ms | p99 ms | mean ms |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for c in report.cells.all("realistic") {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {:.1} % | {} | {} | {} | {} |",
                c.platform,
                c.level,
                c.requests,
                c.errors,
                c.cold,
                100.0 * c.cold as f64 / c.requests.max(1) as f64,
                opt(c.p50_ms),
                opt(c.p90_ms),
                opt(c.p99_ms),
                opt(c.mean_ms)
            );
        }
        md
    }
}
