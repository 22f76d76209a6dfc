//! The measurement of the footprint experiment in one executor build. Per code path, a fresh
//! executor: its idle RSS, then N containers of the same action (each /init timed, new
//! connection each; all but the first find the module loaded), its RSS, one /run of each (warm
//! containers), its RSS again, sequential warm /runs on one kept-alive connection; then, every
//! container destroyed, /inits of code no container holds (each destroyed again, so each loads
//! the module anew). /init times are the client's and the executor's own (`took_us`, with the
//! steps of each module load, from its log). Optionally also distinct precompiled actions, and
//! every artifact built with a compiler's own flags.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::json;

use crate::{
    cpu,
    executor::{ExecutorOptions, ExecutorProcess, destroy_container, fresh_dir, init_container},
    http::{Client, ConnMode},
    precompile,
    rss::{Rss, rss},
    serverlog,
    stats::Summary,
    workload,
};

/// What to measure in every executor, and how much.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The action (in `actions`, without .wasm) every container holds.
    pub module: String,
    /// The precompiler front end (`wasm-precompile-<runtime>` next to it).
    pub precompiler: PathBuf,
    /// Directory of the built actions.
    pub actions: PathBuf,
    pub sizes: Sizes,
    /// Distinct precompiled actions (0: that path is not measured).
    pub precompiled_distinct: usize,
    /// Flags of the runtime's own compiler for every precompiled path.
    pub precompiler_flags: Vec<String>,
    /// Tiny sizes: the figures mean nothing.
    pub quick: bool,
}

impl Plan {
    /// The action's Wasm.
    pub fn wasm(&self) -> PathBuf {
        self.actions.join(format!("{}.wasm", self.module))
    }

    /// The action's Wasm exists.
    pub fn check_inputs(&self) -> anyhow::Result<()> {
        let wasm = self.wasm();
        if !wasm.exists() {
            bail!(
                "{} does not exist: build the actions with actions/build.sh",
                wasm.display()
            );
        }
        Ok(())
    }
}

#[derive(Debug, Serialize)]
pub struct PathResult {
    pub runtime: String,
    /// The executor binary's file name.
    pub executor: String,
    pub code: &'static str,
    /// Warm containers measured on this path.
    pub containers: usize,
    pub idle: Rss,
    pub after_init: Rss,
    pub after_one_run_each: Rss,
    /// (RSS after one run of each − idle RSS) / containers.
    pub per_warm_container_kib: f64,
    /// The same of PSS.
    pub per_warm_container_pss_kib: f64,
    pub init: Option<Summary>,
    pub warm_run: Option<Summary>,
    /// The same warm /runs inside the executor (`took_us`), and the executor's CPU time per
    /// warm /run (all its threads, from their scheduler statistics).
    pub warm_run_executor: Option<Summary>,
    pub warm_run_cpu_us: Option<f64>,
    /// /init of code no container holds: client, executor (`took_us`) and the load's steps.
    pub new_init: Option<Summary>,
    pub new_init_executor: Option<Summary>,
    pub new_init_steps_p50_us: Option<StepMedians>,
    /// /init of code a live container holds (every container but the first), executor side.
    pub seen_init_executor: Option<Summary>,
}

/// Medians of the executor's module-load steps (µs).
#[derive(Debug, Serialize)]
pub struct StepMedians {
    pub decode: f64,
    pub verify: f64,
    pub load: f64,
}

impl StepMedians {
    fn of(loads: &[serverlog::LoadSteps]) -> Option<StepMedians> {
        let p50 = |step: fn(&serverlog::LoadSteps) -> u64| {
            Summary::of_us(loads.iter().map(step)).map(|s| s.p50_us)
        };
        Some(StepMedians {
            decode: p50(|l| l.decode_us)?,
            verify: p50(|l| l.verify_us)?,
            load: p50(|l| l.load_us)?,
        })
    }
}

/// How much each executor and code path is measured.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub containers: usize,
    pub requests: usize,
    pub new_inits: usize,
    pub distinct_containers: usize,
}

