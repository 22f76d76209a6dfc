//! `wasm-bench hash`: the evaluation's hash experiment on its own (`evaluation::hash`), with
//! executors given one by one, its own sizes and output directory: CPU-bound throughput of the
//! `hash` action (repeated BLAKE3) in each executor given, precompiled and portable, against the
//! same Rust source built as a native binary, interleaved round by round.

use std::path::PathBuf;

use serde::Serialize;

use crate::{
    evaluation::hash::{self, HashRun, Plan},
    executor,
    provenance::Provenance,
};

#[derive(Debug, clap::Args)]
pub struct HashArgs {
    /// RUNTIME=PATH of an executor build, repeated for several, e.g.
    /// `--executor wasmtime=target/release/wasm-executor-wasmtime`.
    #[arg(long = "executor", required = true)]
    executors: Vec<String>,
    /// The precompiler front end (`wasm-precompile-<runtime>` must sit next to it).
    #[arg(long, default_value = "target/release/wasm-precompile")]
    precompiler: PathBuf,
    /// Directory of the built actions (`hash.wasm`).
    #[arg(long, default_value = "actions/dist")]
    actions: PathBuf,
    /// The native build of the action (`actions/build.sh --native`).
    #[arg(long, default_value = "actions/dist/native/hash")]
    native: PathBuf,
    /// BLAKE3 rounds per measured run (1.2 M: about 100 ms natively).
    #[arg(long, default_value_t = 1_200_000)]
    iterations: u64,
    /// Measured rounds (each runs every variant once with and once without iterations).
    #[arg(long, default_value_t = 15)]
    rounds: usize,
    /// Where summary.{json,md} go.
    #[arg(long, default_value = "eval/results/hash")]
    out: PathBuf,
    /// A few small runs: proves the harness works; the figures mean nothing.
    #[arg(long)]
    quick: bool,
    /// Also run the action precompiled with these compiler flags (space-separated, e.g.
    /// `--xip` for WAMR), as a variant of its own; repeated for several.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    also_precompiled_with: Vec<String>,
}

#[derive(Debug, Serialize)]
struct HashReport<'a> {
    tool: &'static str,
    /// `date_utc` and `commit`.
    #[serde(flatten)]
    provenance: &'a Provenance,
    #[serde(flatten)]
    run: &'a HashRun,
}

pub fn run(args: &HashArgs) -> anyhow::Result<()> {
    let (iterations, rounds) = if args.quick {
        (10_000, 2)
    } else {
        (args.iterations, args.rounds)
    };
    let provenance = Provenance::now();
    let plan = Plan {
        executors: executor::parse_specs(&args.executors)?,
        precompiler: args.precompiler.clone(),
        wasm: args.actions.join("hash.wasm"),
        native: args.native.clone(),
        iterations,
        rounds,
        also_precompiled_with: args.also_precompiled_with.clone(),
        quick: args.quick,
    };
    plan.check_inputs()?;
    let scratch = std::env::temp_dir().join(format!("wasm-bench-hash-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    std::fs::create_dir_all(&args.out)?;
    let measured = hash::measure(&plan, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    let measured = measured?;
    let report = HashReport {
        tool: "wasm-bench hash",
        provenance: &provenance,
        run: &measured,
    };
    std::fs::write(
        args.out.join("summary.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let markdown = format!(
        "# wasm-bench hash\n\n{}\n\n{}",
        provenance.markdown(),
        measured.markdown()
    );
    std::fs::write(args.out.join("summary.md"), &markdown)?;
    print!("{markdown}");
    Ok(())
}
