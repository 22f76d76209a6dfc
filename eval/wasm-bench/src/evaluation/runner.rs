//! The run loop of an evaluation over the registry's experiments: the platforms of the run
//! started, the experiments of the shared stage on them, then, with those stopped, the
//! experiments that start processes of their own (see [`Stage`]); and [`Run`], what an
//! experiment's run gets.

use std::{path::Path, sync::Arc};

use anyhow::{Context as _, bail};

use super::{
    Context, EvaluateArgs, Results,
    experiment::{Experiment, Scope, Stage},
    progress::Progress,
    sample::Sample,
};
use crate::platform::{
    Platform,
    docker::DockerPlatform,
    native::NativePlatform,
    wasm::{WasmOptions, WasmPlatform},
};

/// The modules every platform of the shared stage prepares.
pub const SHARED_MODULES: [&str; 3] = ["echo", "hash", "net"];

/// What an experiment's run gets: the context, the evaluation's options and scratch space,
/// the platforms, the progress line, and the results to record into.
pub struct Run<'a> {
    pub ctx: &'a Context,
    pub args: &'a EvaluateArgs,
    pub scratch: &'a Path,
    pub results: Results,
    progress: Progress,
    /// The platforms of the shared stage, in the order given; empty after it.
    shared: Vec<Arc<dyn Platform>>,
    docker: Option<Arc<DockerPlatform>>,
}

impl Run<'_> {
    /// Announces the next step of the progress line.
    pub fn step(&mut self, experiment: &str, on: &str) {
        self.progress.step(experiment, on);
    }

    /// The running platform `name` of the shared stage.
    pub fn platform(&self, name: &str) -> anyhow::Result<Arc<dyn Platform>> {
        self.shared
            .iter()
            .find(|p| p.name() == name)
            .cloned()
            .with_context(|| format!("platform {name} is not running (shared stage only)"))
    }

    /// For each of `platforms` of the shared stage in turn: announces the step, runs `measure`
    /// on it and records its samples under `experiment`.
    pub fn samples_per_platform(
        &mut self,
        experiment: &'static str,
        platforms: &[&str],
        measure: impl Fn(Arc<dyn Platform>, &Context) -> anyhow::Result<Vec<Sample>>,
    ) -> anyhow::Result<()> {
        for &name in platforms {
            self.step(experiment, name);
            let samples = measure(self.platform(name)?, self.ctx)?;
            self.results.add(experiment, samples);
        }
        Ok(())
    }

    /// Docker's platform, connected for the whole run when `docker` is given.
    pub fn docker(&self) -> anyhow::Result<Arc<DockerPlatform>> {
        self.docker
            .clone()
            .context("docker is not among the platforms")
    }

    /// The executor binary of `runtime`, which must exist.
    pub fn executor_binary(&self, runtime: &str) -> anyhow::Result<&Path> {
        executor_binary(self.args, runtime)
    }

    /// A new executor of `runtime`'s build named `label` in records, with `modules` prepared
    /// and `extra_args` on its command line.
    pub fn start_executor(
        &self,
        label: &str,
        runtime: &str,
        modules: &[&str],
        extra_args: &[&str],
    ) -> anyhow::Result<WasmPlatform> {
        start_executor(self.args, self.scratch, label, runtime, modules, extra_args)
    }
}

