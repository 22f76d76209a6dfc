//! `wasm-executor-wamr`: the executor with WAMR (fast interpreter and AOT loader).

fn main() -> anyhow::Result<()> {
    wasm_executor::run::<wasm_executor_wamr::WamrBackend>()
}
