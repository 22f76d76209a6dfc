//! The machine a measurement ran on: CPU, kernel, memory, load average at the start and end,
//! and how busy its CPUs were over the run (this benchmark's share and everyone else's).

use serde::Serialize;

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
