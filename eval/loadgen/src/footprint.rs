//! `wasm-bench footprint`: what containers cost an executor in memory, and how fast /init and
//! a warm /run are, for precompiled and for portable code, for each executor given. Per
//! executor and code path, a fresh executor: its idle RSS, then N containers of the same action
//! (each /init timed, new connection each), its RSS, one /run of each (warm containers), its RSS
//! again, then sequential warm /runs on one kept-alive connection.

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::json;

use crate::{
    executor::{ExecutorOptions, ExecutorProcess, fresh_dir},
    http::{Client, ConnMode},
    precompile, report,
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
    /// Measured sequential warm /runs per executor and code path (after a tenth as warm-up).
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// Where summary.{json,md} go.
    #[arg(long, default_value = "eval/results/footprint")]
    out: PathBuf,
    /// Tiny sizes: proves the harness works; the figures mean nothing.
    #[arg(long)]
    quick: bool,
}

/// Resident memory of a process, from /proc/PID/status (KiB).
#[derive(Debug, Clone, Copy, Serialize)]
struct Rss {
    total_kib: u64,
    anon_kib: u64,
    file_kib: u64,
}

#[derive(Debug, Serialize)]
struct PathResult {
    runtime: String,
    code: &'static str,
    idle: Rss,
    after_init: Rss,
    after_one_run_each: Rss,
    /// (RSS after one run of each − idle RSS) / containers.
    per_warm_container_kib: f64,
    init: Option<Summary>,
    warm_run: Option<Summary>,
}

#[derive(Debug, Serialize)]
struct FootprintReport {
    tool: &'static str,
    module: String,
    containers: usize,
    requests: usize,
    quick: bool,
    loadavg_start: String,
    loadavg_end: String,
    results: Vec<PathResult>,
}

pub fn run(args: &FootprintArgs) -> anyhow::Result<()> {
    let (containers, requests) = if args.quick {
        (5, 50)
    } else {
        (args.containers, args.requests)
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
    let result = measure_all(args, &wasm, &scratch, containers, requests);
    let _ = std::fs::remove_dir_all(&scratch);
    let report = FootprintReport {
        tool: "wasm-bench footprint",
        module: args.module.clone(),
        containers,
        requests,
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

fn measure_all(
    args: &FootprintArgs,
    wasm: &Path,
    scratch: &Path,
    containers: usize,
    requests: usize,
) -> anyhow::Result<Vec<PathResult>> {
    let mut results = Vec::new();
    for spec in &args.executors {
        let (runtime, binary) = spec
            .split_once('=')
            .with_context(|| format!("--executor {spec}: expected RUNTIME=PATH"))?;
        let dir = fresh_dir(scratch, runtime)?;
        let artifact = precompile::signed_zip(&args.precompiler, runtime, wasm, &dir)?;
        let codes = [
            ("precompiled", workload::read(&artifact.zip)?),
            ("portable", workload::read(wasm)?),
        ];
        for (code, bytes) in codes {
            tracing::info!(runtime, code, containers, requests, "footprint");
            let options = ExecutorOptions {
                binary: PathBuf::from(binary),
                state_dir: fresh_dir(&dir, &format!("cache-{code}"))?,
                trusted_key: Some(artifact.public_key.clone()),
                log_filter: "warn".into(),
                log_path: dir.join(format!("executor-{code}.log")),
                extra_args: Vec::new(),
            };
            let executor = ExecutorProcess::start(&options)?;
            let result = measure(
                &executor,
                runtime,
                code,
                &workload::init_body(&bytes),
                containers,
                requests,
            );
            executor.stop()?;
            results.push(result?);
        }
    }
    Ok(results)
}

fn measure(
    executor: &ExecutorProcess,
    runtime: &str,
    code: &'static str,
    init_body: &[u8],
    containers: usize,
    requests: usize,
) -> anyhow::Result<PathResult> {
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
        let started = Instant::now();
        let response =
            Client::new(addr, ConnMode::New).post(&format!("/fp-{index}/init"), init_body)?;
        inits.push(started.elapsed().as_nanos() as u64);
        if response.status != 200 {
            bail!(
                "/init answered {}: {}",
                response.status,
                response.body_text()
            );
        }
    }
    let after_init = rss(pid)?;
    let run_body = workload::run_body(&json!({"footprint": true}));
    for index in 0..containers {
        let response =
            Client::new(addr, ConnMode::New).post(&format!("/fp-{index}/run"), &run_body)?;
        if response.status != 200 {
            bail!(
                "/run answered {}: {}",
                response.status,
                response.body_text()
            );
        }
    }
    let after_runs = rss(pid)?;
    let mut client = Client::new(addr, ConnMode::KeepAlive);
    let warmup = requests / 10;
    let mut runs = Vec::with_capacity(requests);
    for index in 0..warmup + requests {
        let started = Instant::now();
        let response = client.post("/fp-0/run", &run_body)?;
        if index >= warmup {
            runs.push(started.elapsed().as_nanos() as u64);
        }
        if response.status != 200 {
            bail!(
                "/run answered {}: {}",
                response.status,
                response.body_text()
            );
        }
    }
    Ok(PathResult {
        runtime: runtime.to_owned(),
        code,
        idle,
        after_init,
        after_one_run_each: after_runs,
        per_warm_container_kib: after_runs.total_kib.saturating_sub(idle.total_kib) as f64
            / containers.max(1) as f64,
        init: Summary::of_ns(inits),
        warm_run: Summary::of_ns(runs),
    })
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
    Ok(Rss {
        total_kib: field("VmRSS:"),
        anon_kib: field("RssAnon:"),
        file_kib: field("RssFile:"),
    })
}

fn markdown(report: &FootprintReport) -> String {
    let mut out = format!(
        "# wasm-bench footprint\n\n`{}`, {} containers per executor and code path, {} warm /runs; load average {} → {}{}\n\n",
        report.module,
        report.containers,
        report.requests,
        report.loadavg_start,
        report.loadavg_end,
        if report.quick {
            " (quick: the figures mean nothing)"
        } else {
            ""
        }
    );
    out.push_str("| runtime | code | idle RSS | RSS after /inits | after one /run each | per warm container | /init p50 | /init p99 | warm /run p50 | warm /run p99 |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let us = |s: &Option<Summary>, p99: bool| {
        s.as_ref().map_or("-".into(), |s| {
            format!("{:.0} µs", if p99 { s.p99_us } else { s.p50_us })
        })
    };
    for r in &report.results {
        out.push_str(&format!(
            "| {} | {} | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.0} KiB | {} | {} | {} | {} |\n",
            r.runtime,
            r.code,
            r.idle.total_kib as f64 / 1024.0,
            r.after_init.total_kib as f64 / 1024.0,
            r.after_one_run_each.total_kib as f64 / 1024.0,
            r.per_warm_container_kib,
            us(&r.init, false),
            us(&r.init, true),
            us(&r.warm_run, false),
            us(&r.warm_run, true),
        ));
    }
    out
}
