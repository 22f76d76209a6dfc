//! The suite's report: `summary.json` (every figure, the machine, the sizes, the aims) and
//! `summary.md` (the headline table, also printed on stdout).

use std::fmt::Write as _;

use serde::Serialize;

use crate::{
    stats::Summary,
    suite::{
        ScenarioSummary, Sizes,
        init::InitResults,
        instance::{self, InstanceResults},
        throughput::ThroughputResults,
        warm::{self, WarmResults},
    },
};

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub logical_cpus: usize,
    pub kernel: String,
    pub memory: String,
    pub loadavg_start: String,
    pub loadavg_end: String,
    /// Over the whole run, all CPUs: the share busy (this benchmark, its executors and
    /// anything else running), the share used by other processes (busy minus this process
    /// and its waited-for children: the executors and the precompiler), and the share stolen
    /// by the hypervisor. Other processes' share is the noise of the figures.
    pub cpu_busy_percent: Option<f64>,
    pub cpu_others_percent: Option<f64>,
    pub cpu_steal_percent: Option<f64>,
}

/// What the machine looked like when the run started.
#[derive(Debug, Clone)]
pub struct Start {
    loadavg: String,
    cpu: Option<[u64; 8]>,
    own: Option<u64>,
}

impl Start {
    pub fn now() -> Start {
        Start {
            loadavg: loadavg(),
            cpu: cpu_times(),
            own: own_ticks(),
        }
    }
}

/// The aggregate `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal.
fn cpu_times() -> Option<[u64; 8]> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|v| v.parse().ok())
        .collect();
    values.try_into().ok()
}

/// utime + stime + cutime + cstime of this process (clock ticks, as /proc/stat counts).
fn own_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesized command name; utime is field 14 of the whole line.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields
        .get(11..15)?
        .iter()
        .map(|v| v.parse::<u64>().ok())
        .sum()
}

