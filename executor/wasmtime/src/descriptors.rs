//! The descriptors one activation may hold: wasmtime-wasi opens as many files as the process
//! has descriptors, so `path_open`, `fd_close` and `fd_renumber` are wasmtime-wasi's own behind
//! the count of `backend/opened.rs`, as on the other backends.

use wasmtime::{Caller, Extern, Linker};
use wasmtime_wasi::p1::wasi_snapshot_preview1 as wasi;

use super::RunState;
use wasm_executor::backend::opened::ERRNO_MFILE;

/// Replaces wasmtime-wasi's `path_open`, `fd_close` and `fd_renumber` (added to `linker`
/// before) with the same calls behind the count.
pub fn add_to_linker(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap_async(
        "wasi_snapshot_preview1",
        "path_open",
        |mut caller: Caller<'_, RunState>,
         (fd, dirflags, path, path_len, oflags, base, inheriting, fdflags, out): (
            i32,
            i32,
            i32,
            i32,
            i32,
            i64,
            i64,
            i32,
            i32,
        )| {
            Box::new(async move {
                if !caller.data().opened.has_room() {
                    return Ok(i32::from(ERRNO_MFILE));
                }
                let memory = memory_of(&mut caller)?;
                let (data, state) = memory.data_and_store_mut(&mut caller);
                let mut guest = wiggle::GuestMemory::Unshared(data);
                let errno = wasi::path_open(
                    &mut state.wasi,
                    &mut guest,
                    fd,
                    dirflags,
                    path,
                    path_len,
                    oflags,
                    base,
                    inheriting,
                    fdflags,
                    out,
                )
                .await?;
                if errno == 0 {
                    let at = out as u32 as usize;
                    if let Some(bytes) = data_at(memory.data(&caller), at) {
                        caller.data_mut().opened.opened(u32::from_le_bytes(bytes));
                    }
                }
                Ok(errno)
            })
        },
    )?;
    linker.func_wrap_async(
        "wasi_snapshot_preview1",
        "fd_close",
        |mut caller: Caller<'_, RunState>, (fd,): (i32,)| {
            Box::new(async move {
                let memory = memory_of(&mut caller)?;
                let (data, state) = memory.data_and_store_mut(&mut caller);
                let errno = wasi::fd_close(
                    &mut state.wasi,
                    &mut wiggle::GuestMemory::Unshared(data),
                    fd,
                )
                .await?;
                if errno == 0 {
                    state.opened.closed(fd as u32);
                }
                Ok(errno)
            })
        },
    )?;
    linker.func_wrap_async(
        "wasi_snapshot_preview1",
        "fd_renumber",
        |mut caller: Caller<'_, RunState>, (from, to): (i32, i32)| {
            Box::new(async move {
                let memory = memory_of(&mut caller)?;
                let (data, state) = memory.data_and_store_mut(&mut caller);
                let errno = wasi::fd_renumber(
                    &mut state.wasi,
                    &mut wiggle::GuestMemory::Unshared(data),
                    from,
                    to,
                )
                .await?;
                if errno == 0 {
                    state.opened.renumbered(from as u32, to as u32);
                }
                Ok(errno)
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The guest's memory, which every WASI module exports.
fn memory_of(caller: &mut Caller<'_, RunState>) -> wasmtime::Result<wasmtime::Memory> {
    match caller.get_export("memory") {
        Some(Extern::Memory(memory)) => Ok(memory),
        _ => wasmtime::bail!("missing required memory export"),
    }
}

/// The little-endian u32 at `at`, if it is inside memory.
fn data_at(data: &[u8], at: usize) -> Option<[u8; 4]> {
    data.get(at..at.checked_add(4)?)?.try_into().ok()
}