impl Sizes {
    /// The sizes of one code path: a distinct-actions path has its own count of containers.
    pub fn of_path(&self, containers: Option<usize>) -> Sizes {
        match containers {
            Some(containers) => Sizes {
                containers,
                new_inits: self.new_inits.min(containers),
                ..*self
            },
            None => *self,
        }
    }

    /// New /inits before the measured ones: a tenth, and at least the one that compiles a
    /// portable module (the later ones find it in the cache).
    fn new_init_warmup(&self) -> usize {
        (self.new_inits / 10).max(1)
    }
}

/// The /init body of the container (or new /init) numbered k.
type InitBodies = Box<dyn Fn(usize) -> Vec<u8>>;

/// One code path: its label, its /init bodies, and, on a path where every container loads a
/// module of its own, its containers.
struct CodePath {
    code: &'static str,
    body_of: InitBodies,
    distinct_containers: Option<usize>,
}

/// Measures every code path of `plan` in executor `binary` of `runtime` (a fresh executor each,
/// its state under `scratch`).
pub fn measure_executor(
    plan: &Plan,
    runtime: &str,
    binary: &Path,
    scratch: &Path,
) -> anyhow::Result<Vec<PathResult>> {
    let dir = fresh_dir(scratch, runtime)?;
    let public_key = precompile::keygen(&plan.precompiler, &dir)?;
    code_paths(plan, runtime, &dir)?
        .into_iter()
        .map(|path| {
            tracing::info!(runtime, binary = %binary.display(), code = path.code, "footprint");
            let options = ExecutorOptions {
                binary: binary.to_path_buf(),
                state_dir: fresh_dir(&dir, &format!("cache-{}", file_label(path.code)))?,
                trusted_key: Some(public_key.clone()),
                // `initialized` and `module loaded` (the executor's own /init times) and
                // `activation ended` (its /run times).
                log_filter: "info,wasm_executor::service=debug".into(),
                log_path: dir.join(format!("executor-{}.log", file_label(path.code))),
                extra_args: Vec::new(),
            };
            let executor = ExecutorProcess::start(&options)?;
            let sizes = plan.sizes.of_path(path.distinct_containers);
            let result = measure(&executor, runtime, path.code, &*path.body_of, &sizes);
            let log = executor.stop()?;
            let distinct = path.distinct_containers.is_some();
            let mut result = with_executor_times(result?, &log, &sizes, distinct);
            result.executor = binary.file_name().map_or_else(
                || binary.display().to_string(),
                |name| name.to_string_lossy().into_owned(),
            );
            Ok(result)
        })
        .collect()
}

/// `precompiled, distinct actions` → `precompiled--distinct-actions`.
fn file_label(code: &str) -> String {
    code.replace([',', ' '], "-")
}

