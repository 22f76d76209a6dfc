//! `wasm-executor-wasmtime`: the executor with the wasmtime runtime.

fn main() -> anyhow::Result<()> {
    wasm_executor::run::<wasm_executor_wasmtime::WasmtimeBackend>()
}
