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

/// The compilation target for `triple`: the architecture's baseline CPU features, so an
/// artifact runs on every CPU of that architecture, or this machine's own with `native_cpu`.
pub fn target(triple: &str, native_cpu: bool) -> anyhow::Result<Target> {
    let parsed = Triple::from_str(triple)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("parsing target triple {triple:?}"))?;
    if native_cpu {
        if parsed != Triple::host() {
            bail!("the native CPU's features only apply when compiling for this machine");
        }
        return Ok(Target::new(parsed, CpuFeature::for_host()));
    }
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
        let x86 = target("x86_64-unknown-linux-gnu", false).unwrap();
        assert_eq!(x86.cpu_features().len(), 1);
        let arm = target("aarch64-unknown-linux-gnu", false).unwrap();
        assert!(arm.cpu_features().contains(CpuFeature::NEON));
        assert!(target("riscv64gc-unknown-linux-gnu", false).is_err());
        assert!(target("not a triple", false).is_err());
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
