//! `wasm-bench evaluate`: the evaluation against the vanilla Docker baseline. Every experiment
//! runs on every platform given (executor builds, Docker, the native binary bare), one platform
//! after the other in one run, and everything lands as CSV records plus a summary of ratios.

mod access;
mod capacity;
mod cold;
mod cold_rate;
mod cost;
mod init;
mod load;
mod memory;
mod mixed;
mod progress;
mod realistic;
pub mod sample;
mod summary;
mod throughput;

use std::{
    collections::BTreeMap,
    net::{Ipv4Addr, SocketAddr},
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use clap::Args;
use serde::Serialize;
use serde_json::json;

use crate::{
    affinity::{self, Pinning},
    failures,
    platform::{
        Action, Platform,
        docker::DockerPlatform,
        native::NativePlatform,
        wasm::{WasmOptions, WasmPlatform},
    },
    report::{Machine, Start},
    server,
};
use load::{LevelKey, LevelRun, Plan};
use progress::Progress;
use sample::Sample;
use throughput::Workload;

/// The I/O-bound actions' server answers after this long (the thesis's 300 ms).
const IO_DELAY: Duration = Duration::from_millis(300);

#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// Platforms in the order they run: executor builds `wasmtime`, `wasmer`, `wamr` (each
    /// needs --executor-<name>), `docker` (the baseline) and `native` (the binary bare).
    #[arg(long, value_delimiter = ',', default_value = "wasmtime,docker,native")]
    platforms: Vec<String>,
    /// Experiments to run: cold, cold-rate, io, cpu, mixed, realistic, capacity, access,
    /// memory, threading, cost, init (init on executor builds only; capacity and memory not on
    /// native).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cold,cold-rate,io,cpu,mixed,realistic,capacity,access,memory,threading,cost,init"
    )]
    experiments: Vec<String>,
    #[arg(long, default_value = "target/release/wasm-executor-wasmtime")]
    executor_wasmtime: PathBuf,
    #[arg(long, default_value = "target/release/wasm-executor-wasmer")]
    executor_wasmer: PathBuf,
    #[arg(long, default_value = "target/release/wasm-executor-wamr")]
    executor_wamr: PathBuf,
    /// The precompiler front end (`wasm-precompile-<runtime>` next to it).
    #[arg(long, default_value = "target/release/wasm-precompile")]
    precompiler: PathBuf,
    /// Built Wasm actions (`<name>.wasm`, variants in `variants/`).
    #[arg(long, default_value = "actions/dist")]
    actions: PathBuf,
    /// Native builds of the same actions (variants in `../variants/native/`).
    #[arg(long, default_value = "actions/dist/native")]
    native: PathBuf,
    /// Baseline images are `<prefix>/<module>` (eval/baseline/build-images.sh).
    #[arg(long, default_value = "owwasm-baseline")]
    image_prefix: String,
    #[arg(long, default_value = "eval/results/evaluation")]
    out: PathBuf,
    /// Scratch space (artifacts, executor logs); default: a new one under the temp dir.
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// Tiny sizes: proves the harness works in a minute or two; the figures mean nothing.
    #[arg(long)]
    quick: bool,
    /// Simultaneous cold starts per level of experiment 1, e.g. 1,2,4,8,16,32.
    #[arg(long, value_delimiter = ',')]
    cold_levels: Option<Vec<usize>>,
    /// Clients per level of experiment 2 (I/O-bound).
    #[arg(long, value_delimiter = ',')]
    io_levels: Option<Vec<usize>>,
    /// Seconds of each measured window of a closed-loop level.
    #[arg(long)]
    level_secs: Option<f64>,
    /// Measured windows per closed-loop level (its repetitions: their rates give the mean and
    /// its 95 % confidence interval).
    #[arg(long)]
    repetitions: Option<u32>,
    /// CPUs of the load generator (`taskset` list, e.g. `3` or `6-7`); with --platform-cpus.
    /// Default: the last quarter of the CPUs on machines with 4 or more, none on smaller ones.
    #[arg(long, requires = "platform_cpus")]
    loadgen_cpus: Option<String>,
    /// CPUs of the measured platforms: executors, Docker's engine and containers, native
    /// processes (e.g. `0-2`).
    #[arg(long, requires = "loadgen_cpus")]
    platform_cpus: Option<String>,
    /// No pinning, whatever the machine.
    #[arg(long, conflicts_with_all = ["loadgen_cpus", "platform_cpus"])]
    no_pinning: bool,
    /// The capacity experiment's latency target: a rate is sustained while the p99 stays
    /// within it (ms).
    #[arg(long)]
    p99_target_ms: Option<f64>,
    /// Fail the run (after every result is written) when more than this percentage of an
    /// experiment's activations on one platform failed, cold starts included. 0 fails on any
    /// failed activation. A panicked client thread, or a container that could not be removed,
    /// paused or resumed, always fails it.
    #[arg(long, default_value_t = 0.0)]
    max_error_pct: f64,
}

