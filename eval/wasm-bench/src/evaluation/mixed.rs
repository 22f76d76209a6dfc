//! Experiment 4, mixed load with the concurrency test of McGrath and Brenner: a new client
//! joins every `interval` until `clients` run, then all keep going for `hold`; each client
//! creates its own CPU-bound and I/O-bound containers when it joins (cold starts included, as
//! on a platform that scales out) and then calls one of them at random, request after request.
//! The result is throughput over time.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    time::{Duration, Instant},
};

use rand::{Rng, SeedableRng, rngs::StdRng};

use super::{
    Context,
    experiment::{Experiment, JsonParts},
    load,
    markdown::ratio,
    runner::Run,
    sample::Sample,
    summary::Report,
};
use crate::{failures, platform::Platform};

pub fn measure(platform: &dyn Platform, ctx: &Context) -> anyhow::Result<Vec<Sample>> {
    let sizes = &ctx.sizes;
    let clients = sizes.mixed_clients;
    let interval = Duration::from_secs_f64(sizes.mixed_interval_secs);
    let hold = Duration::from_secs_f64(sizes.mixed_hold_secs);
    let end = interval * clients as u32 + hold;
    let begun = Instant::now();
    let parts: Vec<Vec<Sample>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|client| {
                scope.spawn(move || {
                    std::thread::sleep((interval * client as u32).saturating_sub(begun.elapsed()));
                    let actions = [
                        ctx.action(platform, &format!("mixed{client}-hash"), "hash"),
                        ctx.action(platform, &format!("mixed{client}-net"), "net"),
                    ];
                    let mut samples = Vec::new();
                    let mut containers = Vec::new();
                    for action in &actions {
                        let start = Instant::now();
                        match platform.create(action) {
                            Ok(c) => containers.push((action.clone(), c)),
                            Err(error) => {
                                tracing::warn!(platform = platform.name(), %error, "mixed: creating a container failed");
                                samples.push(Sample {
                                    start_ns: start.duration_since(ctx.epoch).as_nanos() as u64,
                                    latency_ns: start.elapsed().as_nanos() as u64,
                                    cold: true,
                                    action: action.name.clone(),
                                    ..Sample::default()
                                });
                            }
                        }
                    }
                    let mut rng = StdRng::seed_from_u64(client as u64);
                    let mut seq = 0;
                    // Every client that has a container calls at least once, even when its cold
                    // starts outlasted the experiment (Docker's, on a loaded machine, in --quick).
                    while !containers.is_empty() && (seq == 0 || begun.elapsed() < end) {
                        let pick = rng.gen_range(0..containers.len());
                        let (action, container) = &containers[pick];
                        let mut sample = load::timed_run(action, container.as_ref(), ctx.epoch);
                        sample.seq = seq;
                        samples.push(sample);
                        seq += 1;
                    }
                    for (_, container) in containers {
                        if let Err(error) = container.remove() {
                            failures::housekeeping("removing a container", &error);
                        }
                    }
                    for sample in &mut samples {
                        sample.platform = platform.name().to_owned();
                        sample.scenario = "mixed".into();
                        sample.level = clients as u32;
                        sample.client = client as u32;
                    }
                    samples
                })
            })
            .collect();
        failures::join_all(handles, "mixed client")
    })?;
    tracing::info!(platform = platform.name(), "mixed load done");
    Ok(parts.into_iter().flatten().collect())
}

/// Completed activations per second in the window after the last client joined.
pub fn plateau_rate(samples: &[Sample], ctx: &Context) -> Option<f64> {
    let sizes = &ctx.sizes;
    let first = samples.iter().map(|s| s.start_ns).min()?;
    let joined = first + (sizes.mixed_interval_secs * sizes.mixed_clients as f64 * 1e9) as u64;
    let end = joined + (sizes.mixed_hold_secs * 1e9) as u64;
    let done = samples
        .iter()
        .filter(|s| s.ok() && s.end_ns() > joined && s.end_ns() <= end)
        .count();
    Some(done as f64 / sizes.mixed_hold_secs)
}

/// Every platform's plateau rate (`summary.mixed_plateau`), of those that recorded the
/// experiment.
fn plateaus(report: &Report<'_>) -> BTreeMap<String, f64> {
    let mut plateaus = BTreeMap::new();
    for platform in report.platforms() {
        let own: Vec<Sample> = report
            .results
            .of("mixed")
            .iter()
            .filter(|s| &s.platform == platform)
            .cloned()
            .collect();
        if let Some(rate) = plateau_rate(&own, report.ctx) {
            plateaus.insert(platform.clone(), rate);
        }
    }
    plateaus
}

/// Experiment 4 in the registry.
pub struct Mixed;

impl Experiment for Mixed {
    fn name(&self) -> &'static str {
        "mixed"
    }

    fn description(&self) -> &'static str {
        "4: McGrath–Brenner, clients joining one by one, each calling hash or net at random"
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        run.samples_per_platform("mixed", platforms, |p, ctx| measure(&*p, ctx))
    }

    fn expects_activations(&self) -> bool {
        true
    }

    fn record(&self, report: &Report<'_>, json: &mut JsonParts) -> anyhow::Result<()> {
        json.summary.insert(
            "mixed_plateau".into(),
            serde_json::to_value(plateaus(report))?,
        );
        Ok(())
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let plateaus = plateaus(report);
        let mut md = String::new();
        if plateaus.is_empty() {
            return md;
        }
        let _ = writeln!(
            md,
            "\n## 4. Mixed (McGrath–Brenner): activations/s once every client has joined\n"
        );
        let _ = writeln!(
            md,
            "| platform | activations/s | vs docker |\n|---|---|---|"
        );
        let docker_plateau = plateaus.get("docker").copied();
        for (p, rate) in &plateaus {
            let _ = writeln!(
                md,
                "| {p} | {rate:.1} | {} |",
                ratio(Some(*rate), docker_plateau)
            );
        }
        md
    }
}
