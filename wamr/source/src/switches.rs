//! The `WAMR_BUILD_*` switches that follow from the shared profile, and the WAMR name of the
//! target architecture. Each library adds its own role-specific switches on top.

use anyhow::bail;
use wamr_profile as profile;

fn flag(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

/// Switches both libraries set alike for code that runs on `target`, as cmake cache entries.
pub fn shared_switches(target: profile::TargetProfile) -> Vec<(&'static str, &'static str)> {
    vec![
        ("WAMR_BUILD_BULK_MEMORY", flag(profile::BULK_MEMORY)),
        ("WAMR_BUILD_REF_TYPES", flag(profile::REFERENCE_TYPES)),
        ("WAMR_BUILD_SIMD", flag(target.simd)),
        ("WAMR_BUILD_TAIL_CALL", flag(profile::TAIL_CALL)),
        // The thread manager carries the terminate flag the watchdog sets; guests get no
        // threads of their own (no wasi-threads, no pthread library, no shared memory).
        ("WAMR_BUILD_THREAD_MGR", flag(profile::TERMINATION_CHECKS)),
        ("WAMR_BUILD_SHARED_MEMORY", "0"),
        ("WAMR_BUILD_LIB_PTHREAD", "0"),
        ("WAMR_BUILD_LIB_WASI_THREADS", "0"),
        // Guests get WASI preview 1 (and the executor's own imports), as on every backend; WAMR's
        // `env` builtins (printf to the host's stdout, …) would bypass the log capture.
        ("WAMR_BUILD_LIBC_WASI", "1"),
        ("WAMR_BUILD_LIBC_BUILTIN", "0"),
        ("WAMR_BUILD_MULTI_MODULE", "0"),
        ("WAMR_BUILD_GC", "0"),
        ("WAMR_BUILD_MEMORY64", "0"),
        ("WAMR_BUILD_EXCE_HANDLING", "0"),
        // On x86_64 WAMR's cmake runs a WRGSBASE probe on the build machine and, when it works
        // there, writes the linear memory's base to the GS register before every call into Wasm:
        // only AOT code compiled with "segue" addressing reads it, and ours is not. A CPU
        // without FSGSBASE (before Ivy Bridge) or a kernel before 5.9 then gets SIGILL on every
        // activation, interpreted ones included: the build machine must not decide that.
        ("WAMR_DISABLE_WRITE_GS_BASE", "1"),
    ]
}

/// WAMR's name for a Rust target architecture, for the targets the profile is valid on. 32-bit
/// ARM is ARMv7 with hardware floating point (`armv7-unknown-linux-gnueabihf`), what 32-bit
/// Raspberry Pi OS runs.
pub fn wamr_target(rust_arch: &str) -> anyhow::Result<&'static str> {
    match rust_arch {
        "x86_64" => Ok("X86_64"),
        "aarch64" => Ok("AARCH64"),
        "arm" => Ok("ARMV7_VFP"),
        other => bail!(
            "the WAMR backend supports {}, not {other}",
            profile::SUPPORTED_ARCHS
        ),
    }
}
