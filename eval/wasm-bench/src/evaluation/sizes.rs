//! How much of everything the evaluation measures: the full sizes, the quick ones, and the
//! sizes given on the command line over them.

use std::time::Duration;

use serde::Serialize;

use super::{EvaluateArgs, load::Plan};

/// How much of everything.
#[derive(Debug, Clone, Serialize)]
pub struct Sizes {
    pub cold_levels: Vec<usize>,
    /// Cold starts per level (levels below it are repeated).
    pub cold_samples: usize,
    /// Closed-loop clients per level of the cold starts at saturation.
    pub cold_rate_levels: Vec<usize>,
    /// Their warm-up: long enough for Docker's slowest cold start at the highest level.
    pub cold_rate_warmup_secs: f64,
    pub io_levels: Vec<usize>,
    pub cpu_levels: Vec<usize>,
    pub warmup_secs: f64,
    /// One measured window of a closed-loop level.
    pub level_secs: f64,
    /// Measured windows per closed-loop level.
    pub repetitions: u32,
    pub mixed_clients: usize,
    pub mixed_interval_secs: f64,
    pub mixed_hold_secs: f64,
    pub realistic_rate: f64,
    pub realistic_secs: f64,
    /// The actions' concurrency limits the realistic workload runs with (OpenWhisk's
    /// `limits.concurrency`: activations one container runs at once).
    pub realistic_limits: Vec<usize>,
    /// The capacity experiment's ladder of arrival rates (per second), climbed until a rate
    /// fails; every probed rate runs for `capacity_secs`.
    pub capacity_rates: Vec<f64>,
    /// While every rate passes, rates double past the ladder up to this one.
    pub capacity_rate_cap: f64,
    /// Once a rate failed, bisection until lowest failing ÷ highest passing ≤ this (None: no
    /// bisection).
    pub capacity_precision: Option<f64>,
    pub capacity_secs: f64,
    /// A capacity probe passes when no activation failed and the p99 latency stayed within
    /// this (ms).
    pub capacity_p99_ms: f64,
    pub realistic_idle_secs: f64,
    pub access_clients: usize,
    pub access_requests: usize,
    pub memory_containers: usize,
    pub threading_levels: Vec<usize>,
    pub threading_secs: f64,
    /// Sequential warm activations measured per platform in the platform-cost experiment.
    pub cost_activations: usize,
    /// Timed /inits per scenario of the /init experiment.
    pub inits: usize,
    /// Compiling /inits (a new executor each).
    pub compile_inits: usize,
    /// BLAKE3 rounds per measured run of the hash experiment.
    pub hash_iterations: u64,
    /// Its measured rounds (each runs every variant once with and once without iterations).
    pub hash_rounds: usize,
    /// The footprint experiment's containers per executor and code path.
    pub footprint_containers: usize,
    /// Its containers (and /inits of code no container holds) of the distinct-actions path.
    pub footprint_distinct_containers: usize,
    /// Its measured sequential warm /runs per executor and code path.
    pub footprint_requests: usize,
    /// Its /inits of code no container holds per executor and code path.
    pub footprint_new_inits: usize,
}

impl Sizes {
    fn full(cores: usize) -> Sizes {
        Sizes {
            cold_levels: vec![1, 2, 4, 8, 12, 16, 20, 24, 28, 32],
            cold_samples: 16,
            cold_rate_levels: vec![1, 2, 4, 8, 16, 32],
            cold_rate_warmup_secs: 4.0,
            io_levels: vec![1, 4, 16, 64, 128, 256],
            cpu_levels: (1..=2 * cores).collect(),
            warmup_secs: 1.0,
            level_secs: 2.0,
            repetitions: 5,
            mixed_clients: 16,
            mixed_interval_secs: 2.0,
            mixed_hold_secs: 20.0,
            realistic_rate: 5.0,
            realistic_secs: 60.0,
            realistic_limits: vec![1, 3, 10],
            capacity_rates: vec![2.0, 5.0, 10.0, 20.0, 40.0],
            capacity_rate_cap: 160.0,
            capacity_precision: Some(1.10),
            capacity_secs: 30.0,
            capacity_p99_ms: 1000.0,
            realistic_idle_secs: 30.0,
            access_clients: 16,
            access_requests: 20,
            memory_containers: 16,
            threading_levels: vec![1, 4, 16, 64],
            threading_secs: 2.0,
            cost_activations: 2000,
            inits: 50,
            compile_inits: 5,
            hash_iterations: 1_200_000,
            hash_rounds: 15,
            footprint_containers: 100,
            footprint_distinct_containers: 100,
            footprint_requests: 2000,
            footprint_new_inits: 100,
        }
    }

