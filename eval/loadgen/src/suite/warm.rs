//! Warm no-op /run end to end over loopback HTTP: `echo` with `{}` on a new connection per
//! request (as the invoker) and on one kept-alive connection, next to baselines that isolate
//! the HTTP stack (`GET /health`, a /run of an unknown container answered 404) and the
//! smallest guests (tiny WAT modules). Sequential: one client, one request at a time.

use serde::Serialize;

use super::{Env, ScenarioSummary, init_container};
use crate::{
    cpu,
    driver::{ClosedLoop, RequestSpec},
    executor::ExecutorProcess,
    http::{Client, ConnMode},
    metrics::RunHistogram,
    record::Record,
    workload,
};

#[derive(Debug, Clone, Serialize)]
pub struct WarmScenario {
    #[serde(flatten)]
    pub summary: ScenarioSummary,
    /// Mean executor-side run duration over the scenario (µs), from the
    /// `wasm_executor_run_duration_seconds` histogram's sum and count in `GET /metrics`.
    pub server_mean_us_from_metrics: Option<f64>,
    /// CPU time per request (µs, warm-up included) of the executor's threads and of the client.
    pub executor_cpu_us_per_request: Option<f64>,
    pub client_cpu_us_per_request: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WarmResults {
    pub scenarios: Vec<WarmScenario>,
}

impl WarmResults {
    pub fn get(&self, scenario: &str) -> Option<&ScenarioSummary> {
        self.scenarios
            .iter()
            .map(|s| &s.summary)
            .find(|s| s.scenario == scenario)
    }
}

pub const ECHO_NEW: &str = "warm/echo/new_connection";
pub const ECHO_KEEP: &str = "warm/echo/keep_alive";
pub const EMPTY_KEEP: &str = "warm/empty_wat/keep_alive";
pub const WRITE_KEEP: &str = "warm/write_wat/keep_alive";
pub const HEALTH_NEW: &str = "base/health/new_connection";
pub const HEALTH_KEEP: &str = "base/health/keep_alive";
pub const MISSING_KEEP: &str = "base/run_unknown_404/keep_alive";

pub fn run(
    env: &Env,
    executor: &ExecutorProcess,
    records: &mut Vec<Record>,
) -> anyhow::Result<WarmResults> {
    let addr = executor.addr;
    init_container(
        addr,
        "warm-echo",
        &workload::init_body(&workload::read(&env.action("echo"))?),
    )?;
    init_container(
        addr,
        "warm-empty",
        &workload::init_body(&workload::wat_module(workload::EMPTY_WAT)?),
    )?;
    init_container(
        addr,
        "warm-write",
        &workload::init_body(&workload::wat_module(workload::WRITE_WAT)?),
    )?;
    let noop = workload::noop_run_body();
    let plan = [
        (
            ECHO_NEW,
            ConnMode::New,
            RequestSpec::post("/warm-echo/run", noop.clone()),
        ),
        (
            ECHO_KEEP,
            ConnMode::KeepAlive,
            RequestSpec::post("/warm-echo/run", noop.clone()),
        ),
        (
            EMPTY_KEEP,
            ConnMode::KeepAlive,
            RequestSpec::post("/warm-empty/run", noop.clone()),
        ),
        (
            WRITE_KEEP,
            ConnMode::KeepAlive,
            RequestSpec::post("/warm-write/run", noop.clone()),
        ),
        (HEALTH_NEW, ConnMode::New, RequestSpec::get("/health")),
        (
            HEALTH_KEEP,
            ConnMode::KeepAlive,
            RequestSpec::get("/health"),
        ),
        (
            MISSING_KEEP,
            ConnMode::KeepAlive,
            RequestSpec::post("/warm-missing/run", noop.clone()),
        ),
    ];
    let mut scenarios = Vec::new();
    let mut metrics_client = Client::new(addr, ConnMode::KeepAlive);
    for (scenario, mode, request) in plan {
        tracing::info!(scenario, "warm");
        let before = RunHistogram::scrape(&mut metrics_client)?;
        let cpu_before = executor.cpu_ns();
        let outcome = ClosedLoop {
            scenario: scenario.to_owned(),
            addr,
            mode,
            budget: env.sizes.sequential_budget(),
            requests: vec![request],
        }
        .run(env.epoch)?;
        let cpu_after = executor.cpu_ns();
        let after = RunHistogram::scrape(&mut metrics_client)?;
        let sent = outcome.records.len();
        scenarios.push(WarmScenario {
            summary: ScenarioSummary::of(scenario, &outcome.records),
            server_mean_us_from_metrics: after.mean_us_since(&before),
            executor_cpu_us_per_request: cpu::per_request_us(cpu_before, cpu_after, sent),
            client_cpu_us_per_request: cpu::per_request_us(0, outcome.client_cpu_ns, sent),
        });
        records.extend(outcome.records);
    }
    Ok(WarmResults { scenarios })
}
