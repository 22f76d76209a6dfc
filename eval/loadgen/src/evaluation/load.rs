//! Closed-loop load over containers a platform created: every client owns its containers (one
//! activation per container at a time, as OpenWhisk schedules them) and, per request, picks
//! one of them at random, from the start of a warm-up to the end of a measured window. An
//! activation is measured when it completes inside the window (so throughput is completions
//! per second of window even when one activation takes longer than the window); the others
//! are recorded but flagged.

use std::{
    sync::{Condvar, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context;
use rand::{Rng, SeedableRng, rngs::StdRng};

use super::sample::Sample;
use crate::{
    failures,
    invoker::Invoker,
    platform::{Action, Container, Platform},
};

/// The containers of one client, with the parameters each is called with.
pub struct ClientSet {
    pub containers: Vec<(Action, Box<dyn Container>)>,
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
                    sets[c].containers.push((a, container));
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
            if let Err(error) = container.remove() {
                failures::housekeeping("removing a container", &error);
            }
        }
    }
}

/// Runs every client until `warmup + measured` (the last activations complete after it);
/// clients start together. Client `i` uses
/// `sets[i]`. Each sample is labelled with `platform`, `scenario` and `level`.
#[allow(clippy::too_many_arguments)]
pub fn closed_loop(
    sets: &mut [ClientSet],
    platform: &str,
    scenario: &str,
    level: u32,
    warmup: Duration,
    measured: Duration,
    epoch: Instant,
    seed: u64,
) -> anyhow::Result<Vec<Sample>> {
    let gate = StartGate::default();
    std::thread::scope(|scope| {
        let spawned: anyhow::Result<Vec<_>> = sets
            .iter_mut()
            .enumerate()
            .map(|(index, set)| {
                let gate = &gate;
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(scope, move || {
                        if !gate.wait() {
                            return Vec::new();
                        }
                        let mut rng = StdRng::seed_from_u64(seed ^ index as u64);
                        let begun = Instant::now();
                        let mut samples = Vec::new();
                        let mut seq = 0;
                        while begun.elapsed() < warmup + measured {
                            let pick = rng.gen_range(0..set.containers.len());
                            let (action, container) = &mut set.containers[pick];
                            let mut sample = timed_run(action, container.as_mut(), epoch);
                            sample.platform = platform.to_owned();
                            sample.scenario = scenario.to_owned();
                            sample.level = level;
                            sample.client = index as u32;
                            sample.seq = seq;
                            // Measured: completed inside the window, however long it took.
                            let ended = begun.elapsed();
                            sample.warmup = ended < warmup || ended > warmup + measured;
                            samples.push(sample);
                            seq += 1;
                        }
                        samples
                    })
                    .context("starting a client thread")
            })
            .collect();
        // Every client starts together, or none does when one could not be started.
        gate.open(spawned.is_ok());
        let handles = spawned?;
        Ok(failures::join_all(handles, "client")?
            .into_iter()
            .flatten()
            .collect())
    })
}

/// Lets waiting threads start all at once, or tells them not to start at all.
#[derive(Default)]
struct StartGate {
    state: Mutex<Option<bool>>,
    opened: Condvar,
}

impl StartGate {
    /// Blocks until the gate is opened; `true`: start, `false`: give up.
    fn wait(&self) -> bool {
        let state = self.state.lock().expect("start gate");
        let state = self
            .opened
            .wait_while(state, |s| s.is_none())
            .expect("start gate");
        state.unwrap_or(false)
    }

    fn open(&self, go: bool) {
        *self.state.lock().expect("start gate") = Some(go);
        self.opened.notify_all();
    }
}

/// One activation on a warm container, timed; a failure below HTTP becomes status 0.
pub fn timed_run(action: &Action, container: &mut dyn Container, epoch: Instant) -> Sample {
    let params = action.params(&serde_json::json!({}));
    let start = Instant::now();
    let status = match container.run(&params) {
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
pub fn pooled_run(invoker: &Invoker, action: &Action, start: Instant, epoch: Instant) -> Sample {
    let (status, cold) = invoker.invoke_outcome(action);
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
