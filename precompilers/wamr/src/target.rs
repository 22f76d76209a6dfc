//! What WAMR's compiler is told to target: an LLVM architecture, ABI, CPU and features for a
//! target triple. Always the portable CPU of that architecture (`wamr_profile::cpu`; WAMR's own
//! default is the build machine's CPU model), and with `--native-cpu` the build machine's
//! optional features on top, each named in the payload's tag for the executor to check.

use anyhow::bail;
use wamr_profile::{CodeCpu, TargetProfile, cpu};

/// Compiler target settings and the profile and CPU of the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AotTarget {
    pub arch: &'static str,
    pub abi: &'static str,
    pub profile: TargetProfile,
    pub code: CodeCpu,
}

/// The settings for `triple` (already checked against the supported targets by the driver).
pub fn for_triple(triple: &str, native_cpu: bool) -> anyhow::Result<AotTarget> {
    if !triple.contains("-linux") {
        bail!("WAMR artifacts are built for Linux targets only, not {triple}");
    }
    let arch = triple.split('-').next().unwrap_or_default();
    let profile = TargetProfile::for_arch(arch)?;
    let (arch, abi) = match arch {
        "x86_64" => ("x86_64", "gnu"),
        // WAMR's name for the Armv8-A architecture; its loader matches it on aarch64 hosts.
        "aarch64" => ("aarch64v8", "gnu"),
        // ARMv7-A with the hard-float ABI, the baseline of 32-bit Raspberry Pi OS (Pi 2 and
        // later) and of Rust's armv7-unknown-linux-gnueabihf.
        "armv7" if triple.ends_with("gnueabihf") => ("armv7", "gnueabihf"),
        _ => bail!(
            "WAMR artifacts are built for x86_64, aarch64 and armv7 (gnueabihf), not {triple}"
        ),
    };
    // The driver allows --native-cpu only when the target is this machine.
    let code = if native_cpu {
        CodeCpu::this_machine(profile.cpu, cpu::host_has)
    } else {
        CodeCpu::portable(profile.cpu)
    };
    Ok(AotTarget {
        arch,
        abi,
        profile,
        code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_unless_native() {
        let x86 = for_triple("x86_64-unknown-linux-gnu", false).unwrap();
        assert_eq!(x86.code.to_string(), "cpu x86-64-v2");
        assert_eq!(
            for_triple("aarch64-unknown-linux-gnu", false).unwrap().arch,
            "aarch64v8"
        );
        let host = wasm_artifact::host_target();
        let native = for_triple(&host, true).unwrap();
        let portable = for_triple(&host, false).unwrap();
        assert_eq!(native.code.model, portable.code.model);
        assert!(portable.code.added.is_empty());
        assert!(native.code.added.iter().all(|f| cpu::host_has(f)));
        let arm = for_triple("armv7-unknown-linux-gnueabihf", false).unwrap();
        assert_eq!((arm.arch, arm.abi), ("armv7", "gnueabihf"));
        assert_eq!(arm.code.to_string(), "cpu cortex-a7");
        assert!(!arm.profile.hardware_bounds_checks && !arm.profile.simd);
        assert!(x86.profile.hardware_bounds_checks && x86.profile.simd);
        assert!(for_triple("armv7-unknown-linux-gnueabi", false).is_err());
        assert!(for_triple("riscv64gc-unknown-linux-gnu", false).is_err());
        assert!(for_triple("x86_64-apple-darwin", false).is_err());
    }
}