    fn quick() -> Sizes {
        Sizes {
            cold_levels: vec![1, 2],
            cold_samples: 2,
            cold_rate_levels: vec![2],
            cold_rate_warmup_secs: 0.2,
            io_levels: vec![1, 4],
            cpu_levels: vec![1, 2],
            warmup_secs: 0.2,
            level_secs: 0.3,
            repetitions: 2,
            mixed_clients: 2,
            mixed_interval_secs: 0.3,
            mixed_hold_secs: 1.0,
            realistic_rate: 4.0,
            realistic_secs: 2.0,
            realistic_limits: vec![1, 3],
            capacity_rates: vec![4.0],
            capacity_rate_cap: 8.0,
            capacity_precision: None,
            capacity_secs: 1.0,
            capacity_p99_ms: 1000.0,
            realistic_idle_secs: 1.0,
            access_clients: 2,
            access_requests: 2,
            memory_containers: 2,
            threading_levels: vec![2],
            threading_secs: 0.3,
            cost_activations: 20,
            inits: 3,
            compile_inits: 1,
            hash_iterations: 10_000,
            hash_rounds: 2,
            footprint_containers: 5,
            footprint_distinct_containers: 5,
            footprint_requests: 50,
            footprint_new_inits: 5,
        }
    }

    /// The sizes `args` ask for: full (with the CPU-bound levels up to twice `cores`) or
    /// quick, and the sizes given one by one over them.
    pub fn of(args: &EvaluateArgs, cores: usize) -> Sizes {
        let mut sizes = if args.quick {
            Sizes::quick()
        } else {
            Sizes::full(cores)
        };
        if let Some(levels) = &args.cold_levels {
            sizes.cold_levels = levels.clone();
        }
        if let Some(levels) = &args.io_levels {
            sizes.io_levels = levels.clone();
        }
        if let Some(secs) = args.level_secs {
            sizes.level_secs = secs;
        }
        if let Some(repetitions) = args.repetitions {
            sizes.repetitions = repetitions;
        }
        sizes.cost_activations = args.cost_activations.unwrap_or(sizes.cost_activations);
        if let Some(target) = args.p99_target_ms {
            sizes.capacity_p99_ms = target;
        }
        sizes.hash_iterations = args.hash_iterations.unwrap_or(sizes.hash_iterations);
        sizes.hash_rounds = args.hash_rounds.unwrap_or(sizes.hash_rounds);
        if let Some(containers) = args.footprint_containers {
            sizes.footprint_containers = containers;
            sizes.footprint_distinct_containers = containers;
        }
        sizes.footprint_distinct_containers = args
            .footprint_distinct_containers
            .unwrap_or(sizes.footprint_distinct_containers);
        sizes.footprint_requests = args.footprint_requests.unwrap_or(sizes.footprint_requests);
        sizes.footprint_new_inits = args
            .footprint_new_inits
            .unwrap_or(sizes.footprint_new_inits);
        sizes
    }

    /// A closed-loop level: the warm-up, then `repetitions` windows of `window_secs`.
    pub fn plan(&self, warmup_secs: f64, window_secs: f64) -> Plan {
        Plan {
            warmup: Duration::from_secs_f64(warmup_secs),
            window: Duration::from_secs_f64(window_secs),
            windows: self.repetitions.max(1),
        }
    }
}
