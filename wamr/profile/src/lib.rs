//! The WAMR build profile in one place for both sides: the executor's WAMR runtime library and
//! `wasm-precompile-wamr`'s AOT compiler library are built from it (by `wamr-source`), and every
//! AOT payload the precompiler writes carries its tag.
//!
//! WAMR's AOT loader checks an `.aot` file's architecture, ABI and a few feature flags, but not
//! how the compiled code guards linear memory, whether it can be terminated or which CPU
//! features it uses: code compiled without bounds checks is only safe in a runtime that reserves
//! guard pages, code with AVX2 instructions only on a CPU that has them. So the payload starts
//! with a tag naming the WAMR version, this profile and the code's CPU, and the executor refuses
//! a payload whose profile differs from its own, or whose CPU its host is not, before WAMR sees a
//! byte of it.

use thiserror::Error;

pub mod cpu;
mod sections;

pub use cpu::{CodeCpu, CpuModel};

pub use sections::{MAX_TABLE_ELEMENTS, check_tables, declares_start_function, largest_table};

/// Bulk memory operations (`memory.copy`, `memory.fill`, passive segments).
pub const BULK_MEMORY: bool = true;
/// Reference types (`funcref`/`externref` values, several tables).
pub const REFERENCE_TYPES: bool = true;
/// `call_indirect` with its table index encoded in more than one byte, as LLVM writes it
/// whenever reference types are on (rustc's and clang's default for wasm32 since LLVM 19).
/// Part of reference types; WAMR reads such an index only when told to.
pub const CALL_INDIRECT_OVERLONG: bool = REFERENCE_TYPES;
/// `return_call` and friends.
pub const TAIL_CALL: bool = true;

/// What the profile sets per target architecture: how linear memory is guarded and whether
/// guests get SIMD. Compiled code and the runtime must agree on both, so both are in the tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetProfile {
    /// Linear memory is guarded by the hardware: the runtime reserves 8 GiB of address space
    /// per memory (the 4 GiB a 32-bit index can reach plus a 4 GiB guard), so an out-of-bounds
    /// access faults and WAMR's signal handler turns the fault into a trap; compiled code
    /// therefore carries no bounds checks. WAMR does this on 64-bit Linux (x86_64, aarch64). A
    /// 32-bit process has no such address space to spare: there, compiled code checks every
    /// access (a compare and branch each) and the runtime allocates memories as they are.
    pub hardware_bounds_checks: bool,
    /// 128-bit SIMD: the fast interpreter runs it through Debian's SIMDe headers, AOT code as
    /// SSE4 or NEON. WAMR's compiler lowers SIMD for x86_64 and aarch64 only, so on 32-bit ARM
    /// both sides leave it out and a module that uses it is refused at /init.
    pub simd: bool,
    /// The CPU code is compiled for and the features that may be added to it.
    pub cpu: &'static CpuModel,
}

/// The profile's targets: 64-bit x86 and ARM, and 32-bit ARMv7 with hardware floating point
/// (32-bit Raspberry Pi OS).
pub const SUPPORTED_ARCHS: &str = "x86_64, aarch64, arm (armv7, hard float)";

impl TargetProfile {
    /// The profile for a Rust target architecture (`CARGO_CFG_TARGET_ARCH`, the first part of
    /// a target triple with `armv7` read as `arm`).
    pub fn for_arch(arch: &str) -> Result<Self, UnsupportedArch> {
        match arch {
            "x86_64" => Ok(TargetProfile {
                hardware_bounds_checks: true,
                simd: true,
                cpu: &cpu::X86_64,
            }),
            "aarch64" => Ok(TargetProfile {
                hardware_bounds_checks: true,
                simd: true,
                cpu: &cpu::AARCH64,
            }),
            "arm" | "armv7" => Ok(TargetProfile {
                hardware_bounds_checks: false,
                simd: false,
                cpu: &cpu::ARMV7,
            }),
            other => Err(UnsupportedArch(other.to_owned())),
        }
    }

    /// The profile of the machine this code runs on.
    pub fn this_machine() -> Result<Self, UnsupportedArch> {
        Self::for_arch(std::env::consts::ARCH)
    }
}

/// A target architecture the WAMR profile has no settings for.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("the WAMR backend supports {SUPPORTED_ARCHS}, not {0}")]
pub struct UnsupportedArch(pub String);

/// The native stack is checked by compiled code (the stack pointer against the worker thread's
/// stack boundary at function entry), not by guard pages: to place guard pages WAMR first
/// touches every page of each worker's stack, which makes a pool thread's whole 2 MiB stack
/// resident (measured: 2 MiB of RSS per worker thread). The check costs a compare per call.
pub const NATIVE_STACK_GUARD_PAGES: bool = false;

