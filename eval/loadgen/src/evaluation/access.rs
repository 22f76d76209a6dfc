//! Experiment 6, the access patterns of Hall and Ramachandran, each through a fresh
//! OpenWhisk-like pool with room for every client's container: a single client calling one
//! action again and again (one cold start, then warm), many clients each calling their own
//! action once at the same moment (all cold), and many clients each calling their own action
//! again and again.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::sync::Barrier;

use super::{Context, load, sample::Sample};
use crate::{
    failures,
    invoker::{Invoker, PoolConfig},
    platform::Platform,
};

/// The three patterns: label, clients, requests per client.
fn patterns(ctx: &Context) -> [(&'static str, usize, usize); 3] {
    let s = &ctx.sizes;
    [
        ("single_client_multiple_access", 1, s.access_requests),
        ("multiple_clients_single_access", s.access_clients, 1),
        (
            "multiple_clients_multiple_access",
            s.access_clients,
            s.access_requests,
        ),
    ]
}

pub fn run(platform: Arc<dyn Platform>, ctx: &Context) -> anyhow::Result<Vec<Sample>> {
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
