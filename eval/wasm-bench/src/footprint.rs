//! `wasm-bench footprint`: the evaluation's footprint experiment on its own
//! (`evaluation::footprint`), with executors given one by one, its own sizes and output
//! directory: what containers cost an executor in memory, and how fast /init and a warm /run
//! are, for precompiled and for portable code, for each executor given.

use std::path::PathBuf;

use serde::Serialize;

use crate::{
    evaluation::footprint::{FootprintRun, Plan, Sizes, measure_executor},
    executor,
    provenance::Provenance,
    report,
};

#[derive(Debug, clap::Args)]
pub struct FootprintArgs {
    /// RUNTIME=PATH of an executor build, repeated for several, e.g.
    /// `--executor wamr=target/release/wasm-executor-wamr`.
    #[arg(long = "executor", required = true)]
    executors: Vec<String>,
    /// The precompiler front end (`wasm-precompile-<runtime>` must sit next to it).
    #[arg(long, default_value = "target/release/wasm-precompile")]
    precompiler: PathBuf,
    /// Directory of the built actions.
    #[arg(long, default_value = "actions/dist")]
    actions: PathBuf,
    /// The action (in --actions, without .wasm) every container holds.
    #[arg(long, default_value = "echo")]
    module: String,
    /// Containers per executor and code path.
    #[arg(long, default_value_t = 100)]
    containers: usize,
    /// Containers (and /inits of code no container holds) of the distinct-actions path, where
    /// every /init compiles (default: --containers and --new-inits).
    #[arg(long)]
    distinct_containers: Option<usize>,
    /// Measured sequential warm /runs per executor and code path (after a tenth as warm-up).
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// /inits of code no container holds, per executor and code path (after a tenth as
    /// warm-up); portable ones find the module in the compile cache after the first.
    #[arg(long, default_value_t = 100)]
    new_inits: usize,
    /// Also measure N distinct actions precompiled (each container its own signed artifact,
    /// precompiled before the executor starts); 0 leaves the path out.
    #[arg(long, value_name = "N", default_value_t = 0)]
    precompiled_distinct: usize,
    /// A flag of the runtime's own compiler for every precompiled path (e.g. `--xip` for
    /// WAMR); repeated for several.
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    precompiler_flag: Vec<String>,
    /// Where summary.{json,md} go.
    #[arg(long, default_value = "eval/results/footprint")]
    out: PathBuf,
    /// Tiny sizes: proves the harness works; the figures mean nothing.
    #[arg(long)]
    quick: bool,
}

#[derive(Debug, Serialize)]
struct FootprintReport<'a> {
    tool: &'static str,
    /// `date_utc` and `commit`.
    #[serde(flatten)]
    provenance: &'a Provenance,
    #[serde(flatten)]
    run: FootprintRun<'a>,
}

pub fn run(args: &FootprintArgs) -> anyhow::Result<()> {
    let provenance = Provenance::now();
    let sizes = if args.quick {
        Sizes {
            containers: 5,
            requests: 50,
            new_inits: 5,
            distinct_containers: 5,
        }
    } else {
        Sizes {
            containers: args.containers,
            requests: args.requests,
            new_inits: args.new_inits,
            distinct_containers: args.distinct_containers.unwrap_or(args.containers),
        }
    };
    let plan = Plan {
        module: args.module.clone(),
        precompiler: args.precompiler.clone(),
        actions: args.actions.clone(),
        sizes,
        precompiled_distinct: args.precompiled_distinct,
        precompiler_flags: args.precompiler_flag.clone(),
        quick: args.quick,
    };
    plan.check_inputs()?;
    let executors = executor::parse_specs(&args.executors)?;
    let scratch = std::env::temp_dir().join(format!("wasm-bench-footprint-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    std::fs::create_dir_all(&args.out)?;
    let loadavg_start = report::loadavg();
    let measured: anyhow::Result<Vec<_>> = executors
        .iter()
        .map(|(runtime, binary)| measure_executor(&plan, runtime, binary, &scratch))
        .collect();
    let _ = std::fs::remove_dir_all(&scratch);
    let loadavg_end = report::loadavg();
    let results: Vec<_> = measured?.into_iter().flatten().collect();
    let report = FootprintReport {
        tool: "wasm-bench footprint",
        provenance: &provenance,
        run: FootprintRun::new(
            &plan,
            (&loadavg_start, &loadavg_end),
            results.iter().collect(),
        ),
    };
    std::fs::write(
        args.out.join("summary.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let markdown = format!(
        "# wasm-bench footprint\n\n{}\n\n{}",
        provenance.markdown(),
        report.run.markdown()
    );
    std::fs::write(args.out.join("summary.md"), &markdown)?;
    print!("{markdown}");
    Ok(())
}
