//! Closed-loop load: N clients, each on its own thread, each sending its next request as soon
//! as the previous answer arrived, for a number of requests or a duration, with a warm-up that
//! is recorded but flagged. (An open-loop driver, sending on a schedule, belongs next to this.)

use std::{
    net::SocketAddr,
    sync::{Arc, Barrier},
    time::{Duration, Instant},
};

use anyhow::Context;

use crate::{
    http::{Client, ConnMode},
    record::Record,
};

/// One request, repeated by a client.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: &'static str,
    pub path: String,
    pub body: Arc<[u8]>,
}

impl RequestSpec {
    pub fn post(path: impl Into<String>, body: impl Into<Arc<[u8]>>) -> Self {
        RequestSpec {
            method: "POST",
            path: path.into(),
            body: body.into(),
        }
    }

    pub fn get(path: impl Into<String>) -> Self {
        RequestSpec {
            method: "GET",
            path: path.into(),
            body: Arc::from(Vec::new()),
        }
    }
}

/// How long each client runs.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// This many warm-up requests, then this many measured requests, per client.
    Requests { warmup: u64, measured: u64 },
    /// Warm up for this long, then measure for this long (all clients share the clock).
    Duration {
        warmup: Duration,
        measured: Duration,
    },
}

/// A closed-loop run.
#[derive(Debug, Clone)]
pub struct ClosedLoop {
    pub scenario: String,
    pub addr: SocketAddr,
    pub mode: ConnMode,
    pub budget: Budget,
    /// One request per client: client `i` repeats `requests[i]`.
    pub requests: Vec<RequestSpec>,
}

/// Records of a run and the measured window (for rates).
#[derive(Debug)]
pub struct Outcome {
    pub records: Vec<Record>,
    /// Length of the measured window: from the end of the warm-up to the last measured answer.
    pub window: Duration,
    /// CPU time (ns) the client threads used, warm-up included.
    pub client_cpu_ns: u64,
}

impl Outcome {
    /// Measured requests answered per second over the window.
    pub fn rate(&self) -> f64 {
        let measured = self.records.iter().filter(|r| !r.warmup).count();
        measured as f64 / self.window.as_secs_f64().max(1e-9)
    }
}

impl ClosedLoop {
    /// Runs every client to the end of its budget; `epoch` anchors `start_ns`.
    pub fn run(&self, epoch: Instant) -> anyhow::Result<Outcome> {
        let clients = self.requests.len();
        let barrier = Arc::new(Barrier::new(clients + 1));
        let mut handles = Vec::with_capacity(clients);
        for (index, spec) in self.requests.iter().cloned().enumerate() {
            let barrier = Arc::clone(&barrier);
            let this = self.clone();
            let handle = std::thread::Builder::new()
                .name(format!("client-{index}"))
                .spawn(move || {
                    barrier.wait();
                    this.client(index as u32, &spec, epoch)
                })
                .context("starting a client thread")?;
            handles.push(handle);
        }
        // All clients start together, after every thread exists.
        barrier.wait();
        let started = Instant::now();
        let mut records = Vec::new();
        let mut client_cpu_ns = 0;
        let mut failure = None;
        for handle in handles {
            match handle.join() {
                Ok(Ok((mut r, cpu))) => {
                    records.append(&mut r);
                    client_cpu_ns += cpu;
                }
                Ok(Err(error)) => failure = Some(error),
                Err(_) => failure = Some(anyhow::anyhow!("a client thread panicked")),
            }
        }
        if let Some(error) = failure {
            return Err(error.context(format!("scenario {}", self.scenario)));
        }
        let window = match self.budget {
            Budget::Duration { warmup, .. } => {
                let window_start = started + warmup;
                let last_end = records
                    .iter()
                    .filter(|r| !r.warmup)
                    .map(|r| r.start_ns + r.latency_ns)
                    .max()
                    .unwrap_or(0);
                let window_start_ns = window_start.duration_since(epoch).as_nanos() as u64;
                Duration::from_nanos(last_end.saturating_sub(window_start_ns))
            }
            Budget::Requests { .. } => {
                let first = records
                    .iter()
                    .filter(|r| !r.warmup)
                    .map(|r| r.start_ns)
                    .min()
                    .unwrap_or(0);
                let last = records
                    .iter()
                    .filter(|r| !r.warmup)
                    .map(|r| r.start_ns + r.latency_ns)
                    .max()
                    .unwrap_or(0);
                Duration::from_nanos(last.saturating_sub(first))
            }
        };
        records.sort_by_key(|r| (r.client, r.seq));
        Ok(Outcome {
            records,
            window,
            client_cpu_ns,
        })
    }

    /// One client's records and the CPU time (ns) its thread used.
    fn client(
        &self,
        index: u32,
        spec: &RequestSpec,
        epoch: Instant,
    ) -> anyhow::Result<(Vec<Record>, u64)> {
        let cpu_start = crate::cpu::this_thread_cpu_ns();
        let mut client = Client::new(self.addr, self.mode);
        let begun = Instant::now();
        let mut records = Vec::new();
        let mut seq = 0u64;
        loop {
            let warmup = match self.budget {
                Budget::Requests { warmup, measured } => {
                    if seq >= warmup + measured {
                        break;
                    }
                    seq < warmup
                }
                Budget::Duration { warmup, measured } => {
                    let elapsed = begun.elapsed();
                    if elapsed >= warmup + measured {
                        break;
                    }
                    elapsed < warmup
                }
            };
            let start = Instant::now();
            let status = match client.request(spec.method, &spec.path, &spec.body) {
                Ok(response) => response.status,
                Err(error) => {
                    tracing::warn!(scenario = %self.scenario, client = index, %error, "request failed");
                    0
                }
            };
            let latency = start.elapsed();
            records.push(Record {
                scenario: self.scenario.clone(),
                client: index,
                seq,
                warmup,
                start_ns: start.duration_since(epoch).as_nanos() as u64,
                latency_ns: latency.as_nanos() as u64,
                status,
                server_us: None,
            });
            seq += 1;
        }
        Ok((
            records,
            crate::cpu::this_thread_cpu_ns().saturating_sub(cpu_start),
        ))
    }
}
