//! No-op throughput at rising concurrency: N closed-loop clients, each with a container of its
//! own (as OpenWhisk gives each concurrent activation its own container), each sending `echo`
//! with `{}` as soon as its previous answer arrived; kept-alive connections and a new
//! connection per request.

use serde::Serialize;

use super::{Env, ScenarioSummary, destroy_container, init_container};
use crate::{
    cpu,
    driver::{ClosedLoop, RequestSpec},
    executor::ExecutorProcess,
    http::{Client, ConnMode},
    record::Record,
    workload,
};

#[derive(Debug, Clone, Serialize)]
pub struct Level {
    pub mode: ConnMode,
    pub clients: usize,
    pub requests_per_second: f64,
    pub window_seconds: f64,
    /// CPU time per request (µs, warm-up included) of the executor's threads and of the
    /// clients: with both on the same cores, their sum bounds the rate.
    pub executor_cpu_us_per_request: Option<f64>,
    pub client_cpu_us_per_request: Option<f64>,
    #[serde(flatten)]
    pub summary: ScenarioSummary,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThroughputResults {
    pub levels: Vec<Level>,
}

pub fn run(
    env: &Env,
    executor: &ExecutorProcess,
    records: &mut Vec<Record>,
) -> anyhow::Result<ThroughputResults> {
    let echo = workload::init_body(&workload::read(&env.action("echo"))?);
    let noop = workload::noop_run_body();
    let mut admin = Client::new(executor.addr, ConnMode::KeepAlive);
    let mut levels = Vec::new();
    for mode in [ConnMode::KeepAlive, ConnMode::New] {
        for &clients in &env.sizes.concurrency {
            let scenario = format!("throughput/{}/c{clients}", mode.label());
            tracing::info!(%scenario, "throughput");
            let ids: Vec<String> = (0..clients)
                .map(|i| format!("tp-{}-{clients}-{i}", mode.label()))
                .collect();
            for id in &ids {
                init_container(executor.addr, id, &echo)?;
            }
            let cpu_before = executor.cpu_ns();
            let outcome = ClosedLoop {
                scenario: scenario.clone(),
                addr: executor.addr,
                mode,
                budget: env.sizes.throughput_budget(),
                requests: ids
                    .iter()
                    .map(|id| RequestSpec::post(format!("/{id}/run"), noop.clone()))
                    .collect(),
            }
            .run(env.epoch)?;
            let cpu_after = executor.cpu_ns();
            let sent = outcome.records.len();
            for id in &ids {
                destroy_container(&mut admin, id)?;
            }
            levels.push(Level {
                mode,
                clients,
                requests_per_second: outcome.rate(),
                window_seconds: outcome.window.as_secs_f64(),
                executor_cpu_us_per_request: cpu::per_request_us(cpu_before, cpu_after, sent),
                client_cpu_us_per_request: cpu::per_request_us(0, outcome.client_cpu_ns, sent),
                summary: ScenarioSummary::of(&scenario, &outcome.records),
            });
            records.extend(outcome.records);
        }
    }
    Ok(ThroughputResults { levels })
}
