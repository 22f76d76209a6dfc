//! Prometheus metrics: activations by outcome, init and run latency, live containers, the
//! modules they share, and pool occupancy, rendered in the text exposition format for `GET /metrics`.

use std::{sync::atomic::AtomicU64, time::Duration};

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

pub struct Metrics {
    registry: Registry,
    activations: Family<OutcomeLabel, Counter>,
    inits: Family<OutcomeLabel, Counter>,
    init_seconds: Histogram,
    run_seconds: Histogram,
    containers: Gauge,
    modules: Gauge,
    pool_running: Gauge,
    pool_queued: Gauge,
    pending_log_bytes: Gauge,
    rejected: Counter<u64, AtomicU64>,
}

/// Buckets from 50 µs to ~100 s: warm runs, cold inits and long actions all land in range.
fn latency_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.000_05, 2.5, 17)
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("wasm_executor");
        let activations = Family::<OutcomeLabel, Counter>::default();
        let inits = Family::<OutcomeLabel, Counter>::default();
        let init_seconds = Histogram::new(latency_buckets());
        let run_seconds = Histogram::new(latency_buckets());
        let containers = Gauge::default();
        let modules = Gauge::default();
        let pool_running = Gauge::default();
        let pool_queued = Gauge::default();
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
            "Guest jobs running on the blocking pool",
            pool_running.clone(),
        );
        registry.register(
            "pool_queued",
            "Guest jobs waiting for a pool slot",
            pool_queued.clone(),
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
        Metrics {
            registry,
            activations,
            inits,
            init_seconds,
            run_seconds,
            containers,
            modules,
            pool_running,
            pool_queued,
            pending_log_bytes,
            rejected,
        }
    }
}

impl Metrics {
    pub fn activation(&self, outcome: &'static str, took: Duration) {
        self.activations
            .get_or_create(&OutcomeLabel { outcome })
            .inc();
        self.run_seconds.observe(took.as_secs_f64());
    }

    pub fn init(&self, ok: bool, took: Duration) {
        let outcome = if ok { "ok" } else { "error" };
        self.inits.get_or_create(&OutcomeLabel { outcome }).inc();
        self.init_seconds.observe(took.as_secs_f64());
    }

    pub fn rejected(&self) {
        self.rejected.inc();
    }

    /// Renders the registry after refreshing the gauges sampled at scrape time.
    pub fn render(
        &self,
        containers: usize,
        modules: usize,
        running: usize,
        queued: usize,
        pending_log_bytes: usize,
    ) -> String {
        self.containers.set(containers as i64);
        self.modules.set(modules as i64);
        self.pool_running.set(running as i64);
        self.pool_queued.set(queued as i64);
        self.pending_log_bytes.set(pending_log_bytes as i64);
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}
