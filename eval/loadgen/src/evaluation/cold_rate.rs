//! Experiment 10, cold starts per second at saturation: i closed-loop clients, each creating a
//! container for a new action (`echo`), running it once and removing it, over and over; the
//! rate of cold starts that reached their first result, per measured window, at each i. The
//! peak over i is what the platform sustains when every activation needs a new container.

use std::{sync::Arc, time::Instant};

use rand::rngs::StdRng;

use super::{
    Context, Results, cold,
    load::{self, Client, Plan},
    sample::Sample,
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

pub fn run(
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
