//! `wasm-bench evaluate`: the evaluation against the vanilla Docker baseline. The experiments
//! of one registry (`registry.rs`, each experiment in a module of its own with its run and its
//! part of the summary) run on every platform given they apply to (executor builds, Docker,
//! the native binary bare), in one run, and everything lands as CSV records plus a summary of
//! ratios.

mod access;
mod args;
mod capacity;
mod cells;
mod cold;
mod cold_rate;
mod context;
mod cost;
mod experiment;
pub mod footprint;
pub mod hash;
mod init;
mod load;
mod lost;
mod markdown;
mod memory;
mod mixed;
mod progress;
mod rate_search;
mod realistic;
mod registry;
mod results;
mod runner;
pub mod sample;
mod sizes;
mod summary;
mod threading;
mod throughput;

use std::{
    net::{Ipv4Addr, SocketAddr},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use serde_json::{Map, Value, json};

pub use args::EvaluateArgs;
pub use context::Context;
pub use results::Results;
pub use sizes::Sizes;

use crate::{
    affinity::{self, Pinning},
    platform::{Platform, docker::DockerPlatform},
    provenance::Provenance,
    report::{Machine, Start},
    server,
};
use experiment::Experiment;
use summary::Report;

/// The I/O-bound actions' server answers after this long (the thesis's 300 ms).
const IO_DELAY: Duration = Duration::from_millis(300);

pub fn run(args: &EvaluateArgs) -> anyhow::Result<()> {
    let provenance = Provenance::now();
    let start = Start::now();
    let started = Instant::now();
    let experiments = registry::select(&args.experiments)?;
    args.check_platforms()?;
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let sizes = Sizes::of(args, cores);
    // Before any thread or process is started, so that all of them follow.
    let pinning = pin(args, cores)?;
    let scratch = args.scratch.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("wasm-evaluate-{}", std::process::id()))
    });
    std::fs::create_dir_all(&scratch)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;

    let docker = connect_docker(args, &experiments)?;
    let delay = start_delay_server(docker.as_deref())?;
    let ctx = Context {
        sizes,
        epoch: Instant::now(),
        delay_port: delay.port(),
    };
    let results = runner::run_all(&experiments, &ctx, args, &scratch, docker)?;
    drop(delay);

    for (experiment, samples) in &results.samples {
        sample::write_csv(&args.out.join(format!("{experiment}.csv.gz")), samples)?;
    }
    let head = head(args, &ctx, &provenance, start, started, pinning.as_ref());
    let report = Report::new(args, &ctx, &results);
    let markdown = summary::write(&args.out, &report, head, &provenance)?;
    if args.scratch.is_none() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    tracing::info!(out = %args.out.display(), seconds = started.elapsed().as_secs(), "evaluation done");
    print!("{markdown}");
    lost::check_failures(
        &results,
        &lost::expected(&experiments, args),
        args.max_error_pct,
    )
}

/// summary.json's keys of the run itself: provenance, how long it took, the machine, the
/// sizes, the platforms and the pinning.
fn head(
    args: &EvaluateArgs,
    ctx: &Context,
    provenance: &Provenance,
    start: Start,
    started: Instant,
    pinning: Option<&Pinning>,
) -> Map<String, Value> {
    [
        ("schema", json!(1)),
        ("tool", json!("wasm-bench evaluate")),
        ("date_utc", json!(provenance.date_utc)),
        ("commit", json!(provenance.commit)),
        ("quick", json!(args.quick)),
        ("wall_seconds", json!(started.elapsed().as_secs_f64())),
        (
            "suspensions_failed",
            json!(crate::failures::suspensions_failed_count()),
        ),
        ("machine", json!(Machine::probe(start))),
        ("sizes", json!(ctx.sizes)),
        ("platforms", json!(args.platforms)),
        ("pinning", json!(pinning)),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect()
}

/// The delay server the I/O-bound actions call: on loopback and, when Docker takes part, on
/// the bridge's gateway.
fn start_delay_server(docker: Option<&DockerPlatform>) -> anyhow::Result<server::Server> {
    let mut binds: Vec<SocketAddr> = vec![(Ipv4Addr::LOCALHOST, 0).into()];
    if let Some(docker) = docker {
        binds.push(SocketAddr::new(docker.host_address(), 0));
    }
    server::delay_server(&binds, IO_DELAY)
}

/// The CPU pinning `args` ask for (the automatic one by default), applied to this process.
fn pin(args: &EvaluateArgs, cores: usize) -> anyhow::Result<Option<Pinning>> {
    let pinning = match (&args.loadgen_cpus, &args.platform_cpus) {
        _ if args.no_pinning => None,
        (Some(loadgen), Some(platforms)) => Some(Pinning {
            loadgen: affinity::parse_list(loadgen)?,
            platforms: affinity::parse_list(platforms)?,
        }),
        _ => Pinning::automatic(cores),
    };
    match &pinning {
        Some(pinning) => {
            pinning.apply()?;
            tracing::info!(loadgen = ?pinning.loadgen, platforms = ?pinning.platforms, "CPUs pinned");
        }
        None => tracing::info!(
            cores,
            "no CPU pinning: load generator and platforms share every CPU"
        ),
    }
    Ok(pinning)
}

/// Docker's platform when `docker` is among the platforms, with images of the shared
/// platforms' modules and of those `experiments` need.
fn connect_docker(
    args: &EvaluateArgs,
    experiments: &[&dyn Experiment],
) -> anyhow::Result<Option<Arc<DockerPlatform>>> {
    if !args.platforms.iter().any(|p| p == "docker") {
        return Ok(None);
    }
    let mut modules: Vec<String> = runner::SHARED_MODULES.map(String::from).to_vec();
    modules.extend(experiments.iter().flat_map(|e| e.docker_modules()));
    let docker = DockerPlatform::connect(&args.image_prefix, &modules)?;
    Ok(Some(Arc::new(docker)))
}
