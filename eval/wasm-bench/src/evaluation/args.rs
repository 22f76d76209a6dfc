//! The options of `wasm-bench evaluate`, and the checks of the platforms they name.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;

use super::{capacity::SizingChoice, experiment::EXECUTORS, registry};

#[derive(Debug, Clone, Args)]
pub struct EvaluateArgs {
    /// Platforms in the order they run: executor builds `wasmtime`, `wasmer`, `wamr` (each
    /// needs --executor-<name>), `docker` (the baseline) and `native` (the binary bare).
    #[arg(long, value_delimiter = ',', default_value = "wasmtime,docker,native")]
    pub platforms: Vec<String>,
    /// Experiments to run, in the registry's order (below) whatever the order given: those on
    /// the platforms started for the run first, then those that start processes of their own.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = registry::default_list(),
        value_parser = registry::parser()
    )]
    pub experiments: Vec<String>,
    #[arg(long, default_value = "target/release/wasm-executor-wasmtime")]
    pub executor_wasmtime: PathBuf,
    #[arg(long, default_value = "target/release/wasm-executor-wasmer")]
    pub executor_wasmer: PathBuf,
    #[arg(long, default_value = "target/release/wasm-executor-wamr")]
    pub executor_wamr: PathBuf,
    /// The precompiler front end (`wasm-precompile-<runtime>` next to it).
    #[arg(long, default_value = "target/release/wasm-precompile")]
    pub precompiler: PathBuf,
    /// Built Wasm actions (`<name>.wasm`, variants in `variants/`).
    #[arg(long, default_value = "actions/dist")]
    pub actions: PathBuf,
    /// Native builds of the same actions (variants in `../variants/native/`).
    #[arg(long, default_value = "actions/dist/native")]
    pub native: PathBuf,
    /// Baseline images are `<prefix>/<module>` (eval/baseline/build-images.sh).
    #[arg(long, default_value = "owwasm-baseline")]
    pub image_prefix: String,
    #[arg(long, default_value = "eval/results/evaluation")]
    pub out: PathBuf,
    /// Scratch space (artifacts, executor logs); default: a new one under the temp dir.
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Tiny sizes: proves the harness works in a minute or two; the figures mean nothing.
    #[arg(long)]
    pub quick: bool,
    /// Simultaneous cold starts per level of experiment 1, e.g. 1,2,4,8,16,32.
    #[arg(long, value_delimiter = ',')]
    pub cold_levels: Option<Vec<usize>>,
    /// Clients per level of experiment 2 (I/O-bound).
    #[arg(long, value_delimiter = ',')]
    pub io_levels: Option<Vec<usize>>,
    /// Seconds of each measured window of a closed-loop level.
    #[arg(long)]
    pub level_secs: Option<f64>,
    /// Measured windows per closed-loop level (its repetitions: their rates give the mean and
    /// its 95 % confidence interval).
    #[arg(long)]
    pub repetitions: Option<u32>,
    /// Sequential warm activations measured per platform and connection in experiment 9
    /// (platform cost).
    #[arg(long)]
    pub cost_activations: Option<usize>,
    /// CPUs of the load generator (`taskset` list, e.g. `3` or `6-7`); with --platform-cpus.
    /// Default: the last quarter of the CPUs on machines with 4 or more, none on smaller ones.
    #[arg(long, requires = "platform_cpus")]
    pub loadgen_cpus: Option<String>,
    /// CPUs of the measured platforms: executors, Docker's engine and containers, native
    /// processes (e.g. `0-2`).
    #[arg(long, requires = "loadgen_cpus")]
    pub platform_cpus: Option<String>,
    /// No pinning, whatever the machine.
    #[arg(long, conflicts_with_all = ["loadgen_cpus", "platform_cpus"])]
    pub no_pinning: bool,
    /// The capacity experiment's latency target: a rate passes when no activation failed and
    /// the p99 stayed within it (ms).
    #[arg(long)]
    pub p99_target_ms: Option<f64>,
    /// How the capacity experiment's pool accounts for a container in its 1 GiB of user
    /// memory; each sizing is a row of its own (`sizing` in summary.json).
    #[arg(long, value_enum, default_value = "both")]
    pub capacity_sizing: SizingChoice,
    /// The hash experiment's BLAKE3 rounds per measured run (default 1.2 M: about 100 ms
    /// natively; as `wasm-bench hash --iterations`).
    #[arg(long)]
    pub hash_iterations: Option<u64>,
    /// The hash experiment's measured rounds (default 15; as `wasm-bench hash --rounds`).
    #[arg(long)]
    pub hash_rounds: Option<usize>,
    /// The hash experiment also runs the action precompiled with these compiler flags
    /// (space-separated, e.g. `--xip` for WAMR), as a variant of its own; repeated for several
    /// (as `wasm-bench hash --also-precompiled-with`).
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub hash_also_precompiled_with: Vec<String>,
    /// The action (in --actions, without .wasm) every container of the footprint experiment
    /// holds (as `wasm-bench footprint --module`).
    #[arg(long, default_value = "echo")]
    pub footprint_module: String,
    /// The footprint experiment's containers per executor and code path (default 100).
    #[arg(long)]
    pub footprint_containers: Option<usize>,
    /// The footprint experiment's containers (and /inits of code no container holds) of the
    /// distinct-actions path (default: --footprint-containers).
    #[arg(long)]
    pub footprint_distinct_containers: Option<usize>,
    /// The footprint experiment's measured sequential warm /runs per executor and code path
    /// (default 2000).
    #[arg(long)]
    pub footprint_requests: Option<usize>,
    /// The footprint experiment's /inits of code no container holds, per executor and code
    /// path (default 100).
    #[arg(long)]
    pub footprint_new_inits: Option<usize>,
    /// The footprint experiment also measures N distinct actions precompiled; 0 leaves the
    /// path out (as `wasm-bench footprint --precompiled-distinct`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub footprint_precompiled_distinct: usize,
    /// A flag of the runtime's own compiler for every precompiled path of the footprint
    /// experiment; repeated for several (as `wasm-bench footprint --precompiler-flag`).
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    pub footprint_precompiler_flag: Vec<String>,
    /// Fail the run (after every result is written) when more than this percentage of an
    /// experiment's activations on one platform failed, cold starts included. 0 fails on any
    /// failed activation (a container that could not be resumed fails its activation). A
    /// panicked client thread, or a container that could not be removed, always fails it; a
    /// failed pause does not (the container stays warm), and summary.json counts those. The
    /// capacity experiment is not counted: its search raises the rate until activations fail or
    /// queue too long.
    #[arg(long, default_value_t = 0.0)]
    pub max_error_pct: f64,
}

impl EvaluateArgs {
    /// The executor binary given for `runtime`.
    pub fn executor(&self, runtime: &str) -> &PathBuf {
        match runtime {
            "wasmtime" => &self.executor_wasmtime,
            "wasmer" => &self.executor_wasmer,
            _ => &self.executor_wamr,
        }
    }

    /// Every platform is known, and none is given twice.
    pub fn check_platforms(&self) -> anyhow::Result<()> {
        for (index, platform) in self.platforms.iter().enumerate() {
            if !EXECUTORS.contains(&platform.as_str())
                && !["docker", "native"].contains(&platform.as_str())
            {
                bail!("unknown platform {platform}");
            }
            if self.platforms[..index].contains(platform) {
                bail!("platform {platform} is given twice");
            }
        }
        Ok(())
    }
}
