//! Experiment 10, cold starts per second at saturation: i closed-loop clients, each creating a
//! container for a new action (`echo`), running it once and removing it, over and over; the
//! rate of cold starts that reached their first result, per measured window, at each i. The
//! peak over i is what the platform sustains when every activation needs a new container.

use std::{fmt::Write as _, sync::Arc, time::Instant};

use rand::rngs::StdRng;

use super::{
    Context, Results,
    cells::CellRate,
    cold,
    experiment::Experiment,
    load::{self, Client, Plan},
    markdown::{failed, opt, rate_ci, ratio},
    runner::Run,
    sample::Sample,
    summary::Report,
};
use crate::{failures, platform::Platform};

/// One client's endless supply of new actions.
struct ColdStarter<'a> {
    platform: &'a Arc<dyn Platform>,
    ctx: &'a Context,
    prefix: String,
    next: u64,
}

impl Client for ColdStarter<'_> {
    async fn next(&mut self, _rng: &mut StdRng, epoch: Instant) -> Sample {
        let name = format!("{}-{}", self.prefix, self.next);
        self.next += 1;
        let action = self.ctx.action(&**self.platform, &name, "echo");
        let platform = Arc::clone(self.platform);
        // Creating a container blocks (the Docker CLI, a blocking /init): on its own thread.
        let started = tokio::task::spawn_blocking(move || {
            let (sample, container) = cold::start(&*platform, &action, epoch);
            // Removing the container is part of sustaining the rate, not of the cold start.
            if let Some(container) = container
                && let Err(error) = container.remove()
            {
                failures::housekeeping("removing a container", &error);
            }
            sample
        });
        match started.await {
            Ok(sample) => sample,
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        }
    }
}

pub fn measure(
    platform: &Arc<dyn Platform>,
    ctx: &Context,
    plan: Plan,
    results: &mut Results,
) -> anyhow::Result<()> {
    for &level in &ctx.sizes.cold_rate_levels {
        let clients = (0..level)
            .map(|client| ColdStarter {
                platform,
                ctx,
                prefix: format!("rate{level}c{client}"),
                next: 0,
            })
            .collect();
        let run = load::closed_loop(
            clients,
            platform.name(),
            "echo",
            level as u32,
            plan,
            ctx.epoch,
            level as u64,
        )?;
        let measured = run.samples.iter().filter(|s| !s.warmup && s.ok()).count();
        tracing::info!(
            platform = platform.name(),
            level,
            cold_starts = measured,
            "cold starts at saturation: level done"
        );
        results.add_level("cold-rate", run);
    }
    Ok(())
}

/// Experiment 10 in the registry (next to experiment 1 in the report).
pub struct ColdRate;

impl Experiment for ColdRate {
    fn name(&self) -> &'static str {
        "cold-rate"
    }

    fn description(&self) -> &'static str {
        "10: cold starts per second at saturation, closed-loop clients each making a new action"
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        let sizes = &run.ctx.sizes;
        let plan = sizes.plan(sizes.cold_rate_warmup_secs, sizes.level_secs);
        for &name in platforms {
            run.step("cold-rate", name);
            measure(&run.platform(name)?, run.ctx, plan, &mut run.results)?;
        }
        Ok(())
    }

    fn expects_activations(&self) -> bool {
        true
    }

    fn cells(&self, _ctx: &Context) -> Option<CellRate> {
        Some(CellRate::Windows)
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let cells = &report.cells;
        let mut md = String::new();
        if !cells.has("cold-rate") {
            return md;
        }
        let (platforms, executors) = (report.platforms(), report.executors());
        let _ = writeln!(
            md,
            "\n## 10. Cold starts per second at saturation (echo, a new action each): cold starts/s ± 95 % CI over {} windows (p50 first result ms)\n",
            cells.windows("cold-rate")
        );
        let _ = write!(md, "| clients |");
        for p in platforms {
            let _ = write!(md, " {p} |");
        }
        for p in &executors {
            let _ = write!(md, " {p} / docker |");
        }
        let _ = writeln!(
            md,
            "\n|---|{}",
            "---|".repeat(platforms.len() + executors.len())
        );
        let rate = |p: &str, level: u32| {
            cells
                .find("cold-rate", p, "echo", level)
                .and_then(|c| c.rate)
        };
        let levels = cells.levels("cold-rate", "echo");
        for &level in &levels {
            let _ = write!(md, "| {level} |");
            for p in platforms {
                match cells.find("cold-rate", p, "echo", level) {
                    Some(c) => {
                        let _ = write!(md, " {} ({}){} |", rate_ci(c), opt(c.p50_ms), failed(c));
                    }
                    None => md.push_str(" – |"),
                }
            }
            for p in &executors {
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
        for p in platforms {
            let _ = write!(md, " **{}** |", opt(peak(p)));
        }
        for p in &executors {
            let _ = write!(md, " **{}** |", ratio(peak(p), peak("docker")));
        }
        let _ = writeln!(md);
        md
    }
}
