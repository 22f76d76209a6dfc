//! `wasm-bench footprint`: what containers cost an executor in memory, and how fast /init and
//! a warm /run are, for precompiled and for portable code, for each executor given. Per
//! executor and code path, a fresh executor: its idle RSS, then N containers of the same action
//! (each /init timed, new connection each; all but the first find the module loaded), its RSS,
//! one /run of each (warm containers), its RSS again, sequential warm /runs on one kept-alive
//! connection; then, every container destroyed, /inits of code no container holds (each
//! destroyed again, so each loads the module anew). /init times are the client's and the
//! executor's own (`took_us`, with the steps of each module load, from its log). Optionally
//! also distinct precompiled actions, and every artifact built with a compiler's own flags.

use std::{
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
    precompile, report, serverlog,
    stats::Summary,
    workload,
};

#[derive(Debug, clap::Args)]
pub struct FootprintArgs {
    /// RUNTIME=PATH of an executor build, repeated for several, e.g.
    /// `--executor wamr=target/release/wasm-executor-wamr`.
    #[arg(long = "executor", required = true)]
    executors: Vec<String>,
    /// The precompiler front end (`wasm-precompile-<runtime>` must sit next to it).
    #[arg(long, default_value = "target/release/wasm-precompile")]
    precompiler: PathBuf,
    /// Directory of the built actions.
    #[arg(long, default_value = "actions/dist")]
    actions: PathBuf,
    /// The action (in --actions, without .wasm) every container holds.
    #[arg(long, default_value = "echo")]
    module: String,
    /// Containers per executor and code path.
    #[arg(long, default_value_t = 100)]
    containers: usize,
    /// Containers (and /inits of code no container holds) of the distinct-actions path, where
    /// every /init compiles (default: --containers and --new-inits).
    #[arg(long)]
    distinct_containers: Option<usize>,
    /// Measured sequential warm /runs per executor and code path (after a tenth as warm-up).
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// /inits of code no container holds, per executor and code path (after a tenth as
    /// warm-up); portable ones find the module in the compile cache after the first.
    #[arg(long, default_value_t = 100)]
    new_inits: usize,
    /// Also measure N distinct actions precompiled (each container its own signed artifact,
    /// precompiled before the executor starts); 0 leaves the path out.
    #[arg(long, value_name = "N", default_value_t = 0)]
    precompiled_distinct: usize,
    /// A flag of the runtime's own compiler for every precompiled path (e.g. `--xip` for
    /// WAMR); repeated for several.
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    precompiler_flag: Vec<String>,
    /// Where summary.{json,md} go.
    #[arg(long, default_value = "eval/results/footprint")]
    out: PathBuf,
    /// Tiny sizes: proves the harness works; the figures mean nothing.
    #[arg(long)]
    quick: bool,
}

/// Resident memory of a process, from /proc/PID/status (KiB), and its proportional share
/// (PSS: pages shared with other processes divided among them) from /proc/PID/smaps_rollup.
#[derive(Debug, Clone, Copy, Serialize)]
struct Rss {
    total_kib: u64,
    anon_kib: u64,
    file_kib: u64,
    pss_kib: u64,
}

#[derive(Debug, Serialize)]
struct PathResult {
    runtime: String,
    /// The executor binary's file name.
    executor: String,
    code: &'static str,
    /// Warm containers measured on this path.
    containers: usize,
    idle: Rss,
    after_init: Rss,
    after_one_run_each: Rss,
    /// (RSS after one run of each − idle RSS) / containers.
    per_warm_container_kib: f64,
    /// The same of PSS.
    per_warm_container_pss_kib: f64,
    init: Option<Summary>,
    warm_run: Option<Summary>,
    /// The same warm /runs inside the executor (`took_us`), and the executor's CPU time per
    /// warm /run (all its threads, from their scheduler statistics).
    warm_run_executor: Option<Summary>,
    warm_run_cpu_us: Option<f64>,
    /// /init of code no container holds: client, executor (`took_us`) and the load's steps.
    new_init: Option<Summary>,
    new_init_executor: Option<Summary>,
    new_init_steps_p50_us: Option<StepMedians>,
    /// /init of code a live container holds (every container but the first), executor side.
    seen_init_executor: Option<Summary>,
}

