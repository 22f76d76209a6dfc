//! Experiment 1, cold start: i containers created at the same moment for i = 1 … N, each
//! timed from the request until it is ready (created and initialized) and until its first
//! result. Each level is repeated until it has about `samples` cold starts.

use std::{
    sync::{Arc, Barrier},
    time::Instant,
};

use super::{Context, sample::Sample};
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

pub fn run(platform: &dyn Platform, ctx: &Context) -> anyhow::Result<Vec<Sample>> {
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
