//! How wasmtime provides each capability of a container: the imports linked for its grant set
//! and what a store takes from its grants.

use wasmtime::Linker;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::{RunState, http_import};
use wasm_executor::{
    backend::http_import::Pair,
    capability::{CapabilityId, GrantSet, Grants, dir::GrantedDir},
};

/// Links the host functions of the capabilities in `set`, and the HTTP twins every module
/// may import.
pub fn add_to_linker(linker: &mut Linker<RunState>, set: GrantSet) -> wasmtime::Result<()> {
    http_import::add_to_linker(linker, Pair::Twin)?;
    for id in set.iter() {
        match id {
            // A preopened directory of the store's WASI context (see `preopen`).
            CapabilityId::Dir => {}
            CapabilityId::NetAccess => http_import::add_to_linker(linker, Pair::Capability)?,
        }
    }
    Ok(())
}

/// Whether guests of `set` may make a host call that blocks their thread: file I/O does; they
/// run on the pool. Timers and `http_get` suspend the guest instead.
pub fn block_threads(set: GrantSet) -> bool {
    set.iter().any(|id| match id {
        CapabilityId::Dir => true,
        CapabilityId::NetAccess => false,
    })
}

/// Gives a store's WASI context the granted directory, by the descriptor opened at /init: not
/// whatever its path names now.
pub fn preopen(wasi: &mut WasiCtxBuilder, grants: &Grants) -> wasmtime::Result<()> {
    if let Some(dir) = grants.get::<GrantedDir>() {
        wasi.preopened_dir(dir.reopen_path(), dir.guest_path(), FsPerms::ReadWrite)
            .map_err(|e| e.context(format!("opening the granted {}", dir.guest_path())))?;
    }
    Ok(())
}
