//! What WAMR's compiler is told to target: an LLVM architecture, ABI and CPU for a target
//! triple. By default a portable CPU of that architecture (WAMR's own default is the build
//! machine's exact CPU); `--native-cpu` keeps that default.

use anyhow::bail;
use wamr_profile::TargetProfile;

/// x86-64-v2 (SSE4.2 and POPCNT, every x86_64 CPU since 2009) rather than the bare x86-64
/// baseline: WAMR lowers Wasm SIMD with SSE4.1 and refuses to compile SIMD for a CPU without it.
const X86_64_PORTABLE_CPU: &str = "x86-64-v2";
/// The Armv8-A baseline, which includes the NEON that WAMR's SIMD lowering needs.
const AARCH64_PORTABLE_CPU: &str = "generic";
/// Cortex-A7 is the ARMv7-A CPU whose feature set (VFPv4, NEON, no more) every 32-bit Pi OS
/// board from the Pi 2 on has; LLVM's "generic" ARM CPU would mean ARMv4 code.
const ARMV7_PORTABLE_CPU: &str = "cortex-a7";

/// Compiler target settings (`None` lets WAMR use the host's) and the profile for the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AotTarget {
    pub arch: Option<&'static str>,
    pub abi: Option<&'static str>,
    pub cpu: Option<&'static str>,
    pub profile: TargetProfile,
}

/// The settings for `triple` (already checked against the supported targets by the driver).
pub fn for_triple(triple: &str, native_cpu: bool) -> anyhow::Result<AotTarget> {
    if !triple.contains("-linux") {
        bail!("WAMR artifacts are built for Linux targets only, not {triple}");
    }
    let arch = triple.split('-').next().unwrap_or_default();
    let profile = TargetProfile::for_arch(arch)?;
    if native_cpu {
        // The driver allows --native-cpu only for this machine: WAMR then takes the host's
        // triple and CPU name, and LLVM every feature of that CPU.
        return Ok(AotTarget {
            arch: None,
            abi: None,
            cpu: None,
            profile,
        });
    }
    let (arch, abi, cpu) = match arch {
        "x86_64" => ("x86_64", "gnu", X86_64_PORTABLE_CPU),
        // WAMR's name for the Armv8-A architecture; its loader matches it on aarch64 hosts.
        "aarch64" => ("aarch64v8", "gnu", AARCH64_PORTABLE_CPU),
        // ARMv7-A with VFPv3-D16 and the hard-float ABI, the baseline of 32-bit Raspberry Pi OS
        // (Pi 2 and later) and of Rust's armv7-unknown-linux-gnueabihf.
        "armv7" if triple.ends_with("gnueabihf") => ("armv7", "gnueabihf", ARMV7_PORTABLE_CPU),
        _ => bail!(
            "WAMR artifacts are built for x86_64, aarch64 and armv7 (gnueabihf), not {triple}"
        ),
    };
    Ok(AotTarget {
        arch: Some(arch),
        abi: Some(abi),
        cpu: Some(cpu),
        profile,
    })
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
        let arm = for_triple("armv7-unknown-linux-gnueabihf", false).unwrap();
        assert_eq!((arm.arch, arm.abi), (Some("armv7"), Some("gnueabihf")));
        assert!(!arm.profile.hardware_bounds_checks && !arm.profile.simd);
        assert!(x86.profile.hardware_bounds_checks && x86.profile.simd);
        assert!(for_triple("armv7-unknown-linux-gnueabi", false).is_err());
        assert!(for_triple("riscv64gc-unknown-linux-gnu", false).is_err());
        assert!(for_triple("x86_64-apple-darwin", false).is_err());
    }
}
