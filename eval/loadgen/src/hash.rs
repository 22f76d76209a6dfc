//! `wasm-bench hash`: CPU-bound throughput of the `hash` action (repeated BLAKE3) in each
//! executor given, precompiled and portable, against the same Rust source built as a native
//! binary. Variants run interleaved, round by round, so a busy moment of the shared machine
//! hits all of them alike; each variant's fixed cost (process spawn, /run, instantiation) is
//! measured with zero iterations and subtracted, leaving the hashing itself. Code precompiled
//! with a compiler's own flags (`--also-precompiled-with`) is a variant of its own.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::json;

use crate::{
    executor::{ExecutorOptions, ExecutorProcess, fresh_dir},
    http::{Client, ConnMode},
    precompile, report,
    stats::{Summary, percentile},
    workload,
};

#[derive(Debug, clap::Args)]
pub struct HashArgs {
    /// RUNTIME=PATH of an executor build, repeated for several, e.g.
    /// `--executor wasmtime=target/release/wasm-executor-wasmtime`.
    #[arg(long = "executor", required = true)]
    executors: Vec<String>,
    /// The precompiler front end (`wasm-precompile-<runtime>` must sit next to it).
    #[arg(long, default_value = "target/release/wasm-precompile")]
    precompiler: PathBuf,
    /// Directory of the built actions (`hash.wasm`).
    #[arg(long, default_value = "actions/dist")]
    actions: PathBuf,
    /// The native build of the action (`actions/build.sh --native`).
    #[arg(long, default_value = "actions/dist/native/hash")]
    native: PathBuf,
    /// BLAKE3 rounds per measured run (1.2 M: about 100 ms natively).
    #[arg(long, default_value_t = 1_200_000)]
    iterations: u64,
    /// Measured rounds (each runs every variant once with and once without iterations).
    #[arg(long, default_value_t = 15)]
    rounds: usize,
    /// Where summary.{json,md} go.
    #[arg(long, default_value = "eval/results/hash")]
    out: PathBuf,
    /// A few small runs: proves the harness works; the figures mean nothing.
    #[arg(long)]
    quick: bool,
    /// Also run the action precompiled with these compiler flags (space-separated, e.g.
    /// `--xip` for WAMR), as a variant of its own; repeated for several.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    also_precompiled_with: Vec<String>,
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
struct VariantResult {
    variant: String,
    loaded: Option<Summary>,
    empty: Option<Summary>,
    /// Median loaded run minus median empty run (ns): the hashing alone.
    compute_ns: u64,
    hashes_per_second: f64,
    /// This variant's rate over the native binary's.
    of_native: f64,
}

#[derive(Debug, Serialize)]
struct HashReport {
    tool: &'static str,
    iterations: u64,
    rounds: usize,
    quick: bool,
    loadavg_start: String,
    loadavg_end: String,
    executors: Vec<serde_json::Value>,
    results: Vec<VariantResult>,
}

pub fn run(args: &HashArgs) -> anyhow::Result<()> {
    let (iterations, rounds) = if args.quick {
        (10_000, 2)
    } else {
        (args.iterations, args.rounds)
    };
    let loadavg_start = report::loadavg();
    let wasm = args.actions.join("hash.wasm");
    for (path, hint) in [
        (&wasm, "build the actions with actions/build.sh"),
        (
            &args.native,
            "build the native actions with actions/build.sh --native",
        ),
    ] {
        if !path.exists() {
            bail!("{} does not exist: {hint}", path.display());
        }
    }
    let scratch = std::env::temp_dir().join(format!("wasm-bench-hash-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    std::fs::create_dir_all(&args.out)?;
    let result = measure(args, &wasm, &scratch, iterations, rounds).and_then(|measured| {
        let (variants, executors, processes) = measured;
        for process in processes {
            process.stop()?;
        }
        Ok((variants, executors))
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let (variants, executors) = result?;

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
    let report = HashReport {
        tool: "wasm-bench hash",
        iterations,
        rounds,
        quick: args.quick,
        loadavg_start,
        loadavg_end: report::loadavg(),
        executors,
        results,
    };
    std::fs::write(
        args.out.join("summary.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let markdown = markdown(&report);
    std::fs::write(args.out.join("summary.md"), &markdown)?;
    print!("{markdown}");
    Ok(())
}

type Measured = (Vec<Variant>, Vec<serde_json::Value>, Vec<ExecutorProcess>);

fn measure(
    args: &HashArgs,
    wasm: &Path,
    scratch: &Path,
    iterations: u64,
    rounds: usize,
) -> anyhow::Result<Measured> {
    let mut variants = vec![Variant {
        name: "native".into(),
        runner: Runner::Native(args.native.clone()),
        loaded: Vec::new(),
        empty: Vec::new(),
    }];
    let mut executors = Vec::new();
    let mut processes = Vec::new();
    for spec in &args.executors {
        let (runtime, binary) = spec
            .split_once('=')
            .with_context(|| format!("--executor {spec:?}: expected RUNTIME=PATH"))?;
        let dir = fresh_dir(scratch, runtime)?;
        let artifact = precompile::signed_zip(&args.precompiler, runtime, wasm, &dir)?;
        let mut codes = vec![("precompiled".to_owned(), workload::read(&artifact.zip)?)];
        for (index, flags) in args.also_precompiled_with.iter().enumerate() {
            let flags: Vec<String> = flags.split_whitespace().map(str::to_owned).collect();
            let zip = dir.join(format!("flagged-{index}.zip"));
            precompile::compile_signed(&args.precompiler, runtime, wasm, &flags, &dir, &zip)?;
            codes.push((
                format!("precompiled {}", flags.join(" ")),
                workload::read(&zip)?,
            ));
        }
        codes.push(("portable".to_owned(), workload::read(wasm)?));
        let process = ExecutorProcess::start(&ExecutorOptions {
            binary: PathBuf::from(binary),
            state_dir: fresh_dir(&dir, "cache")?,
            trusted_key: Some(artifact.public_key.clone()),
            log_filter: "warn".into(),
            log_path: dir.join("executor.log"),
            extra_args: Vec::new(),
        })?;
        let health = Client::new(process.addr, ConnMode::New).get("/health")?;
        let info: serde_json::Value = serde_json::from_slice(&health.body)?;
        if info["runtime"] != runtime {
            bail!("{binary} runs {}, not {runtime}", info["runtime"]);
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
    for round in 0..rounds + 1 {
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

fn markdown(report: &HashReport) -> String {
    let mut out = format!(
        "# wasm-bench hash\n\n{} BLAKE3 rounds per run, {} rounds, load average {} → {}{}.\n\n",
        report.iterations,
        report.rounds,
        report.loadavg_start,
        report.loadavg_end,
        if report.quick {
            " (quick: figures are not meaningful)"
        } else {
            ""
        },
    );
    out.push_str("| variant | run p50 | empty run p50 | hashing | hashes/s | of native |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for r in &report.results {
        let p50 = |s: &Option<Summary>| {
            s.as_ref()
                .map_or("–".into(), |s| format!("{:.1} ms", s.p50_us / 1000.0))
        };
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} ms | {:.0} | {:.0} % |\n",
            r.variant,
            p50(&r.loaded),
            p50(&r.empty),
            r.compute_ns as f64 / 1e6,
            r.hashes_per_second,
            r.of_native * 100.0
        ));
    }
    out
}