/// The code paths of `plan` for `runtime`, their artifacts signed with the key in `dir`:
/// precompiled, portable, portable distinct actions, and precompiled distinct actions when
/// asked for.
fn code_paths(plan: &Plan, runtime: &str, dir: &Path) -> anyhow::Result<Vec<CodePath>> {
    let wasm = plan.wasm();
    let compile = |wasm: &Path, name: &str| -> anyhow::Result<Vec<u8>> {
        let zip = dir.join(format!("{name}.zip"));
        let flags = &plan.precompiler_flags;
        precompile::compile_signed(&plan.precompiler, runtime, wasm, flags, dir, &zip)?;
        workload::read(&zip)
    };
    let (zip, portable) = (compile(&wasm, "action")?, workload::read(&wasm)?);
    let same = |bytes: Vec<u8>| -> InitBodies {
        let body = workload::init_body(&bytes);
        Box::new(move |_: usize| body.clone())
    };
    // Distinct actions: every container (and every /init of code no container holds) its own
    // module, compiled at /init (precompiling a thousand artifacts would take longer than the
    // measurement).
    let distinct: InitBodies = {
        let portable = portable.clone();
        Box::new(move |k: usize| workload::init_body(&workload::distinct(&portable, k as u64)))
    };
    let mut paths = vec![
        CodePath {
            code: "precompiled",
            body_of: same(zip),
            distinct_containers: None,
        },
        CodePath {
            code: "portable",
            body_of: same(portable.clone()),
            distinct_containers: None,
        },
        CodePath {
            code: "portable, distinct actions",
            body_of: distinct,
            distinct_containers: Some(plan.sizes.distinct_containers),
        },
    ];
    if plan.precompiled_distinct > 0 {
        // Each artifact once per container; the /inits of code no container holds (after every
        // container is gone) take them again, each loaded anew.
        let bodies = (0..plan.precompiled_distinct)
            .map(|k| {
                let variant = dir.join(format!("distinct-{k}.wasm"));
                std::fs::write(&variant, workload::distinct(&portable, k as u64))?;
                compile(&variant, &format!("distinct-{k}")).map(|zip| workload::init_body(&zip))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        paths.push(CodePath {
            code: "precompiled, distinct actions",
            body_of: Box::new(move |k: usize| bodies[k % bodies.len()].clone()),
            distinct_containers: Some(plan.precompiled_distinct),
        });
    }
    Ok(paths)
}

/// One code path in `executor`: memory idle, after the /inits and after one /run of each
/// container, the warm /runs, then the /inits of code no container holds.
fn measure(
    executor: &ExecutorProcess,
    runtime: &str,
    code: &'static str,
    body_of: &dyn Fn(usize) -> Vec<u8>,
    sizes: &Sizes,
) -> anyhow::Result<PathResult> {
    let containers = sizes.containers;
    let pid = executor.pid().context("the executor is not running")?;
    let addr = executor.addr;
    check_runtime(addr, runtime)?;
    let idle = rss(pid)?;
    let mut inits = Vec::with_capacity(containers);
    for index in 0..containers {
        inits.push(timed_init(addr, &format!("fp-{index}"), &body_of(index))?);
    }
    let after_init = rss(pid)?;
    let run_body = workload::run_body(&json!({"footprint": true}));
    for index in 0..containers {
        let response =
            Client::new(addr, ConnMode::New).post(&format!("/fp-{index}/run"), &run_body)?;
        if response.status != 200 {
            bail!("/run answered {}: {}", response.status, response.text());
        }
    }
    let after_runs = rss(pid)?;
    let (runs, warm_run_cpu_us) = warm_runs(addr, pid, &run_body, sizes.requests)?;
    let new = new_inits(addr, body_of, sizes)?;
    Ok(PathResult {
        runtime: runtime.to_owned(),
        executor: String::new(),
        code,
        containers,
        idle,
        after_init,
        after_one_run_each: after_runs,
        per_warm_container_kib: after_runs.total_kib.saturating_sub(idle.total_kib) as f64
            / containers.max(1) as f64,
        per_warm_container_pss_kib: after_runs.pss_kib.saturating_sub(idle.pss_kib) as f64
            / containers.max(1) as f64,
        init: Summary::of_ns(inits),
        warm_run: Summary::of_ns(runs),
        warm_run_executor: None,
        warm_run_cpu_us,
        new_init: Summary::of_ns(new),
        new_init_executor: None,
        new_init_steps_p50_us: None,
        seen_init_executor: None,
    })
}

/// The executor at `addr` runs `runtime` (every backend's build lands at the same path), and
/// its HTTP path and the runtime's lazy set-up are warm before the process is called idle.
fn check_runtime(addr: SocketAddr, runtime: &str) -> anyhow::Result<()> {
    let health = Client::new(addr, ConnMode::New).get("/health")?;
    let health: serde_json::Value =
        serde_json::from_slice(&health.body).context("parsing /health")?;
    if health["runtime"] != runtime {
        bail!(
            "the executor given for {runtime} runs {}",
            health["runtime"]
        );
    }
    for _ in 0..10 {
        Client::new(addr, ConnMode::New).get("/health")?;
    }
    Ok(())
}

/// `requests` sequential warm /runs of container `fp-0` on one kept-alive connection, after a
/// tenth as warm-up: their times (ns) and the executor's CPU per /run (µs).
fn warm_runs(
    addr: SocketAddr,
    pid: u32,
    run_body: &[u8],
    requests: usize,
) -> anyhow::Result<(Vec<u64>, Option<f64>)> {
    let mut client = Client::new(addr, ConnMode::KeepAlive);
    let warmup = requests / 10;
    let mut runs = Vec::with_capacity(requests);
    let mut cpu_before = 0;
    for index in 0..warmup + requests {
        if index == warmup {
            cpu_before = cpu::process_cpu_ns(pid);
        }
        let started = Instant::now();
        let response = client.post("/fp-0/run", run_body)?;
        if index >= warmup {
            runs.push(started.elapsed().as_nanos() as u64);
        }
        if response.status != 200 {
            bail!("/run answered {}: {}", response.status, response.text());
        }
    }
    let cpu_us = cpu::per_request_us(cpu_before, cpu::process_cpu_ns(pid), requests);
    Ok((runs, cpu_us))
}

/// Last, with every container gone (the memory figures are taken): /inits of code no container
/// holds, each destroyed again so that the next loads the module anew; the measured ones' times
/// (ns).
fn new_inits(
    addr: SocketAddr,
    body_of: &dyn Fn(usize) -> Vec<u8>,
    sizes: &Sizes,
) -> anyhow::Result<Vec<u64>> {
    let mut admin = Client::new(addr, ConnMode::KeepAlive);
    for index in 0..sizes.containers {
        destroy_container(&mut admin, &format!("fp-{index}"))?;
    }
    let mut new = Vec::with_capacity(sizes.new_inits);
    let warmup = sizes.new_init_warmup();
    for index in 0..warmup + sizes.new_inits {
        let id = format!("new-{index}");
        let took = timed_init(addr, &id, &body_of(sizes.containers + index))?;
        if index >= warmup {
            new.push(took);
        }
        destroy_container(&mut admin, &id)?;
    }
    Ok(new)
}

/// One /init on a new connection, timed by the client (ns).
fn timed_init(addr: SocketAddr, id: &str, body: &[u8]) -> anyhow::Result<u64> {
    let started = Instant::now();
    init_container(addr, id, body)?;
    Ok(started.elapsed().as_nanos() as u64)
}

/// Adds the executor's own /init times from its log: the measured new /inits (and their module
/// loads, the warm-up's left out) and the containers that found the module loaded (for
/// distinct actions, that loaded their own).
fn with_executor_times(
    mut result: PathResult,
    log: &str,
    sizes: &Sizes,
    distinct: bool,
) -> PathResult {
    let times = serverlog::parse(log);
    let took = |id: String| times.inits.get(&id).and_then(|t| t.first().copied());
    let warmup = sizes.new_init_warmup();
    let measured = warmup..warmup + sizes.new_inits;
    result.new_init_executor =
        Summary::of_us(measured.clone().filter_map(|i| took(format!("new-{i}"))));
    // One load for the containers (`fp-0`'s; one each for distinct actions), then one per new
    // /init.
    let first_new = if distinct {
        sizes.containers
    } else {
        usize::from(sizes.containers > 0)
    };
    result.new_init_steps_p50_us = times
        .loads
        .get(first_new + measured.start..first_new + measured.end)
        .and_then(StepMedians::of);
    // Container fp-0 ran once, then the warm-up, then the measured runs.
    let warmup_runs = 1 + sizes.requests / 10;
    result.warm_run_executor = times
        .runs
        .get("fp-0")
        .and_then(|runs| Summary::of_us(runs.iter().skip(warmup_runs).copied()));
    result.seen_init_executor =
        Summary::of_us((1..sizes.containers).filter_map(|i| took(format!("fp-{i}"))));
    result
}
