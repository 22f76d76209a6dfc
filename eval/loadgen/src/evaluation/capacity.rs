//! Experiment 12, capacity in a memory budget: the realistic workload (experiment 5) through a
//! pool that divides OpenWhisk's 1 GiB of user memory by what each platform's containers take
//! (Docker: the 256 MB each container reserves, as OpenWhisk accounts for it; an executor: its
//! measured memory per warm container of `hash`), at rising arrival rates. The sustainable rate
//! is the highest at which no activation failed and the p99 latency stayed within the target.

use std::{sync::Arc, time::Duration};

use serde::Serialize;

use super::{
    Context, memory,
    realistic::{self, Load},
    sample::Sample,
};
use crate::{invoker::PoolConfig, platform::Platform, stats};

#[derive(Debug, Clone, Serialize)]
pub struct CapacityRow {
    pub platform: String,
    /// Memory per container the pool accounts for, MB.
    pub container_mb: f64,
    /// Containers the 1 GiB budget holds.
    pub slots: usize,
    /// Per arrival rate: (rate, p99 ms, failed activations).
    pub levels: Vec<(f64, Option<f64>, usize)>,
    /// The highest rate up to which every rate stayed within the p99 target without a failure.
    pub sustainable_rate: Option<f64>,
}

pub fn run(
    platform: Arc<dyn Platform>,
    ctx: &Context,
) -> anyhow::Result<(Vec<Sample>, CapacityRow)> {
    let sizes = &ctx.sizes;
    let container_mb = match platform.reserved_memory_mb() {
        Some(reserved) => reserved,
        None => {
            memory::measure_module(&*platform, ctx, "hash", "hash")?.per_container_mib * 1.048_576
        }
    };
    let config = PoolConfig {
        container_memory_mb: container_mb,
        ..PoolConfig::openwhisk(Duration::from_secs_f64(sizes.realistic_idle_secs))
    };
    let slots = config.slots();
    tracing::info!(
        platform = platform.name(),
        container_mb,
        slots,
        "capacity: the pool"
    );
    let mut samples = Vec::new();
    let mut levels = Vec::new();
    let mut sustainable = None;
    let mut all_passed = true;
    for &rate in &sizes.capacity_rates {
        let spec = Load {
            scenario: "capacity",
            level: rate as u32,
            rate,
            duration: Duration::from_secs_f64(sizes.capacity_secs),
        };
        let part = realistic::drive(Arc::clone(&platform), ctx, config.clone(), &spec)?;
        let failed = part.iter().filter(|s| !s.ok()).count();
        let p99 = stats::Summary::of_ns(part.iter().filter(|s| s.ok()).map(|s| s.latency_ns))
            .map(|l| l.p99_us / 1e3);
        tracing::info!(
            platform = platform.name(),
            rate,
            p99_ms = p99,
            failed,
            "capacity: rate done"
        );
        all_passed &= failed == 0 && p99.is_some_and(|p| p <= sizes.capacity_p99_ms);
        if all_passed {
            sustainable = Some(rate);
        }
        levels.push((rate, p99, failed));
        samples.extend(part);
    }
    let row = CapacityRow {
        platform: platform.name().to_owned(),
        container_mb,
        slots,
        levels,
        sustainable_rate: sustainable,
    };
    Ok((samples, row))
}
