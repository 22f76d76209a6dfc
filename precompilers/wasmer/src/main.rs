//! `wasm-precompile-wasmer`: compiles a .wasm with wasmer's LLVM compiler into a wasmer artifact
//! for the host or aarch64, wrapped in our signed envelope. The executor only deserializes it.

use std::process::ExitCode;

use wasm_artifact::RuntimeId;
use wasm_precompile::Compiler;
use wasmer::{
    Engine, Module,
    sys::{EngineBuilder, LLVM, LLVMOptLevel},
};

struct Wasmer;

impl Compiler for Wasmer {
    const RUNTIME: RuntimeId = RuntimeId::Wasmer;

    fn compile(&self, wasm: &[u8], target: &str, native_cpu: bool) -> anyhow::Result<Vec<u8>> {
        let mut llvm = LLVM::new();
        llvm.opt_level(LLVMOptLevel::Aggressive);
        // The engine settings are the executor's (wasmer-profile), so what it deserializes was
        // compiled under the assumptions it runs with.
        let engine: Engine = EngineBuilder::new(llvm)
            .set_target(Some(wasmer_profile::target(target, native_cpu)?))
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