/// Runs `experiments` (in the registry's order) on the platforms of `args`: those of the shared
/// stage one after the other, each on every platform it applies to; then, the shared platforms
/// stopped, the per-platform experiments of the own-processes stage platform by platform, and
/// last those that run once across platforms. What they recorded.
pub fn run_all(
    experiments: &[&dyn Experiment],
    ctx: &Context,
    args: &EvaluateArgs,
    scratch: &Path,
    docker: Option<Arc<DockerPlatform>>,
) -> anyhow::Result<Results> {
    let shared_stage: Vec<&dyn Experiment> = in_stage(experiments, Stage::SharedPlatforms);
    let own_stage: Vec<&dyn Experiment> = in_stage(experiments, Stage::OwnProcesses);
    // Every platform is up at once (idle ones cost nothing).
    let shared = if shared_stage.is_empty() {
        Vec::new()
    } else {
        start_shared(args, scratch, docker.as_ref())?
    };
    let steps = experiments
        .iter()
        .map(|e| match applicable(*e, args) {
            on if on.is_empty() => 0,
            on => e.steps(&on, ctx, args),
        })
        .sum();
    let mut run = Run {
        ctx,
        args,
        scratch,
        results: Results::default(),
        progress: Progress::new(steps),
        shared,
        docker,
    };
    for experiment in shared_stage {
        let on = applicable(experiment, args);
        match experiment.scope() {
            Scope::PerPlatform => on
                .iter()
                .try_for_each(|platform| experiment.run(&mut run, &[platform]))?,
            Scope::AcrossPlatforms if on.is_empty() => {}
            Scope::AcrossPlatforms => experiment.run(&mut run, &on)?,
        }
    }
    // Docker's engine stays up for the next stage: `run.docker` holds it.
    run.shared.clear();
    run_own_stage(&own_stage, &mut run)?;
    Ok(run.results)
}

fn in_stage<'a>(experiments: &[&'a dyn Experiment], stage: Stage) -> Vec<&'a dyn Experiment> {
    experiments
        .iter()
        .copied()
        .filter(|e| e.stage() == stage)
        .collect()
}

/// The own-processes stage: platform by platform, every per-platform experiment on it; then the
/// experiments that run once across platforms.
fn run_own_stage(experiments: &[&dyn Experiment], run: &mut Run<'_>) -> anyhow::Result<()> {
    let args = run.args;
    for platform in &args.platforms {
        for experiment in experiments {
            if experiment.scope() == Scope::PerPlatform
                && experiment.applies_to().includes(platform)
            {
                experiment.run(run, &[platform])?;
            }
        }
    }
    for experiment in experiments {
        let on = applicable(*experiment, args);
        if experiment.scope() == Scope::AcrossPlatforms && !on.is_empty() {
            experiment.run(run, &on)?;
        }
    }
    Ok(())
}

/// The platforms of the run `experiment` applies to, in the order given.
pub fn applicable<'a>(experiment: &dyn Experiment, args: &'a EvaluateArgs) -> Vec<&'a str> {
    args.platforms
        .iter()
        .map(String::as_str)
        .filter(|p| experiment.applies_to().includes(p))
        .collect()
}

/// The platforms of the shared stage: Docker's (connected before), the native binaries, an
/// executor of each build given, all with [`SHARED_MODULES`].
fn start_shared(
    args: &EvaluateArgs,
    scratch: &Path,
    docker: Option<&Arc<DockerPlatform>>,
) -> anyhow::Result<Vec<Arc<dyn Platform>>> {
    let mut platforms: Vec<Arc<dyn Platform>> = Vec::new();
    for name in &args.platforms {
        platforms.push(match name.as_str() {
            "docker" => docker.cloned().context("docker was not connected")?,
            "native" => Arc::new(NativePlatform::new(
                &args.native,
                &SHARED_MODULES.map(String::from),
            )?),
            runtime => Arc::new(start_executor(
                args,
                scratch,
                runtime,
                runtime,
                &SHARED_MODULES,
                &[],
            )?),
        });
    }
    Ok(platforms)
}

fn executor_binary<'a>(args: &'a EvaluateArgs, runtime: &str) -> anyhow::Result<&'a Path> {
    let executor = args.executor(runtime);
    if !executor.is_file() {
        bail!(
            "{} is missing: build the {runtime} executor (see README.md)",
            executor.display()
        );
    }
    Ok(executor)
}

fn start_executor(
    args: &EvaluateArgs,
    scratch: &Path,
    label: &str,
    runtime: &str,
    modules: &[&str],
    extra_args: &[&str],
) -> anyhow::Result<WasmPlatform> {
    WasmPlatform::start(&WasmOptions {
        name: label.to_owned(),
        runtime: runtime.to_owned(),
        executor: executor_binary(args, runtime)?.to_path_buf(),
        precompiler: args.precompiler.clone(),
        actions: args.actions.clone(),
        modules: modules.iter().map(|m| m.to_string()).collect(),
        scratch: scratch.to_path_buf(),
        extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
    })
}
