//! What CPU an artifact's code is compiled for: the target's portable baseline, the build
//! machine's own features (`--native-cpu`), or a named level (`--cpu x86-64-v3`) that every
//! machine of a fleet shares although the build machine may have more or be another
//! architecture. Levels name their features as LLVM does; each compiler maps them to its own
//! switches and uses those it has, so its loader (or, for WAMR, the executor) can check them.

use anyhow::bail;

/// A named set of CPU features of one architecture.
#[derive(Debug, PartialEq, Eq)]
pub struct CpuLevel {
    pub name: &'static str,
    /// The first part of the target triples it applies to.
    pub arch: &'static str,
    /// Every feature beyond the architecture's own baseline (x86-64: SSE2; Armv8-A: NEON).
    pub features: &'static [&'static str],
    /// Machines that have it, for the help text.
    pub machines: &'static str,
}

const X86_64_V2: &[&str] = &[
    "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf",
];
const X86_64_V3: &[&str] = &[
    "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf", "avx", "avx2", "bmi", "bmi2",
    "fma", "f16c", "lzcnt", "movbe",
];
const X86_64_V4: &[&str] = &[
    "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf", "avx", "avx2", "bmi", "bmi2",
    "fma", "f16c", "lzcnt", "movbe", "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl",
];

/// The levels `--cpu` accepts: x86-64's microarchitecture levels, and the Arm cores of the
/// Raspberry Pi 4 and 5 (whose features ARM servers of the same generations share).
pub const LEVELS: &[CpuLevel] = &[
    CpuLevel {
        name: "x86-64-v2",
        arch: "x86_64",
        features: X86_64_V2,
        machines: "every x86_64 CPU since 2009",
    },
    CpuLevel {
        name: "x86-64-v3",
        arch: "x86_64",
        features: X86_64_V3,
        machines: "AVX2: Intel Haswell (2013) and later, AMD Zen, Intel N100",
    },
    CpuLevel {
        name: "x86-64-v4",
        arch: "x86_64",
        features: X86_64_V4,
        machines: "AVX-512: Intel Skylake-SP and later servers, AMD Zen 4",
    },
    CpuLevel {
        name: "cortex-a72",
        arch: "aarch64",
        features: &["crc"],
        machines: "Raspberry Pi 4, AWS Graviton 1",
    },
    CpuLevel {
        name: "cortex-a76",
        arch: "aarch64",
        features: &["crc", "lse", "rcpc", "dotprod", "fullfp16"],
        machines: "Raspberry Pi 5, Neoverse N1 (AWS Graviton 2, Ampere Altra)",
    },
];

/// The CPU to compile for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetCpu {
    /// The target architecture's baseline: runs on every CPU of it.
    Portable,
    /// The build machine's features (the target is the build machine).
    ThisMachine,
    /// A named level of the target's architecture.
    Level(&'static CpuLevel),
}

impl CpuLevel {
    /// The level `name` for `target`, or why there is none.
    pub fn for_target(name: &str, target: &str) -> anyhow::Result<&'static CpuLevel> {
        let arch = target.split('-').next().unwrap_or_default();
        let of_arch = || {
            LEVELS
                .iter()
                .filter(|level| level.arch == arch)
                .map(|level| level.name)
                .collect::<Vec<_>>()
        };
        match LEVELS.iter().find(|level| level.name == name) {
            Some(level) if level.arch == arch => Ok(level),
            found => {
                let levels = of_arch();
                let known = if levels.is_empty() {
                    format!("{target} has no CPU levels")
                } else {
                    format!("levels for {target}: {}", levels.join(", "))
                };
                match found {
                    Some(level) => bail!(
                        "{name} is a level of {}, not of {target}; {known}",
                        level.arch
                    ),
                    None => bail!("unknown CPU level {name:?}; {known}"),
                }
            }
        }
    }
}

/// The help text of `--cpu`: every level and the machines that have it.
pub fn levels_help() -> String {
    let levels: Vec<String> = LEVELS
        .iter()
        .map(|level| format!("{} ({})", level.name, level.machines))
        .collect();
    format!(
        "Compile for a CPU level every machine that runs the artifact has, instead of the target's portable \
         baseline; machines without it refuse the artifact at /init. Levels: {}",
        levels.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_x86_level_includes_the_one_below() {
        assert!(X86_64_V2.iter().all(|f| X86_64_V3.contains(f)));
        assert!(X86_64_V3.iter().all(|f| X86_64_V4.contains(f)));
        let a72 = CpuLevel::for_target("cortex-a72", "aarch64-unknown-linux-gnu").unwrap();
        let a76 = CpuLevel::for_target("cortex-a76", "aarch64-unknown-linux-gnu").unwrap();
        assert!(a72.features.iter().all(|f| a76.features.contains(f)));
        let names: Vec<_> = LEVELS.iter().map(|l| l.name).collect();
        assert!(
            names
                .iter()
                .all(|n| names.iter().filter(|m| *m == n).count() == 1)
        );
    }

    #[test]
    fn levels_are_found_for_their_architecture_only() {
        let v3 = CpuLevel::for_target("x86-64-v3", "x86_64-unknown-linux-gnu").unwrap();
        assert!(v3.features.contains(&"avx2"));
        let wrong = CpuLevel::for_target("x86-64-v3", "aarch64-unknown-linux-gnu")
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("level of x86_64") && wrong.contains("cortex-a76"),
            "{wrong}"
        );
        let unknown = CpuLevel::for_target("skylake", "x86_64-unknown-linux-gnu")
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("x86-64-v4"), "{unknown}");
        let none = CpuLevel::for_target("cortex-a72", "armv7-unknown-linux-gnueabihf")
            .unwrap_err()
            .to_string();
        assert!(none.contains("has no CPU levels"), "{none}");
        assert!(levels_help().contains("Raspberry Pi 5"));
    }
}
