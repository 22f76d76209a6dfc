//! The figures of the evaluation, from its samples: per experiment a table by platform and
//! level, and the ratios against the Docker baseline (and the native binary) measured in the
//! same run; as JSON and as the Markdown tables of eval/RESULTS.md.

use std::{collections::BTreeMap, fmt::Write};

use serde::Serialize;

use super::{Context, cost::CostRow, memory::MemoryRow, mixed, sample::Sample};
use crate::stats;

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub platform: String,
    pub scenario: String,
    pub level: u32,
    pub requests: usize,
    pub errors: usize,
    pub cold: usize,
    /// Successful measured activations per second.
    pub rate: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub mean_ms: Option<f64>,
    /// Cold start only: until ready.
    pub ready_p50_ms: Option<f64>,
    pub ready_p99_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub platforms: Vec<String>,
    pub cells: BTreeMap<String, Vec<Cell>>,
    pub mixed_plateau: BTreeMap<String, f64>,
}

/// Statistics of the measured samples of one platform, scenario and level.
fn cell(samples: &[&Sample], window_secs: Option<f64>) -> Option<Cell> {
    let first = samples.first()?;
    let measured: Vec<&&Sample> = samples.iter().filter(|s| !s.warmup).collect();
    let ok: Vec<&&Sample> = measured.iter().copied().filter(|s| s.ok()).collect();
    let latency = stats::Summary::of_ns(ok.iter().map(|s| s.latency_ns));
    let ready = stats::Summary::of_ns(measured.iter().filter_map(|s| s.ready_ns));
    Some(Cell {
        platform: first.platform.clone(),
        scenario: first.scenario.clone(),
        level: first.level,
        requests: measured.len(),
        errors: measured.len() - ok.len(),
        cold: measured.iter().filter(|s| s.cold).count(),
        rate: window_secs.map(|w| ok.len() as f64 / w),
        p50_ms: latency.as_ref().map(|l| l.p50_us / 1e3),
        p90_ms: latency.as_ref().map(|l| l.p90_us / 1e3),
        p99_ms: latency.as_ref().map(|l| l.p99_us / 1e3),
        mean_ms: latency.as_ref().map(|l| l.mean_us / 1e3),
        ready_p50_ms: ready.as_ref().map(|r| r.p50_us / 1e3),
        ready_p99_ms: ready.as_ref().map(|r| r.p99_us / 1e3),
    })
}

/// Cells by (platform, scenario, level), in the order platforms ran.
fn cells(samples: &[Sample], window_secs: Option<f64>) -> Vec<Cell> {
    let mut groups: BTreeMap<(String, String, u32), Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        groups
            .entry((s.platform.clone(), s.scenario.clone(), s.level))
            .or_default()
            .push(s);
    }
    groups
        .values()
        .filter_map(|g| cell(g, window_secs))
        .collect()
}

impl Summary {
    pub fn of(results: &super::Results, ctx: &Context, platforms: &[String]) -> Summary {
        let sizes = &ctx.sizes;
        let mut all = BTreeMap::new();
        all.insert("cold".to_owned(), cells(results.of("cold"), None));
        all.insert(
            "io".to_owned(),
            cells(results.of("io"), Some(sizes.level_secs)),
        );
        all.insert(
            "cpu".to_owned(),
            cells(results.of("cpu"), Some(sizes.level_secs)),
        );
        all.insert(
            "realistic".to_owned(),
            cells(results.of("realistic"), Some(sizes.realistic_secs)),
        );
        all.insert("access".to_owned(), cells(results.of("access"), None));
        all.insert(
            "threading".to_owned(),
            cells(results.of("threading"), Some(sizes.threading_secs)),
        );
        let mut mixed_plateau = BTreeMap::new();
        for platform in platforms {
            let own: Vec<Sample> = results
                .of("mixed")
                .iter()
                .filter(|s| &s.platform == platform)
                .cloned()
                .collect();
            if let Some(rate) = mixed::plateau_rate(&own, ctx) {
                mixed_plateau.insert(platform.clone(), rate);
            }
        }
        Summary {
            platforms: platforms.to_vec(),
            cells: all,
            mixed_plateau,
        }
    }

    fn find(&self, experiment: &str, platform: &str, scenario: &str, level: u32) -> Option<&Cell> {
        self.cells
            .get(experiment)?
            .iter()
            .find(|c| c.platform == platform && c.scenario == scenario && c.level == level)
    }

    fn levels(&self, experiment: &str, scenario: &str) -> Vec<u32> {
        let mut levels: Vec<u32> = self
            .cells
            .get(experiment)
            .map(|cells| {
                cells
                    .iter()
                    .filter(|c| c.scenario == scenario)
                    .map(|c| c.level)
                    .collect()
            })
            .unwrap_or_default();
        levels.sort_unstable();
        levels.dedup();
        levels
    }

