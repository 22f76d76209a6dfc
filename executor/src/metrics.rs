//! Prometheus metrics: activations by outcome, init and run latency, live containers, the
//! modules they share, and pool occupancy, rendered in the text exposition format for `GET /metrics`.
//! Recording one takes no lock: counters and histogram buckets are atomics made at start.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
    time::Duration,
};

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet, text::encode},
    metrics::{MetricType, counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use crate::{outcome::Outcome, pool::Occupancy};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

pub struct Metrics {
    registry: Registry,
    /// One counter per outcome, in the order of [`Outcome::ALL`], made at start.
    activations: Vec<Counter>,
    /// `[ok, error]`.
    inits: [Counter; 2],
    init_seconds: LatencyHistogram,
    run_seconds: LatencyHistogram,
    containers: Gauge,
    modules: Gauge,
    pool_running: Gauge,
    pool_guests: Gauge,
    pool_queued: Gauge,
    task_guests: Gauge,
    connection_threads: Gauge,
    pending_log_bytes: Gauge,
    rejected: Counter<u64, AtomicU64>,
}

/// Buckets from 50 µs to ~100 s: warm runs, cold inits and long actions all land in range.
fn latency_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.000_05, 2.5, 17)
}

/// A latency histogram observed without a lock: an atomic count per bucket and the sum in
/// nanoseconds; a scrape adds the buckets up.
#[derive(Debug, Clone)]
struct LatencyHistogram(Arc<HistogramCells>);

#[derive(Debug)]
struct HistogramCells {
    /// Upper bounds in seconds, ascending; a last bucket above them all is implied.
    bounds: Vec<f64>,
    /// Observations per bucket (not cumulative), one more than `bounds`.
    counts: Vec<AtomicU64>,
    sum_nanos: AtomicU64,
}

impl LatencyHistogram {
    fn new(bounds: impl Iterator<Item = f64>) -> Self {
        let bounds: Vec<f64> = bounds.collect();
        let counts = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        LatencyHistogram(Arc::new(HistogramCells {
            bounds,
            counts,
            sum_nanos: AtomicU64::new(0),
        }))
    }

    fn observe(&self, took: Duration) {
        let cells = &self.0;
        // Prometheus buckets count values at or below their bound.
        let bucket = cells
            .bounds
            .partition_point(|&bound| bound < took.as_secs_f64());
        cells.counts[bucket].fetch_add(1, Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        cells.sum_nanos.fetch_add(nanos, Relaxed);
    }
}

impl EncodeMetric for LatencyHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let cells = &self.0;
        let mut total = 0;
        let buckets: Vec<(f64, u64)> = cells
            .bounds
            .iter()
            .copied()
            .chain([f64::MAX])
            .zip(&cells.counts)
            .map(|(bound, count)| {
                total += count.load(Relaxed);
                (bound, total)
            })
            .collect();
        let sum = cells.sum_nanos.load(Relaxed) as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(sum, total, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("wasm_executor");
        let activations = Family::<OutcomeLabel, Counter>::default();
        let inits = Family::<OutcomeLabel, Counter>::default();
        let init_seconds = LatencyHistogram::new(latency_buckets());
        let run_seconds = LatencyHistogram::new(latency_buckets());
        let containers = Gauge::default();
        let modules = Gauge::default();
        let pool_running = Gauge::default();
        let pool_guests = Gauge::default();
        let pool_queued = Gauge::default();
        let task_guests = Gauge::default();
        let connection_threads = Gauge::default();
        let pending_log_bytes = Gauge::default();
        let rejected = Counter::default();
        registry.register("activations", "Activations by outcome", activations.clone());
        registry.register(
            "inits",
            "Container initializations by outcome",
            inits.clone(),
        );
        registry.register(
            "init_duration_seconds",
            "Time to initialize a container",
            init_seconds.clone(),
        );
        registry.register(
            "run_duration_seconds",
            "Time to run an activation",
            run_seconds.clone(),
        );
        registry.register("containers", "Initialized containers", containers.clone());
        registry.register(
            "modules",
            "Distinct uploads loaded and shared by the containers that carry them (or loading)",
            modules.clone(),
        );
        registry.register(
            "pool_running",
            "Guest jobs holding a slot: on the blocking pool, or computing on their request's task",
            pool_running.clone(),
        );
        registry.register(
            "pool_guests",
            "Jobs holding one of the blocking pool's threads (guests, module loads): waiting for a slot, computing, or waiting on a timer or the network without one",
            pool_guests.clone(),
        );
        registry.register(
            "pool_queued",
            "Guest jobs waiting for a pool thread or a slot",
            pool_queued.clone(),
        );
        registry.register(
            "task_guests",
            "Guests alive on their requests' tasks (--guest-execution async): computing, waiting for a slot, or waiting on a timer or the network",
            task_guests.clone(),
        );
        registry.register(
            "connection_threads",
            "Threads that serve a connection each, busy or waiting for the next (--connection-threads)",
            connection_threads.clone(),
        );
        registry.register(
            "pending_log_bytes",
            "Log bytes held for the invoker to collect, all containers together",
            pending_log_bytes.clone(),
        );
        registry.register(
            "rejected",
            "Requests refused with 503 at capacity (pool slots, containers or request bodies), before anything ran",
            rejected.clone(),
        );
        let counter = |family: &Family<OutcomeLabel, Counter>, outcome| {
            family.get_or_create(&OutcomeLabel { outcome }).clone()
        };
        Metrics {
            registry,
            activations: Outcome::ALL
                .iter()
                .map(|outcome| counter(&activations, outcome.label()))
                .collect(),
            inits: [counter(&inits, "ok"), counter(&inits, "error")],
            init_seconds,
            run_seconds,
            containers,
            modules,
            pool_running,
            pool_guests,
            pool_queued,
            task_guests,
            connection_threads,
            pending_log_bytes,
            rejected,
        }
    }
}

