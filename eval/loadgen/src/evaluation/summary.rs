//! The figures of the evaluation, from its samples: per experiment a table by platform and
//! level, and the ratios against the Docker baseline (and the native binary) measured in the
//! same run; as JSON and as the Markdown tables of eval/RESULTS.md.

use std::{collections::BTreeMap, fmt::Write};

use serde::Serialize;

use super::{Context, init, mixed, sample::Sample};
use crate::stats;

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub platform: String,
    pub scenario: String,
    pub level: u32,
    pub requests: usize,
    pub errors: usize,
    pub cold: usize,
    /// Successful measured activations per second: the mean over the level's measured windows
    /// for closed-loop load, over the whole run for open-loop load.
    pub rate: Option<f64>,
    /// Half-width of the rate's 95 % confidence interval over the windows.
    pub rate_ci95: Option<f64>,
    /// The rate in each measured window.
    pub window_rates: Vec<f64>,
    pub p50_ms: Option<f64>,
    /// 95 % confidence interval of the median latency (order statistics).
    pub p50_ci95_ms: Option<(f64, f64)>,
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
    pub capacity_p99_ms: f64,
    pub cells: BTreeMap<String, Vec<Cell>>,
    pub mixed_plateau: BTreeMap<String, f64>,
}

/// How a cell's rate is known.
#[derive(Clone, Copy)]
enum Rate<'a> {
    /// Closed-loop levels: the rate of each measured window, by platform, scenario and level.
    Windows(&'a super::Results, &'static str),
    /// Open-loop load: successful activations over this many seconds.
    Span(f64),
    None,
}

