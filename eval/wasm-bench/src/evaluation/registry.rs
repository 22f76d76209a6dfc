//! The one list of the evaluation's experiments, in order: the order they run in (within their
//! stage) and the order of summary.md's sections. `--experiments`, its default and its check,
//! the progress line, the run loop and the summary all derive from it.

use std::sync::LazyLock;

use anyhow::bail;
use clap::builder::{PossibleValue, PossibleValuesParser};

use super::{
    access::Access,
    capacity::Capacity,
    cold::Cold,
    cold_rate::ColdRate,
    cost::Cost,
    experiment::{AppliesTo, Experiment},
    footprint::Footprint,
    hash::Hash,
    init::Init,
    memory::Memory,
    mixed::Mixed,
    realistic::Realistic,
    threading::Threading,
    throughput::{Cpu, Io},
};

pub static REGISTRY: &[&dyn Experiment] = &[
    &Cold, &ColdRate, &Io, &Cpu, &Mixed, &Realistic, &Capacity, &Access, &Memory, &Threading,
    &Cost, &Init, &Hash, &Footprint,
];

/// The experiment called `name`.
pub fn find(name: &str) -> Option<&'static dyn Experiment> {
    REGISTRY.iter().copied().find(|e| e.name() == name)
}

/// `--experiments`'s default: the experiments run by default, in order, comma-separated.
pub fn default_list() -> &'static str {
    static DEFAULT: LazyLock<String> = LazyLock::new(|| {
        let names: Vec<&str> = REGISTRY
            .iter()
            .filter(|e| e.by_default())
            .map(|e| e.name())
            .collect();
        names.join(",")
    });
    &DEFAULT
}

/// `--experiments`'s values: every name, with its description and its platforms for `--help`.
pub fn parser() -> PossibleValuesParser {
    PossibleValuesParser::new(REGISTRY.iter().map(|e| {
        let platforms = match e.applies_to() {
            AppliesTo::All => "",
            AppliesTo::NotNative => " (not on native)",
            AppliesTo::Executors => " (executor builds only)",
        };
        let default = if e.by_default() {
            ""
        } else {
            "; not by default"
        };
        PossibleValue::new(e.name()).help(format!("{}{platforms}{default}", e.description()))
    }))
}

/// The experiments `names` asks for, in the registry's order; an unknown name is an error
/// listing the registry.
pub fn select(names: &[String]) -> anyhow::Result<Vec<&'static dyn Experiment>> {
    if let Some(unknown) = names.iter().find(|n| find(n).is_none()) {
        let known: Vec<&str> = REGISTRY.iter().map(|e| e.name()).collect();
        bail!(
            "unknown experiment {unknown:?}; the experiments are {}",
            known.join(", ")
        );
    }
    Ok(REGISTRY
        .iter()
        .copied()
        .filter(|e| names.iter().any(|n| n == e.name()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_evaluation_of_old_and_names_are_unique() {
        assert_eq!(
            default_list(),
            "cold,cold-rate,io,cpu,mixed,realistic,capacity,access,memory,threading,cost,init"
        );
        let mut names: Vec<&str> = REGISTRY.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
    }

    #[test]
    fn a_selection_runs_in_the_registry_order_and_unknown_names_are_refused() {
        let names = ["init", "cold", "hash"].map(String::from);
        let selected: Vec<&str> = select(&names).unwrap().iter().map(|e| e.name()).collect();
        assert_eq!(selected, ["cold", "init", "hash"]);
        let Err(error) = select(&["cold".into(), "colt".into()]) else {
            panic!("colt is no experiment");
        };
        let error = error.to_string();
        assert!(error.contains("unknown experiment \"colt\""), "{error}");
        assert!(error.contains("cold, cold-rate, io, cpu"), "{error}");
        assert!(error.contains("init, hash, footprint"), "{error}");
    }
}