impl Metrics {
    pub fn activation(&self, outcome: Outcome, took: Duration) {
        self.activations[outcome as usize].inc();
        self.run_seconds.observe(took);
    }

    pub fn init(&self, ok: bool, took: Duration) {
        self.inits[usize::from(!ok)].inc();
        self.init_seconds.observe(took);
    }

    pub fn rejected(&self) {
        self.rejected.inc();
    }

    /// Renders the registry after refreshing the gauges sampled at scrape time.
    pub fn render(
        &self,
        containers: usize,
        modules: usize,
        pool: &Occupancy,
        connection_threads: usize,
        pending_log_bytes: usize,
    ) -> String {
        self.containers.set(containers as i64);
        self.modules.set(modules as i64);
        self.pool_running.set(pool.running as i64);
        self.pool_queued.set(pool.queued as i64);
        self.pool_guests.set(pool.pool_guests as i64);
        self.task_guests.set(pool.task_guests as i64);
        self.connection_threads.set(connection_threads as i64);
        self.pending_log_bytes.set(pending_log_bytes as i64);
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_render_as_cumulative_buckets_and_counters() {
        for (index, outcome) in Outcome::ALL.iter().enumerate() {
            assert_eq!(*outcome as usize, index, "ALL is in declaration order");
        }
        let metrics = Metrics::default();
        metrics.activation(Outcome::Success, Duration::from_micros(40));
        metrics.activation(Outcome::Success, Duration::from_micros(50));
        metrics.activation(Outcome::TimedOut, Duration::from_secs(1000));
        metrics.init(false, Duration::from_millis(2));
        let idle = Occupancy {
            running: 0,
            queued: 0,
            pool_guests: 0,
            task_guests: 0,
        };
        let text = metrics.render(0, 0, &idle, 0, 0);
        for line in [
            "wasm_executor_activations_total{outcome=\"success\"} 2",
            "wasm_executor_activations_total{outcome=\"timeout\"} 1",
            "wasm_executor_activations_total{outcome=\"trapped\"} 0",
            "wasm_executor_inits_total{outcome=\"error\"} 1",
            "wasm_executor_inits_total{outcome=\"ok\"} 0",
            // 50 µs is the first bound: values at or below it count there.
            "wasm_executor_run_duration_seconds_bucket{le=\"0.00005\"} 2",
            "wasm_executor_run_duration_seconds_bucket{le=\"+Inf\"} 3",
            "wasm_executor_run_duration_seconds_count 3",
            "wasm_executor_run_duration_seconds_sum 1000.00009",
            "wasm_executor_init_duration_seconds_count 1",
        ] {
            assert!(text.contains(line), "{line} in:\n{text}");
        }
    }
}
