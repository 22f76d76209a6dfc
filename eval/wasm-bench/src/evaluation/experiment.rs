//! What an experiment of `wasm-bench evaluate` is to the runner and to the summary writer: its
//! name on the command line, the platforms it applies to, when and how it runs, and its parts
//! of summary.json and summary.md. [`super::registry`] lists every experiment in order.

use serde_json::{Map, Value};

use super::{Context, EvaluateArgs, cells::CellRate, runner::Run, summary::Report};

/// The executor builds among the platforms (the others: `docker`, `native`).
pub const EXECUTORS: [&str; 3] = ["wasmtime", "wasmer", "wamr"];

/// The platforms, of those given, an experiment runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppliesTo {
    All,
    /// Every platform but the native binary (it has no containers to size or hold).
    NotNative,
    /// The executor builds only.
    Executors,
}

impl AppliesTo {
    pub fn includes(self, platform: &str) -> bool {
        match self {
            AppliesTo::All => true,
            AppliesTo::NotNative => platform != "native",
            AppliesTo::Executors => EXECUTORS.contains(&platform),
        }
    }
}

/// Whether the runner calls an experiment once per platform or once with all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    PerPlatform,
    /// Once, with every platform it applies to: it interleaves them itself (the CPU-bound
    /// levels, the rounds of `hash`).
    AcrossPlatforms,
}

/// When an experiment runs in the evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// On the platforms started for the run, every one up at once: experiment after experiment,
    /// each on every platform back to back, so that the platforms of one experiment are
    /// measured minutes apart at most on a machine whose speed drifts.
    SharedPlatforms,
    /// After the shared platforms have stopped, on executors the experiment starts itself (and
    /// Docker's engine): platform after platform, every such experiment on one platform before
    /// the next, then the experiments that run once across platforms.
    OwnProcesses,
}

/// An experiment of the registry. Everything about it that the runner, `--experiments`, the
/// progress line, the failure check and the summary need, besides its measurement.
pub trait Experiment: Sync {
    /// Its name in `--experiments`, in its CSV's file name and in summary.json.
    fn name(&self) -> &'static str;
    /// One line for `--help`.
    fn description(&self) -> &'static str;
    fn applies_to(&self) -> AppliesTo {
        AppliesTo::All
    }
    fn scope(&self) -> Scope {
        Scope::PerPlatform
    }
    fn stage(&self) -> Stage {
        Stage::SharedPlatforms
    }
    /// Whether `--experiments` runs it when not given.
    fn by_default(&self) -> bool {
        true
    }
    /// Steps of the progress line on `platforms` (those of the run it applies to).
    fn steps(&self, platforms: &[&str], _ctx: &Context, _args: &EvaluateArgs) -> usize {
        platforms.len()
    }
    /// Modules the Docker baseline needs images of, besides the shared platforms' own.
    fn docker_modules(&self) -> Vec<String> {
        Vec::new()
    }
    /// Runs on `platforms`: one per call when it runs per platform, all it applies to when it
    /// runs across them. Announces each step on `run`'s progress line and records into
    /// `run.results`.
    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()>;
    /// Whether every platform it ran on must have recorded activations (none recorded: all
    /// lost).
    fn expects_activations(&self) -> bool {
        false
    }
    /// Whether failed activations are what it measures rather than faults (they do not count
    /// against `--max-error-pct`).
    fn failures_measured(&self) -> bool {
        false
    }
    /// How its samples become the cells `summary.cells.<name>` (None: they do not).
    fn cells(&self, _ctx: &Context) -> Option<CellRate> {
        None
    }
    /// Its keys in summary.json besides its cells; written whether it ran or not.
    fn record(&self, _report: &Report<'_>, _json: &mut JsonParts) -> anyhow::Result<()> {
        Ok(())
    }
    /// Its section of summary.md; empty when it has nothing to show.
    fn markdown(&self, report: &Report<'_>) -> String;
}

/// The keys experiments add to summary.json: under `summary` (next to `platforms` and `cells`)
/// and at the top level.
#[derive(Debug, Default)]
pub struct JsonParts {
    pub summary: Map<String, Value>,
    pub top: Map<String, Value>,
}
