//! `wasm-executor-wasmer-headless`: the executor with wasmer and no compiler.

fn main() -> anyhow::Result<()> {
    wasm_executor::run::<wasm_executor_wasmer::WasmerBackend>()
}
