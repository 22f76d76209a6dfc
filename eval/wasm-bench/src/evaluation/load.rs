//! Closed-loop load over containers a platform created: every client owns its containers (one
//! activation per container at a time, as OpenWhisk schedules them) and, per request, picks
//! one of them at random, from the start of a warm-up to the end of the measured windows (the
//! level's repetitions). An activation is measured when it completes inside them (the others
//! are recorded but flagged); each window's throughput counts every activation by the share of
//! its duration inside the window. Clients are futures on one thread, so thousands of them
//! waiting for answers cost the load generator no threads.
use std::{
    future::Future,
    sync::Arc,
    time::{Duration, Instant},
};

use rand::{Rng, SeedableRng, rngs::StdRng};

use super::sample::Sample;
use crate::{
    failures,
    invoker::Invoker,
    platform::{self, Action, Container, Platform, RunResult},
};

/// The containers of one client, with the parameters each is called with.
pub struct ClientSet {
    pub containers: Vec<(Action, Arc<Box<dyn Container>>)>,
}

/// A container made for client `.0`.
type Created = (usize, Action, Box<dyn Container>);

/// Creates `clients` sets of containers of `actions` (each client its own), `parallel` at a
/// time; not timed.
pub fn create_sets(
    platform: &dyn Platform,
    clients: usize,
    actions: &[Action],
    parallel: usize,
) -> anyhow::Result<Vec<ClientSet>> {
    let jobs: Vec<(usize, Action)> = (0..clients)
        .flat_map(|c| actions.iter().map(move |a| (c, a.clone())))
        .collect();
    let chunk = jobs.len().div_ceil(parallel.max(1)).max(1);
    let created: Vec<anyhow::Result<Vec<Created>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|(c, a)| Ok((*c, a.clone(), platform.create(a)?)))
                        .collect::<anyhow::Result<Vec<_>>>()
                })
            })
            .collect();
        failures::join_all(handles, "container creator")
    })?;
    let mut sets: Vec<ClientSet> = (0..clients)
        .map(|_| ClientSet {
            containers: Vec::new(),
        })
        .collect();
    let mut failure = None;
    for part in created {
        match part {
            Ok(part) => {
                for (c, a, container) in part {
                    sets[c].containers.push((a, Arc::new(container)));
                }
            }
            Err(error) => failure = Some(error),
        }
    }
    if let Some(error) = failure {
        remove_sets(sets);
        return Err(error.context(format!("creating containers on {}", platform.name())));
    }
    Ok(sets)
}

/// Removes every container of `sets`, logging failures.
pub fn remove_sets(sets: Vec<ClientSet>) {
    for set in sets {
        for (_, container) in set.containers {
            // No activation runs any more, so the set holds the only reference.
            let Ok(container) = Arc::try_unwrap(container) else {
                unreachable!("a container of a finished level has no other holder");
            };
            if let Err(error) = container.remove() {
                failures::housekeeping("removing a container", &error);
            }
        }
    }
}

/// How long a closed-loop level runs: a warm-up, then `windows` consecutive measured windows
/// (the level's repetitions) of `window` each.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub warmup: Duration,
    pub window: Duration,
    pub windows: u32,
}

impl Plan {
    pub fn measured(&self) -> Duration {
        self.window * self.windows
    }
}

/// Platform, scenario and level of a part of an experiment, as in its samples.
pub type LevelKey = (String, String, u32);

/// One level of closed-loop load: every activation, and the rate of successful ones in each
/// measured window.
pub struct LevelRun {
    pub key: LevelKey,
    pub samples: Vec<Sample>,
    pub rates: Vec<f64>,
}

/// Successful activations per second in each measured window of `plan` (the level began at
/// `begun_ns`), every activation counted by the share of its duration that lies inside the
/// window: a window holds fractions of the activations crossing its edges, so its rate does not
/// jump by one activation per client with where the edges fall, however short the window is
/// against an activation.
pub fn window_rates(samples: &[Sample], begun_ns: u64, plan: &Plan) -> Vec<f64> {
    let first = begun_ns + plan.warmup.as_nanos() as u64;
    let width = plan.window.as_nanos() as u64;
    (0..u64::from(plan.windows))
        .map(|i| {
            let (from, to) = (first + i * width, first + (i + 1) * width);
            let inside: f64 = samples
                .iter()
                .filter(|s| s.ok())
                .map(|s| {
                    let overlap = s.end_ns().min(to).saturating_sub(s.start_ns.max(from));
                    overlap as f64 / s.latency_ns.max(1) as f64
                })
                .sum();
            inside / plan.window.as_secs_f64()
        })
        .collect()
}

/// What one client does in a closed loop: its next activation, timed, from its own state.
pub trait Client {
    fn next(&mut self, rng: &mut StdRng, epoch: Instant) -> impl Future<Output = Sample>;
}