/// Compiled code polls its execution environment's terminate flag at loop back-edges and calls
/// (WAMR's thread manager), which is how the executor's watchdog stops a guest at its deadline.
pub const TERMINATION_CHECKS: bool = true;

/// The first bytes of every WAMR payload inside an artifact envelope.
pub const PAYLOAD_MAGIC: &[u8; 8] = b"OWWAMR01";

/// Longest tag accepted when parsing (a real one is under 100 bytes).
const MAX_TAG_LEN: usize = 1024;

/// Names the WAMR version and every profile setting compiled code for `target` depends on: what
/// the executor's runtime must match exactly.
pub fn profile_tag(wamr_version: &str, target: TargetProfile) -> String {
    let switches = [
        (BULK_MEMORY, "bulk-memory"),
        (REFERENCE_TYPES, "reference-types"),
        (CALL_INDIRECT_OVERLONG, "call-indirect-overlong"),
        (target.simd, "simd"),
        (TAIL_CALL, "tail-call"),
        (target.hardware_bounds_checks, "guard-pages"),
        (!target.hardware_bounds_checks, "bounds-checks"),
        (!NATIVE_STACK_GUARD_PAGES, "stack-checks"),
        (TERMINATION_CHECKS, "termination-checks"),
    ];
    let enabled: Vec<&str> = switches
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
    format!("wamr {wamr_version} [{}]", enabled.join(" "))
}

/// The whole tag of code compiled for `target` and `code`: the profile, then the CPU.
pub fn tag(wamr_version: &str, target: TargetProfile, code: &CodeCpu) -> String {
    format!("{} {code}", profile_tag(wamr_version, target))
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PayloadError {
    #[error("the artifact payload is not a WAMR AOT module written by wasm-precompile-wamr")]
    Malformed,
    #[error(
        "the artifact was compiled for {found}, but this executor runs {expected}; precompile it again with the matching wasm-precompile-wamr"
    )]
    ProfileMismatch { found: String, expected: String },
    #[error(
        "the artifact's code uses CPU features this machine lacks ({missing}); precompile it for a CPU level this machine has (--cpu) or the portable baseline, or with --native-cpu on a machine like this one"
    )]
    MissingCpuFeatures { missing: String },
}

/// Prefixes an AOT file with the magic and `tag`.
pub fn wrap(tag: &str, aot: &[u8]) -> Vec<u8> {
    let tag_len = u16::try_from(tag.len()).unwrap_or(u16::MAX);
    let mut out = Vec::with_capacity(PAYLOAD_MAGIC.len() + 2 + tag.len() + aot.len());
    out.extend_from_slice(PAYLOAD_MAGIC);
    out.extend_from_slice(&tag_len.to_le_bytes());
    out.extend_from_slice(&tag.as_bytes()[..usize::from(tag_len)]);
    out.extend_from_slice(aot);
    out
}