/// How much of everything.
#[derive(Debug, Clone, Serialize)]
pub struct Sizes {
    pub cold_levels: Vec<usize>,
    /// Cold starts per level (levels below it are repeated).
    pub cold_samples: usize,
    /// Closed-loop clients per level of the cold starts at saturation.
    pub cold_rate_levels: Vec<usize>,
    /// Their warm-up: long enough for Docker's slowest cold start at the highest level.
    pub cold_rate_warmup_secs: f64,
    pub io_levels: Vec<usize>,
    pub cpu_levels: Vec<usize>,
    pub warmup_secs: f64,
    /// One measured window of a closed-loop level.
    pub level_secs: f64,
    /// Measured windows per closed-loop level.
    pub repetitions: u32,
    pub mixed_clients: usize,
    pub mixed_interval_secs: f64,
    pub mixed_hold_secs: f64,
    pub realistic_rate: f64,
    pub realistic_secs: f64,
    /// The actions' concurrency limits the realistic workload runs with (OpenWhisk's
    /// `limits.concurrency`: activations one container runs at once).
    pub realistic_limits: Vec<usize>,
    /// Arrival rates (per second) of the capacity experiment, each for `capacity_secs`.
    pub capacity_rates: Vec<f64>,
    pub capacity_secs: f64,
    /// A rate is sustained while the p99 latency stays within this (ms).
    pub capacity_p99_ms: f64,
    pub realistic_idle_secs: f64,
    pub access_clients: usize,
    pub access_requests: usize,
    pub memory_containers: usize,
    pub threading_levels: Vec<usize>,
    pub threading_secs: f64,
    /// Sequential warm activations measured per platform in the platform-cost experiment.
    pub cost_activations: usize,
    /// Timed /inits per scenario of the /init experiment.
    pub inits: usize,
    /// Compiling /inits (a new executor each).
    pub compile_inits: usize,
}

impl Sizes {
    fn full(cores: usize) -> Sizes {
        Sizes {
            cold_levels: vec![1, 2, 4, 8, 12, 16, 20, 24, 28, 32],
            cold_samples: 16,
            cold_rate_levels: vec![1, 2, 4, 8, 16, 32],
            cold_rate_warmup_secs: 4.0,
            io_levels: vec![1, 4, 16, 64, 128, 256],
            cpu_levels: (1..=2 * cores).collect(),
            warmup_secs: 1.0,
            level_secs: 2.0,
            repetitions: 5,
            mixed_clients: 16,
            mixed_interval_secs: 2.0,
            mixed_hold_secs: 20.0,
            realistic_rate: 5.0,
            realistic_secs: 60.0,
            realistic_limits: vec![1, 3, 10],
            capacity_rates: vec![2.0, 5.0, 10.0, 20.0, 40.0],
            capacity_secs: 30.0,
            capacity_p99_ms: 1000.0,
            realistic_idle_secs: 30.0,
            access_clients: 16,
            access_requests: 20,
            memory_containers: 16,
            threading_levels: vec![1, 4, 16, 64],
            threading_secs: 2.0,
            cost_activations: 2000,
            inits: 50,
            compile_inits: 5,
        }
    }

