//! The progress line of a long evaluation: which step of how many is starting, on which
//! platform, and how long the run has taken so far.

use std::time::Instant;

pub struct Progress {
    total: usize,
    done: usize,
    started: Instant,
}

impl Progress {
    /// A run of `total` steps (each experiment tells how many it takes), starting now.
    pub fn new(total: usize) -> Progress {
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