/// The AOT file inside `payload` and the CPU it was compiled for, if its tag is the profile
/// `expected` followed by code for `model` that a machine with the features `has` runs.
pub fn unwrap<'a>(
    expected: &str,
    model: &'static CpuModel,
    has: impl Fn(&str) -> bool,
    payload: &'a [u8],
) -> Result<(&'a [u8], CodeCpu), PayloadError> {
    let rest = payload
        .strip_prefix(PAYLOAD_MAGIC)
        .ok_or(PayloadError::Malformed)?;
    let len_bytes: [u8; 2] = rest
        .get(..2)
        .and_then(|b| b.try_into().ok())
        .ok_or(PayloadError::Malformed)?;
    let len = usize::from(u16::from_le_bytes(len_bytes));
    if len > MAX_TAG_LEN {
        return Err(PayloadError::Malformed);
    }
    let found = rest.get(2..2 + len).ok_or(PayloadError::Malformed)?;
    let found = std::str::from_utf8(found).map_err(|_| PayloadError::Malformed)?;
    let mismatch = || PayloadError::ProfileMismatch {
        found: found.to_owned(),
        expected: format!("{expected} {}", CodeCpu::portable(model)),
    };
    let cpu = found
        .strip_prefix(expected)
        .and_then(|rest| rest.strip_prefix(' '))
        .ok_or_else(mismatch)?;
    let code = CodeCpu::check(model, cpu, has).map_err(|refusal| match refusal {
        cpu::CpuRefusal::Unknown => mismatch(),
        cpu::CpuRefusal::Missing(missing) => PayloadError::MissingCpuFeatures {
            missing: missing.join(", "),
        },
    })?;
    Ok((&rest[2 + len..], code))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIXTY_FOUR: TargetProfile = TargetProfile {
        hardware_bounds_checks: true,
        simd: true,
        cpu: &cpu::X86_64,
    };

    fn portable() -> CodeCpu {
        CodeCpu::portable(&cpu::X86_64)
    }

    fn unwrap_here(expected: &str, payload: &[u8]) -> Result<Vec<u8>, PayloadError> {
        unwrap(expected, &cpu::X86_64, |_| true, payload).map(|(aot, _)| aot.to_vec())
    }

    #[test]
    fn payload_round_trips() {
        let native = CodeCpu::with_optional(&cpu::X86_64, |f| f == "avx2");
        let tag = tag("2.4.3", SIXTY_FOUR, &native);
        assert!(tag.starts_with("wamr 2.4.3 ["), "{tag}");
        assert!(tag.ends_with("] cpu x86-64-v2 +avx2"), "{tag}");
        let payload = wrap(&tag, b"\0aot rest");
        let expected = profile_tag("2.4.3", SIXTY_FOUR);
        assert_eq!(
            unwrap(&expected, &cpu::X86_64, |_| true, &payload),
            Ok((&b"\0aot rest"[..], native))
        );
    }

    #[test]
    fn another_profile_cpu_or_garbage_is_refused() {
        let expected = profile_tag("2.4.3", SIXTY_FOUR);
        let payload = wrap(&tag("2.4.2", SIXTY_FOUR, &portable()), b"\0aot");
        match unwrap_here(&expected, &payload) {
            Err(PayloadError::ProfileMismatch { found, expected }) => {
                assert!(found.contains("2.4.2") && expected.contains("2.4.3"));
                assert!(expected.ends_with("] cpu x86-64-v2"), "{expected}");
            }
            other => panic!("{other:?}"),
        }
        // The tag before it named a CPU, and CPUs this profile does not compile for.
        for found in [
            expected.clone(),
            format!("{expected} cpu x86-64-v3"),
            format!("{expected}cpu x86-64-v2"),
            format!("{expected} cpu x86-64-v2 +sha"),
        ] {
            assert!(
                matches!(
                    unwrap_here(&expected, &wrap(&found, b"\0aot")),
                    Err(PayloadError::ProfileMismatch { .. })
                ),
                "{found}"
            );
        }
        for bad in [
            &b""[..],
            b"OWWAMR01",
            b"OWWAMR01\xff\xff",
            b"\0aot\x01\0\0\0",
        ] {
            assert_eq!(unwrap_here("x", bad), Err(PayloadError::Malformed));
        }
    }

    #[test]
    fn code_for_features_the_host_lacks_is_refused_by_name() {
        let expected = profile_tag("2.4.3", SIXTY_FOUR);
        let native = CodeCpu::with_optional(&cpu::X86_64, |_| true);
        let payload = wrap(&tag("2.4.3", SIXTY_FOUR, &native), b"\0aot");
        let error = unwrap(
            &expected,
            &cpu::X86_64,
            |f| !f.starts_with("avx512"),
            &payload,
        )
        .unwrap_err();
        assert_eq!(
            error,
            PayloadError::MissingCpuFeatures {
                missing: "avx512f, avx512bw, avx512cd, avx512dq, avx512vl".into()
            }
        );
        assert!(
            error
                .to_string()
                .contains("a CPU level this machine has (--cpu)"),
            "{error}"
        );
    }

    #[test]
    fn code_for_32_bit_arm_is_not_code_for_64_bit_machines() {
        let arm = TargetProfile::for_arch("arm").unwrap();
        assert_eq!(TargetProfile::for_arch("armv7"), Ok(arm));
        assert_eq!(TargetProfile::for_arch("x86_64"), Ok(SIXTY_FOUR));
        let aarch64 = TargetProfile::for_arch("aarch64").unwrap();
        assert_eq!(
            profile_tag("2.4.3", aarch64),
            profile_tag("2.4.3", SIXTY_FOUR)
        );
        assert_eq!(aarch64.cpu, &cpu::AARCH64);
        let (arm, wide) = (profile_tag("2.4.3", arm), profile_tag("2.4.3", SIXTY_FOUR));
        assert!(
            arm.contains("bounds-checks") && !arm.contains("simd"),
            "{arm}"
        );
        assert!(
            wide.contains("guard-pages") && wide.contains("simd"),
            "{wide}"
        );
        let arm_code = format!("{arm} {}", CodeCpu::portable(&cpu::ARMV7));
        assert!(matches!(
            unwrap_here(&wide, &wrap(&arm_code, b"\0aot")),
            Err(PayloadError::ProfileMismatch { .. })
        ));
        assert!(TargetProfile::for_arch("riscv64").is_err());
    }
}
