//! What WAMR's compiler is told to target: an LLVM architecture, ABI, CPU and features for a
//! target triple. Always the portable CPU of that architecture (`wamr_profile::cpu`; WAMR's own
//! default is the build machine's CPU model), with the build machine's optional features
//! (`--native-cpu`) or a CPU level's (`--cpu`) on top, each named in the payload's tag for the
//! executor to check.

use anyhow::bail;
use wamr_profile::{CodeCpu, CpuModel, TargetProfile, cpu};
use wasm_precompile::{CpuLevel, TargetCpu};

/// Compiler target settings and the profile and CPU of the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AotTarget {
    pub arch: &'static str,
    pub abi: &'static str,
    pub profile: TargetProfile,
    pub code: CodeCpu,
}

/// The settings for `triple` (already checked against the supported targets by the driver).
pub fn for_triple(triple: &str, cpu: TargetCpu) -> anyhow::Result<AotTarget> {
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
    let code = match cpu {
        TargetCpu::Portable => CodeCpu::portable(profile.cpu),
        // The driver allows this only when the target is this machine.
        TargetCpu::ThisMachine => CodeCpu::with_optional(profile.cpu, cpu::host_has),
        TargetCpu::Level(level) => for_level(profile.cpu, level)?,
    };
    Ok(AotTarget {
        arch,
        abi,
        profile,
        code,
    })
}

/// The portable CPU with the optional features of `level`: every feature of a level is one the
/// portable CPU implies or one the executor checks, so none goes unchecked.
fn for_level(model: &'static CpuModel, level: &CpuLevel) -> anyhow::Result<CodeCpu> {
    if let Some(unchecked) = level
        .features
        .iter()
        .find(|f| !model.baseline.contains(f) && !model.optional.contains(f))
    {
        bail!(
            "CPU level {} includes {unchecked}, which WAMR artifacts for {} cannot name",
            level.name,
            model.cpu
        );
    }
    Ok(CodeCpu::with_optional(model, |f| {
        level.features.contains(&f)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_unless_native() {
        let portable = TargetCpu::Portable;
        let x86 = for_triple("x86_64-unknown-linux-gnu", portable).unwrap();
        assert_eq!(x86.code.to_string(), "cpu x86-64-v2");
        assert_eq!(
            for_triple("aarch64-unknown-linux-gnu", portable)
                .unwrap()
                .arch,
            "aarch64v8"
        );
        let host = wasm_artifact::host_target();
        let native = for_triple(&host, TargetCpu::ThisMachine).unwrap();
        let host_portable = for_triple(&host, portable).unwrap();
        assert_eq!(native.code.model, host_portable.code.model);
        assert!(host_portable.code.added.is_empty());
        assert!(native.code.added.iter().all(|f| cpu::host_has(f)));
        let arm = for_triple("armv7-unknown-linux-gnueabihf", portable).unwrap();
        assert_eq!((arm.arch, arm.abi), ("armv7", "gnueabihf"));
        assert_eq!(arm.code.to_string(), "cpu cortex-a7");
        assert!(!arm.profile.hardware_bounds_checks && !arm.profile.simd);
        assert!(x86.profile.hardware_bounds_checks && x86.profile.simd);
        assert!(for_triple("armv7-unknown-linux-gnueabi", portable).is_err());
        assert!(for_triple("riscv64gc-unknown-linux-gnu", portable).is_err());
        assert!(for_triple("x86_64-apple-darwin", portable).is_err());
    }

    #[test]
    fn every_level_names_its_checked_features() {
        for level in wasm_precompile::cpu::LEVELS {
            let triple = format!("{}-unknown-linux-gnu", level.arch);
            let code = for_triple(&triple, TargetCpu::Level(level)).unwrap().code;
            let needed = |f: &&str| !code.model.baseline.contains(f);
            let mut expected: Vec<&str> = level.features.iter().copied().filter(needed).collect();
            let mut added = code.added.clone();
            expected.sort();
            added.sort();
            assert_eq!(added, expected, "{}", level.name);
        }
        let v2 = CpuLevel::for_target("x86-64-v2", "x86_64-unknown-linux-gnu").unwrap();
        let v2 = for_triple("x86_64-unknown-linux-gnu", TargetCpu::Level(v2)).unwrap();
        assert_eq!(v2.code.to_string(), "cpu x86-64-v2");
        let v4 = CpuLevel::for_target("x86-64-v4", "x86_64-unknown-linux-gnu").unwrap();
        let v4 = for_triple("x86_64-unknown-linux-gnu", TargetCpu::Level(v4)).unwrap();
        assert!(
            v4.code.to_string().ends_with("+avx512dq +avx512vl"),
            "{}",
            v4.code
        );
    }
}
