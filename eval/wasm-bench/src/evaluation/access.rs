//! Experiment 6, the access patterns of Hall and Ramachandran, each through a fresh
//! OpenWhisk-like pool with room for every client's container: a single client calling one
//! action again and again (one cold start, then warm), many clients each calling their own
//! action once at the same moment (all cold), and many clients each calling their own action
//! again and again.

use std::{
    fmt::Write as _,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::sync::Barrier;

use super::{
    Context, cells::CellRate, experiment::Experiment, load, markdown::opt, runner::Run,
    sample::Sample, summary::Report,
};
use crate::{
    failures,
    invoker::{Invoker, PoolConfig},
    platform::Platform,
};

/// The patterns' labels (the samples' scenario), in order.
const PATTERNS: [&str; 3] = [
    "single_client_multiple_access",
    "multiple_clients_single_access",
    "multiple_clients_multiple_access",
];

/// The three patterns: label, clients, requests per client.
fn patterns(ctx: &Context) -> [(&'static str, usize, usize); 3] {
    let s = &ctx.sizes;
    [
        (PATTERNS[0], 1, s.access_requests),
        (PATTERNS[1], s.access_clients, 1),
        (PATTERNS[2], s.access_clients, s.access_requests),
    ]
}

pub fn measure(platform: Arc<dyn Platform>, ctx: &Context) -> anyhow::Result<Vec<Sample>> {
    let mut samples = Vec::new();
    for (pattern, clients, requests) in patterns(ctx) {
        let config = PoolConfig {
            user_memory_mb: 256 * clients as u64,
            ..PoolConfig::openwhisk(Duration::from_secs(600))
        };
        let invoker = Invoker::start(Arc::clone(&platform), config);
        let name = platform.name().to_owned();
        let runtime = crate::runtime::build("loadgen")?;
        let epoch = ctx.epoch;
        let parts = runtime.block_on(async {
            // Every client starts at the same moment.
            let barrier = Arc::new(Barrier::new(clients));
            let mut tasks = tokio::task::JoinSet::new();
            for client in 0..clients {
                let invoker = Arc::clone(&invoker);
                let barrier = Arc::clone(&barrier);
                let action = ctx.action(&*platform, &format!("{pattern}-{client}"), "echo");
                tasks.spawn(async move {
                    barrier.wait().await;
                    let mut samples = Vec::with_capacity(requests);
                    for seq in 0..requests {
                        samples.push(Sample {
                            scenario: pattern.into(),
                            level: clients as u32,
                            client: client as u32,
                            seq: seq as u64,
                            ..load::pooled_run(&invoker, &action, Instant::now(), epoch).await
                        });
                    }
                    samples
                });
            }
            failures::join_tasks(tasks, "access client").await
        })?;
        invoker.shutdown();
        samples.extend(parts.into_iter().flatten());
        tracing::info!(platform = %name, pattern, "access pattern done");
    }
    Ok(samples)
}

/// Experiment 6 in the registry.
pub struct Access;

impl Experiment for Access {
    fn name(&self) -> &'static str {
        "access"
    }

    fn description(&self) -> &'static str {
        "6: Hall and Ramachandran's access patterns, echo through an OpenWhisk-like pool"
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        run.samples_per_platform("access", platforms, measure)
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
        if !cells.has("access") {
            return md;
        }
        let platforms = report.platforms();
        let _ = writeln!(
            md,
            "\n## 6. Access patterns (Hall and Ramachandran), echo through the pool: mean / p50 / p99 ms\n"
        );
        let _ = write!(md, "| pattern (clients) |");
        for p in platforms {
            let _ = write!(md, " {p} |");
        }
        let _ = writeln!(md, "\n|---|{}", "---|".repeat(platforms.len()));
        for pattern in PATTERNS {
            let levels = cells.levels("access", pattern);
            let Some(&level) = levels.first() else {
                continue;
            };
            let _ = write!(md, "| {} ({level}) |", pattern.replace('_', " "));
            for p in platforms {
                match cells.find("access", p, pattern, level) {
                    Some(c) => {
                        let _ = write!(
                            md,
                            " {} / {} / {} |",
                            opt(c.mean_ms),
                            opt(c.p50_ms),
                            opt(c.p99_ms)
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
