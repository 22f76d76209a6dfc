//! `wasm-precompile-wasmtime`: compiles a .wasm with Cranelift into a wasmtime artifact for the
//! host or aarch64, wrapped in our signed envelope.

use std::process::ExitCode;

use wasm_artifact::{RuntimeId, host_target};
use wasm_precompile::{Compiler, NoOptions, TargetCpu};
use wasmtime::{Config, Engine};

struct Wasmtime;

impl Compiler for Wasmtime {
    const RUNTIME: RuntimeId = RuntimeId::Wasmtime;
    type Options = NoOptions;

    fn compile(
        &self,
        wasm: &[u8],
        target: &str,
        cpu: TargetCpu,
        _: &NoOptions,
    ) -> anyhow::Result<Vec<u8>> {
        let mut config = Config::new();
        // Must match the executor's engine (executor/src/backend/wasmtime/engine.rs): wasmtime
        // refuses artifacts compiled with other code-affecting settings.
        config.epoch_interruption(true);
        match cpu {
            // Without a target, Cranelift uses every feature of this CPU.
            TargetCpu::ThisMachine => debug_assert_eq!(target, host_target()),
            // An explicit target means the target's baseline features, not this CPU's.
            TargetCpu::Portable => {
                config.target(target)?;
            }
            TargetCpu::Level(level) => {
                config.target(target)?;
                for flag in level.features.iter().filter_map(|f| cranelift_flag(f)) {
                    // SAFETY: each flag is a CPU feature of the target's ISA; code that uses
                    // it is refused at load on a machine without it
                    // (`Engine::check_compatible_with_isa_flag`).
                    unsafe { config.cranelift_flag_enable(flag) };
                }
            }
        }
        Ok(Engine::new(&config)?.precompile_module(wasm)?)
    }
}

/// Cranelift's switch for the LLVM feature `feature`; `None` for those its code generation
/// does not use (the artifact then does not need them either).
fn cranelift_flag(feature: &str) -> Option<&'static str> {
    Some(match feature {
        "sse3" => "has_sse3",
        "ssse3" => "has_ssse3",
        "sse4.1" => "has_sse41",
        "sse4.2" => "has_sse42",
        "popcnt" => "has_popcnt",
        "cx16" => "has_cmpxchg16b",
        "avx" => "has_avx",
        "avx2" => "has_avx2",
        "bmi" => "has_bmi1",
        "bmi2" => "has_bmi2",
        "fma" => "has_fma",
        "lzcnt" => "has_lzcnt",
        "avx512f" => "has_avx512f",
        "avx512dq" => "has_avx512dq",
        "avx512vl" => "has_avx512vl",
        "lse" => "has_lse",
        "dotprod" => "has_dotprod",
        "fullfp16" => "has_fp16",
        _ => return None,
    })
}

fn main() -> ExitCode {
    wasm_precompile::run_main(Wasmtime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_precompile::cpu::LEVELS;

    /// Features Cranelift has no switch for: code it generates never uses them.
    const UNUSED: &[&str] = &[
        "sahf", "f16c", "movbe", "avx512bw", "avx512cd", "rcpc", "crc",
    ];

    #[test]
    fn every_level_feature_is_mapped_or_known_to_be_unused() {
        for level in LEVELS {
            for feature in level.features {
                assert!(
                    cranelift_flag(feature).is_some() != UNUSED.contains(feature),
                    "{} {feature}",
                    level.name
                );
            }
        }
    }

    #[test]
    fn a_level_compiles_for_both_targets() {
        let wasm =
            wat::parse_str("(module (func (export \"f\") (result i32) i32.const 1))").unwrap();
        for level in LEVELS {
            let target = format!("{}-unknown-linux-gnu", level.arch);
            let code = Wasmtime.compile(&wasm, &target, TargetCpu::Level(level), &NoOptions {});
            assert!(code.is_ok_and(|c| !c.is_empty()), "{}", level.name);
        }
    }
}
