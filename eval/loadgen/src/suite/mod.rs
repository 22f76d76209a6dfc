//! The first measurement suite: /init latency (precompiled, portable cached, portable compile),
//! warm no-op /run overhead, the cost of a fresh instance, and throughput at rising
//! concurrency; each phase writes its per-request CSV, the report combines their summaries.

pub mod init;
pub mod instance;
pub mod throughput;
pub mod warm;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::bail;
use serde::Serialize;

use crate::{
    executor::{ExecutorOptions, ExecutorProcess, fresh_dir},
    http::{Client, ConnMode},
    record::Record,
    stats::Summary,
};

/// How much of everything to do.
#[derive(Debug, Clone, Serialize)]
pub struct Sizes {
    /// Measured /inits of the precompiled module, and of the cached portable module.
    pub inits: u64,
    /// Unrecorded-in-statistics /inits before those.
    pub init_warmup: u64,
    /// Portable /inits that compile (each in a new executor with an empty cache); also the
    /// number of first precompiled /inits of a new executor.
    pub compile_inits: u64,
    /// Measured sequential requests per warm/instance scenario.
    pub requests: u64,
    /// Warm-up requests before them.
    pub request_warmup: u64,
    /// Repetitions of each step of the in-process /init breakdown.
    pub breakdown_reps: u64,
    /// Closed-loop client counts of the throughput phase.
    pub concurrency: Vec<usize>,
    /// Measured and warm-up seconds per throughput level.
    pub throughput_secs: f64,
    pub throughput_warmup_secs: f64,
}

impl Sizes {
    pub fn full() -> Sizes {
        Sizes {
            inits: 200,
            init_warmup: 5,
            compile_inits: 10,
            requests: 5000,
            request_warmup: 500,
            breakdown_reps: 50,
            concurrency: vec![1, 2, 4, 8, 16, 32, 64],
            throughput_secs: 1.5,
            throughput_warmup_secs: 0.5,
        }
    }

    /// Tiny sizes: proves the harness works end to end in seconds (figures are not meaningful).
    pub fn quick() -> Sizes {
        Sizes {
            inits: 10,
            init_warmup: 1,
            compile_inits: 1,
            requests: 200,
            request_warmup: 20,
            breakdown_reps: 3,
            concurrency: vec![1, 4, 16],
            throughput_secs: 0.2,
            throughput_warmup_secs: 0.05,
        }
    }

    pub fn throughput_budget(&self) -> crate::driver::Budget {
        crate::driver::Budget::Duration {
            warmup: Duration::from_secs_f64(self.throughput_warmup_secs),
            measured: Duration::from_secs_f64(self.throughput_secs),
        }
    }

    pub fn sequential_budget(&self) -> crate::driver::Budget {
        crate::driver::Budget::Requests {
            warmup: self.request_warmup,
            measured: self.requests,
        }
    }
}

/// Where things are, and the clock every record refers to.
#[derive(Debug, Clone)]
pub struct Env {
    pub executor: PathBuf,
    pub precompiler: PathBuf,
    pub actions: PathBuf,
    pub out: PathBuf,
    /// Scratch space: caches, keys, artifacts, executor logs.
    pub scratch: PathBuf,
    pub epoch: Instant,
    pub sizes: Sizes,
}

impl Env {
    /// Starts an executor with a new, empty cache directory named `name`.
    pub fn start_executor(
        &self,
        name: &str,
        trusted_key: Option<&Path>,
        log_filter: &str,
    ) -> anyhow::Result<ExecutorProcess> {
        let state_dir = fresh_dir(&self.scratch, &format!("cache-{name}"))?;
        ExecutorProcess::start(&ExecutorOptions {
            binary: self.executor.clone(),
            state_dir,
            trusted_key: trusted_key.map(Path::to_path_buf),
            log_filter: log_filter.to_owned(),
            log_path: self.scratch.join(format!("executor-{name}.log")),
            extra_args: Vec::new(),
        })
    }

    pub fn action(&self, name: &str) -> PathBuf {
        self.actions.join(format!("{name}.wasm"))
    }
}