    fn quick() -> Sizes {
        Sizes {
            cold_levels: vec![1, 2],
            cold_samples: 2,
            cold_rate_levels: vec![2],
            cold_rate_warmup_secs: 0.2,
            io_levels: vec![1, 4],
            cpu_levels: vec![1, 2],
            warmup_secs: 0.2,
            level_secs: 0.3,
            repetitions: 2,
            mixed_clients: 2,
            mixed_interval_secs: 0.3,
            mixed_hold_secs: 1.0,
            realistic_rate: 4.0,
            realistic_secs: 2.0,
            realistic_limits: vec![1, 3],
            capacity_rates: vec![4.0],
            capacity_secs: 1.0,
            capacity_p99_ms: 1000.0,
            realistic_idle_secs: 1.0,
            access_clients: 2,
            access_requests: 2,
            memory_containers: 2,
            threading_levels: vec![2],
            threading_secs: 0.3,
            cost_activations: 20,
            inits: 3,
            compile_inits: 1,
        }
    }

    /// A closed-loop level: the warm-up, then `repetitions` windows of `window_secs`.
    fn plan(&self, warmup_secs: f64, window_secs: f64) -> Plan {
        Plan {
            warmup: Duration::from_secs_f64(warmup_secs),
            window: Duration::from_secs_f64(window_secs),
            windows: self.repetitions.max(1),
        }
    }
}

/// What every experiment needs besides its platform.
pub struct Context {
    pub sizes: Sizes,
    pub epoch: Instant,
    /// Port of the delay server (on loopback and on the Docker bridge's gateway).
    delay_port: u16,
}

impl Context {
    /// An action named `name` running `module`, with the parameters bound for `platform`.
    pub fn action(&self, platform: &dyn Platform, name: &str, module: &str) -> Action {
        let bound = match module {
            "net" => {
                json!({"url": format!("http://{}:{}/", platform.host_address(), self.delay_port)})
            }
            _ => json!({}),
        };
        Action::new(name, module, bound)
    }
}

