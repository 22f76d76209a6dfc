//! The progress line of a long evaluation: which step of how many is starting, on which
//! platform, and how long the run has taken so far.

use std::time::Instant;

use super::{Sizes, WASM_RUNTIMES, threading_modes};

pub struct Progress {
    total: usize,
    done: usize,
    started: Instant,
}

impl Progress {
    /// Counts the steps the run will take: one per experiment and platform (per level and
    /// platform for the interleaved CPU-bound experiment and per concurrency limit for the
    /// realistic one, per execution mode for threading).
    pub fn new(platforms: &[&str], sizes: &Sizes, wants: &dyn Fn(&str) -> bool) -> Progress {
        let mut total = 0;
        for experiment in ["cold", "cold-rate", "io", "mixed", "access", "cost"] {
            if wants(experiment) {
                total += platforms.len();
            }
        }
        if wants("cpu") {
            total += sizes.cpu_levels.len() * platforms.len();
        }
        if wants("realistic") {
            total += sizes.realistic_limits.len() * platforms.len();
        }
        for &platform in platforms {
            if wants("memory") && platform != "native" {
                total += 1;
            }
            if wants("capacity") && platform != "native" {
                total += 1;
            }
            if wants("threading") && WASM_RUNTIMES.contains(&platform) {
                total += threading_modes(platform).len();
            }
            if wants("init") && WASM_RUNTIMES.contains(&platform) {
                total += 1;
            }
        }
        Progress {
            total,
            done: 0,
            started: Instant::now(),
        }
    }

    /// Announces the next step.
    pub fn step(&mut self, experiment: &str, on: &str) {
        self.done += 1;
        let elapsed = self.started.elapsed().as_secs();
        tracing::info!(
            "[{}/{}] {experiment} on {on} ({}:{:02} elapsed)",
            self.done,
            self.total,
            elapsed / 60,
            elapsed % 60
        );
    }
}