/// Medians of the executor's module-load steps (µs).
#[derive(Debug, Serialize)]
struct StepMedians {
    decode: f64,
    verify: f64,
    load: f64,
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

#[derive(Debug, Serialize)]
struct FootprintReport {
    tool: &'static str,
    module: String,
    containers: usize,
    requests: usize,
    new_inits: usize,
    /// Containers and new /inits of the distinct-actions path.
    distinct_containers: usize,
    distinct_new_inits: usize,
    /// Distinct precompiled actions (0: path not measured), and the compiler's own flags.
    precompiled_distinct: usize,
    precompiler_flags: Vec<String>,
    quick: bool,
    loadavg_start: String,
    loadavg_end: String,
    results: Vec<PathResult>,
}

pub fn run(args: &FootprintArgs) -> anyhow::Result<()> {
    let sizes = if args.quick {
        Sizes {
            containers: 5,
            requests: 50,
            new_inits: 5,
            distinct_containers: 5,
        }
    } else {
        Sizes {
            containers: args.containers,
            requests: args.requests,
            new_inits: args.new_inits,
            distinct_containers: args.distinct_containers.unwrap_or(args.containers),
        }
    };
    let wasm = args.actions.join(format!("{}.wasm", args.module));
    if !wasm.exists() {
        bail!(
            "{} does not exist: build the actions with actions/build.sh",
            wasm.display()
        );
    }
    let scratch = std::env::temp_dir().join(format!("wasm-bench-footprint-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    std::fs::create_dir_all(&args.out)?;
    let loadavg_start = report::loadavg();
    let result = measure_all(args, &wasm, &scratch, &sizes);
    let _ = std::fs::remove_dir_all(&scratch);
    let report = FootprintReport {
        tool: "wasm-bench footprint",
        module: args.module.clone(),
        containers: sizes.containers,
        requests: sizes.requests,
        new_inits: sizes.new_inits,
        distinct_containers: sizes.distinct_containers,
        distinct_new_inits: sizes.of_path(Some(sizes.distinct_containers)).new_inits,
        precompiled_distinct: args.precompiled_distinct,
        precompiler_flags: args.precompiler_flag.clone(),
        quick: args.quick,
        loadavg_start,
        loadavg_end: report::loadavg(),
        results: result?,
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

/// How much each executor and code path is measured.
#[derive(Clone, Copy)]
struct Sizes {
    containers: usize,
    requests: usize,
    new_inits: usize,
    distinct_containers: usize,
}

impl Sizes {
    /// The sizes of one code path: a distinct-actions path has its own count of containers.
    fn of_path(&self, containers: Option<usize>) -> Sizes {
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

fn measure_all(
    args: &FootprintArgs,
    wasm: &Path,
    scratch: &Path,
    sizes: &Sizes,
) -> anyhow::Result<Vec<PathResult>> {
    let mut results = Vec::new();
    for spec in &args.executors {
        let (runtime, binary) = spec
            .split_once('=')
            .with_context(|| format!("--executor {spec}: expected RUNTIME=PATH"))?;
        let dir = fresh_dir(scratch, runtime)?;
        let public_key = precompile::keygen(&args.precompiler, &dir)?;
        let flags = &args.precompiler_flag;
        let compile = |wasm: &Path, name: &str| -> anyhow::Result<Vec<u8>> {
            let zip = dir.join(format!("{name}.zip"));
            precompile::compile_signed(&args.precompiler, runtime, wasm, flags, &dir, &zip)?;
            workload::read(&zip)
        };
        let (zip, portable) = (compile(wasm, "action")?, workload::read(wasm)?);
        let same = |bytes: Vec<u8>| {
            let body = workload::init_body(&bytes);
            Box::new(move |_: usize| body.clone()) as Box<dyn Fn(usize) -> Vec<u8>>
        };
        // Distinct actions: every container (and every /init of code no container holds) its
        // own module, compiled at /init (precompiling a thousand artifacts would take longer
        // than the measurement).
        let distinct = {
            let portable = portable.clone();
            Box::new(move |k: usize| workload::init_body(&workload::distinct(&portable, k as u64)))
                as Box<dyn Fn(usize) -> Vec<u8>>
        };
        // (code path, its /init bodies, the containers of a path where every container loads a
        // module of its own)
        let mut codes = vec![
            ("precompiled", same(zip), None),
            ("portable", same(portable.clone()), None),
            (
                "portable, distinct actions",
                distinct,
                Some(sizes.distinct_containers),
            ),
        ];
        if args.precompiled_distinct > 0 {
            // Each artifact once per container; the /inits of code no container holds (after
            // every container is gone) take them again, each loaded anew.
            let bodies = (0..args.precompiled_distinct)
                .map(|k| {
                    let variant = dir.join(format!("distinct-{k}.wasm"));
                    std::fs::write(&variant, workload::distinct(&portable, k as u64))?;
                    compile(&variant, &format!("distinct-{k}")).map(|zip| workload::init_body(&zip))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let body_of = Box::new(move |k: usize| bodies[k % bodies.len()].clone())
                as Box<dyn Fn(usize) -> Vec<u8>>;
            codes.push((
                "precompiled, distinct actions",
                body_of,
                Some(args.precompiled_distinct),
            ));
        }
        for (code, body_of, distinct_containers) in codes {
            let distinct = distinct_containers.is_some();
            tracing::info!(runtime, binary, code, "footprint");
            let options = ExecutorOptions {
                binary: PathBuf::from(binary),
                state_dir: fresh_dir(&dir, &format!("cache-{}", code.replace([',', ' '], "-")))?,
                trusted_key: Some(public_key.clone()),
                // `initialized` and `module loaded` (the executor's own /init times) and
                // `activation ended` (its /run times).
                log_filter: "info,wasm_executor::service=debug".into(),
                log_path: dir.join(format!("executor-{}.log", code.replace([',', ' '], "-"))),
                extra_args: Vec::new(),
            };
            let executor = ExecutorProcess::start(&options)?;
            let sizes = sizes.of_path(distinct_containers);
            let result = measure(&executor, runtime, code, &*body_of, &sizes);
            let log = executor.stop()?;
            let mut result = with_executor_times(result?, &log, &sizes, distinct);
            result.executor = Path::new(binary).file_name().map_or_else(
                || binary.to_owned(),
                |name| name.to_string_lossy().into_owned(),
            );
            results.push(result);
        }
    }
    Ok(results)
}

fn measure(
    executor: &ExecutorProcess,
    runtime: &str,
    code: &'static str,
    body_of: &dyn Fn(usize) -> Vec<u8>,
    sizes: &Sizes,
) -> anyhow::Result<PathResult> {
    let Sizes {
        containers,
        requests,
        new_inits,
        ..
    } = *sizes;
    let pid = executor.pid().context("the executor is not running")?;
    let addr = executor.addr;
    // Every backend's build lands at the same path: make sure this one is what it is called.
    let health = Client::new(addr, ConnMode::New).get("/health")?;
    let health: serde_json::Value =
        serde_json::from_slice(&health.body).context("parsing /health")?;
    if health["runtime"] != runtime {
        bail!(
            "the executor given for {runtime} runs {}",
            health["runtime"]
        );
    }
    // Warm the HTTP path and the runtime's lazy set-up before calling the process idle.
    for _ in 0..10 {
        Client::new(addr, ConnMode::New).get("/health")?;
    }
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
    let mut client = Client::new(addr, ConnMode::KeepAlive);
    let warmup = requests / 10;
    let mut runs = Vec::with_capacity(requests);
    let mut cpu_before = 0;
    for index in 0..warmup + requests {
        if index == warmup {
            cpu_before = cpu::process_cpu_ns(pid);
        }
        let started = Instant::now();
        let response = client.post("/fp-0/run", &run_body)?;
        if index >= warmup {
            runs.push(started.elapsed().as_nanos() as u64);
        }
        if response.status != 200 {
            bail!("/run answered {}: {}", response.status, response.text());
        }
    }
    let warm_run_cpu_us = cpu::per_request_us(cpu_before, cpu::process_cpu_ns(pid), requests);
    // Last, with every container gone (the memory figures are taken): /inits of code no
    // container holds, each destroyed again so that the next loads the module anew.
    let mut admin = Client::new(addr, ConnMode::KeepAlive);
    for index in 0..containers {
        destroy_container(&mut admin, &format!("fp-{index}"))?;
    }
    let mut new = Vec::with_capacity(new_inits);
    let warmup = sizes.new_init_warmup();
    for index in 0..warmup + new_inits {
        let id = format!("new-{index}");
        let took = timed_init(addr, &id, &body_of(containers + index))?;
        if index >= warmup {
            new.push(took);
        }
        destroy_container(&mut admin, &id)?;
    }
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

/// One /init on a new connection, timed by the client (ns).
fn timed_init(addr: std::net::SocketAddr, id: &str, body: &[u8]) -> anyhow::Result<u64> {
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

/// Resident memory of process `pid` in bytes, if it runs.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    rss(pid).ok().map(|r| r.total_kib * 1024)
}

fn rss(pid: u32) -> anyhow::Result<Rss> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    };
    let rollup = format!("/proc/{pid}/smaps_rollup");
    let pss_kib = std::fs::read_to_string(&rollup)
        .with_context(|| format!("reading {rollup}"))?
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0);
    Ok(Rss {
        total_kib: field("VmRSS:"),
        anon_kib: field("RssAnon:"),
        file_kib: field("RssFile:"),
        pss_kib,
    })
}

fn markdown(report: &FootprintReport) -> String {
    let mut out = format!(
        "# wasm-bench footprint\n\n`{}`, {} containers per executor and code path ({} of distinct actions), {} warm /runs, {} /inits of code no container holds ({} of distinct actions); load average {} → {}{}\n\n",
        report.module,
        report.containers,
        report.distinct_containers,
        report.requests,
        report.new_inits,
        report.distinct_new_inits,
        report.loadavg_start,
        report.loadavg_end,
        if report.quick {
            " (quick: the figures mean nothing)"
        } else {
            ""
        }
    );
    if report.precompiled_distinct > 0 {
        out.push_str(&format!(
            "Precompiled distinct actions: {} containers, each of an artifact of its own.\n\n",
            report.precompiled_distinct
        ));
    }
    if !report.precompiler_flags.is_empty() {
        out.push_str(&format!(
            "Every artifact precompiled with `{}`.\n\n",
            report.precompiler_flags.join(" ")
        ));
    }
    out.push_str("| runtime | executor | code | idle RSS | RSS after /inits | after one /run each | per warm container (RSS / PSS) | /init p50 | /init p99 | warm /run p50 | warm /run p99 |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let us = |s: &Option<Summary>, p99: bool| {
        s.as_ref().map_or("-".into(), |s| {
            format!("{:.0} µs", if p99 { s.p99_us } else { s.p50_us })
        })
    };
    for r in &report.results {
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.0} / {:.0} KiB | {} | {} | {} | {} |\n",
            r.runtime,
            r.executor,
            r.code,
            r.idle.total_kib as f64 / 1024.0,
            r.after_init.total_kib as f64 / 1024.0,
            r.after_one_run_each.total_kib as f64 / 1024.0,
            r.per_warm_container_kib,
            r.per_warm_container_pss_kib,
            us(&r.init, false),
            us(&r.init, true),
            us(&r.warm_run, false),
            us(&r.warm_run, true),
        ));
    }
    out.push_str("\nInside the executor (`took_us` of its log; p50, p90 in brackets): /init of code no container holds (with the medians of the module load's steps) and of code a live container holds, and the warm /runs above:\n\n");
    out.push_str("| runtime | executor | code | new: client p50 | new: executor | decode | verify | load | seen: executor | warm /run: executor | its CPU per warm /run |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let p50_p90 = |s: &Option<Summary>| {
        s.as_ref().map_or("-".into(), |s| {
            format!("{:.0} µs ({:.0})", s.p50_us, s.p90_us)
        })
    };
    for r in &report.results {
        let step = |f: fn(&StepMedians) -> f64| {
            r.new_init_steps_p50_us
                .as_ref()
                .map_or("-".into(), |s| format!("{:.0} µs", f(s)))
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.runtime,
            r.executor,
            r.code,
            us(&r.new_init, false),
            p50_p90(&r.new_init_executor),
            step(|s| s.decode),
            step(|s| s.verify),
            step(|s| s.load),
            p50_p90(&r.seen_init_executor),
            p50_p90(&r.warm_run_executor),
            r.warm_run_cpu_us
                .map_or("-".into(), |us| format!("{us:.0} µs")),
        ));
    }
    out
}