impl Client for &mut ClientSet {
    async fn next(&mut self, rng: &mut StdRng, epoch: Instant) -> Sample {
        let pick = rng.gen_range(0..self.containers.len());
        let (action, container) = &self.containers[pick];
        let params = action.params(&serde_json::json!({}));
        let start = Instant::now();
        let outcome = platform::run_async(container, params).await;
        timed_sample(action, start, epoch, outcome)
    }
}

/// Runs every client until the end of `plan` (the last activations complete after it); clients
/// start together. Each sample is labelled with `platform`, `scenario`, `level` and its client.
#[allow(clippy::too_many_arguments)]
pub fn closed_loop<C: Client>(
    clients: Vec<C>,
    platform: &str,
    scenario: &str,
    level: u32,
    plan: Plan,
    epoch: Instant,
    seed: u64,
) -> anyhow::Result<LevelRun> {
    let runtime = crate::runtime::build("loadgen")?;
    let begun = Instant::now();
    let end = plan.warmup + plan.measured();
    let loops = clients
        .into_iter()
        .enumerate()
        .map(|(index, mut client)| async move {
            let mut rng = StdRng::seed_from_u64(seed ^ index as u64);
            let mut samples = Vec::new();
            let mut seq = 0;
            while begun.elapsed() < end {
                let mut sample = client.next(&mut rng, epoch).await;
                sample.platform = platform.to_owned();
                sample.scenario = scenario.to_owned();
                sample.level = level;
                sample.client = index as u32;
                sample.seq = seq;
                // Measured: completed inside the windows, however long it took.
                let ended = begun.elapsed();
                sample.warmup = ended < plan.warmup || ended > end;
                samples.push(sample);
                seq += 1;
            }
            samples
        });
    let samples: Vec<Sample> = runtime
        .block_on(failures::join_futures(loops, "client"))?
        .into_iter()
        .flatten()
        .collect();
    let begun_ns = begun.duration_since(epoch).as_nanos() as u64;
    let rates = window_rates(&samples, begun_ns, &plan);
    Ok(LevelRun {
        key: (platform.to_owned(), scenario.to_owned(), level),
        samples,
        rates,
    })
}

/// One activation on a warm container, timed, on this thread.
pub fn timed_run(action: &Action, container: &dyn Container, epoch: Instant) -> Sample {
    let params = action.params(&serde_json::json!({}));
    let start = Instant::now();
    let outcome = container.run(&params);
    timed_sample(action, start, epoch, outcome)
}

/// The sample of an activation of `action` begun at `start`; a failure below HTTP becomes
/// status 0.
fn timed_sample(
    action: &Action,
    start: Instant,
    epoch: Instant,
    outcome: anyhow::Result<RunResult>,
) -> Sample {
    let status = match outcome {
        Ok(result) => result.status,
        Err(error) => {
            tracing::warn!(action = %action.name, %error, "activation failed");
            0
        }
    };
    Sample {
        start_ns: start.duration_since(epoch).as_nanos() as u64,
        latency_ns: start.elapsed().as_nanos() as u64,
        status,
        action: action.name.clone(),
        ..Sample::default()
    }
}

/// One activation through the pool, timed from `start` (the request's arrival, which may lie
/// before this call for open-loop load); a failure below HTTP becomes status 0.
pub async fn pooled_run(
    invoker: &Invoker,
    action: &Action,
    start: Instant,
    epoch: Instant,
) -> Sample {
    let (status, cold) = invoker.invoke_outcome(action).await;
    Sample {
        platform: invoker.platform_name().to_owned(),
        start_ns: start.duration_since(epoch).as_nanos() as u64,
        latency_ns: start.elapsed().as_nanos() as u64,
        status,
        cold,
        action: action.name.clone(),
        ..Sample::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(start_ms: u64, end_ms: u64) -> Sample {
        Sample {
            status: 200,
            start_ns: start_ms * 1_000_000,
            latency_ns: (end_ms - start_ms) * 1_000_000,
            ..Sample::default()
        }
    }

    #[test]
    fn window_rates_count_shares_of_activations() {
        let plan = Plan {
            warmup: Duration::from_millis(100),
            window: Duration::from_millis(500),
            windows: 2,
        };
        // Windows [100, 600) and [600, 1100) ms after 0. One activation inside the first, one
        // half in each, one in the warm-up, one failed, one past the end.
        let mut failed = ok(200, 300);
        failed.status = 502;
        let samples = [
            ok(200, 300),
            ok(500, 700),
            ok(0, 90),
            failed,
            ok(1100, 1200),
        ];
        let rates = window_rates(&samples, 0, &plan);
        assert_eq!(rates.len(), 2);
        assert!((rates[0] - 1.5 / 0.5).abs() < 1e-9, "{rates:?}");
        assert!((rates[1] - 0.5 / 0.5).abs() < 1e-9, "{rates:?}");
    }
}
