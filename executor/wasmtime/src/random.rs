//! `random_get` in place of wasmtime-wasi's, which fills the whole buffer in one go: on an async
//! worker a gigabyte would hold that worker (and every request queued on it) for seconds. This
//! one fills [`RANDOM_CHUNK`] bytes at a time from the operating system's generator, yields to
//! the other tasks between chunks and ends the activation at its deadline.

use std::time::Instant;

use wasmtime::{Caller, Extern, Linker, Trap};

use super::RunState;
use wasm_executor::backend::host_limits::RANDOM_CHUNK;

/// WASI's `EFAULT` and `EIO`.
const ERRNO_FAULT: i32 = 21;
const ERRNO_IO: i32 = 29;

/// Replaces wasmtime-wasi's `random_get` (added to `linker` before) with this one.
pub fn add_to_linker(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap_async(
        "wasi_snapshot_preview1",
        "random_get",
        |caller: Caller<'_, RunState>, (buf, len): (u32, u32)| {
            Box::new(random_get(caller, buf, len))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

async fn random_get(mut caller: Caller<'_, RunState>, buf: u32, len: u32) -> wasmtime::Result<i32> {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else {
        return Ok(ERRNO_FAULT);
    };
    let start = buf as usize;
    let Some(end) = start.checked_add(len as usize) else {
        return Ok(ERRNO_FAULT);
    };
    if end > memory.data_size(&caller) {
        return Ok(ERRNO_FAULT);
    }
    let deadline = caller.data().deadline;
    let mut at = start;
    while at < end {
        let chunk_end = end.min(at + RANDOM_CHUNK);
        if getrandom::getrandom(&mut memory.data_mut(&mut caller)[at..chunk_end]).is_err() {
            return Ok(ERRNO_IO);
        }
        at = chunk_end;
        if at < end {
            if Instant::now() >= deadline {
                return Err(Trap::Interrupt.into());
            }
            tokio::task::yield_now().await;
        }
    }
    Ok(0)
}
