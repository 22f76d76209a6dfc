//! `wasm-bench`: benchmarks the wasm-executor over its HTTP API with per-request records.
//! `wasm-bench evaluate` runs the evaluation against the Docker baseline (eval/RESULTS.md);
//! `gateway` fronts a platform for JMeter; `first` runs the first measurement suite (see
//! eval/README.md); `hash` and `footprint` compare executor builds.

mod breakdown;
mod cpu;
mod driver;
mod evaluation;
mod executor;
mod failures;
mod footprint;
mod gateway;
mod hash;
mod http;
mod invoker;
mod metrics;
mod platform;
mod precompile;
mod record;
mod report;
mod server;
mod serverlog;
mod soak;
mod stats;
mod suite;
mod workload;

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use crate::{
    http::{Client, ConnMode},
    record::Record,
    report::{Machine, Report},
    suite::{Env, Sizes},
};

#[derive(Debug, Parser)]
#[command(
    name = "wasm-bench",
    version,
    about = "Benchmarks for the wasm-executor"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The evaluation against the vanilla Docker baseline: cold starts, I/O-, CPU-bound, mixed
    /// and realistic load, access patterns, memory, threading model, on every platform given.
    Evaluate(evaluation::EvaluateArgs),
    /// Serves `POST /invoke/{action}` through an OpenWhisk-like pool on one platform (for the
    /// JMeter plans in eval/jmeter) until SIGINT or SIGTERM.
    Gateway(gateway::GatewayArgs),
    /// The first measurements: /init latency, warm no-op overhead, fresh-instance cost,
    /// throughput at rising concurrency. Paths are relative to the current directory.
    First(FirstArgs),
    /// CPU-bound throughput: the `hash` action in each executor given, precompiled and
    /// portable, against the same source built as a native binary.
    Hash(hash::HashArgs),
    /// Memory per container (idle RSS, RSS per warm container) and /init and warm /run latency,
    /// precompiled and portable, in each executor given.
    Footprint(footprint::FootprintArgs),
    /// The soak run: benign and hostile activations mixed for minutes; the executor's RSS and
    /// open descriptors must stay flat and benign requests must not fail (`make soak`).
    Soak(soak::SoakArgs),
}

#[derive(Debug, Args)]
struct FirstArgs {
    /// The executor binary (started and stopped by the benchmark).
    #[arg(long, default_value = "target/release/wasm-executor")]
    executor: PathBuf,
    /// The precompiler front end (`wasm-precompile-<runtime>` must sit next to it).
    #[arg(long, default_value = "target/release/wasm-precompile")]
    precompiler: PathBuf,
    /// The runtime the executor binary was built with (its artifacts are precompiled for it).
    #[arg(long, default_value = "wasmtime")]
    runtime: String,
    /// Directory of the built actions (`echo.wasm`, and the /init module).
    #[arg(long, default_value = "actions/dist")]
    actions: PathBuf,
    /// The module (in --actions, without .wasm) whose /init is measured.
    #[arg(long, default_value = "big")]
    module: String,
    /// Where the CSV records and summary.{json,md} go.
    #[arg(long, default_value = "eval/results/first")]
    out: PathBuf,
    /// Scratch directory (caches, keys, executor logs); default: a new one under the temp dir.
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// Keep the scratch directory afterwards.
    #[arg(long)]
    keep_scratch: bool,
    /// Tiny sizes, seconds in all: proves the harness works; the figures mean nothing.
    #[arg(long)]
    quick: bool,
    /// Measured /inits per precompiled and cached scenario.
    #[arg(long)]
    inits: Option<u64>,
    /// Portable /inits that compile (one new executor each).
    #[arg(long)]
    compile_inits: Option<u64>,
    /// Measured requests per sequential /run scenario.
    #[arg(long)]
    requests: Option<u64>,
    /// Client counts of the throughput phase, e.g. 1,2,4,8.
    #[arg(long, value_delimiter = ',')]
    concurrency: Option<Vec<usize>>,
    /// Measured seconds per throughput level.
    #[arg(long)]
    throughput_secs: Option<f64>,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Evaluate(args) => evaluation::run(&args),
        Command::Gateway(args) => gateway::run(&args),
        Command::First(args) => first(args),
        Command::Hash(args) => hash::run(&args),
        Command::Footprint(args) => footprint::run(&args),
        Command::Soak(args) => soak::run(&args),
    }
}