/// Statistics of the measured samples of one platform, scenario and level.
fn cell(samples: &[&Sample], rate: Rate) -> Option<Cell> {
    let first = samples.first()?;
    let measured: Vec<&&Sample> = samples.iter().filter(|s| !s.warmup).collect();
    let ok: Vec<&&Sample> = measured.iter().copied().filter(|s| s.ok()).collect();
    let mut sorted: Vec<u64> = ok.iter().map(|s| s.latency_ns).collect();
    sorted.sort_unstable();
    let latency = stats::Summary::of_ns(sorted.iter().copied());
    let ready = stats::Summary::of_ns(measured.iter().filter_map(|s| s.ready_ns));
    let window_rates = match rate {
        Rate::Windows(results, experiment) => results
            .rates
            .get(&(
                experiment,
                (first.platform.clone(), first.scenario.clone(), first.level),
            ))
            .cloned()
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let (rate, rate_ci95) = match rate {
        Rate::Windows(..) => {
            stats::mean_ci95(&window_rates).map_or((None, None), |(m, h)| (Some(m), h))
        }
        Rate::Span(secs) => (Some(ok.len() as f64 / secs), None),
        Rate::None => (None, None),
    };
    let ms = |ns: u64| ns as f64 / 1e6;
    Some(Cell {
        platform: first.platform.clone(),
        scenario: first.scenario.clone(),
        level: first.level,
        requests: measured.len(),
        errors: measured.len() - ok.len(),
        cold: measured.iter().filter(|s| s.cold).count(),
        rate,
        rate_ci95,
        window_rates,
        p50_ms: latency.as_ref().map(|l| l.p50_us / 1e3),
        p50_ci95_ms: stats::median_ci95(&sorted).map(|(lo, hi)| (ms(lo), ms(hi))),
        p90_ms: latency.as_ref().map(|l| l.p90_us / 1e3),
        p99_ms: latency.as_ref().map(|l| l.p99_us / 1e3),
        mean_ms: latency.as_ref().map(|l| l.mean_us / 1e3),
        ready_p50_ms: ready.as_ref().map(|r| r.p50_us / 1e3),
        ready_p99_ms: ready.as_ref().map(|r| r.p99_us / 1e3),
    })
}

/// Cells by (platform, scenario, level), in the order platforms ran.
fn cells(results: &super::Results, experiment: &'static str, rate: Rate) -> Vec<Cell> {
    let mut groups: BTreeMap<(String, String, u32), Vec<&Sample>> = BTreeMap::new();
    for s in results.of(experiment) {
        groups
            .entry((s.platform.clone(), s.scenario.clone(), s.level))
            .or_default()
            .push(s);
    }
    groups.values().filter_map(|g| cell(g, rate)).collect()
}

impl Summary {
    pub fn of(results: &super::Results, ctx: &Context, platforms: &[String]) -> Summary {
        let sizes = &ctx.sizes;
        let mut all = BTreeMap::new();
        for experiment in ["cold-rate", "io", "cpu", "threading"] {
            let rate = Rate::Windows(results, experiment);
            all.insert(experiment.to_owned(), cells(results, experiment, rate));
        }
        for experiment in ["cold", "access"] {
            all.insert(
                experiment.to_owned(),
                cells(results, experiment, Rate::None),
            );
        }
        let realistic = Rate::Span(sizes.realistic_secs);
        all.insert(
            "realistic".to_owned(),
            cells(results, "realistic", realistic),
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
            capacity_p99_ms: sizes.capacity_p99_ms,
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

    pub fn markdown(&self, results: &super::Results) -> String {
        let (memory, cost) = (&results.memory, &results.cost);
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
                "## 1. Cold start (echo): p50 ready / p50 first result [its 95 % CI] / p99 first result, ms\n"
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
                                " {} / {}{} / {}{} |",
                                opt(c.ready_p50_ms),
                                opt(c.p50_ms),
                                median_ci(c),
                                opt(c.p99_ms),
                                failed(c)
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

        // 10. Cold starts at saturation (next to experiment 1 in the report).
        if self.has("cold-rate") {
            let _ = writeln!(
                md,
                "\n## 10. Cold starts per second at saturation (echo, a new action each): cold starts/s ± 95 % CI over {} windows (p50 first result ms)\n",
                self.windows("cold-rate")
            );
            let _ = write!(md, "| clients |");
            for p in &self.platforms {
                let _ = write!(md, " {p} |");
            }
            for p in &wasm {
                let _ = write!(md, " {p} / docker |");
            }
            let _ = writeln!(
                md,
                "\n|---|{}",
                "---|".repeat(self.platforms.len() + wasm.len())
            );
            let rate = |p: &str, level: u32| {
                self.find("cold-rate", p, "echo", level)
                    .and_then(|c| c.rate)
            };
            let levels = self.levels("cold-rate", "echo");
            for &level in &levels {
                let _ = write!(md, "| {level} |");
                for p in &self.platforms {
                    match self.find("cold-rate", p, "echo", level) {
                        Some(c) => {
                            let _ =
                                write!(md, " {} ({}){} |", rate_ci(c), opt(c.p50_ms), failed(c));
                        }
                        None => md.push_str(" – |"),
                    }
                }
                for p in &wasm {
                    let _ = write!(md, " {} |", ratio(rate(p, level), rate("docker", level)));
                }
                let _ = writeln!(md);
            }
            let peak = |p: &str| {
                levels
                    .iter()
                    .filter_map(|&l| rate(p, l))
                    .fold(None, |best: Option<f64>, r| {
                        Some(best.map_or(r, |b| b.max(r)))
                    })
            };
            let _ = write!(md, "| **peak** |");
            for p in &self.platforms {
                let _ = write!(md, " **{}** |", opt(peak(p)));
            }
            for p in &wasm {
                let _ = write!(md, " **{}** |", ratio(peak(p), peak("docker")));
            }
            let _ = writeln!(md);
        }

        // 2, 3. Closed-loop throughput.
        for (experiment, title) in [
            ("io", "2. I/O-bound (net, 300 ms server)"),
            ("cpu", "3. CPU-bound (hash)"),
        ] {
            if !self.has(experiment) {
                continue;
            }
            let _ = writeln!(
                md,
                "\n## {title}: activations/s ± 95 % CI over {} windows (p50 / p99 latency ms)\n",
                self.windows(experiment)
            );
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
                                rate_ci(c),
                                opt(c.p50_ms),
                                opt(c.p99_ms),
                                failed(c)
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
                "| platform | concurrency limit | requests | failed | cold starts | cold share | p50 ms | p90 ms | p99 ms | mean ms |\n|---|---|---|---|---|---|---|---|---|---|"
            );
            for c in self.cells.get("realistic").into_iter().flatten() {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {:.1} % | {} | {} | {} | {} |",
                    c.platform,
                    c.level,
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

        // 12. Capacity in a memory budget.
        if !results.capacity.is_empty() {
            let rates: Vec<f64> = results.capacity[0].levels.iter().map(|l| l.0).collect();
            let _ = writeln!(
                md,
                "\n## 12. Capacity in 1 GiB of user memory (the realistic workload, pools sized by each platform's memory per container): p99 ms at each arrival rate\n"
            );
            let _ = write!(md, "| platform | MB per container | containers in 1 GiB |");
            for rate in &rates {
                let _ = write!(md, " {rate}/s |");
            }
            let _ = writeln!(
                md,
                " sustained rate (p99 ≤ {} ms, no failure) | vs docker |\n|---|---|---|{}---|---|",
                self.capacity_p99_ms,
                "---|".repeat(rates.len())
            );
            let docker = results
                .capacity
                .iter()
                .find(|r| r.platform == "docker")
                .and_then(|r| r.sustainable_rate);
            for row in &results.capacity {
                let slots = if row.slots > 1_000_000 {
                    "unbounded".to_owned()
                } else {
                    row.slots.to_string()
                };
                let _ = write!(
                    md,
                    "| {} | {:.2} | {slots} |",
                    row.platform, row.container_mb
                );
                for (_, p99, failed) in &row.levels {
                    let failed = if *failed > 0 {
                        format!(" ({failed} failed)")
                    } else {
                        String::new()
                    };
                    let _ = write!(md, " {}{failed} |", opt(*p99));
                }
                let _ = writeln!(
                    md,
                    " {} | {} |",
                    row.sustainable_rate
                        .map_or("none".to_owned(), |r| format!("{r}/s")),
                    ratio(row.sustainable_rate, docker)
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
                "| platform | activations | CPU µs per activation | wall µs per activation | µs inside the executor | CPU vs docker |\n|---|---|---|---|---|---|"
            );
            let docker = cost
                .iter()
                .find(|r| r.platform == "docker")
                .map(|r| r.cpu_us);
            for row in cost {
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.0} | {:.0} | {} | {} |",
                    row.platform,
                    row.activations,
                    row.cpu_us,
                    row.wall_us,
                    row.executor_us
                        .map_or("–".to_owned(), |us| format!("{us:.0}")),
                    ratio(Some(row.cpu_us), docker)
                );
            }
        }
        // 11. /init inside the executor builds.
        if !results.init.is_empty() {
            let _ = writeln!(
                md,
                "\n## 11. /init of `{}` (executor builds): p50 / p99 as the client saw it, mean inside the executor, ms\n",
                init::MODULE
            );
            let _ = write!(md, "| build |");
            for scenario in init::SCENARIOS {
                let _ = write!(md, " {} |", scenario.replace('_', " "));
            }
            let _ = writeln!(md, "\n|---|{}", "---|".repeat(init::SCENARIOS.len()));
            for p in &wasm {
                let _ = write!(md, "| {p} |");
                for scenario in init::SCENARIOS {
                    match results
                        .init
                        .iter()
                        .find(|r| &r.platform == *p && r.scenario == scenario)
                    {
                        Some(r) => {
                            let _ = write!(
                                md,
                                " {} / {} / {} ({}) |",
                                opt3(r.p50_ms),
                                opt3(r.p99_ms),
                                opt3(r.executor_mean_ms),
                                r.inits
                            );
                        }
                        None => md.push_str(" – |"),
                    }
                }
                let _ = writeln!(md);
            }
        }
        md
    }

    /// Measured windows per level of a closed-loop experiment (the most any cell had).
    fn windows(&self, experiment: &str) -> usize {
        self.cells
            .get(experiment)
            .into_iter()
            .flatten()
            .map(|c| c.window_rates.len())
            .max()
            .unwrap_or(0)
    }

    fn has(&self, experiment: &str) -> bool {
        self.cells.get(experiment).is_some_and(|c| !c.is_empty())
    }
}

/// `rate ± half-width` (the rate alone with one window).
fn rate_ci(c: &Cell) -> String {
    match (c.rate, c.rate_ci95) {
        (Some(rate), Some(half)) => format!("{rate:.1} ± {half:.1}"),
        (Some(rate), None) => format!("{rate:.1}"),
        _ => "–".to_owned(),
    }
}

/// ` [low–high]`: the 95 % interval of the median latency, when there are samples enough.
fn median_ci(c: &Cell) -> String {
    c.p50_ci95_ms
        .map_or(String::new(), |(lo, hi)| format!(" [{lo:.1}–{hi:.1}]"))
}

/// ` (n failed)` when activations failed.
fn failed(c: &Cell) -> String {
    if c.errors > 0 {
        format!(" ({} failed)", c.errors)
    } else {
        String::new()
    }
}

/// Milliseconds with three decimals (/init times go down to tenths of a millisecond).
fn opt3(v: Option<f64>) -> String {
    v.map_or("–".to_owned(), |v| format!("{v:.3}"))
}
