//! `wasm-precompile-wasmer`: compiles a .wasm with wasmer's LLVM compiler into a wasmer artifact
//! for the host or aarch64, wrapped in our signed envelope. The executor only deserializes it.

use std::process::ExitCode;

use wasm_artifact::RuntimeId;
use wasm_precompile::{Compiler, NoOptions, TargetCpu};
use wasmer::{
    Engine, Module,
    sys::{EngineBuilder, LLVM, LLVMOptLevel},
};

struct Wasmer;

impl Compiler for Wasmer {
    const RUNTIME: RuntimeId = RuntimeId::Wasmer;
    type Options = NoOptions;

    fn compile(
        &self,
        wasm: &[u8],
        target: &str,
        cpu: TargetCpu,
        _: &NoOptions,
    ) -> anyhow::Result<Vec<u8>> {
        let target = match cpu {
            TargetCpu::Portable => wasmer_profile::target(target, &[])?,
            TargetCpu::Level(level) => wasmer_profile::target(target, level.features)?,
            // The driver allows this machine's features only when the target is this machine.
            TargetCpu::ThisMachine => wasmer_profile::host_target(),
        };
        let mut llvm = LLVM::new();
        llvm.opt_level(LLVMOptLevel::Aggressive);
        // The engine settings are the executor's (wasmer-profile), so what it deserializes was
        // compiled under the assumptions it runs with.
        let engine: Engine = EngineBuilder::new(llvm)
            .set_target(Some(target))
            .set_features(Some(wasmer_profile::features()))
            .engine()
            .into();
        let module = Module::new(&engine, wasm)?;
        Ok(module.serialize()?.to_vec())
    }
}

fn main() -> ExitCode {
    wasm_precompile::run_main(Wasmer)
}

#[cfg(test)]
mod tests {
    use wasm_precompile::cpu::LEVELS;

    #[test]
    fn every_level_is_a_wasmer_target() {
        for level in LEVELS {
            let triple = format!("{}-unknown-linux-gnu", level.arch);
            let target = wasmer_profile::target(&triple, level.features);
            assert!(target.is_ok(), "{}: {target:?}", level.name);
        }
    }
}