fn first(args: FirstArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let loadavg_start = report::Start::now();
    let mut sizes = if args.quick {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    sizes.inits = args.inits.unwrap_or(sizes.inits);
    sizes.compile_inits = args.compile_inits.unwrap_or(sizes.compile_inits);
    sizes.requests = args.requests.unwrap_or(sizes.requests);
    sizes.concurrency = args.concurrency.clone().unwrap_or(sizes.concurrency);
    sizes.throughput_secs = args.throughput_secs.unwrap_or(sizes.throughput_secs);

    let module = args.actions.join(format!("{}.wasm", args.module));
    require(
        &args.executor,
        "build it with `cargo build --release -p wasm-executor`",
    )?;
    require(
        &args.precompiler,
        "build it with `cargo build --release -p wasm-precompile -p wasm-precompile-wasmtime`",
    )?;
    require(&module, "build the actions with actions/build.sh")?;
    require(
        &args.actions.join("echo.wasm"),
        "build the actions with actions/build.sh",
    )?;

    let scratch = match &args.scratch {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("wasm-bench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let env = Env {
        executor: args.executor.clone(),
        precompiler: args.precompiler.clone(),
        actions: args.actions.clone(),
        out: args.out.clone(),
        scratch: scratch.clone(),
        epoch: Instant::now(),
        sizes,
    };
    let result = run_suite(
        &env,
        &args.runtime,
        &module,
        args.quick,
        started,
        loadavg_start,
    );
    if args.keep_scratch || result.is_err() {
        tracing::info!(scratch = %scratch.display(), "scratch directory kept");
    } else if let Err(error) = std::fs::remove_dir_all(&scratch) {
        tracing::warn!(scratch = %scratch.display(), %error, "could not remove the scratch directory");
    }
    let markdown = result?;
    print!("{markdown}");
    Ok(())
}

fn require(path: &Path, hint: &str) -> anyhow::Result<()> {
    if !path.exists() {
        bail!("{} does not exist: {hint}", path.display());
    }
    Ok(())
}

/// Runs every phase, writes the records and summaries, returns the Markdown summary.
fn run_suite(
    env: &Env,
    runtime: &str,
    module: &Path,
    quick: bool,
    started: Instant,
    loadavg_start: report::Start,
) -> anyhow::Result<String> {
    tracing::info!(module = %module.display(), "precompiling (signed zip)");
    let artifact = precompile::signed_zip(&env.precompiler, runtime, module, &env.scratch)?;
    let mut files = Vec::new();
    let mut save = |name: &str, records: &[Record]| -> anyhow::Result<()> {
        record::write_csv(&env.out.join(name), records)?;
        files.push(name.to_owned());
        Ok(())
    };

    let main = env.start_executor("main", Some(&artifact.public_key), "info")?;
    let health = Client::new(main.addr, ConnMode::New).get("/health")?;
    let executor_info: serde_json::Value =
        serde_json::from_slice(&health.body).context("parsing /health")?;
    // The artifact is for `runtime`; every backend's build lands at the same default path.
    if executor_info["runtime"] != runtime {
        bail!(
            "{} runs {}, not {runtime}: pass --executor and --runtime of the same build",
            env.executor.display(),
            executor_info["runtime"]
        );
    }

    let mut records = Vec::new();
    let init = suite::init::run(env, &main, module, &artifact, &mut records)?;
    save("init.csv.gz", &records)?;

    let mut records = Vec::new();
    let warm = suite::warm::run(env, &main, &mut records)?;
    save("warm.csv.gz", &records)?;

    let mut records = Vec::new();
    let throughput = suite::throughput::run(env, &main, &mut records)?;
    save("throughput.csv.gz", &records)?;
    main.stop()?;

    let mut records = Vec::new();
    let instance = suite::instance::run(env, &mut records)?;
    save("instance.csv.gz", &records)?;

    files.extend(["summary.json".to_owned(), "summary.md".to_owned()]);
    let report = Report {
        schema: 1,
        tool: "wasm-bench first",
        date_utc: now_utc(),
        quick,
        wall_seconds: started.elapsed().as_secs_f64(),
        machine: Machine::probe(loadavg_start),
        executor: executor_info,
        sizes: env.sizes.clone(),
        derived: report::derive(&warm),
        aims: report::aims(&init, &warm, &instance),
        init,
        warm,
        instance,
        throughput,
        files,
    };
    let json = serde_json::to_string_pretty(&report)?;
    std::fs::write(env.out.join("summary.json"), json + "\n").context("writing summary.json")?;
    let markdown = report::markdown(&report);
    std::fs::write(env.out.join("summary.md"), &markdown).context("writing summary.md")?;
    tracing::info!(out = %env.out.display(), seconds = report.wall_seconds, "done");
    // Every measured request must have got its scenario's status: anything else is a finding,
    // not a data point.
    let scenarios = report
        .warm
        .scenarios
        .iter()
        .map(|s| &s.summary)
        .chain(report.throughput.levels.iter().map(|l| &l.summary))
        .chain(&report.instance.scenarios);
    let failed: Vec<String> = scenarios
        .filter(|s| s.unexpected() > 0 || s.requests == 0)
        .map(|s| {
            format!(
                "{}: {} of {} requests did not get {} {:?}",
                s.scenario,
                s.unexpected(),
                s.requests,
                s.expected_status,
                s.statuses
            )
        })
        .collect();
    if !failed.is_empty() {
        bail!(
            "{markdown}\nrequests failed (every result is in {}):\n  {}",
            env.out.display(),
            failed.join("\n  ")
        );
    }
    Ok(markdown)
}

fn now_utc() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
}
