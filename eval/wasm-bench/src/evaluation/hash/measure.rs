//! The measurement of the hash experiment: CPU-bound throughput of the `hash` action (repeated
//! BLAKE3) in each executor given, precompiled and portable, against the same Rust source built
//! as a native binary. Variants run interleaved, round by round, so a busy moment of the shared
//! machine hits all of them alike; each variant's fixed cost (process spawn, /run,
//! instantiation) is measured with zero iterations and subtracted, leaving the hashing itself.
//! Code precompiled with a compiler's own flags is a variant of its own.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::json;

use super::HashRun;
use crate::{
    executor::{ExecutorOptions, ExecutorProcess, fresh_dir},
    http::{Client, ConnMode},
    precompile, report,
    stats::{Summary, percentile},
    workload,
};

/// What to measure, and how much.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The executor builds: runtime and binary.
    pub executors: Vec<(String, PathBuf)>,
    /// The precompiler front end (`wasm-precompile-<runtime>` next to it).
    pub precompiler: PathBuf,
    /// The action's Wasm (`hash.wasm`).
    pub wasm: PathBuf,
    /// Its native build.
    pub native: PathBuf,
    /// BLAKE3 rounds per measured run.
    pub iterations: u64,
    /// Measured rounds (each runs every variant once with and once without iterations).
    pub rounds: usize,
    /// Compiler flags (space-separated) of the extra precompiled variants.
    pub also_precompiled_with: Vec<String>,
    /// Tiny sizes: the figures mean nothing.
    pub quick: bool,
}

impl Plan {
    /// The action's Wasm and native build exist.
    pub fn check_inputs(&self) -> anyhow::Result<()> {
        for (path, hint) in [
            (&self.wasm, "build the actions with actions/build.sh"),
            (
                &self.native,
                "build the native actions with actions/build.sh --native",
            ),
        ] {
            if !path.exists() {
                bail!("{} does not exist: {hint}", path.display());
            }
        }
        Ok(())
    }
}

/// Measures every variant of `plan` (executors started with their state under `scratch`, and
/// stopped again).
pub fn measure(plan: &Plan, scratch: &Path) -> anyhow::Result<HashRun> {
    plan.check_inputs()?;
    let loadavg_start = report::loadavg();
    let (variants, executors, processes) = run_rounds(plan, scratch)?;
    for process in processes {
        process.stop()?;
    }
    let iterations = plan.iterations;
    let native_rate = variants
        .iter()
        .find(|v| matches!(v.runner, Runner::Native(_)))
        .map_or(f64::NAN, |v| rate(v, iterations));
    let results: Vec<VariantResult> = variants
        .iter()
        .map(|v| VariantResult {
            variant: v.name.clone(),
            loaded: Summary::of_ns(v.loaded.iter().copied()),
            empty: Summary::of_ns(v.empty.iter().copied()),
            compute_ns: compute_ns(v),
            hashes_per_second: rate(v, iterations),
            of_native: rate(v, iterations) / native_rate,
        })
        .collect();
    Ok(HashRun {
        iterations,
        rounds: plan.rounds,
        quick: plan.quick,
        loadavg_start,
        loadavg_end: report::loadavg(),
        executors,
        results,
    })
}

/// One way of running the action, and its timings (ns) with and without the work.
struct Variant {
    name: String,
    runner: Runner,
    loaded: Vec<u64>,
    empty: Vec<u64>,
}

enum Runner {
    Native(PathBuf),
    Executor { client: Client, path: String },
}

impl Runner {
    /// Runs the action once with `iterations`; returns the wall time.
    fn run(&mut self, iterations: u64) -> anyhow::Result<u64> {
        let params = json!({ "iterations": iterations });
        let started = Instant::now();
        match self {
            Runner::Native(binary) => {
                let output = Command::new(&*binary)
                    .arg(params.to_string())
                    .output()
                    .with_context(|| format!("running {}", binary.display()))?;
                if !output.status.success() {
                    bail!("{} failed: {}", binary.display(), output.status);
                }
            }
            Runner::Executor { client, path } => {
                let response = client.post(path, &workload::run_body(&params))?;
                if response.status != 200 {
                    bail!("{path} answered {}: {}", response.status, response.text());
                }
            }
        }
        Ok(started.elapsed().as_nanos() as u64)
    }
}

