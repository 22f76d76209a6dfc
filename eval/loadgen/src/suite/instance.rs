//! The cost of a fresh instance: the executor's own duration of each /run (`took_us`, logged
//! at debug level from the moment the run handler found the container to the guest's answer
//! being ready) for guests that do (almost) nothing. Runs on an executor of its own, with
//! debug logging, so the logging cost stays out of the other phases.

use serde::Serialize;

use super::{Env, ScenarioSummary, attach_server_times, init_container};
use crate::{
    driver::{ClosedLoop, RequestSpec},
    http::ConnMode,
    record::Record,
    serverlog, workload,
};

pub const EMPTY: &str = "instance/empty_wat";
pub const WRITE: &str = "instance/write_wat";
pub const ECHO: &str = "instance/echo";

#[derive(Debug, Clone, Serialize)]
pub struct InstanceResults {
    pub scenarios: Vec<ScenarioSummary>,
}

impl InstanceResults {
    pub fn get(&self, scenario: &str) -> Option<&ScenarioSummary> {
        self.scenarios.iter().find(|s| s.scenario == scenario)
    }
}

pub fn run(env: &Env, records: &mut Vec<Record>) -> anyhow::Result<InstanceResults> {
    let executor = env.start_executor("instance", None, "info,wasm_executor=debug")?;
    let guests = [
        (
            EMPTY,
            "inst-empty",
            workload::wat_module(workload::EMPTY_WAT)?,
        ),
        (
            WRITE,
            "inst-write",
            workload::wat_module(workload::WRITE_WAT)?,
        ),
        (ECHO, "inst-echo", workload::read(&env.action("echo"))?),
    ];
    let noop = workload::noop_run_body();
    let mut outcomes = Vec::new();
    for (scenario, id, module) in &guests {
        tracing::info!(scenario, "instance");
        init_container(executor.addr, id, &workload::init_body(module))?;
        let outcome = ClosedLoop {
            scenario: (*scenario).to_owned(),
            addr: executor.addr,
            mode: ConnMode::KeepAlive,
            budget: env.sizes.sequential_budget(),
            requests: vec![RequestSpec::post(format!("/{id}/run"), noop.clone())],
        }
        .run(env.epoch)?;
        outcomes.push((*scenario, *id, outcome.records));
    }
    let times = serverlog::parse(&executor.stop()?);
    let mut scenarios = Vec::new();
    for (scenario, id, mut recs) in outcomes {
        attach_server_times(&mut recs, &times.runs, |_| id.to_owned());
        let missing = recs.iter().filter(|r| r.server_us.is_none()).count();
        if missing > 0 {
            tracing::warn!(
                scenario,
                missing,
                "runs without an executor-side duration in the log"
            );
        }
        scenarios.push(ScenarioSummary::of(scenario, &recs));
        records.extend(recs);
    }
    Ok(InstanceResults { scenarios })
}
