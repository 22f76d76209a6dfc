//! summary.json and summary.md of an evaluation: the run's own keys (provenance, machine,
//! sizes, platforms), then each experiment's part, in the registry's order; every experiment
//! of the registry has its keys in summary.json whether it ran or not.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{
    Context, EvaluateArgs, Results,
    cells::Cells,
    experiment::{EXECUTORS, JsonParts},
    registry::REGISTRY,
};
use crate::provenance::Provenance;

/// What the experiments' parts of the summary are made from.
pub struct Report<'a> {
    pub args: &'a EvaluateArgs,
    pub ctx: &'a Context,
    pub results: &'a Results,
    pub cells: Cells,
}

impl<'a> Report<'a> {
    pub fn new(args: &'a EvaluateArgs, ctx: &'a Context, results: &'a Results) -> Report<'a> {
        Report {
            args,
            ctx,
            results,
            cells: Cells::of(results, REGISTRY, ctx),
        }
    }

    /// The platforms of the run, in the order given.
    pub fn platforms(&self) -> &[String] {
        &self.args.platforms
    }

    /// The executor builds among them: the columns compared with Docker and native.
    pub fn executors(&self) -> Vec<&String> {
        self.platforms()
            .iter()
            .filter(|p| EXECUTORS.contains(&p.as_str()))
            .collect()
    }
}

/// summary.json: the keys of `head`, `summary` (`platforms`, `cells`, and the experiments' keys
/// there), and the experiments' top-level keys.
pub fn json(report: &Report<'_>, mut head: Map<String, Value>) -> anyhow::Result<Value> {
    let mut parts = JsonParts::default();
    for experiment in REGISTRY {
        experiment.record(report, &mut parts)?;
    }
    let mut summary = Map::new();
    summary.insert("platforms".into(), json!(report.platforms()));
    summary.insert("cells".into(), serde_json::to_value(&report.cells)?);
    summary.extend(parts.summary);
    head.insert("summary".into(), Value::Object(summary));
    head.extend(parts.top);
    Ok(Value::Object(head))
}

/// summary.md's tables: every experiment's section that has something to show, in order.
pub fn markdown(report: &Report<'_>) -> String {
    REGISTRY.iter().map(|e| e.markdown(report)).collect()
}

/// Writes `out/summary.json` (`head` first) and `out/summary.md` (the provenance line, then
/// the sections); the Markdown.
pub fn write(
    out: &Path,
    report: &Report<'_>,
    head: Map<String, Value>,
    provenance: &Provenance,
) -> anyhow::Result<String> {
    let json = json(report, head)?;
    std::fs::write(
        out.join("summary.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    let markdown = format!(
        "{}\n\n{}",
        provenance.markdown(),
        markdown(report).trim_start()
    );
    std::fs::write(out.join("summary.md"), &markdown)?;
    Ok(markdown)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use clap::Parser;

    use super::*;
    use crate::evaluation::Sizes;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: EvaluateArgs,
    }

    #[test]
    fn every_experiment_has_its_keys_whether_it_ran_or_not() {
        let args = Cli::parse_from(["evaluate", "--quick", "--experiments", "cold"]).args;
        let ctx = Context {
            sizes: Sizes::of(&args, 2),
            epoch: Instant::now(),
            delay_port: 0,
        };
        let results = Results::default();
        let report = Report::new(&args, &ctx, &results);
        let json = json(&report, Map::new()).unwrap();
        let keys = |value: &Value| -> Vec<String> {
            let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            keys
        };
        assert_eq!(
            keys(&json),
            [
                "capacity",
                "capacity_sizing",
                "cost",
                "cpu_cpu",
                "footprint",
                "hash",
                "init",
                "io_cpu",
                "memory",
                "summary"
            ]
        );
        assert_eq!(
            keys(&json["summary"]),
            ["capacity_p99_ms", "cells", "mixed_plateau", "platforms"]
        );
        assert_eq!(
            keys(&json["summary"]["cells"]),
            [
                "access",
                "cold",
                "cold-rate",
                "cpu",
                "io",
                "realistic",
                "threading"
            ]
        );
        assert_eq!(json["hash"], Value::Null);
        assert_eq!(markdown(&report), "");
    }
}