impl Machine {
    pub fn probe(start: Start) -> Machine {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let field = |text: &str, key: &str| {
            text.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default()
        };
        let mut machine = Machine {
            cpu: field(&cpuinfo, "model name"),
            logical_cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
            memory: field(&read("/proc/meminfo"), "MemTotal"),
            cpu_busy_percent: None,
            cpu_others_percent: None,
            cpu_steal_percent: None,
            loadavg_start: start.loadavg,
            loadavg_end: loadavg(),
        };
        if let (Some(a), Some(b)) = (start.cpu, cpu_times()) {
            let d: Vec<f64> = a
                .iter()
                .zip(b.iter())
                .map(|(a, b)| b.saturating_sub(*a) as f64)
                .collect();
            let total: f64 = d.iter().sum();
            if total > 0.0 {
                let busy = total - d[3] - d[4];
                machine.cpu_busy_percent = Some(100.0 * busy / total);
                machine.cpu_steal_percent = Some(100.0 * d[7] / total);
                if let (Some(own_start), Some(own_end)) = (start.own, own_ticks()) {
                    let own = own_end.saturating_sub(own_start) as f64;
                    machine.cpu_others_percent = Some((100.0 * (busy - own) / total).max(0.0));
                }
            }
        }
        machine
    }
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Figures computed from two scenarios.
#[derive(Debug, Clone, Serialize)]
pub struct Derived {
    /// p50 of a keep-alive /run of the empty WAT guest minus p50 of a keep-alive /run of an
    /// unknown container (same HTTP and JSON work, answered 404 before any instance exists).
    pub fresh_instance_by_http_difference_us: Option<f64>,
    /// p50 of warm echo keep-alive minus the unknown-container 404: the run path of a real
    /// (small Rust) guest including its execution.
    pub echo_run_path_by_http_difference_us: Option<f64>,
    /// p50 of echo on a new connection minus on a kept-alive one: the connection's cost.
    pub new_connection_cost_us: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Aim {
    pub aim: &'static str,
    pub measured_as: &'static str,
    pub limit_us: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// p50 against the limit.
    pub met: Option<bool>,
    pub reference: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: u32,
    pub tool: &'static str,
    pub date_utc: String,
    pub quick: bool,
    pub wall_seconds: f64,
    pub machine: Machine,
    /// The executor's `GET /health` answer.
    pub executor: serde_json::Value,
    pub sizes: Sizes,
    pub init: InitResults,
    pub warm: WarmResults,
    pub instance: InstanceResults,
    pub derived: Derived,
    pub throughput: ThroughputResults,
    pub aims: Vec<Aim>,
    pub files: Vec<String>,
}

pub fn derive(warm: &WarmResults) -> Derived {
    let p50 = |s: &str| warm.get(s).and_then(ScenarioSummary::client_p50);
    let diff = |a: &str, b: &str| Some(p50(a)? - p50(b)?);
    Derived {
        fresh_instance_by_http_difference_us: diff(warm::EMPTY_KEEP, warm::MISSING_KEEP),
        echo_run_path_by_http_difference_us: diff(warm::ECHO_KEEP, warm::MISSING_KEEP),
        new_connection_cost_us: diff(warm::ECHO_NEW, warm::ECHO_KEEP),
    }
}

pub fn aims(init: &InitResults, warm: &WarmResults, instance: &InstanceResults) -> Vec<Aim> {
    let aim = |aim, measured_as, limit_us: f64, summary: Option<&Summary>, reference| Aim {
        aim,
        measured_as,
        limit_us,
        p50_us: summary.map(|s| s.p50_us),
        p99_us: summary.map(|s| s.p99_us),
        met: summary.map(|s| s.p50_us <= limit_us),
        reference,
    };
    vec![
        aim(
            "/init of a precompiled ~300 KB module <= 1 ms",
            "client-observed /init, signed zip, new connection",
            1000.0,
            init.precompiled.client.as_ref(),
            "thesis: under 10 ms",
        ),
        aim(
            "warm no-op /run overhead <= 100 us p50",
            "client-observed echo {} round trip, new connection per request",
            100.0,
            warm.get(warm::ECHO_NEW).and_then(|s| s.client.as_ref()),
            "",
        ),
        aim(
            "warm no-op /run overhead <= 100 us p50",
            "client-observed echo {} round trip, kept-alive connection",
            100.0,
            warm.get(warm::ECHO_KEEP).and_then(|s| s.client.as_ref()),
            "",
        ),
        aim(
            "fresh instance <= 10 us",
            "executor-side run duration (took_us) of the empty WAT guest",
            10.0,
            instance
                .get(instance::EMPTY)
                .and_then(|s| s.server.as_ref()),
            "thesis: 340 us",
        ),
    ]
}

fn us(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 10_000.0 => format!("{:.1} ms", v / 1000.0),
        Some(v) if v >= 1000.0 => format!("{:.2} ms", v / 1000.0),
        Some(v) => format!("{v:.1} µs"),
        None => "–".into(),
    }
}

fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.0}%"))
}

fn row(out: &mut String, what: &str, s: Option<&Summary>, note: &str) {
    let _ = writeln!(
        out,
        "| {what} | {} | {} | {} | {} | {note} |",
        s.map_or(0, |s| s.count),
        us(s.map(|s| s.p50_us)),
        us(s.map(|s| s.p99_us)),
        us(s.map(|s| s.max_us)),
    );
}