    pub fn markdown(&self, memory: &[MemoryRow], cost: &[CostRow]) -> String {
        let mut md = String::new();
        let wasm: Vec<&String> = self
            .platforms
            .iter()
            .filter(|p| !matches!(p.as_str(), "docker" | "native"))
            .collect();
        let opt = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.1}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "–".to_owned(),
        };

        // 1. Cold start.
        if self.has("cold") {
            let _ = writeln!(
                md,
                "## 1. Cold start (echo): p50 ready / p50 first result / p99 first result, ms\n"
            );
            let _ = write!(md, "| i |");
            for p in &self.platforms {
                let _ = write!(md, " {p} |");
            }
            for p in &wasm {
                let _ = write!(md, " {p} vs docker (p50 first result) |");
            }
            let _ = writeln!(md);
            let _ = writeln!(
                md,
                "|---|{}",
                "---|".repeat(self.platforms.len() + wasm.len())
            );
            for level in self.levels("cold", "echo") {
                let _ = write!(md, "| {level} |");
                for p in &self.platforms {
                    match self.find("cold", p, "echo", level) {
                        Some(c) => {
                            let _ = write!(
                                md,
                                " {} / {} / {}{} |",
                                opt(c.ready_p50_ms),
                                opt(c.p50_ms),
                                opt(c.p99_ms),
                                if c.errors > 0 {
                                    format!(" ({} failed)", c.errors)
                                } else {
                                    String::new()
                                }
                            );
                        }
                        None => md.push_str(" – |"),
                    }
                }
                let docker = self
                    .find("cold", "docker", "echo", level)
                    .and_then(|c| c.p50_ms);
                for p in &wasm {
                    let own = self.find("cold", p, "echo", level).and_then(|c| c.p50_ms);
                    let text = match (own, docker) {
                        (Some(o), Some(d)) if d > 0.0 => format!("−{:.1} %", 100.0 * (1.0 - o / d)),
                        _ => "–".into(),
                    };
                    let _ = write!(md, " {text} |");
                }
                let _ = writeln!(md);
            }
        }

        // 2, 3. Closed-loop throughput.
        for (experiment, title) in [
            ("io", "2. I/O-bound (net, 300 ms server)"),
            ("cpu", "3. CPU-bound (hash)"),
        ] {
            if !self.has(experiment) {
                continue;
            }
            let _ = writeln!(md, "\n## {title}: activations/s (p50 / p99 latency ms)\n");
            let _ = write!(md, "| clients |");
            for p in &self.platforms {
                let _ = write!(md, " {p} |");
            }
            for p in &wasm {
                let _ = write!(md, " {p} / docker |");
                if experiment == "cpu" {
                    let _ = write!(md, " {p} / native |");
                }
            }
            let _ = writeln!(md);
            let columns =
                self.platforms.len() + wasm.len() * if experiment == "cpu" { 2 } else { 1 };
            let _ = writeln!(md, "|---|{}", "---|".repeat(columns));
            for level in self.levels(experiment, experiment) {
                let _ = write!(md, "| {level} |");
                let rate = |p: &str| {
                    self.find(experiment, p, experiment, level)
                        .and_then(|c| c.rate)
                };
                for p in &self.platforms {
                    match self.find(experiment, p, experiment, level) {
                        Some(c) => {
                            let _ = write!(
                                md,
                                " {} ({} / {}){} |",
                                opt(c.rate),
                                opt(c.p50_ms),
                                opt(c.p99_ms),
                                if c.errors > 0 {
                                    format!(" {} failed", c.errors)
                                } else {
                                    String::new()
                                }
                            );
                        }
                        None => md.push_str(" – |"),
                    }
                }
                for p in &wasm {
                    let _ = write!(md, " {} |", ratio(rate(p), rate("docker")));
                    if experiment == "cpu" {
                        let _ = write!(md, " {} |", ratio(rate(p), rate("native")));
                    }
                }
                let _ = writeln!(md);
            }
        }

        // 4. Mixed.
        if !self.mixed_plateau.is_empty() {
            let _ = writeln!(
                md,
                "\n## 4. Mixed (McGrath–Brenner): activations/s once every client has joined\n"
            );
            let _ = writeln!(
                md,
                "| platform | activations/s | vs docker |\n|---|---|---|"
            );
            let docker_plateau = self.mixed_plateau.get("docker").copied();
            for (p, rate) in &self.mixed_plateau {
                let _ = writeln!(
                    md,
                    "| {p} | {rate:.1} | {} |",
                    ratio(Some(*rate), docker_plateau)
                );
            }
        }

        // 5. Realistic.
        if self.has("realistic") {
            let _ = writeln!(
                md,
                "\n## 5. Realistic (Azure-derived, OpenWhisk-like pool)\n"
            );
            let _ = writeln!(
                md,
                "| platform | requests | failed | cold starts | cold share | p50 ms | p90 ms | p99 ms | mean ms |\n|---|---|---|---|---|---|---|---|---|"
            );
            for c in self.cells.get("realistic").into_iter().flatten() {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {:.1} % | {} | {} | {} | {} |",
                    c.platform,
                    c.requests,
                    c.errors,
                    c.cold,
                    100.0 * c.cold as f64 / c.requests.max(1) as f64,
                    opt(c.p50_ms),
                    opt(c.p90_ms),
                    opt(c.p99_ms),
                    opt(c.mean_ms)
                );
            }
        }

        // 6. Access patterns.
        if self.has("access") {
            let _ = writeln!(
                md,
                "\n## 6. Access patterns (Hall and Ramachandran), echo through the pool: mean / p50 / p99 ms\n"
            );
            let _ = write!(md, "| pattern (clients) |");
            for p in &self.platforms {
                let _ = write!(md, " {p} |");
            }
            let _ = writeln!(md, "\n|---|{}", "---|".repeat(self.platforms.len()));
            for pattern in [
                "single_client_multiple_access",
                "multiple_clients_single_access",
                "multiple_clients_multiple_access",
            ] {
                let levels = self.levels("access", pattern);
                let Some(&level) = levels.first() else {
                    continue;
                };
                let _ = write!(md, "| {} ({level}) |", pattern.replace('_', " "));
                for p in &self.platforms {
                    match self.find("access", p, pattern, level) {
                        Some(c) => {
                            let _ = write!(
                                md,
                                " {} / {} / {} |",
                                opt(c.mean_ms),
                                opt(c.p50_ms),
                                opt(c.p99_ms)
                            );
                        }
                        None => md.push_str(" – |"),
                    }
                }
                let _ = writeln!(md);
            }
        }

        // 7. Memory.
        if !memory.is_empty() {
            let _ = writeln!(md, "\n## 7. Memory per warm container (hash)\n");
            let _ = writeln!(
                md,
                "| platform | build | idle MiB | MiB per warm container | warm containers per GiB | vs docker |\n|---|---|---|---|---|---|"
            );
            for row in memory {
                let docker = memory
                    .iter()
                    .find(|r| r.platform == "docker" && r.variant == row.variant)
                    .map(|r| r.per_gib);
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.1} | {:.2} | {:.0} | {} |",
                    row.platform,
                    row.variant,
                    row.idle_mib,
                    row.per_container_mib,
                    row.per_gib,
                    ratio(Some(row.per_gib), docker)
                );
            }
        }

        // 8. Threading model.
        if self.has("threading") {
            let _ = writeln!(
                md,
                "\n## 8. Threading model: activations/s with guests on their requests' tasks (async, wasmtime only), on the blocking pool, and blocking the async workers\n"
            );
            let _ = writeln!(
                md,
                "| runtime | workload | clients | async | pool | blocking worker | async / pool | pool / blocking worker |\n|---|---|---|---|---|---|---|---|"
            );
            for runtime in &wasm {
                for workload in ["cpu", "io", "mixed"] {
                    for level in self.levels("threading", workload) {
                        let rate = |mode: &str| {
                            self.find("threading", &format!("{runtime}-{mode}"), workload, level)
                                .and_then(|c| c.rate)
                        };
                        let _ = writeln!(
                            md,
                            "| {runtime} | {workload} | {level} | {} | {} | {} | {} | {} |",
                            opt(rate("async")),
                            opt(rate("pool")),
                            opt(rate("blocking-worker")),
                            ratio(rate("async"), rate("pool")),
                            ratio(rate("pool"), rate("blocking-worker"))
                        );
                    }
                }
            }
        }
        // 9. Platform cost.
        if !cost.is_empty() {
            let _ = writeln!(
                md,
                "\n## 9. Platform cost: host CPU per warm activation (hash, 1 iteration, one client)\n"
            );
            let _ = writeln!(
                md,
                "| platform | activations | CPU µs per activation | wall µs per activation | CPU vs docker |\n|---|---|---|---|---|"
            );
            let docker = cost
                .iter()
                .find(|r| r.platform == "docker")
                .map(|r| r.cpu_us);
            for row in cost {
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.0} | {:.0} | {} |",
                    row.platform,
                    row.activations,
                    row.cpu_us,
                    row.wall_us,
                    ratio(Some(row.cpu_us), docker)
                );
            }
        }
        md
    }

    fn has(&self, experiment: &str) -> bool {
        self.cells.get(experiment).is_some_and(|c| !c.is_empty())
    }
}
