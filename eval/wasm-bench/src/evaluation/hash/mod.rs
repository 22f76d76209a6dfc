//! Experiment 13, `hash` (not run by default): CPU-bound throughput of the `hash` action in
//! each executor build, precompiled and portable, against its native build, the variants
//! interleaved round by round (`measure.rs`). In the evaluation it runs once across the
//! executor builds given, after the shared platforms have stopped; `wasm-bench hash` is its
//! front end on its own.

mod measure;

use std::fmt::Write as _;

use serde::Serialize;

pub use measure::{Plan, measure};

use super::{
    Context, EvaluateArgs,
    experiment::{AppliesTo, Experiment, JsonParts, Scope, Stage},
    runner::Run,
    summary::Report,
};
use crate::{executor::fresh_dir, stats::Summary};
use measure::VariantResult;

/// What one measurement found (`hash` in summary.json; the body of `wasm-bench hash`'s).
#[derive(Debug, Serialize)]
pub struct HashRun {
    pub iterations: u64,
    pub rounds: usize,
    pub quick: bool,
    pub loadavg_start: String,
    pub loadavg_end: String,
    /// Each executor's /health.
    pub executors: Vec<serde_json::Value>,
    pub results: Vec<VariantResult>,
}

impl HashRun {
    /// The sizes and load average, then a row per variant.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "{} BLAKE3 rounds per run, {} rounds, load average {} → {}{}.\n\n",
            self.iterations,
            self.rounds,
            self.loadavg_start,
            self.loadavg_end,
            if self.quick {
                " (quick: figures are not meaningful)"
            } else {
                ""
            },
        );
        out.push_str("| variant | run p50 | empty run p50 | hashing | hashes/s | of native |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        let p50 = |s: &Option<Summary>| {
            s.as_ref()
                .map_or("–".into(), |s| format!("{:.1} ms", s.p50_us / 1000.0))
        };
        for r in &self.results {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.1} ms | {:.0} | {:.0} % |",
                r.variant,
                p50(&r.loaded),
                p50(&r.empty),
                r.compute_ns as f64 / 1e6,
                r.hashes_per_second,
                r.of_native * 100.0
            );
        }
        out
    }
}

/// Experiment 13 in the registry.
pub struct Hash;

impl Experiment for Hash {
    fn name(&self) -> &'static str {
        "hash"
    }

    fn description(&self) -> &'static str {
        "13: CPU-bound hash in each executor build, precompiled and portable, against the native binary"
    }

    fn applies_to(&self) -> AppliesTo {
        AppliesTo::Executors
    }

    fn scope(&self) -> Scope {
        Scope::AcrossPlatforms
    }

    fn stage(&self) -> Stage {
        Stage::OwnProcesses
    }

    fn by_default(&self) -> bool {
        false
    }

    fn steps(&self, _platforms: &[&str], _ctx: &Context, _args: &EvaluateArgs) -> usize {
        1
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        run.step("hash", &format!("{} and native", platforms.join(", ")));
        let args = run.args;
        let executors = platforms
            .iter()
            .map(|&p| Ok((p.to_owned(), run.executor_binary(p)?.to_path_buf())))
            .collect::<anyhow::Result<_>>()?;
        let plan = Plan {
            executors,
            precompiler: args.precompiler.clone(),
            wasm: args.actions.join("hash.wasm"),
            native: args.native.join("hash"),
            iterations: run.ctx.sizes.hash_iterations,
            rounds: run.ctx.sizes.hash_rounds,
            also_precompiled_with: args.hash_also_precompiled_with.clone(),
            quick: args.quick,
        };
        let measured = measure(&plan, &fresh_dir(run.scratch, "hash")?)?;
        run.results.push_row(measured);
        Ok(())
    }

    fn record(&self, report: &Report<'_>, json: &mut JsonParts) -> anyhow::Result<()> {
        let measured = report.results.rows::<HashRun>().first();
        json.top
            .insert("hash".into(), serde_json::to_value(measured)?);
        Ok(())
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let Some(measured) = report.results.rows::<HashRun>().first() else {
            return String::new();
        };
        format!(
            "\n## 13. CPU-bound `hash` per executor build, precompiled and portable, against the native binary (hashing alone: a run's fixed cost subtracted)\n\n{}",
            measured.markdown()
        )
    }
}
