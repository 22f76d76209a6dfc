//! What WAMR's compiler is told to target: an LLVM architecture, ABI and CPU for a target
//! triple. By default a portable CPU of that architecture (WAMR's own default is the build
//! machine's exact CPU); `--native-cpu` keeps that default.

use anyhow::bail;

/// x86-64-v2 (SSE4.2 and POPCNT, every x86_64 CPU since 2009) rather than the bare x86-64
/// baseline: WAMR lowers Wasm SIMD with SSE4.1 and refuses to compile SIMD for a CPU without it.
const X86_64_PORTABLE_CPU: &str = "x86-64-v2";
/// The Armv8-A baseline, which includes the NEON that WAMR's SIMD lowering needs.
const AARCH64_PORTABLE_CPU: &str = "generic";

/// Compiler target settings; `None` lets WAMR use the host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AotTarget {
    pub arch: Option<&'static str>,
    pub abi: Option<&'static str>,
    pub cpu: Option<&'static str>,
}

/// The settings for `triple` (already checked against the supported targets by the driver).
pub fn for_triple(triple: &str, native_cpu: bool) -> anyhow::Result<AotTarget> {
    if native_cpu {
        // The driver allows --native-cpu only for this machine: WAMR then takes the host's
        // triple and CPU name, and LLVM every feature of that CPU.
        return Ok(AotTarget {
            arch: None,
            abi: None,
            cpu: None,
        });
    }
    if !triple.contains("-linux") {
        bail!("WAMR artifacts are built for Linux targets only, not {triple}");
    }
    match triple.split('-').next() {
        Some("x86_64") => Ok(AotTarget {
            arch: Some("x86_64"),
            abi: Some("gnu"),
            cpu: Some(X86_64_PORTABLE_CPU),
        }),
        // WAMR's name for the Armv8-A architecture; its loader matches it on aarch64 hosts.
        Some("aarch64") => Ok(AotTarget {
            arch: Some("aarch64v8"),
            abi: Some("gnu"),
            cpu: Some(AARCH64_PORTABLE_CPU),
        }),
        _ => bail!("WAMR artifacts are built for x86_64 and aarch64, not {triple}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_unless_native() {
        let x86 = for_triple("x86_64-unknown-linux-gnu", false).unwrap();
        assert_eq!(x86.cpu, Some(X86_64_PORTABLE_CPU));
        assert_eq!(
            for_triple("aarch64-unknown-linux-gnu", false).unwrap().arch,
            Some("aarch64v8")
        );
        assert_eq!(
            for_triple("x86_64-unknown-linux-gnu", true).unwrap().cpu,
            None
        );
        assert!(for_triple("riscv64gc-unknown-linux-gnu", false).is_err());
        assert!(for_triple("x86_64-apple-darwin", false).is_err());
    }
}