/// The statistics of one scenario: client-observed latency, the executor's own duration when
/// known, and how the requests ended.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioSummary {
    pub scenario: String,
    pub requests: usize,
    /// Count of measured requests per HTTP status (0: failed below HTTP).
    pub statuses: BTreeMap<u16, usize>,
    /// The status every request of this scenario must get.
    pub expected_status: u16,
    pub client: Option<Summary>,
    pub server: Option<Summary>,
}

impl ScenarioSummary {
    /// Summarizes the measured (non-warm-up) records.
    pub fn of(scenario: &str, records: &[Record]) -> ScenarioSummary {
        let measured: Vec<&Record> = records.iter().filter(|r| !r.warmup).collect();
        let mut statuses = BTreeMap::new();
        for r in &measured {
            *statuses.entry(r.status).or_insert(0) += 1;
        }
        ScenarioSummary {
            scenario: scenario.to_owned(),
            requests: measured.len(),
            statuses,
            expected_status: expected_status(scenario),
            client: Summary::of_ns(measured.iter().map(|r| r.latency_ns)),
            server: Summary::of_us(measured.iter().filter_map(|r| r.server_us)),
        }
    }

    pub fn client_p50(&self) -> Option<f64> {
        self.client.as_ref().map(|s| s.p50_us)
    }

    /// Measured requests that did not get the expected status.
    pub fn unexpected(&self) -> usize {
        self.statuses
            .iter()
            .filter(|(status, _)| **status != self.expected_status)
            .map(|(_, n)| n)
            .sum()
    }
}

/// The status a scenario's requests must get: 200, but for the scenarios that time an error
/// path on purpose (the empty guest prints no result, 502; an unknown container, 404).
fn expected_status(scenario: &str) -> u16 {
    match scenario {
        warm::MISSING_KEEP => 404,
        warm::EMPTY_KEEP | instance::EMPTY => 502,
        _ => 200,
    }
}

/// A request timed outside the closed-loop driver (e.g. an /init).
pub struct Timed {
    pub start_ns: u64,
    pub latency_ns: u64,
    pub response: crate::http::Response,
}

impl Timed {
    pub fn record(&self, scenario: &str, seq: u64, warmup: bool) -> Record {
        Record {
            scenario: scenario.to_owned(),
            client: 0,
            seq,
            warmup,
            start_ns: self.start_ns,
            latency_ns: self.latency_ns,
            status: self.response.status,
            server_us: None,
        }
    }
}

/// Times `send`, from just before it starts to the last response byte.
pub fn timed(
    epoch: Instant,
    send: impl FnOnce() -> anyhow::Result<crate::http::Response>,
) -> anyhow::Result<Timed> {
    let start = Instant::now();
    let response = send()?;
    let latency = start.elapsed();
    Ok(Timed {
        start_ns: start.duration_since(epoch).as_nanos() as u64,
        latency_ns: latency.as_nanos() as u64,
        response,
    })
}

/// Initializes container `id` with an /init body; any answer but 200 is an error.
pub fn init_container(addr: std::net::SocketAddr, id: &str, body: &[u8]) -> anyhow::Result<()> {
    let response = Client::new(addr, ConnMode::New).post(&format!("/{id}/init"), body)?;
    if response.status != 200 {
        bail!(
            "/init of {id} answered {}: {}",
            response.status,
            response.body_text()
        );
    }
    Ok(())
}

/// Destroys container `id`; any answer but 200 is an error.
pub fn destroy_container(client: &mut Client, id: &str) -> anyhow::Result<()> {
    let response = client.post(&format!("/{id}/destroy"), b"")?;
    if response.status != 200 {
        bail!(
            "/destroy of {id} answered {}: {}",
            response.status,
            response.body_text()
        );
    }
    Ok(())
}

/// Fills `server_us` of records from the executor's per-container durations, in order: the
/// i-th record sent to a container gets the i-th duration the executor logged for it.
pub fn attach_server_times(
    records: &mut [Record],
    times: &std::collections::HashMap<String, Vec<u64>>,
    container_of: impl Fn(&Record) -> String,
) {
    let mut next: BTreeMap<String, usize> = BTreeMap::new();
    for r in records.iter_mut() {
        let container = container_of(r);
        let index = next.entry(container.clone()).or_insert(0);
        r.server_us = times.get(&container).and_then(|v| v.get(*index)).copied();
        *index += 1;
    }
}
