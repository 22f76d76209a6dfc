//! The CPU features WAMR AOT code may use, named alike by the precompiler (which hands them to
//! LLVM) and the executor (which checks its host for them at /init): WAMR's own loader checks
//! an AOT file's architecture but not the instruction set extensions its code needs, so code
//! for a CPU the host is not would stop the whole executor with SIGILL at its first such
//! instruction.
//!
//! Code is compiled for the architecture's portable CPU plus optional features from a fixed
//! list: the build machine's (`--native-cpu`) or a CPU level's (`--cpu x86-64-v3`). LLVM is
//! never told the host's CPU model: a model name implies features a virtual machine may not
//! expose, and a list we did not write could not be checked.

use std::fmt;

/// The CPU an architecture's code is compiled for and the features that can be added to it, as
/// LLVM names them.
#[derive(Debug, PartialEq, Eq)]
pub struct CpuModel {
    /// The LLVM CPU of portable code.
    pub cpu: &'static str,
    /// Features that CPU implies, which code compiled for it may use.
    pub baseline: &'static [&'static str],
    /// Features `--native-cpu` adds when the build machine has them, and `--cpu` levels add.
    pub optional: &'static [&'static str],
}

/// x86-64-v2 (SSE4.2 and POPCNT, every x86_64 CPU since 2009) rather than the bare x86-64
/// baseline: WAMR lowers Wasm SIMD with SSE4.1 and refuses to compile SIMD for a CPU without it.
/// The optional features are those of x86-64-v3 and v4 that code generation uses.
pub const X86_64: CpuModel = CpuModel {
    cpu: "x86-64-v2",
    baseline: &[
        "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf",
    ],
    optional: &[
        "avx", "avx2", "bmi", "bmi2", "fma", "f16c", "lzcnt", "movbe", "avx512f", "avx512bw",
        "avx512cd", "avx512dq", "avx512vl",
    ],
};

/// The Armv8-A baseline, which includes the NEON that WAMR's SIMD lowering needs.
pub const AARCH64: CpuModel = CpuModel {
    cpu: "generic",
    baseline: &["neon"],
    optional: &["lse", "rcpc", "dotprod", "fullfp16", "crc"],
};

/// Cortex-A7 is the ARMv7-A CPU whose feature set (VFPv4, NEON, integer division, no more)
/// every 32-bit Pi OS board from the Pi 2 on has; LLVM's "generic" ARM CPU would mean ARMv4
/// code. Nothing is added to it: 32-bit code gets no SIMD in this profile.
pub const ARMV7: CpuModel = CpuModel {
    cpu: "cortex-a7",
    baseline: &["neon", "vfp4", "hwdiv-arm"],
    optional: &[],
};

/// What one artifact's code was compiled for: its architecture's CPU and the optional features
/// added to it. Written into the payload's tag as `cpu x86-64-v2 +avx +avx2 …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeCpu {
    pub model: &'static CpuModel,
    pub added: Vec<&'static str>,
}

/// Why the CPU part of a tag is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum CpuRefusal {
    /// Not a CPU part written for this architecture's model.
    Unknown,
    /// Features the code needs and this machine lacks.
    Missing(Vec<&'static str>),
}

impl CodeCpu {
    /// Code any CPU of the architecture runs.
    pub fn portable(model: &'static CpuModel) -> Self {
        CodeCpu {
            model,
            added: Vec::new(),
        }
    }

    /// Code using the optional features `has` accepts: those of this machine
    /// (`cpu::host_has`, for `--native-cpu`) or of a CPU level.
    pub fn with_optional(model: &'static CpuModel, has: impl Fn(&str) -> bool) -> Self {
        CodeCpu {
            model,
            added: model.optional.iter().copied().filter(|f| has(f)).collect(),
        }
    }

    /// LLVM's feature string for the added features (`+avx,+avx2`), if any.
    pub fn llvm_features(&self) -> Option<String> {
        (!self.added.is_empty()).then(|| {
            self.added
                .iter()
                .map(|f| format!("+{f}"))
                .collect::<Vec<_>>()
                .join(",")
        })
    }

    /// Reads the CPU part of a tag written for `model`, and checks that `has` every feature it
    /// needs, the baseline's included.
    pub fn check(
        model: &'static CpuModel,
        text: &str,
        has: impl Fn(&str) -> bool,
    ) -> Result<Self, CpuRefusal> {
        let mut words = text.split(' ');
        if words.next() != Some("cpu") || words.next() != Some(model.cpu) {
            return Err(CpuRefusal::Unknown);
        }
        let mut added: Vec<&'static str> = Vec::new();
        for word in words {
            let feature = word
                .strip_prefix('+')
                .and_then(|name| model.optional.iter().find(|f| **f == name))
                .ok_or(CpuRefusal::Unknown)?;
            if added.contains(feature) {
                return Err(CpuRefusal::Unknown);
            }
            added.push(feature);
        }
        let missing: Vec<&'static str> = model
            .baseline
            .iter()
            .chain(&added)
            .copied()
            .filter(|f| !has(f))
            .collect();
        if missing.is_empty() {
            Ok(CodeCpu { model, added })
        } else {
            Err(CpuRefusal::Missing(missing))
        }
    }
}

impl fmt::Display for CodeCpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cpu {}", self.model.cpu)?;
        for feature in &self.added {
            write!(f, " +{feature}")?;
        }
        Ok(())
    }
}

/// Whether this machine (its CPU and its kernel, which must save the wider registers) runs
/// instructions of the LLVM feature `feature`; false for a feature of another architecture.
pub fn host_has(feature: &str) -> bool {
    host::has(feature)
}

