//! The wasmer engine every module gets (one per container's module, so that its machine code is
//! freed with it): LLVM with the shared profile (so what it compiles at /init is what
//! `wasm-precompile-wasmer` would produce), or no compiler at all in the headless build; either
//! way with the memory-limiting tunables.

use wasmer::{Engine, sys::NativeEngineExt};

use super::memory::LimitingTunables;

/// Whether this build can compile portable Wasm.
pub const HAS_COMPILER: bool = cfg!(feature = "llvm");

pub fn build() -> Engine {
    let mut engine = new_engine();
    engine.set_tunables(LimitingTunables::default());
    engine
}

#[cfg(feature = "llvm")]
fn new_engine() -> Engine {
    use wasmer::sys::{EngineBuilder, LLVM, LLVMOptLevel};
    let mut llvm = LLVM::new();
    // The precompiler's setting too (precompilers/wasmer/src/main.rs).
    llvm.opt_level(LLVMOptLevel::Aggressive);
    EngineBuilder::new(llvm)
        .set_target(Some(wasmer_profile::host_target()))
        .set_features(Some(wasmer_profile::features()))
        .engine()
        .into()
}

#[cfg(not(feature = "llvm"))]
fn new_engine() -> Engine {
    <Engine as NativeEngineExt>::headless()
}