/// Every sample and the memory rows, by experiment.
#[derive(Default)]
pub struct Results {
    pub samples: Vec<(&'static str, Vec<Sample>)>,
    /// The rate in each measured window of every closed-loop level, by experiment and the
    /// level's platform, scenario and level.
    pub rates: BTreeMap<(&'static str, LevelKey), Vec<f64>>,
    pub memory: Vec<memory::MemoryRow>,
    pub cost: Vec<cost::CostRow>,
    pub init: Vec<init::InitRow>,
    pub capacity: Vec<capacity::CapacityRow>,
}

impl Results {
    fn add_level(&mut self, experiment: &'static str, run: LevelRun) {
        self.rates.insert((experiment, run.key), run.rates);
        self.add(experiment, run.samples);
    }

    fn add(&mut self, experiment: &'static str, mut samples: Vec<Sample>) {
        match self.samples.iter_mut().find(|(e, _)| *e == experiment) {
            Some((_, all)) => all.append(&mut samples),
            None => self.samples.push((experiment, samples)),
        }
    }

    pub fn of(&self, experiment: &str) -> &[Sample] {
        self.samples
            .iter()
            .find(|(e, _)| *e == experiment)
            .map_or(&[], |(_, s)| s.as_slice())
    }
}

const WASM_RUNTIMES: [&str; 3] = ["wasmtime", "wasmer", "wamr"];

/// The `--guest-execution` modes the threading experiment compares on `runtime`: async
/// execution (guests on their requests' tasks) exists in the wasmtime build only.
fn threading_modes(runtime: &str) -> &'static [&'static str] {
    if runtime == "wasmtime" {
        &["async", "pool", "blocking-worker"]
    } else {
        &["pool", "blocking-worker"]
    }
}

pub fn run(args: &EvaluateArgs) -> anyhow::Result<()> {
    let start = Start::now();
    let started = Instant::now();
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let mut sizes = if args.quick {
        Sizes::quick()
    } else {
        Sizes::full(cores)
    };
    if let Some(levels) = &args.cold_levels {
        sizes.cold_levels = levels.clone();
    }
    if let Some(levels) = &args.io_levels {
        sizes.io_levels = levels.clone();
    }
    if let Some(secs) = args.level_secs {
        sizes.level_secs = secs;
    }
    if let Some(repetitions) = args.repetitions {
        sizes.repetitions = repetitions;
    }
    if let Some(target) = args.p99_target_ms {
        sizes.capacity_p99_ms = target;
    }
    for platform in &args.platforms {
        if !WASM_RUNTIMES.contains(&platform.as_str())
            && !["docker", "native"].contains(&platform.as_str())
        {
            bail!("unknown platform {platform}");
        }
    }
    let pinning = match (&args.loadgen_cpus, &args.platform_cpus) {
        _ if args.no_pinning => None,
        (Some(loadgen), Some(platforms)) => Some(Pinning {
            loadgen: affinity::parse_list(loadgen)?,
            platforms: affinity::parse_list(platforms)?,
        }),
        _ => Pinning::automatic(cores),
    };
    match &pinning {
        // Before any thread or process is started, so that all of them follow.
        Some(pinning) => {
            pinning.apply()?;
            tracing::info!(loadgen = ?pinning.loadgen, platforms = ?pinning.platforms, "CPUs pinned");
        }
        None => tracing::info!(
            cores,
            "no CPU pinning: load generator and platforms share every CPU"
        ),
    }
    let wants = |e: &str| args.experiments.iter().any(|x| x == e);
    let scratch = args.scratch.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("wasm-evaluate-{}", std::process::id()))
    });
    std::fs::create_dir_all(&scratch)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;

    // The delay server on loopback and, when Docker takes part, on the bridge's gateway.
    let mut binds: Vec<SocketAddr> = vec![(Ipv4Addr::LOCALHOST, 0).into()];
    let docker = if args.platforms.iter().any(|p| p == "docker") {
        let mut modules: Vec<String> = ["echo", "hash", "net"].map(String::from).to_vec();
        if wants("memory") {
            modules.extend(memory::VARIANTS.map(|v| format!("hash.{v}")));
        }
        let docker = DockerPlatform::connect(&args.image_prefix, &modules)?;
        binds.push(SocketAddr::new(docker.host_address(), 0));
        Some(Arc::new(docker))
    } else {
        None
    };
    let delay = server::delay_server(&binds, IO_DELAY)?;
    let ctx = Context {
        sizes,
        epoch: Instant::now(),
        delay_port: delay.port(),
    };

    // Every platform is up at once (idle ones cost nothing) and each experiment runs on all of
    // them back to back, so the platforms of one experiment are measured minutes apart at most
    // on a machine whose speed drifts; the CPU-bound experiment interleaves them per level.
    let mut platforms: Vec<Arc<dyn Platform>> = Vec::new();
    for name in &args.platforms {
        platforms.push(match name.as_str() {
            "docker" => docker.clone().expect("docker connected above"),
            "native" => Arc::new(NativePlatform::new(
                &args.native,
                &["echo".into(), "hash".into(), "net".into()],
            )?),
            runtime => Arc::new(start_wasm(
                args,
                &scratch,
                runtime,
                runtime,
                &["echo", "hash", "net"],
                &[],
            )?),
        });
    }
    let sizes = ctx.sizes.clone();
    let level_plan = sizes.plan(sizes.warmup_secs, sizes.level_secs);
    let names: Vec<&str> = args.platforms.iter().map(String::as_str).collect();
    let mut progress = Progress::new(&names, &sizes, &wants);
    let mut results = Results::default();
    for p in &platforms {
        if wants("cold") {
            progress.step("cold", p.name());
            results.add("cold", cold::run(&**p, &ctx)?);
        }
    }
    for p in &platforms {
        if wants("cold-rate") {
            progress.step("cold-rate", p.name());
            let plan = sizes.plan(sizes.cold_rate_warmup_secs, sizes.level_secs);
            cold_rate::run(p, &ctx, plan, &mut results)?;
        }
    }
    for p in &platforms {
        if wants("io") {
            progress.step("io", p.name());
            let levels = &sizes.io_levels;
            let label = ("io", "io");
            throughput::run(
                &**p,
                &ctx,
                Workload::Io,
                levels,
                label,
                level_plan,
                &mut results,
            )?;
        }
    }
    if wants("cpu") {
        for &level in &sizes.cpu_levels {
            for p in &platforms {
                progress.step("cpu", &format!("{} at {level} clients", p.name()));
                let label = ("cpu", "cpu");
                throughput::run(
                    &**p,
                    &ctx,
                    Workload::Cpu,
                    &[level],
                    label,
                    level_plan,
                    &mut results,
                )?;
            }
        }
    }
    for p in &platforms {
        if wants("mixed") {
            progress.step("mixed", p.name());
            results.add("mixed", mixed::run(&**p, &ctx)?);
        }
    }
    for p in &platforms {
        if wants("realistic") {
            for &limit in &sizes.realistic_limits {
                progress.step(
                    "realistic",
                    &format!("{} at concurrency limit {limit}", p.name()),
                );
                results.add("realistic", realistic::run(Arc::clone(p), &ctx, limit)?);
            }
        }
    }
    for p in &platforms {
        if wants("capacity") && p.name() != "native" {
            progress.step("capacity", p.name());
            let (samples, row) = capacity::run(Arc::clone(p), &ctx)?;
            results.add("capacity", samples);
            results.capacity.push(row);
        }
    }
    for p in &platforms {
        if wants("access") {
            progress.step("access", p.name());
            results.add("access", access::run(Arc::clone(p), &ctx)?);
        }
    }
    for p in &platforms {
        if wants("cost") {
            progress.step("cost", p.name());
            results.cost.push(cost::measure(&**p, &ctx)?);
        }
    }
    drop(platforms);
    for name in &args.platforms {
        if wants("memory") && name != "native" {
            progress.step("memory", name);
            for variant in memory::VARIANTS {
                let module = format!("hash.{variant}");
                let row = if name == "docker" {
                    memory::measure(
                        &**docker.as_ref().expect("docker connected above"),
                        &ctx,
                        variant,
                    )?
                } else {
                    let fresh = start_wasm(args, &scratch, name, name, &[module.as_str()], &[])?;
                    memory::measure(&fresh, &ctx, variant)?
                };
                results.memory.push(row);
            }
        }
        if wants("threading") && WASM_RUNTIMES.contains(&name.as_str()) {
            for &mode in threading_modes(name) {
                let label = format!("{name}-{mode}");
                progress.step("threading", &label);
                let platform = start_wasm(
                    args,
                    &scratch,
                    &label,
                    name,
                    &["hash", "net"],
                    &["--guest-execution", mode],
                )?;
                let plan = sizes.plan(sizes.warmup_secs, sizes.threading_secs);
                for workload in [Workload::Cpu, Workload::Io, Workload::Mixed] {
                    let levels = &sizes.threading_levels;
                    let label = ("threading", workload.label());
                    throughput::run(&platform, &ctx, workload, levels, label, plan, &mut results)?;
                }
            }
        }
        if wants("init") && WASM_RUNTIMES.contains(&name.as_str()) {
            progress.step("init", name);
            let platform = start_wasm(args, &scratch, name, name, &[init::MODULE], &[])?;
            let fresh = |i: usize| {
                start_wasm(
                    args,
                    &scratch,
                    &format!("{name}-compile{i}"),
                    name,
                    &[],
                    &[],
                )
            };
            let (samples, rows) = init::run(&platform, &fresh, &ctx)?;
            results.add("init", samples);
            results.init.extend(rows);
        }
    }
    drop(delay);

    for (experiment, samples) in &results.samples {
        sample::write_csv(&args.out.join(format!("{experiment}.csv.gz")), samples)?;
    }
    let machine = Machine::probe(start);
    let summary = summary::Summary::of(&results, &ctx, &args.platforms);
    let report = json!({
        "schema": 1,
        "tool": "wasm-bench evaluate",
        "quick": args.quick,
        "wall_seconds": started.elapsed().as_secs_f64(),
        "machine": machine,
        "sizes": ctx.sizes,
        "platforms": args.platforms,
        "pinning": pinning,
        "summary": summary,
        "memory": results.memory,
        "cost": results.cost,
        "init": results.init,
        "capacity": results.capacity,
    });
    std::fs::write(
        args.out.join("summary.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let markdown = summary.markdown(&results);
    std::fs::write(args.out.join("summary.md"), &markdown)?;
    if args.scratch.is_none() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    tracing::info!(out = %args.out.display(), seconds = started.elapsed().as_secs(), "evaluation done");
    print!("{markdown}");
    let mut expected = Vec::new();
    for experiment in [
        "cold",
        "cold-rate",
        "io",
        "cpu",
        "mixed",
        "realistic",
        "access",
    ] {
        if wants(experiment) {
            let runs_on = |p: &&String| experiment != "capacity" || p.as_str() != "native";
            expected.extend(
                args.platforms
                    .iter()
                    .filter(runs_on)
                    .map(|p| (experiment, p.as_str())),
            );
        }
    }
    check_failures(&results, &expected, args.max_error_pct)
}

/// Fails when an experiment lost activations on a platform: more than `max_error_pct` percent
/// failed, or `expected` (experiment, platform) pairs have no activation at all, or containers
/// could not be removed, paused or resumed. The error lists every such finding.
fn check_failures(
    results: &Results,
    expected: &[(&str, &str)],
    max_error_pct: f64,
) -> anyhow::Result<()> {
    let mut counts: BTreeMap<(&str, &str), (usize, usize)> = BTreeMap::new();
    for (experiment, samples) in &results.samples {
        for sample in samples {
            let (failed, total) = counts
                .entry((experiment, sample.platform.as_str()))
                .or_default();
            *total += 1;
            *failed += usize::from(!sample.ok());
        }
    }
    let mut problems = Vec::new();
    for &(experiment, platform) in expected {
        if !counts.contains_key(&(experiment, platform)) {
            problems.push(format!(
                "{experiment} on {platform}: no activation recorded"
            ));
        }
    }
    for ((experiment, platform), (failed, total)) in &counts {
        let pct = 100.0 * *failed as f64 / *total as f64;
        if pct > max_error_pct || failed == total {
            problems.push(format!(
                "{experiment} on {platform}: {failed} of {total} activations failed ({pct:.1} %)"
            ));
        }
    }
    let housekeeping = failures::housekeeping_count();
    if housekeeping > 0 {
        problems.push(format!(
            "{housekeeping} container(s) could not be removed, paused or resumed (see the log)"
        ));
    }
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "the evaluation lost activations (allowed: {max_error_pct} %):\n  {}",
        problems.join("\n  ")
    )
}

