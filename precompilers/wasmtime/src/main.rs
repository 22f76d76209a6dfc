//! `wasm-precompile-wasmtime`: compiles a .wasm with Cranelift into a wasmtime artifact for the
//! host or aarch64, wrapped in our signed envelope.

use std::process::ExitCode;

use wasm_artifact::{RuntimeId, host_target};
use wasm_precompile::Compiler;
use wasmtime::{Config, Engine};

struct Wasmtime;

impl Compiler for Wasmtime {
    const RUNTIME: RuntimeId = RuntimeId::Wasmtime;

    fn compile(&self, wasm: &[u8], target: &str, native_cpu: bool) -> anyhow::Result<Vec<u8>> {
        let mut config = Config::new();
        // Must match the executor's engine (executor/src/backend/wasmtime/engine.rs): wasmtime
        // refuses artifacts compiled with other code-affecting settings.
        config.epoch_interruption(true);
        if !native_cpu {
            // An explicit target means the target's baseline features, not this CPU's.
            config.target(target)?;
        }
        debug_assert!(!native_cpu || target == host_target());
        Ok(Engine::new(&config)?.precompile_module(wasm)?)
    }
}

fn main() -> ExitCode {
    wasm_precompile::run_main(Wasmtime)
}