/// The headline tables in Markdown.
pub fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# wasm-bench first — {}{}\n\n{} ({} logical CPUs), kernel {}, load average at start {} / end {}; CPUs busy {} (other processes {}), stolen {} over the run; executor {} {}; wall time {:.0} s.\n",
        r.date_utc,
        if r.quick {
            " (QUICK: sizes too small for conclusions)"
        } else {
            ""
        },
        r.machine.cpu,
        r.machine.logical_cpus,
        r.machine.kernel,
        r.machine.loadavg_start,
        r.machine.loadavg_end,
        percent(r.machine.cpu_busy_percent),
        percent(r.machine.cpu_others_percent),
        percent(r.machine.cpu_steal_percent),
        r.executor["runtime"].as_str().unwrap_or("?"),
        r.executor["runtime_version"].as_str().unwrap_or("?"),
        r.wall_seconds,
    );
    let m = &r.init.module;
    let _ = writeln!(
        o,
        "## /init (module {} bytes; precompiled zip {} bytes, /init body {} bytes; portable /init body {} bytes)\n",
        m.wasm_bytes,
        m.precompiled_zip_bytes,
        m.precompiled_init_body_bytes,
        m.portable_init_body_bytes
    );
    let _ = writeln!(
        o,
        "| scenario | n | p50 | p99 | max | note |\n|---|---|---|---|---|---|"
    );
    for s in [
        &r.init.precompiled,
        &r.init.precompiled_first_in_process,
        &r.init.portable_cached,
        &r.init.portable_compile,
    ] {
        row(
            &mut o,
            &format!("{} (client)", s.scenario),
            s.client.as_ref(),
            "new connection",
        );
        row(
            &mut o,
            &format!("{} (executor)", s.scenario),
            s.server.as_ref(),
            "took_us in its log",
        );
    }
    let _ = writeln!(
        o,
        "\nIn-process medians of the host-side /init steps (µs):\n"
    );
    for (name, steps) in [
        ("precompiled", &r.init.breakdown.precompiled),
        ("portable", &r.init.breakdown.portable),
    ] {
        let parts: Vec<String> = steps
            .iter()
            .map(|s| format!("{} {:.0}", s.step, s.median_us))
            .collect();
        let _ = writeln!(o, "- {name}: {}", parts.join(", "));
    }
    let _ = writeln!(o, "\n## Warm /run, sequential (one client)\n");
    let _ = writeln!(
        o,
        "| scenario | n | p50 | p99 | max | executor mean (metrics); CPU/request executor, client |\n|---|---|---|---|---|---|"
    );
    for s in &r.warm.scenarios {
        let note = format!(
            "{}; {}, {}",
            us(s.server_mean_us_from_metrics),
            us(s.executor_cpu_us_per_request),
            us(s.client_cpu_us_per_request)
        );
        row(
            &mut o,
            &s.summary.scenario,
            s.summary.client.as_ref(),
            &note,
        );
    }
    let _ = writeln!(
        o,
        "\n## Fresh instance: executor-side run duration (took_us), keep-alive, sequential\n"
    );
    let _ = writeln!(
        o,
        "| scenario | n | p50 | p99 | max | client p50 |\n|---|---|---|---|---|---|"
    );
    for s in &r.instance.scenarios {
        row(&mut o, &s.scenario, s.server.as_ref(), &us(s.client_p50()));
    }
    let d = &r.derived;
    let _ = writeln!(
        o,
        "\nDifferences of p50s: empty WAT /run − unknown-container /run = {}; echo − unknown = {}; new connection − keep-alive (echo) = {}.",
        us(d.fresh_instance_by_http_difference_us),
        us(d.echo_run_path_by_http_difference_us),
        us(d.new_connection_cost_us)
    );
    let _ = writeln!(
        o,
        "\n## Throughput, echo {{}}, closed loop, one container per client\n"
    );
    let _ = writeln!(
        o,
        "| connection | clients | req/s | p50 | p99 | failed | CPU/request executor | CPU/request client |\n|---|---|---|---|---|---|---|---|"
    );
    for l in &r.throughput.levels {
        let bad = l.summary.unexpected();
        let _ = writeln!(
            o,
            "| {} | {} | {:.0} | {} | {} | {bad} | {} | {} |",
            l.mode.label(),
            l.clients,
            l.requests_per_second,
            us(l.summary.client_p50()),
            us(l.summary.client.as_ref().map(|s| s.p99_us)),
            us(l.executor_cpu_us_per_request),
            us(l.client_cpu_us_per_request),
        );
    }
    let _ = writeln!(o, "\n## Aims (p50 against the limit)\n");
    let _ = writeln!(
        o,
        "| aim | measured as | p50 | p99 | met | reference |\n|---|---|---|---|---|---|"
    );
    for a in &r.aims {
        let met = match a.met {
            Some(true) => "yes",
            Some(false) => "no",
            None => "–",
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {met} | {} |",
            a.aim,
            a.measured_as,
            us(a.p50_us),
            us(a.p99_us),
            a.reference
        );
    }
    o
}