fn start_wasm(
    args: &EvaluateArgs,
    scratch: &std::path::Path,
    label: &str,
    runtime: &str,
    modules: &[&str],
    extra_args: &[&str],
) -> anyhow::Result<WasmPlatform> {
    let executor = match runtime {
        "wasmtime" => &args.executor_wasmtime,
        "wasmer" => &args.executor_wasmer,
        _ => &args.executor_wamr,
    };
    if !executor.is_file() {
        bail!(
            "{} is missing: build the {runtime} executor (see README.md)",
            executor.display()
        );
    }
    WasmPlatform::start(&WasmOptions {
        name: label.to_owned(),
        runtime: runtime.to_owned(),
        executor: executor.clone(),
        precompiler: args.precompiler.clone(),
        actions: args.actions.clone(),
        modules: modules.iter().map(|m| m.to_string()).collect(),
        scratch: scratch.to_path_buf(),
        extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(platform: &str, status: u16) -> Sample {
        Sample {
            platform: platform.into(),
            status,
            ..Sample::default()
        }
    }

    #[test]
    fn lost_activations_fail_the_run() {
        let mut results = Results::default();
        results.add("cold", vec![sample("wasmtime", 200), sample("docker", 200)]);
        results.add("io", vec![sample("wasmtime", 200), sample("wasmtime", 0)]);
        let expected = [("cold", "wasmtime"), ("cold", "docker"), ("io", "wasmtime")];
        // One failure in two: fails at 0 % and at 10 %, passes at 50 %.
        let error = check_failures(&results, &expected, 0.0)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("io on wasmtime: 1 of 2 activations failed (50.0 %)"),
            "{error}"
        );
        assert!(check_failures(&results, &expected, 10.0).is_err());
        check_failures(&results, &expected, 50.0).unwrap();
        // A platform that recorded nothing has lost everything.
        let error = check_failures(&results, &[("io", "docker")], 50.0)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("io on docker: no activation recorded"),
            "{error}"
        );
        // So has one whose every activation failed, whatever the allowance.
        results.add("mixed", vec![sample("wamr", 502)]);
        assert!(check_failures(&results, &expected, 100.0).is_err());
    }
}
