//! The wasmer engine settings that compiled code depends on, in one place for both sides:
//! `wasm-precompile-wasmer` compiles with them and the executor's wasmer backend compiles and
//! loads with them. Wasmer does not record every setting in its artifacts, so two copies that
//! drift apart would produce artifacts the executor loads but runs under other assumptions.
//!
//! The time limit needs nothing here: the executor interrupts a guest with a signal (wasmer's
//! host interrupt), so no instrumentation is compiled in and artifacts carry no metering state.

use std::str::FromStr;

use anyhow::{Context, bail};
use wasmer_types::{
    Features,
    target::{Architecture, CpuFeature, Target, Triple},
};

/// The WebAssembly proposals accepted, at compile time and therefore at load time.
///
/// Threads and exceptions are off: guests are WASI preview 1 commands, which use neither, and
/// both make wasmer run runtime code on the guest's stack (`memory.atomic.wait`, exception
/// allocation), where an interrupt at the deadline could abandon a lock held by that code.
/// Multi-memory is off: a container's memory limit is the limit of its one linear memory, as
/// on the other backends (N memories would get N times the limit).
pub fn features() -> Features {
    let mut features = Features::new();
    features.threads(false);
    features.exceptions(false);
    features.multi_memory(false);
    features
}

/// Features wasmer's compiler has no name for: its code never uses them, so an artifact
/// compiled for a CPU level that includes them does not need them either.
pub const UNNAMED_FEATURES: &[&str] = &[
    "cx16", "sahf", "f16c", "movbe", "avx512bw", "avx512cd", "lse", "rcpc", "dotprod", "fullfp16",
    "crc",
];

/// The compilation target for `triple`: the architecture's baseline CPU features, so an
/// artifact runs on every CPU of that architecture, plus `extra` (LLVM's names, such as a CPU
/// level's) where wasmer has a name for them. Wasmer records them in the artifact and refuses
/// it on a machine without them. This machine's own features are [`host_target`].
pub fn target(triple: &str, extra: &[&str]) -> anyhow::Result<Target> {
    let parsed = Triple::from_str(triple)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("parsing target triple {triple:?}"))?;
    let mut cpu = CpuFeature::set();
    match parsed.architecture {
        // x86-64 v1 includes SSE2; everything newer is optional on some CPU still in service.
        Architecture::X86_64 => {
            cpu.insert(CpuFeature::SSE2);
        }
        // NEON (AdvSIMD) is mandatory in ARMv8-A.
        Architecture::Aarch64(_) => {
            cpu.insert(CpuFeature::NEON);
        }
        other => bail!("no baseline CPU features are defined for {other}"),
    }
    for feature in extra {
        match CpuFeature::from_str(feature) {
            Ok(known) => {
                cpu.insert(known);
            }
            Err(_) if UNNAMED_FEATURES.contains(feature) => {}
            Err(_) => bail!("unknown CPU feature {feature:?}"),
        }
    }
    Ok(Target::new(parsed, cpu))
}

/// The target of code compiled at /init for this very machine (kept in its local cache).
pub fn host_target() -> Target {
    Target::new(Triple::host(), CpuFeature::for_host())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_targets_are_portable() {
        let x86 = target("x86_64-unknown-linux-gnu", &[]).unwrap();
        assert_eq!(x86.cpu_features().len(), 1);
        let arm = target("aarch64-unknown-linux-gnu", &[]).unwrap();
        assert!(arm.cpu_features().contains(CpuFeature::NEON));
        assert!(target("riscv64gc-unknown-linux-gnu", &[]).is_err());
        assert!(target("not a triple", &[]).is_err());
    }

    #[test]
    fn extra_features_are_added_where_wasmer_names_them() {
        let v3 = target("x86_64-unknown-linux-gnu", &["avx2", "bmi", "movbe"]).unwrap();
        let expected = CpuFeature::SSE2 | CpuFeature::AVX2 | CpuFeature::BMI1;
        assert_eq!(*v3.cpu_features(), expected);
        assert!(target("x86_64-unknown-linux-gnu", &["avx9000"]).is_err());
    }

    #[test]
    fn features_refuse_threads_exceptions_and_multi_memory() {
        let f = features();
        assert!(!f.threads && !f.exceptions && !f.multi_memory);
        assert!(
            f.bulk_memory && f.simd,
            "what Rust and C toolchains emit stays on"
        );
    }
}
