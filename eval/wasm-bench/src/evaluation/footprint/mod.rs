//! Experiment 14, `footprint` (not run by default): what containers cost an executor in
//! memory, and how fast /init and a warm /run are, for precompiled and for portable code, in
//! each executor build (`measure.rs`). In the evaluation it runs per executor build after the
//! shared platforms have stopped; `wasm-bench footprint` is its front end on its own.

mod measure;
mod table;

use serde::Serialize;

pub use measure::{Plan, Sizes, measure_executor};

use super::{
    experiment::{AppliesTo, Experiment, JsonParts, Stage},
    runner::Run,
    summary::Report,
};
use crate::{executor::fresh_dir, report};
use measure::PathResult;

/// The sizes and settings of a measurement and every code path it measured (`footprint` in
/// summary.json; the body of `wasm-bench footprint`'s).
#[derive(Debug, Serialize)]
pub struct FootprintRun<'a> {
    pub module: &'a str,
    pub containers: usize,
    pub requests: usize,
    pub new_inits: usize,
    /// Containers and new /inits of the distinct-actions path.
    pub distinct_containers: usize,
    pub distinct_new_inits: usize,
    /// Distinct precompiled actions (0: path not measured), and the compiler's own flags.
    pub precompiled_distinct: usize,
    pub precompiler_flags: &'a [String],
    pub quick: bool,
    pub loadavg_start: &'a str,
    pub loadavg_end: &'a str,
    pub results: Vec<&'a PathResult>,
}

impl<'a> FootprintRun<'a> {
    /// `plan`'s measurement, between the two load averages, of `results`.
    pub fn new(
        plan: &'a Plan,
        (loadavg_start, loadavg_end): (&'a str, &'a str),
        results: Vec<&'a PathResult>,
    ) -> FootprintRun<'a> {
        let sizes = &plan.sizes;
        FootprintRun {
            module: &plan.module,
            containers: sizes.containers,
            requests: sizes.requests,
            new_inits: sizes.new_inits,
            distinct_containers: sizes.distinct_containers,
            distinct_new_inits: sizes.of_path(Some(sizes.distinct_containers)).new_inits,
            precompiled_distinct: plan.precompiled_distinct,
            precompiler_flags: &plan.precompiler_flags,
            quick: plan.quick,
            loadavg_start,
            loadavg_end,
            results,
        }
    }
}

/// What the experiment measured on one executor build, and the load average around it.
struct Measured {
    loadavg_start: String,
    loadavg_end: String,
    results: Vec<PathResult>,
}

/// Experiment 14 in the registry.
pub struct Footprint;

impl Footprint {
    /// The plan of the evaluation's options and sizes.
    fn plan(args: &super::EvaluateArgs, sizes: &super::Sizes) -> Plan {
        Plan {
            module: args.footprint_module.clone(),
            precompiler: args.precompiler.clone(),
            actions: args.actions.clone(),
            sizes: Sizes {
                containers: sizes.footprint_containers,
                requests: sizes.footprint_requests,
                new_inits: sizes.footprint_new_inits,
                distinct_containers: sizes.footprint_distinct_containers,
            },
            precompiled_distinct: args.footprint_precompiled_distinct,
            precompiler_flags: args.footprint_precompiler_flag.clone(),
            quick: args.quick,
        }
    }

    /// The measurement of every executor build it ran on, as one.
    fn run_of<'a>(report: &'a Report<'_>, plan: &'a Plan) -> Option<FootprintRun<'a>> {
        let parts = report.results.rows::<Measured>();
        let (first, last) = (parts.first()?, parts.last()?);
        let results = parts.iter().flat_map(|p| &p.results).collect();
        let loadavg = (first.loadavg_start.as_str(), last.loadavg_end.as_str());
        Some(FootprintRun::new(plan, loadavg, results))
    }
}

impl Experiment for Footprint {
    fn name(&self) -> &'static str {
        "footprint"
    }

    fn description(&self) -> &'static str {
        "14: memory per container, /init and warm /run in each executor build, precompiled and portable"
    }

    fn applies_to(&self) -> AppliesTo {
        AppliesTo::Executors
    }

    fn stage(&self) -> Stage {
        Stage::OwnProcesses
    }

    fn by_default(&self) -> bool {
        false
    }

    fn run(&self, run: &mut Run<'_>, platforms: &[&str]) -> anyhow::Result<()> {
        let plan = Footprint::plan(run.args, &run.ctx.sizes);
        plan.check_inputs()?;
        for &name in platforms {
            run.step("footprint", name);
            let binary = run.executor_binary(name)?;
            let scratch = fresh_dir(run.scratch, "footprint")?;
            let loadavg_start = report::loadavg();
            let results = measure_executor(&plan, name, binary, &scratch)?;
            run.results.push_row(Measured {
                loadavg_start,
                loadavg_end: report::loadavg(),
                results,
            });
        }
        Ok(())
    }

    fn record(&self, report: &Report<'_>, json: &mut JsonParts) -> anyhow::Result<()> {
        let plan = Footprint::plan(report.args, &report.ctx.sizes);
        let measured = Footprint::run_of(report, &plan);
        json.top
            .insert("footprint".into(), serde_json::to_value(measured)?);
        Ok(())
    }

    fn markdown(&self, report: &Report<'_>) -> String {
        let plan = Footprint::plan(report.args, &report.ctx.sizes);
        let Some(measured) = Footprint::run_of(report, &plan) else {
            return String::new();
        };
        format!(
            "\n## 14. Footprint of the executor builds: memory per warm container, /init and warm /run, precompiled and portable\n\n{}",
            measured.markdown()
        )
    }
}