#[cfg(target_arch = "x86_64")]
mod host {
    pub fn has(feature: &str) -> bool {
        match feature {
            "sse3" => is_x86_feature_detected!("sse3"),
            "ssse3" => is_x86_feature_detected!("ssse3"),
            "sse4.1" => is_x86_feature_detected!("sse4.1"),
            "sse4.2" => is_x86_feature_detected!("sse4.2"),
            "popcnt" => is_x86_feature_detected!("popcnt"),
            "cx16" => is_x86_feature_detected!("cmpxchg16b"),
            // LAHF and SAHF in 64-bit mode: CPUID leaf 0x8000_0001, ECX bit 0.
            "sahf" => std::arch::x86_64::__cpuid(0x8000_0001).ecx & 1 == 1,
            "avx" => is_x86_feature_detected!("avx"),
            "avx2" => is_x86_feature_detected!("avx2"),
            "bmi" => is_x86_feature_detected!("bmi1"),
            "bmi2" => is_x86_feature_detected!("bmi2"),
            "fma" => is_x86_feature_detected!("fma"),
            "f16c" => is_x86_feature_detected!("f16c"),
            "lzcnt" => is_x86_feature_detected!("lzcnt"),
            "movbe" => is_x86_feature_detected!("movbe"),
            "avx512f" => is_x86_feature_detected!("avx512f"),
            "avx512bw" => is_x86_feature_detected!("avx512bw"),
            "avx512cd" => is_x86_feature_detected!("avx512cd"),
            "avx512dq" => is_x86_feature_detected!("avx512dq"),
            "avx512vl" => is_x86_feature_detected!("avx512vl"),
            _ => false,
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod host {
    pub fn has(feature: &str) -> bool {
        use std::arch::is_aarch64_feature_detected as detected;
        match feature {
            "neon" => detected!("neon"),
            "lse" => detected!("lse"),
            "rcpc" => detected!("rcpc"),
            "dotprod" => detected!("dotprod"),
            "fullfp16" => detected!("fp16"),
            "crc" => detected!("crc"),
            _ => false,
        }
    }
}

#[cfg(target_arch = "arm")]
mod host {
    // The kernel's hardware capability bits (Linux, arch/arm/include/uapi/asm/hwcap.h).
    const HWCAP_NEON: libc::c_ulong = 1 << 12;
    const HWCAP_VFPV4: libc::c_ulong = 1 << 16;
    const HWCAP_IDIVA: libc::c_ulong = 1 << 17;

    pub fn has(feature: &str) -> bool {
        // SAFETY: getauxval only reads the process's auxiliary vector.
        let hwcap = unsafe { libc::getauxval(libc::AT_HWCAP) };
        let bit = match feature {
            "neon" => HWCAP_NEON,
            "vfp4" => HWCAP_VFPV4,
            "hwdiv-arm" => HWCAP_IDIVA,
            _ => return false,
        };
        hwcap & bit != 0
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "arm")))]
mod host {
    pub fn has(_feature: &str) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_code_names_what_it_adds_and_round_trips() {
        let code = CodeCpu::with_optional(&X86_64, |f| ["avx", "avx2", "bmi"].contains(&f));
        assert_eq!(code.to_string(), "cpu x86-64-v2 +avx +avx2 +bmi");
        assert_eq!(code.llvm_features().as_deref(), Some("+avx,+avx2,+bmi"));
        assert_eq!(
            CodeCpu::check(&X86_64, &code.to_string(), |_| true),
            Ok(code)
        );
        let portable = CodeCpu::portable(&AARCH64);
        assert_eq!(portable.to_string(), "cpu generic");
        assert_eq!(portable.llvm_features(), None);
    }

    #[test]
    fn code_for_features_the_host_lacks_is_refused_by_name() {
        let lacks_avx512 = |f: &str| !f.starts_with("avx512");
        assert_eq!(
            CodeCpu::check(
                &X86_64,
                "cpu x86-64-v2 +avx2 +avx512f +avx512vl",
                lacks_avx512
            ),
            Err(CpuRefusal::Missing(vec!["avx512f", "avx512vl"]))
        );
        // The baseline is checked too: a CPU from before SSE4.2 runs no x86-64-v2 code.
        assert_eq!(
            CodeCpu::check(&X86_64, "cpu x86-64-v2", |f| f != "sse4.2"),
            Err(CpuRefusal::Missing(vec!["sse4.2"]))
        );
        assert_eq!(
            CodeCpu::check(&ARMV7, "cpu cortex-a7", |f| f != "hwdiv-arm"),
            Err(CpuRefusal::Missing(vec!["hwdiv-arm"]))
        );
    }

    #[test]
    fn cpu_parts_not_written_for_the_model_are_unknown() {
        for text in [
            "",
            "cpu",
            "cpu generic",
            "cpu x86-64-v3",
            "cpu x86-64-v2 avx",
            "cpu x86-64-v2 +sha",
            "cpu x86-64-v2 +avx +avx",
            "cpu x86-64-v2  +avx",
            "gpu x86-64-v2",
        ] {
            assert!(
                CodeCpu::check(&X86_64, text, |_| true) == Err(CpuRefusal::Unknown),
                "{text:?}"
            );
        }
    }

    #[test]
    fn this_machine_has_its_architectures_baseline() {
        let model = match std::env::consts::ARCH {
            "x86_64" => &X86_64,
            "aarch64" => &AARCH64,
            _ => &ARMV7,
        };
        for feature in model.baseline {
            assert!(host_has(feature), "{feature}");
        }
        assert!(!host_has("no-such-feature"));
    }
}
