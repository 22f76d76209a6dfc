//! `wasm-executor-wasmer`: the executor with wasmer and its LLVM compiler.

fn main() -> anyhow::Result<()> {
    wasm_executor::run::<wasm_executor_wasmer::WasmerBackend>()
}