#[derive(Debug, Serialize)]
pub struct VariantResult {
    pub variant: String,
    pub loaded: Option<Summary>,
    pub empty: Option<Summary>,
    /// Median loaded run minus median empty run (ns): the hashing alone.
    pub compute_ns: u64,
    pub hashes_per_second: f64,
    /// This variant's rate over the native binary's.
    pub of_native: f64,
}

type Measured = (Vec<Variant>, Vec<serde_json::Value>, Vec<ExecutorProcess>);

/// Starts every executor with its variants and runs every variant `plan.rounds` + 1 times.
fn run_rounds(plan: &Plan, scratch: &Path) -> anyhow::Result<Measured> {
    let (wasm, iterations) = (&plan.wasm, plan.iterations);
    let mut variants = vec![Variant {
        name: "native".into(),
        runner: Runner::Native(plan.native.clone()),
        loaded: Vec::new(),
        empty: Vec::new(),
    }];
    let mut executors = Vec::new();
    let mut processes = Vec::new();
    for (runtime, binary) in &plan.executors {
        let runtime = runtime.as_str();
        let dir = fresh_dir(scratch, runtime)?;
        let artifact = precompile::signed_zip(&plan.precompiler, runtime, wasm, &dir)?;
        let mut codes = vec![("precompiled".to_owned(), workload::read(&artifact.zip)?)];
        for (index, flags) in plan.also_precompiled_with.iter().enumerate() {
            let flags: Vec<String> = flags.split_whitespace().map(str::to_owned).collect();
            let zip = dir.join(format!("flagged-{index}.zip"));
            precompile::compile_signed(&plan.precompiler, runtime, wasm, &flags, &dir, &zip)?;
            codes.push((
                format!("precompiled {}", flags.join(" ")),
                workload::read(&zip)?,
            ));
        }
        codes.push(("portable".to_owned(), workload::read(wasm)?));
        let process = ExecutorProcess::start(&ExecutorOptions {
            binary: binary.clone(),
            state_dir: fresh_dir(&dir, "cache")?,
            trusted_key: Some(artifact.public_key.clone()),
            log_filter: "warn".into(),
            log_path: dir.join("executor.log"),
            extra_args: Vec::new(),
        })?;
        let health = Client::new(process.addr, ConnMode::New).get("/health")?;
        let info: serde_json::Value = serde_json::from_slice(&health.body)?;
        if info["runtime"] != runtime {
            bail!(
                "{} runs {}, not {runtime}",
                binary.display(),
                info["runtime"]
            );
        }
        executors.push(info);
        for (index, (kind, code)) in codes.into_iter().enumerate() {
            let id = format!("hash-{index}");
            crate::executor::init_container(process.addr, &id, &workload::init_body(&code))?;
            variants.push(Variant {
                name: format!("{runtime} {kind}"),
                runner: Runner::Executor {
                    client: Client::new(process.addr, ConnMode::KeepAlive),
                    path: format!("/{id}/run"),
                },
                loaded: Vec::new(),
                empty: Vec::new(),
            });
        }
        processes.push(process);
    }
    for round in 0..plan.rounds + 1 {
        tracing::info!(round, "hash round");
        for variant in &mut variants {
            let loaded = variant.runner.run(iterations)?;
            let empty = variant.runner.run(0)?;
            // Round 0 warms caches and code; it is not kept.
            if round > 0 {
                variant.loaded.push(loaded);
                variant.empty.push(empty);
            }
        }
    }
    Ok((variants, executors, processes))
}

fn median(samples: &[u64]) -> u64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        0
    } else {
        percentile(&sorted, 0.5)
    }
}

fn compute_ns(variant: &Variant) -> u64 {
    median(&variant.loaded).saturating_sub(median(&variant.empty))
}

fn rate(variant: &Variant, iterations: u64) -> f64 {
    iterations as f64 / (compute_ns(variant).max(1) as f64 / 1e9)
}
