//! Experiment 5, the Azure-derived workload: open-loop Poisson arrivals; 90 % go to two hot
//! actions, 10 % to one of 60 rare ones; half of the actions are CPU-bound (`hash`), half
//! I/O-bound (`net`); an OpenWhisk-like pool (1024 MB of user memory, 256 MB containers,
//! idle eviction) in front of the platform. Latency counts from the scheduled arrival, so a
//! slow platform cannot slow the load down.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use rand::{Rng, SeedableRng, rngs::StdRng};

use super::{Context, load, sample::Sample};
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

pub fn run(platform: Arc<dyn Platform>, ctx: &Context) -> anyhow::Result<Vec<Sample>> {
    let sizes = &ctx.sizes;
    let (hot, rare) = actions(&*platform, ctx);
    let name = platform.name().to_owned();
    let invoker = Invoker::start(
        Arc::clone(&platform),
        PoolConfig::openwhisk(Duration::from_secs_f64(sizes.realistic_idle_secs)),
    );
    let mut rng = StdRng::seed_from_u64(42);
    let duration = Duration::from_secs_f64(sizes.realistic_secs);
    // Arrival times and targets, drawn up front so every platform gets the same sequence.
    let mut arrivals = Vec::new();
    let mut at = 0.0f64;
    loop {
        at += -(1.0 - rng.r#gen::<f64>()).ln() / sizes.realistic_rate;
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
    tracing::info!(platform = %name, requests = arrivals.len(), "realistic workload");
    let begun = Instant::now();
    let samples = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut unstarted = Vec::new();
        for (seq, (offset, action)) in arrivals.into_iter().enumerate() {
            std::thread::sleep(offset.saturating_sub(begun.elapsed()));
            let invoker = Arc::clone(&invoker);
            let action_name = action.name.clone();
            let spawned = std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn_scoped(scope, move || Sample {
                    scenario: "realistic".into(),
                    seq: seq as u64,
                    ..load::pooled_run(&invoker, &action, begun + offset, ctx.epoch)
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    // A request that was never sent is a failed activation (status 0).
                    tracing::error!(%error, "could not start a request thread");
                    unstarted.push(Sample {
                        scenario: "realistic".into(),
                        seq: seq as u64,
                        start_ns: (begun + offset).duration_since(ctx.epoch).as_nanos() as u64,
                        platform: name.clone(),
                        action: action_name,
                        ..Sample::default()
                    });
                }
            }
        }
        let mut samples = failures::join_all(handles, "request")?;
        samples.append(&mut unstarted);
        anyhow::Ok(samples)
    });
    invoker.shutdown();
    samples
}
